"""Helpers of tests/vllm_cpu/test_engines_vllm.py: GDPO runs that generate with vLLM (CPU backend), a vLLM server, and
what the tests read from a run.

The runs are the engine tests' runs (tests/helpers/engines_launch.py: the probe around gdpo train's main) on the vLLM
recipes (recipes/cpu/vllm_colocate, vllm_server) with their model, builtin:vllm_warmstart (an SFT warm start vLLM's
CPU backend can load, mid-range on format and integer) and their three rewards, for :data:`STEPS` steps at a learning
rate above the recipe's, so that within one run the rewards rise when vLLM generates from the trained weights, and
vLLM's copy drifts far from the trainer's when it does not. tests/helpers/vllm_cpu_sync.py replaces TRL's weight
sync, which cannot run on CPU (explained there): `GDPO_TEST_VLLM_SYNC=cpu` syncs, `none` is the negative control.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.engines_launch import ROOT, free_port, launch, load_probes

COLOCATE_RECIPE = ROOT / "recipes" / "cpu" / "vllm_colocate" / "config.yaml"
SERVER_RECIPE = ROOT / "recipes" / "cpu" / "vllm_server" / "config.yaml"
STEPS = 16
# 32 completions (4 prompts x 8) per step whatever the process count; lr 2e-3 (the recipe's is 3e-4) moves format and
# integer from about 0.45 to about 0.9 within the 16 steps. Measured with vllm-cpu 0.31 (synced, 1 process): the
# summed reward went 1.03, 1.25, 1.38, 1.50 ... 1.84, 1.69, 2.12, 1.81, while without the sync it stayed near 1.1.
RUN_FLAGS = ("--max_steps", str(STEPS), "--learning_rate", "2e-3")
COMPLETIONS_PER_STEP = 32
# The metric TRL logs when vLLM generates: mean |logp(trainer) - logp(vLLM)| over completion tokens.
LOGP_DIFFERENCE = "sampling/sampling_logp_difference/mean"
# What a run must not print at exit: vLLM's finalizer destroying process groups already gone, a logging call on a
# closed stream, any other exception swallowed by the interpreter.
EXIT_NOISE = ("Invalid process group specified", "--- Logging error ---", "Exception ignored")


def vllm_env(base: dict, cache: Path, sync: str) -> dict:
    """vLLM on CPU: a small KV cache (GiB), its compile cache in ``cache`` (not ~/.cache/vllm), our weight sync."""
    return {**base, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CACHE_ROOT": str(cache), "GDPO_TEST_VLLM_SYNC": sync}


@dataclass
class Run:
    """One finished run: its logged steps (``trainer_state.json``), the probe of each process, its stderr."""

    steps: list[dict]
    probes: list[dict]
    stderr: str

    def metric(self, name: str) -> list[float]:
        return [step[name] for step in self.steps]


def run_gdpo(config: str, output_dir: Path, env: dict, model: Path, num_processes: int, flags: tuple, recipe: Path):
    """The probe under ``accelerate launch`` on ``recipe`` with ``model``, then what it logged and recorded."""
    batch = ("--per_device_train_batch_size", str(COMPLETIONS_PER_STEP // num_processes))
    result = launch(
        config, output_dir, env, num_processes, recipe=recipe,
        recipe_flags=("--model_name_or_path", str(model), *RUN_FLAGS, *batch, *flags),
    )  # fmt: skip
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    steps = [entry for entry in history if LOGP_DIFFERENCE in entry]
    return Run(steps, load_probes(output_dir, num_processes), result.stderr)


def starting_reward(model: Path) -> float:
    """The warm start's summed reward (format + correctness + integer) before any RL, as its build measured it on
    held-out problems at temperature 1 (``warmstart.json``): about 1.05 for seed 0."""
    record = json.loads((Path(model) / "warmstart.json").read_text())["starting_rewards"]
    return sum(record[name] for name in ("format", "correctness", "integer"))


def reward_gain(run: Run, start: float, skip: int = 4) -> float:
    """Mean summed reward of the steps after the first ``skip`` minus ``start``: what RL gained, as vLLM sampled it.

    Not the last steps alone: at this learning rate a run can dip for a step or two (measured: 1.88, 1.62, 1.0,
    1.0, 1.66 in one server run) before recovering; twelve steps of 32 completions average that out.
    """
    rewards = run.metric("reward")[skip:]
    return sum(rewards) / len(rewards) - start


def assert_clean_exit(stderr: str) -> None:
    for noise in EXIT_NOISE:
        assert noise not in stderr, f"{noise!r} in stderr:\n{stderr[-4000:]}"


def assert_learning_signal(run: Run) -> None:
    """Every step had something to learn from (rewards not all 0, spread within some group, non-zero advantages, a
    non-zero loss and gradient) until the policy saturated; and every process trained on non-zero advantages.

    Saturated: every group's completions scored alike on every reward, so GDPO's advantages, the loss and the
    gradient are 0 by definition. Measured once in a 2-process run, at step 13 of 16: all 32 completions had format
    1, integer 1, correctness 0 (the warm start is too small to learn the products). Such steps may only come in the
    second half, after the rise, and be few. A process alone can likewise get a step of solved-alike groups.
    """
    assert len(run.steps) == STEPS, len(run.steps)
    assert {len(probe["batches"]) for probe in run.probes} == {STEPS}
    saturated = []
    for index, (step, batch) in enumerate(zip(run.steps, run.probes[0]["batches"], strict=True)):
        rewards, n = batch["rewards"], batch["num_generations"]  # gathered: the same on every process
        assert any(value for row in rewards for value in row), index  # never all 0
        groups = [rewards[start : start + n] for start in range(0, len(rewards), n)]
        if all(len({tuple(row) for row in group}) == 1 for group in groups):  # no spread in any group
            saturated.append(index)
            continue
        assert max(_largest_advantage(probe["batches"][index]) for probe in run.probes) > 0.1, index
        assert step["loss"] != 0 and step["grad_norm"] > 0, step
    assert all(index >= STEPS // 2 for index in saturated) and len(saturated) <= STEPS // 8, saturated
    for rank, probe in enumerate(run.probes):
        trained = sum(_largest_advantage(batch) > 0.1 for batch in probe["batches"])
        assert trained > STEPS // 2, (rank, trained)  # measured: 13 to 16 of 16


def _largest_advantage(batch: dict) -> float:
    return max(abs(advantage) for advantage in batch["local_advantages"])


class VLLMServer:
    """``python -m vllm.entrypoints.openai.api_server`` on 127.0.0.1, stopped by its PID (context manager).

    Not ``trl vllm-serve``: vllm-cpu's ``vllm`` console script looks for a distribution named ``vllm`` and dies, and
    TRL's command asks for an NCCL weight-transfer engine. ``VLLM_SERVER_DEV_MODE=1`` opens ``/collective_rpc`` and
    ``/reset_prefix_cache``, which the CPU weight sync uses; the logprob flags are the ones TRL passes. Its log (with
    uvicorn's access log: one line per request) goes to ``log``.
    """

    def __init__(self, model: Path, env: dict, log: Path, timeout: float = 600):
        self.port, self.model, self.env, self.log, self.timeout = free_port(), model, env, log, timeout
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> VLLMServer:
        command = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model),
            "--host", "127.0.0.1", "--port", str(self.port), "--max-model-len", "512", "--dtype", "float32",
            "--logprobs-mode", "processed_logprobs", "--max-logprobs", "-1",
        ]  # fmt: skip
        env = {**self.env, "VLLM_SERVER_DEV_MODE": "1"}
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            env.pop(name, None)
        self.handle = open(self.log, "w")  # noqa: SIM115 (closed in __exit__)
        self.process = subprocess.Popen(command, env=env, stdout=self.handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"vLLM server exited with {self.process.returncode}:\n{self.log.read_text()[-4000:]}"
                )
            if self.healthy():
                return self
            time.sleep(2)
        self.__exit__(None, None, None)
        raise TimeoutError(f"vLLM server not up after {self.timeout} s:\n{self.log.read_text()[-4000:]}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def healthy(self) -> bool:
        """Whether the server answers ``GET /health`` with 200 now."""
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def requests(self, method: str, path: str) -> int:
        """How many ``method path`` requests the server answered with 200, from its access log."""
        line = f'"{method} {path} HTTP/1.1" 200'
        return sum(line in entry for entry in self.log.read_text().splitlines())

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.handle.close()
