"""The distributed engines for real: DeepSpeed ZeRO-2 and ZeRO-3, and FSDP2, with the project's accelerate configs,
2 CPU processes, gdpo train's main; and the refusal of an FSDP config that would silently run as DDP.

Each run is checked from inside (tests/helpers/engines_probe.py): the engine (and ZeRO stage), the shards each process
holds, the advantages each process trained on, and the saved model against a plain DDP run of the same seed (one DDP
run for the whole file: tests/helpers/engines_launch.ddp_reference). DeepSpeed runs on CPU with no setting (gloo
backend); only `--mixed_precision no` is needed, because the configs say bf16. accelerate enables FSDP only on
GPU-like devices, so the FSDP2 test applies a test-only override (tests/helpers/engines_fsdp.py, explained there)
that flips accelerate's distributed type to FSDP for CPU processes; the FSDP2 plugin, its settings from
accelerate_configs/fsdp2.yaml and the sharding are accelerate's and torch's own.
"""

import pytest

from gdpo_trl.cli.engines import fsdp_fallback_message
from tests.helpers.engines_launch import (
    assert_advantages_are_slices_of_gdpo,
    assert_main_ran_engine_hooks,
    assert_same_model,
    assert_sharded,
    ddp_reference,
    engine_env,
    launch,
    load_probes,
)
from tests.helpers.requirements import require_module

pytestmark = [pytest.mark.slow, pytest.mark.engines]


@pytest.fixture(scope="module")
def env(request, tiny_model_path):
    # Compiled ops go to the project's pytest cache (.pytest_cache/d/torch_extensions): built once, not in $HOME.
    return engine_env(request.config.cache.mkdir("torch_extensions"))


@pytest.mark.parametrize("stage", [2, 3])
def test_zero_trains_like_ddp(stage, env, tmp_path, tmp_path_factory, tiny_model_path):
    require_module("deepspeed", "DeepSpeed is part of the dev extra: pip install -e '.[dev]'")
    output_dir = tmp_path / "run"
    launch(f"zero{stage}.yaml", output_dir, env)
    probes = load_probes(output_dir)

    for rank, probe in enumerate(probes):
        engine = probe["engine"]
        assert engine["distributed_type"] == "DEEPSPEED"
        assert engine["wrapped_class"] == "deepspeed.runtime.engine.DeepSpeedEngine"
        assert engine["zero_stage"] == stage
        assert (engine["num_processes"], engine["process_index"]) == (2, rank)
    if stage == 3:
        assert_sharded(probes, dtensor=False)  # each process holds half of each weight, not the whole
    else:  # ZeRO-2 shards optimizer states and gradients only: every process holds every weight
        assert all(count["local"] == count["full"] for probe in probes for count in probe["params"].values())
    assert_advantages_are_slices_of_gdpo(probes)
    assert_main_ran_engine_hooks(probes)  # gdpo train's main checked the engine and shut the groups down itself
    assert_same_model(output_dir, ddp_reference(tmp_path_factory, env), tiny_model_path)


def test_fsdp2_shards_and_trains_like_ddp(env, tmp_path, tmp_path_factory, tiny_model_path):
    output_dir = tmp_path / "run"
    launch("fsdp2.yaml", output_dir, {**env, "GDPO_ENGINES_FORCE_FSDP": "1"})
    probes = load_probes(output_dir)

    for probe in probes:
        assert probe["engine"]["distributed_type"] == "FSDP" and probe["engine"]["is_fsdp2"]
        assert probe["engine"]["wrapped_class"].startswith("torch.distributed.fsdp.")
    assert_sharded(probes, dtensor=True)
    assert_advantages_are_slices_of_gdpo(probes)
    assert_main_ran_engine_hooks(probes)  # gdpo train's main checked the engine and shut the groups down itself
    assert_same_model(output_dir, ddp_reference(tmp_path_factory, env), tiny_model_path)


def test_fsdp_config_without_accelerator_is_refused(env, tmp_path):
    """Without the override, fsdp2.yaml on CPU processes would train as DDP: gdpo train stops in one line."""
    with pytest.raises(AssertionError, match="asks for FSDP, but accelerate runs plain DDP"):
        launch("fsdp2.yaml", tmp_path / "run", env)
    assert not (tmp_path / "run" / "model.safetensors").exists()


@pytest.mark.parametrize(
    ("requested", "distributed_type", "refused"),
    [(True, "FSDP", False), (False, "MULTI_CPU", False), (True, "MULTI_CPU", True), (True, "NO", True)],
)
def test_fsdp_fallback_message(requested, distributed_type, refused):
    message = fsdp_fallback_message(requested, distributed_type)
    assert (message is not None) == refused
    if refused:
        assert "\n" not in message and "FSDP" in message and "ddp.yaml" in message
