"""FSDP2 for real on 2 CPU processes, and the refusal of an FSDP config that would silently run as DDP.

accelerate enables FSDP only on GPU-like devices, so the training test applies a test-only override
(tests/helpers/engines_fsdp.py, explained there) that flips accelerate's distributed type to FSDP for CPU processes; the
FSDP2 plugin, its settings from accelerate_configs/fsdp2.yaml and the sharding are accelerate's and torch's own.
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


@pytest.fixture(scope="module")
def env(request, tiny_model_path):
    return engine_env(request.config.cache.mkdir("torch_extensions"))


@pytest.mark.slow
@pytest.mark.engines
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


@pytest.mark.slow
@pytest.mark.engines
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
