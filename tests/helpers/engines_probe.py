"""Test-only entry point: ``gdpo train``'s own ``main`` with a probe that looks at the engine from inside the run.

Launched by tests/test_engines_*.py as ``accelerate launch ... tests/helpers/engines_probe.py --config <recipe> ...``.
It patches three ``GDPOTrainer`` methods in this process only (the package is unchanged) and, after training,
writes ``<output_dir>/probe-rank<r>.json`` with:

- ``engine``: the distributed type accelerate chose, the class of the wrapped model, the DeepSpeed ZeRO stage;
- ``params``: per parameter, the full element count and the count this process holds (a ZeRO-3 or FSDP2 shard is
  smaller than the whole), and whether it is a DTensor (FSDP2);
- ``batches``: per generation batch, the gathered reward matrix ``[N_global, K]``, the reward weights and the
  advantages this process trained on (``[N_local]``), so the test recomputes them with ``gdpo_advantages``;
- ``main`` (added once gdpo train's ``main`` has returned): the calls main made, in order, with their callers
  (``parse_args``, ``check_fsdp_engaged``, ``shutdown_distributed``, and training itself), and whether a process
  group was still up after main. The probe only watches these calls: it makes none of them itself, so a main that
  stopped making one fails the tests.

Why not scrape logs: logs say what TRL printed, not what the engine did. Why not a TRL callback: a callback sees
neither the gathered rewards nor the per-process advantages.

``GDPO_ENGINES_FORCE_FSDP=1`` also applies the test-only FSDP override of tests/helpers/engines_fsdp.py before training;
``GDPO_TEST_VLLM_SYNC=cpu|none`` replaces TRL's vLLM weight sync (tests/helpers/vllm_cpu_sync.py).
"""

import json
import os
import sys
from pathlib import Path

from gdpo_trl.cli import train as train_cli
from gdpo_trl.recipe import arguments
from gdpo_trl.trainer import GDPOTrainer

BATCHES: list[dict] = []
EVENTS: list[dict] = []  # what gdpo train's main called, in order (see _observe_main)
PROBE_PATH: Path | None = None


def _patch_trainer() -> None:
    compute, generate = GDPOTrainer.compute_advantages, GDPOTrainer._generate_and_score_completions
    train = GDPOTrainer.train

    def recording_compute(self, rewards, num_generations):
        advantages = compute(self, rewards, num_generations)
        BATCHES.append(
            {
                "rewards": rewards.tolist(),
                "weights": self.reward_weights.tolist(),
                "num_generations": num_generations,
                "batch_norm": bool(self.args.gdpo_batch_norm),
            }
        )
        return advantages

    def recording_generate(self, inputs):
        output = generate(self, inputs)
        BATCHES[-1]["local_advantages"] = output["advantages"].tolist()
        return output

    def probing_train(self, *args, **kwargs):
        EVENTS.append({"event": "train", "caller": None})
        result = train(self, *args, **kwargs)
        EVENTS.append({"event": "trained", "caller": None})
        _write_probe(self)
        return result

    GDPOTrainer.compute_advantages = recording_compute
    GDPOTrainer._generate_and_score_completions = recording_generate
    GDPOTrainer.train = probing_train


def _param_counts(param) -> dict:
    """Full and locally held element counts of one parameter under any engine."""
    from torch.distributed.tensor import DTensor

    if hasattr(param, "ds_numel"):  # DeepSpeed ZeRO-3: `param` is an empty placeholder, `ds_tensor` the shard
        return {"full": int(param.ds_numel), "local": int(param.ds_tensor.numel()), "dtensor": False}
    if isinstance(param, DTensor):  # FSDP2: a DTensor sharded along dim 0
        return {"full": int(param.numel()), "local": int(param.to_local().numel()), "dtensor": True}
    return {"full": int(param.numel()), "local": int(param.numel()), "dtensor": False}


def _write_probe(trainer) -> None:
    accelerator = trainer.accelerator
    wrapped = trainer.model_wrapped
    engine = {
        "distributed_type": str(accelerator.distributed_type.value),
        "wrapped_class": f"{type(wrapped).__module__}.{type(wrapped).__name__}",
        "num_processes": accelerator.num_processes,
        "process_index": accelerator.process_index,
        "zero_stage": wrapped.zero_optimization_stage() if hasattr(wrapped, "zero_optimization_stage") else None,
        "is_fsdp2": bool(getattr(accelerator, "is_fsdp2", False)),
    }
    params = {name: _param_counts(p) for name, p in trainer.model.named_parameters()}
    probe = {"engine": engine, "params": params, "batches": BATCHES}
    path = Path(trainer.args.output_dir) / f"probe-rank{accelerator.process_index}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(probe))
    global PROBE_PATH
    PROBE_PATH = path


def _observe_main() -> None:
    """Record, in order, what a launched process of gdpo train (``gdpo_trl.cli.train.train``) does around training,
    without doing any of it for it.

    ``train`` looks ``parse_args`` up in :mod:`gdpo_trl.recipe.arguments`, ``check_fsdp_engaged`` and
    ``shutdown_distributed`` in its module's globals when it runs, so wrapping them there sees each call and its caller: ``EVENTS`` gets ``{"event": name, "caller":
    "module.function"}``, and ``probing_train`` adds ``train`` and ``trained`` around training. A main that stopped calling a function
    leaves its event out, and the tests (``assert_main_ran_engine_hooks``) fail.
    """

    def observed(module, name):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            caller = sys._getframe(1)
            EVENTS.append({"event": name, "caller": f"{caller.f_globals.get('__name__')}.{caller.f_code.co_name}"})
            return original(*args, **kwargs)

        setattr(module, name, wrapper)

    observed(arguments, "parse_args")  # train imports it from there when it runs
    for name in ("check_fsdp_engaged", "shutdown_distributed"):
        observed(train_cli, name)


def _record_exit() -> None:
    """After main returned: add the events, and whether a process group is still up, to this process's probe."""
    import torch.distributed as dist

    if PROBE_PATH is None:  # training never finished: there is no probe to complete
        return
    probe = json.loads(PROBE_PATH.read_text())
    probe["main"] = {"events": EVENTS, "distributed_initialized_after": dist.is_available() and dist.is_initialized()}
    PROBE_PATH.write_text(json.dumps(probe))


def main() -> None:
    _patch_trainer()
    if os.environ.get("GDPO_ENGINES_FORCE_FSDP") == "1":
        from tests.helpers.engines_fsdp import force_fsdp_on_cpu

        force_fsdp_on_cpu()
    if os.environ.get("GDPO_TEST_VLLM_SYNC"):  # vLLM on CPU: TRL's sync replaced (tests/helpers/vllm_cpu_sync.py)
        from tests.helpers.vllm_cpu_sync import install_from_env

        install_from_env()
    _observe_main()
    train_cli.process_main(sys.argv[1:])
    _record_exit()


if __name__ == "__main__":
    from gdpo_trl.cli.engines import end_process

    end_process(lambda _argv: main())  # as python -m gdpo_trl.cli.train ends
