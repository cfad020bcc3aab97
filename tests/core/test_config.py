"""GDPOConfig: GDPO by default, settings checked when the config is built."""

import warnings

import pytest

from gdpo_trl import GDPOConfig

CPU = dict(bf16=False, use_cpu=True, report_to="none")


def test_defaults_to_gdpo(tmp_path):
    config = GDPOConfig(output_dir=str(tmp_path), **CPU)
    assert config.multi_objective_aggregation == "normalize_then_sum"
    assert config.gdpo_batch_norm is True


def test_typo_in_aggregation_fails_at_construction(tmp_path):
    with pytest.raises(ValueError, match="multi_objective_aggregation='normalise_then_sum' is not supported"):
        GDPOConfig(output_dir=str(tmp_path), multi_objective_aggregation="normalise_then_sum", **CPU)


def test_bad_scale_rewards(tmp_path):
    with pytest.raises(ValueError, match="scale_rewards='std' is not supported"):
        GDPOConfig(
            output_dir=str(tmp_path), scale_rewards="std", multi_objective_aggregation="sum_then_normalize", **CPU
        )


@pytest.mark.parametrize("scale", ["batch", "none", False])
def test_scale_rewards_under_gdpo_warns(tmp_path, scale):
    with pytest.warns(UserWarning, match="has no effect under GDPO"):
        GDPOConfig(output_dir=str(tmp_path), scale_rewards=scale, **CPU)


def test_scale_rewards_under_grpo_is_silent(tmp_path):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*has no effect under GDPO.*")
        config = GDPOConfig(
            output_dir=str(tmp_path), scale_rewards="none", multi_objective_aggregation="sum_then_normalize", **CPU
        )
    assert config.scale_rewards == "none"


def test_fields_are_documented():
    from dataclasses import fields

    ours = {f.name: f for f in fields(GDPOConfig)}
    for name in ("multi_objective_aggregation", "gdpo_batch_norm"):
        assert len(ours[name].metadata["help"]) > 40
        assert name in GDPOConfig.__doc__
