"""builtin:qwen2.5-warmstart (gdpo_trl.tasks.qwen_warmstart): its examples, its completion-only loss, a short build,
and how the name resolves. The full build (minutes) is not run here."""

import json
from pathlib import Path

import pytest
import torch

from gdpo_trl.tasks.qwen_warmstart import QwenRecipe, build, completion_loss, resolve_warmstart, tokenized_examples


@pytest.fixture(scope="module")
def tokenizer(model_cache):
    from gdpo_trl.models.qwen import qwen_tokenizer

    return qwen_tokenizer()


def test_examples_are_the_rl_prompt_then_the_trace_and_eos(tokenizer):
    from gdpo_trl.tasks.warmstart_data import sft_dataset

    recipe = QwenRecipe()
    examples = tokenized_examples(tokenizer, 4, 0, recipe)
    rows = sft_dataset(4, 0, recipe.problems())
    for (prompt, completion), row in zip(examples, rows, strict=True):
        rendered = tokenizer.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
        assert tokenizer.decode(prompt) == rendered and rendered.endswith("<|im_start|>assistant\n")
        assert completion[-1] == tokenizer.eos_token_id
        assert tokenizer.decode(completion[:-1]) == row["completion"][0]["content"]


def test_completion_loss_is_cross_entropy_on_completion_tokens_only(tokenizer):
    from transformers import Qwen2ForCausalLM

    from gdpo_trl.models.qwen import qwen_config

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(qwen_config("tiny"))
    batch = tokenized_examples(tokenizer, 3, 1, QwenRecipe())
    loss = completion_loss(model, batch, tokenizer.pad_token_id)
    expected = []
    for prompt, completion in batch:  # one example at a time, full logits, no padding
        logits = model(input_ids=torch.tensor([prompt + completion])).logits[0]
        start = len(prompt) - 1
        expected.append(torch.log_softmax(logits[start:-1], -1).gather(1, torch.tensor(completion)[:, None]))
    torch.testing.assert_close(loss, -torch.cat(expected).mean(), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_short_build_saves_a_loadable_model(tmp_path, tokenizer):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build(tmp_path / "ws", seed=0, recipe=QwenRecipe(steps=2, batch_size=2), measure=False)
    record = json.loads((path / "warmstart.json").read_text())
    assert record["recipe"]["steps"] == 2 and record["parameters"] == 9_798_208
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.config.vocab_size == 151936
    assert AutoTokenizer.from_pretrained(path).encode("1,080") == [16, 11, 15, 23, 15]


def test_name_resolves_to_a_seeded_cache_folder(monkeypatch, tmp_path):
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.models import builtins

    monkeypatch.setenv("GDPO_TRL_CACHE", str(tmp_path))
    monkeypatch.setattr(builtins, "cached_build", lambda target, build: target)  # no build here
    path = Path(resolve_model("builtin:qwen2.5-warmstart@3"))
    assert path.parent == tmp_path and path.name.startswith("qwen2.5-warmstart-seed3-")
    assert Path(resolve_warmstart(3)) == path and Path(resolve_warmstart(4)) != path
