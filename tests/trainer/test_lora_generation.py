"""merge_lora_for_generation (gdpo_trl/trainer/lora_generation.py): generation on the adapters merged into a copy of
the weights computes what the unmerged adapters compute, leaves training's weights as they were (the same tensors,
bit for bit), and in the trainer samples the first step's completions exactly as without it."""

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from gdpo_trl import GDPOConfig, GDPOTrainer
from gdpo_trl.core.errors import InputError
from gdpo_trl.trainer.lora_generation import lora_layers, lora_merged_for_generation
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset

LORA = dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")


def lora_model(path, trained: bool):
    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), LoraConfig(**LORA))
    if trained:  # B starts at zero: give it values, as after some steps
        for layer in lora_layers(model):
            torch.nn.init.normal_(layer.lora_B["default"].weight, std=0.5)
    return model.eval()


def test_merged_generation_computes_the_adapters_and_restores_training_weights(tiny_model_path):
    model = lora_model(tiny_model_path, trained=True)
    ids = torch.tensor([[1, 5, 9, 2, 7, 3]])
    with torch.no_grad():
        unmerged = model(ids).logits
    bases = [layer.get_base_layer().weight for layer in lora_layers(model)]
    weights = [w.data for w in bases]
    values = [w.detach().clone() for w in weights]
    adapters = {n: p.requires_grad for n, p in model.named_parameters() if "lora_" in n}
    assert adapters and all(adapters.values())

    with lora_merged_for_generation(model), torch.no_grad():
        assert all(layer.disable_adapters for layer in lora_layers(model))  # the adapters' products do not run
        merged = model(ids).logits
        assert not torch.equal(bases[0].data, values[0])  # W + scale * B A in place of W
    torch.testing.assert_close(merged, unmerged, rtol=1e-5, atol=1e-5)  # the same function, up to rounding
    assert not any(layer.disable_adapters for layer in lora_layers(model))
    # the same storage back under the same Parameter objects (which the optimizer holds)
    after = [layer.get_base_layer().weight for layer in lora_layers(model)]
    assert all(a is b for a, b in zip(after, bases, strict=True))
    assert all(w.data_ptr() == original.data_ptr() for w, original in zip(bases, weights, strict=True))
    assert all(torch.equal(w.data, v) for w, v in zip(bases, values, strict=True))
    assert {n: p.requires_grad for n, p in model.named_parameters() if "lora_" in n} == adapters


def test_a_fresh_adapter_merges_to_the_weights_exactly(tiny_model_path):
    model = lora_model(tiny_model_path, trained=False)
    ids = torch.tensor([[4, 8, 15, 16, 23, 42]])
    with torch.no_grad():
        unmerged = model(ids).logits
        with lora_merged_for_generation(model):
            merged = model(ids).logits
    assert torch.equal(merged, unmerged)  # B = 0: W + 0 is W, so step 1 samples what it sampled without merging


def test_frozen_adapters_stay_frozen(tiny_model_path):
    model = lora_model(tiny_model_path, trained=True)
    for name, parameter in model.named_parameters():
        if "lora_A" in name:
            parameter.requires_grad_(False)
    with lora_merged_for_generation(model):
        pass
    assert not any(p.requires_grad for n, p in model.named_parameters() if "lora_A" in n)
    assert all(p.requires_grad for n, p in model.named_parameters() if "lora_B" in n)


def test_the_trainer_samples_step_one_alike_and_trains(tiny_model_path, tmp_path):
    def first_step(merge: bool):
        trainer = GDPOTrainer(
            tiny_model_path,
            reward_funcs=[parity_reward, length_mod_reward],
            args=toy_config(tmp_path / str(merge), max_steps=1, merge_lora_for_generation=merge),
            train_dataset=toy_dataset(),
            peft_config=LoraConfig(**LORA),
        )
        trainer.train()
        return trainer, trainer.state.log_history[0]

    plain, plain_log = first_step(False)
    merged, merged_log = first_step(True)
    for key in ("rewards/parity_reward/mean", "rewards/length_mod_reward/mean", "completions/mean_length", "loss"):
        assert merged_log[key] == plain_log[key], key
    trained = {n: p for n, p in merged.model.named_parameters() if "lora_B" in n}
    assert trained and any(p.abs().sum() > 0 for p in trained.values())  # the adapters trained through the swap


def test_refused_without_lora_and_with_vllm(tiny_model_path, tmp_path):
    with pytest.raises(InputError, match="no LoRA layer to merge"):
        GDPOTrainer(
            tiny_model_path,
            reward_funcs=[parity_reward, length_mod_reward],
            args=toy_config(tmp_path, merge_lora_for_generation=True),
            train_dataset=toy_dataset(),
        )
    with pytest.raises(InputError, match="use_vllm=true, vLLM generates from merged weights"):
        GDPOConfig(str(tmp_path), use_cpu=True, bf16=False, use_vllm=True, merge_lora_for_generation=True)
