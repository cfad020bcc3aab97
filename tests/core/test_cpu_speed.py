"""cpu_dtype: the dtype a CPU computes fast, chosen from its flags; float32 leaves a run's numbers as they were."""

import pytest
import torch

from gdpo_trl.core.cpu_speed import choose_cpu_dtype, cpu_flags, native_bf16_flag, quiet_thread_waits
from gdpo_trl.core.errors import InputError
from tests.helpers.toy import parity_reward, toy_config, toy_dataset

EPYC = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16 avx512_vnni\nbugs\t\t: none\n"
XEON = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\n"
SAPPHIRE = "flags\t\t: avx512f avx512_bf16 amx_bf16 amx_tile\n"


def test_flags_are_read_from_cpuinfo():
    assert native_bf16_flag(cpu_flags(EPYC)) == "avx512_bf16"
    assert native_bf16_flag(cpu_flags(XEON)) is None
    assert native_bf16_flag(cpu_flags(SAPPHIRE)) == "amx_bf16"  # AMX first: the faster of the two
    assert cpu_flags("") == set()


@pytest.mark.parametrize(
    ("setting", "cpuinfo", "dtype", "reason"),
    [
        ("auto", EPYC, "bfloat16", "native bf16 (avx512_bf16)"),
        ("auto", XEON, "float32", "no native bf16"),
        ("float32", EPYC, "float32", "set by cpu_dtype (this CPU has native bf16 (avx512_bf16))"),
        ("bfloat16", XEON, "bfloat16", "set by cpu_dtype (this CPU has no native bf16)"),
    ],
)
def test_auto_follows_the_cpu_and_a_recipe_can_force_either(setting, cpuinfo, dtype, reason):
    chosen, why = choose_cpu_dtype(setting, cpu_flags(cpuinfo))
    assert chosen == dtype
    assert why.startswith(f"{dtype}:") and reason in why


def test_a_wrong_setting_is_one_line_naming_the_choices(tmp_path):
    with pytest.raises(InputError, match="cpu_dtype='fp8': use one of auto, bfloat16, float32"):
        toy_config(tmp_path, cpu_dtype="fp8")


def test_cpu_dtype_sets_bf16_on_a_cpu(tmp_path):
    assert toy_config(tmp_path, cpu_dtype="bfloat16").bf16 is True
    assert toy_config(tmp_path, cpu_dtype="float32", bf16=True).bf16 is False  # cpu_dtype wins over bf16
    assert toy_config(tmp_path).bf16 is False  # unset: TRL's fields decide, as before


def test_waiting_policy_is_set_only_where_the_user_chose_none():
    env = {}
    quiet_thread_waits(env)
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"}
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    quiet_thread_waits(env)
    assert env == {"OMP_WAIT_POLICY": "ACTIVE"}


def _trained_weights(model_path, output_dir, **overrides):
    from gdpo_trl import GDPOTrainer

    args = toy_config(output_dir, max_steps=1, **overrides)
    trainer = GDPOTrainer(model_path, reward_funcs=[parity_reward], args=args, train_dataset=toy_dataset())
    trainer.train()
    return {name: p.detach().clone() for name, p in trainer.model.named_parameters()}, trainer.state.log_history[0]


def test_float32_is_bit_for_bit_what_it_was(tiny_model_path, tmp_path):
    """cpu_dtype: float32 trains exactly as a recipe without the field: same loss, same weights to the bit."""
    before, log_before = _trained_weights(tiny_model_path, tmp_path / "a")
    after, log_after = _trained_weights(tiny_model_path, tmp_path / "b", cpu_dtype="float32")
    assert log_after["loss"] == log_before["loss"]
    assert all(torch.equal(before[name], after[name]) for name in before)
    assert all(t.dtype == torch.float32 for t in after.values())


def test_the_model_loads_in_the_chosen_dtype(tiny_model_path, tmp_path):
    """The Python API as the recipe: cpu_dtype sets the weights' dtype too, not only autocast."""
    from gdpo_trl import GDPOTrainer

    args = toy_config(tmp_path, cpu_dtype="bfloat16")
    assert args.model_init_kwargs == {"dtype": "bfloat16"}
    trainer = GDPOTrainer(tiny_model_path, reward_funcs=[parity_reward], args=args, train_dataset=toy_dataset())
    assert next(trainer.model.parameters()).dtype == torch.bfloat16
