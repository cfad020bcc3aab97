"""Test-only entry point: ``gdpo train``'s own ``main`` with a probe that looks at the engine from inside the run.

Launched by tests/test_engines_*.py as ``accelerate launch ... tests/helpers/engines_probe.py --config <recipe> ...``.
It patches three ``GDPOTrainer`` methods in this process only (the package is unchanged) and, after training,
writes ``<output_dir>/probe-rank<r>.json`` with:

- ``engine``: the distributed type accelerate chose, the class of the wrapped model, the DeepSpeed ZeRO stage;
- ``params``: per parameter, the full element count and the count this process holds (a ZeRO-3 or FSDP2 shard is
  smaller than the whole), and whether it is a DTensor (FSDP2);
- ``batches``: per generation batch, the gathered reward matrix ``[N_global, K]``, the reward weights and the
  advantages this process trained on (``[N_local]``), so the test recomputes them with ``gdpo_advantages``.

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
from gdpo_trl.trainer import GDPOTrainer

BATCHES: list[dict] = []


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
        result = train(self, *args, **kwargs)
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


def _check_after_parsing(check) -> None:
    """Run ``check()`` right after gdpo train has parsed its arguments (where main should call it)."""
    parse = train_cli.parse_args

    def parse_then_check(*args, **kwargs):
        parsed = parse(*args, **kwargs)
        check()
        return parsed

    train_cli.parse_args = parse_then_check


def main() -> None:
    _patch_trainer()
    if os.environ.get("GDPO_ENGINES_FORCE_FSDP") == "1":
        from tests.helpers.engines_fsdp import force_fsdp_on_cpu

        force_fsdp_on_cpu()
    if os.environ.get("GDPO_TEST_VLLM_SYNC"):  # vLLM on CPU: TRL's weight sync replaced (tests/helpers/vllm_cpu_sync.py)
        from tests.helpers.vllm_cpu_sync import install_from_env

        install_from_env()
    # What gdpo train's main should call once the training arguments exist (see gdpo_trl/cli/engines.py).
    from gdpo_trl.cli.engines import check_fsdp_engaged, shutdown_distributed

    _check_after_parsing(check_fsdp_engaged)
    train_cli.main(sys.argv[1:])
    # What gdpo train's main should end with (see gdpo_trl/cli/engines.py): a clean distributed shutdown.
    shutdown_distributed()


if __name__ == "__main__":
    main()
