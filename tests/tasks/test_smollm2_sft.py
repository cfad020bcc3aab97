"""The format start's build: a full fine-tune's weight change cut to a LoRA adapter by truncated SVD, and the rows
the SFT and H8's control train on."""

import json

import pytest
import torch

from gdpo_trl.tasks.smollm2_sft import low_rank_adapter, sft_dataset, tagged_solution


def test_an_adapter_of_enough_rank_reproduces_the_tuned_linear_layers(tiny_model_path):
    """A change of rank 2 in every linear layer, cut at rank 4: the merged model equals the tuned one there, and
    embeddings and norms stay the base's."""
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    tuned = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for module in tuned.modules():
            if isinstance(module, torch.nn.Linear) and module is not tuned.get_output_embeddings():
                rows, cols = module.weight.shape
                module.weight += torch.randn(rows, 2, generator=generator) @ torch.randn(2, cols, generator=generator)
    merged = low_rank_adapter(base, tuned, rank=4, alpha=8).merge_and_unload()
    expected = dict(tuned.named_parameters())
    linear = [n for n, m in merged.named_modules() if isinstance(m, torch.nn.Linear) and "lm_head" not in n]
    assert linear
    for name in linear:
        torch.testing.assert_close(merged.get_submodule(name).weight, expected[f"{name}.weight"], atol=1e-5, rtol=0)


def test_a_rank_too_small_keeps_the_largest_directions(tiny_model_path):
    """Cut at rank 1, a change of rank 2 keeps its larger singular direction: the error is the smaller one."""
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    tuned = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    name, layer = next((n, m) for n, m in tuned.named_modules() if n.endswith("q_proj"))
    rows, cols = layer.weight.shape
    u, v = torch.linalg.qr(torch.randn(rows, 2))[0], torch.linalg.qr(torch.randn(cols, 2))[0]
    with torch.no_grad():
        layer.weight += u @ torch.diag(torch.tensor([3.0, 0.5])) @ v.T
    merged = low_rank_adapter(base, tuned, rank=1, alpha=1).merge_and_unload()
    error = merged.get_submodule(name).weight - layer.weight
    assert torch.linalg.matrix_norm(error).item() == pytest.approx(0.5, abs=1e-4)


def test_the_control_draws_rows_after_the_format_sft_by_seed(tmp_path):
    rows = [{"question": f"q{i}", "answer": f"{i} + 0 = <<{i}+0={i}>>{i}\n#### {i}"} for i in range(30)]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    first = sft_dataset(data, 4)
    assert [c[0]["content"] for c in first["completion"]] == [tagged_solution(r["answer"]) for r in rows[:4]]
    drawn = sft_dataset(data, 8, skip=20, seed=1)
    numbers = [int(c[0]["content"].split("<answer>\n")[1].split("\n")[0]) for c in drawn["completion"]]
    assert sorted(set(numbers)) == sorted(numbers) and all(n >= 20 for n in numbers)
    assert numbers == [
        int(c[0]["content"].split("<answer>\n")[1].split("\n")[0]) for c in sft_dataset(data, 8, 20, 1)["completion"]
    ]
    assert numbers != sorted(numbers) or sft_dataset(data, 8, 20, 2)["completion"] != drawn["completion"]
    assert tagged_solution(rows[3]["answer"]) == "<think>\n3 + 0 = 3\n</think>\n<answer>\n3\n</answer>"
