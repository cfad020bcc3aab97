"""Helpers of tests/test_engines_vllm.py: training runs that generate with vLLM (CPU backend), and a vLLM server.

The runs are the engine tests' runs (tests/helpers/engines_launch.py) with the vLLM-shaped tiny model (builtin:vllm of
gdpo_trl.demo.tiny), 3 steps, and TRL's vLLM flags; tests/helpers/vllm_cpu_sync.py replaces TRL's weight sync, which cannot
run on CPU (explained there). `GDPO_TEST_VLLM_SYNC=cpu` syncs, `none` is the negative control.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.helpers.engines_launch import free_port

VLLM_COLOCATE_FLAGS = (
    "--use_vllm", "true", "--vllm_mode", "colocate", "--vllm_enable_sleep_mode", "false",
    "--vllm_max_model_length", "512", "--max_steps", "3",
)  # fmt: skip
# The metric TRL logs when vLLM generates: mean |logp(trainer) - logp(vLLM)| over completion tokens.
LOGP_DIFFERENCE = "sampling/sampling_logp_difference/mean"


def vllm_env(base: dict, cache: Path, sync: str) -> dict:
    """vLLM on CPU: a small KV cache (GiB), its compile cache in ``cache`` (not ~/.cache/vllm), our weight sync."""
    return {**base, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CACHE_ROOT": str(cache), "GDPO_TEST_VLLM_SYNC": sync}


def logp_differences(output_dir: Path) -> list[float]:
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return [entry[LOGP_DIFFERENCE] for entry in history if LOGP_DIFFERENCE in entry]


class VLLMServer:
    """``python -m vllm.entrypoints.openai.api_server`` on 127.0.0.1, stopped by its PID (context manager).

    Not ``trl vllm-serve``: vllm-cpu's ``vllm`` console script looks for a distribution named ``vllm`` and dies, and
    TRL's command asks for an NCCL weight-transfer engine. ``VLLM_SERVER_DEV_MODE=1`` opens ``/collective_rpc`` and
    ``/reset_prefix_cache``, which the CPU weight sync uses; the logprob flags are the ones TRL passes.
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
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(2)
        self.__exit__(None, None, None)
        raise TimeoutError(f"vLLM server not up after {self.timeout} s:\n{self.log.read_text()[-4000:]}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.handle.close()
