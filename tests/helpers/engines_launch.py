"""Helpers of tests/test_engines_*.py: launch the CPU recipe under a real engine and read what the probe saw.

Every run is ``accelerate launch --config_file accelerate_configs/<engine>.yaml`` with only the process count,
precision and port overridden, running ``tests/helpers/engines_probe.py`` (gdpo train's main plus a probe) on the CPU
recipe with the tiny model, 2 steps, and two toy rewards with spread (the tiny random model scores 0 on the GSM8K
rewards, so its advantages would all be 0 and the runs would not train).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
CPU_RECIPE = ROOT / "recipes" / "cpu" / "gdpo" / "config.yaml"
PROBE = ROOT / "tests" / "helpers" / "engines_probe.py"
# Deterministic toy rewards with spread in every group (tests/helpers/toy.py); one of them returns None for some rows.
TOY_REWARDS = ["tests.helpers.toy.parity_reward", "tests.helpers.toy.length_mod_reward"]
# A high learning rate so 2 steps move the weights far more than engine-to-engine float noise.
RECIPE_FLAGS = ["--model_name_or_path", "builtin:tiny", "--max_steps", "2", "--learning_rate", "1e-2"]
ABORT = "terminate called"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def engine_env(cache_dir: Path, **extra: str) -> dict:
    """The launch environment: offline, one thread per process, compiled ops cached in ``cache_dir``.

    DeepSpeed JIT-compiles a small shared-memory communication op with g++ on first use (~45 s) into
    ``TORCH_EXTENSIONS_DIR`` (default ~/.cache/torch_extensions); the tests keep it in the project's pytest cache.
    """
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TORCH_EXTENSIONS_DIR": str(cache_dir),
        **extra,
    }


def launch(
    config: str,
    output_dir: Path,
    env: dict,
    num_processes: int = 2,
    extra_flags: tuple = (),
    timeout: int = 900,
    *,
    recipe: Path = CPU_RECIPE,
    recipe_flags: tuple = (*RECIPE_FLAGS, "--reward_funcs", *TOY_REWARDS),
):
    """Run the probe under ``accelerate launch``; fail with the tail of the logs on a non-zero exit or an abort.

    ``recipe`` with ``recipe_flags`` (by default the CPU recipe on the tiny model with the toy rewards, above), then
    ``extra_flags``, appended last (they override the recipe and the flags before them).
    """
    accelerate = Path(sys.executable).with_name("accelerate")
    command = [
        str(accelerate), "launch", "--config_file", str(ROOT / "accelerate_configs" / config),
        "--num_processes", str(num_processes), "--mixed_precision", "no", "--main_process_port", str(free_port()),
        str(PROBE), "--config", str(recipe), *recipe_flags, "--output_dir", str(output_dir), *extra_flags,
    ]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    logs = result.stdout[-3000:] + result.stderr[-6000:]
    assert result.returncode == 0, logs
    # A rank that aborts at exit is a failure even if the launcher hid it. It used to happen now and then under ZeRO-3
    # (about 1 run in 13); the processes now end without interpreter teardown (gdpo_trl.cli.engines.end_process).
    assert ABORT not in result.stderr, logs
    return result


def load_probes(output_dir: Path, num_processes: int = 2) -> list[dict]:
    return [json.loads((output_dir / f"probe-rank{rank}.json").read_text()) for rank in range(num_processes)]


MAIN = "gdpo_trl.cli.train.train"  # the function each launched process trains in


def assert_main_ran_engine_hooks(probes: list[dict]) -> None:
    """On every process, gdpo train's own ``main`` (not the probe) parsed the recipe, then called
    ``check_fsdp_engaged`` before training, trained, then called ``shutdown_distributed``, which left no process
    group up. The probe records these calls without making them (tests/helpers/engines_probe.py)."""
    for rank, probe in enumerate(probes):
        record = probe.get("main")
        assert record is not None, f"rank {rank}: gdpo train's main did not return normally"
        events = [(event["event"], event["caller"]) for event in record["events"]]
        expected = [
            ("parse_args", MAIN), ("check_fsdp_engaged", MAIN), ("train", None), ("trained", None),
            ("shutdown_distributed", MAIN),
        ]  # fmt: skip
        assert events == expected, (rank, events)
        assert record["distributed_initialized_after"] is False, rank


def assert_advantages_are_slices_of_gdpo(probes: list[dict]) -> None:
    """Each process trained on its slice of ``gdpo_advantages`` of the gathered rewards, and they are not all 0."""
    from gdpo_trl.core.advantages import gdpo_advantages

    assert len({len(probe["batches"]) for probe in probes}) == 1 and probes[0]["batches"]
    for rank, probe in enumerate(probes):
        for step, batch in enumerate(probe["batches"]):
            assert batch["rewards"] == probes[0]["batches"][step]["rewards"]  # every rank saw the same gathered matrix
            rewards = torch.tensor(batch["rewards"])
            expected = gdpo_advantages(
                rewards, batch["weights"], batch["num_generations"], batch_norm=batch["batch_norm"]
            )
            local = torch.tensor(batch["local_advantages"])
            n = len(local)
            assert rewards.shape[0] == n * len(probes)
            torch.testing.assert_close(local, expected[rank * n : (rank + 1) * n], atol=1e-6, rtol=1e-5)
            assert local.abs().max() > 0.1  # the toy rewards have spread: a zero slice would test nothing


def assert_sharded(probes: list[dict], *, dtensor: bool) -> None:
    """Each process holds a strict part of every 2-D weight, and the parts add up to the whole."""
    names = list(probes[0]["params"])
    matrices = [name for name in names if name.endswith(".weight") and "norm" not in name]
    assert matrices
    for name in names:
        counts = [probe["params"][name] for probe in probes]
        assert all(count["dtensor"] == dtensor for count in counts), name
        if name in matrices:
            assert all(count["local"] < count["full"] for count in counts), (name, counts)
        # ZeRO-3 pads the last shard, FSDP2 splits rows unevenly: the parts cover the whole, barely more.
        assert counts[0]["full"] <= sum(count["local"] for count in counts) <= counts[0]["full"] + len(probes), name


def load_state_dict(path: Path) -> dict:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def assert_same_model(path: Path, reference: Path, initial: Path) -> None:
    """The saved model loads with ``from_pretrained`` and equals ``reference`` within float tolerance, while both
    moved well away from ``initial`` (so the equality is not that of two untrained models)."""
    saved, expected, start = load_state_dict(path), load_state_dict(reference), load_state_dict(initial)
    assert saved.keys() == expected.keys()
    for name in saved:
        torch.testing.assert_close(saved[name], expected[name], atol=5e-5, rtol=1e-4, msg=name)
    moved = max((expected[name] - start[name]).abs().max().item() for name in start)
    assert moved > 1e-3, moved


_DDP_RUNS: dict[str, Path] = {}


def ddp_reference(tmp_path_factory, env: dict) -> Path:
    """The same run under plain DDP (``--multi_gpu`` on CPU processes: torchrun and gloo), once per session."""
    key = env.get("GDPO_TRL_CACHE", "")
    if key not in _DDP_RUNS:
        output_dir = tmp_path_factory.mktemp("ddp") / "run"
        launch("ddp.yaml", output_dir, env)
        probes = load_probes(output_dir)
        assert all(probe["engine"]["distributed_type"] == "MULTI_CPU" for probe in probes)
        _DDP_RUNS[key] = output_dir
    return _DDP_RUNS[key]
