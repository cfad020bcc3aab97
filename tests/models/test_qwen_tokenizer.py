"""Qwen2.5's tokenizer built offline (gdpo_trl.models.qwen): encodings, added tokens, chat template, saving and
reloading, the model configs, and gdpo train on builtin:qwen2.5-tiny."""

import time

import pytest
import torch

from gdpo_trl.core.plugins import resolve_model
from gdpo_trl.models.qwen import (
    ADDED_TOKENS,
    DEFAULT_SYSTEM,
    SPECIAL_TOKENS,
    build_builtin_qwen,
    qwen_config,
    qwen_tokenizer,
    qwen_tokenizer_dir,
    save_qwen_tokenizer,
)

TEXTS = [
    "Hello world",
    "1,080",
    "Natalia sold 48/2 = 24 clips in May.\n#### 72",
    "ß 毕老师 😀👍🏽 Straße 𝔘 e\u0301",
    '  \n\n x <tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call><|im_end|>',
    "don't I'LL we've\t\ttabs   spaces\r\n",
    "<think>\n3*4=12\n</think>\n<answer>\n12\n</answer>",
]


@pytest.fixture(scope="module")
def tokenizer(model_cache):
    start = time.perf_counter()
    qwen_tokenizer_dir()  # built on first use on this machine, then cached
    print(f"tokenizer ready (built or found) in {time.perf_counter() - start:.1f} s")
    return qwen_tokenizer()


def test_known_encodings(tokenizer):
    assert tokenizer.encode("Hello world") == [9707, 1879]
    assert tokenizer.encode("1,080") == [16, 11, 15, 23, 15]  # one token per digit
    assert len(tokenizer) == 151665
    assert type(tokenizer).__name__ == "Qwen2Tokenizer"  # the class AutoTokenizer gives Qwen2.5 folders


def test_added_tokens_ids_and_specialness(tokenizer):
    decoder = tokenizer.added_tokens_decoder
    for offset, token in enumerate(SPECIAL_TOKENS + ADDED_TOKENS):
        assert decoder[151643 + offset].content == token
        assert decoder[151643 + offset].special == (offset < 14), token
        assert tokenizer.convert_tokens_to_ids(token) == 151643 + offset
    assert len(SPECIAL_TOKENS) == 14 and len(ADDED_TOKENS) == 8
    assert sorted(tokenizer.all_special_ids) == list(range(151643, 151657))
    assert (tokenizer.eos_token, tokenizer.eos_token_id) == ("<|im_end|>", 151645)
    assert (tokenizer.pad_token, tokenizer.pad_token_id) == ("<|endoftext|>", 151643)
    assert tokenizer.bos_token is None
    # Added tokens are matched whole inside text.
    assert tokenizer.encode("a<tool_call>b<|im_end|>") == [64, 151657, 65, 151645]


def test_tool_call_survives_skipping_special_tokens(tokenizer):
    ids = tokenizer.encode("<|im_start|>assistant\n<tool_call>\n{}\n</tool_call><|im_end|><|endoftext|>")
    assert tokenizer.decode(ids, skip_special_tokens=True) == "assistant\n<tool_call>\n{}\n</tool_call>"


def test_multibyte_characters_split_across_tokens_decode_back(tokenizer):
    ids = tokenizer.encode(" 毕老师")
    assert ids == [6567, 107, 243, 101049]  # " 毕" is three byte tokens
    assert tokenizer.decode(ids[:1]) == " \ufffd" and tokenizer.decode(ids[:3]) == " 毕"
    for text in TEXTS:
        assert tokenizer.decode(tokenizer.encode(text)) == text.replace("e\u0301", "\u00e9")  # NFC
    assert len(tokenizer.encode("𝔘")) == 2


def test_chat_template(tokenizer):
    conversation = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    rendered = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    assert (
        rendered
        == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
    )
    without_prompt = tokenizer.apply_chat_template(conversation, tokenize=False)
    assert without_prompt == rendered.removesuffix("<|im_start|>assistant\n")
    # Like Qwen2.5-Instruct: Qwen's default system message when the conversation has none.
    user_only = tokenizer.apply_chat_template(conversation[1:], tokenize=False, add_generation_prompt=True)
    assert user_only == f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n" + rendered.split("<|im_end|>\n", 1)[1]
    ids = tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=True, return_dict=False)
    assert ids[:3] == [151644, 8948, 198] and ids[-3:] == [151644, 77091, 198]  # <|im_start|>system\n ... assistant\n


def _same_behaviour(a, b):
    for text in TEXTS:
        assert a.encode(text) == b.encode(text), text
        assert a.decode(a.encode(text), skip_special_tokens=True) == b.decode(b.encode(text), skip_special_tokens=True)
    assert len(a) == len(b) and (a.eos_token_id, a.pad_token_id) == (b.eos_token_id, b.pad_token_id)
    assert {i: (t.content, t.special) for i, t in a.added_tokens_decoder.items()} == {
        i: (t.content, t.special) for i, t in b.added_tokens_decoder.items()
    }
    conversation = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    for prompt in (True, False):
        render = lambda t, c=conversation, p=prompt: t.apply_chat_template(c, tokenize=False, add_generation_prompt=p)  # noqa: E731
        assert render(a) == render(b)
        assert render(a, c=conversation[1:]) == render(b, c=conversation[1:])


def test_saved_and_model_folders_round_trip(tokenizer, tmp_path):
    from transformers import AutoTokenizer

    saved = AutoTokenizer.from_pretrained(save_qwen_tokenizer(tmp_path / "tok"))
    assert type(saved).__name__ == "Qwen2Tokenizer"
    _same_behaviour(tokenizer, saved)
    model_folder = AutoTokenizer.from_pretrained(resolve_model("builtin:qwen2.5-tiny"))
    _same_behaviour(tokenizer, model_folder)


def test_configs_match_qwen25():
    small, large = qwen_config("0.5b"), qwen_config("1.5b")
    expected = {
        "0.5b": (small, 896, 24, 14, 2, 4864, 494_032_768),
        "1.5b": (large, 1536, 28, 12, 2, 8960, 1_543_714_304),
    }
    for config, hidden, layers, heads, kv_heads, intermediate, parameters in expected.values():
        assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (hidden, layers, heads)
        assert (config.num_key_value_heads, config.intermediate_size) == (kv_heads, intermediate)
        assert config.tie_word_embeddings and config.vocab_size == 151936 and config.max_position_embeddings == 32768
        assert config.rope_parameters["rope_theta"] == 1e6 and config.rms_norm_eps == 1e-6
        assert (config.bos_token_id, config.eos_token_id) == (151643, 151645)
        assert _parameter_count(config) == parameters  # the released models' counts
    tiny = qwen_config("tiny")
    assert tiny.vocab_size == 151936 and tiny.hidden_size // tiny.num_attention_heads == 32


def _parameter_count(config) -> int:
    from transformers import Qwen2ForCausalLM

    with torch.device("meta"):
        return sum(p.numel() for p in Qwen2ForCausalLM(config).parameters())


def test_tiny_model_builds_once_and_loads(model_cache):
    from transformers import AutoModelForCausalLM, GenerationConfig

    path = resolve_model("builtin:qwen2.5-tiny")
    assert resolve_model("builtin:qwen2.5-tiny@0") == path  # the seed is part of the name, 0 by default
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.config.vocab_size == 151936 and model.dtype == torch.float32
    assert GenerationConfig.from_pretrained(path).eos_token_id == [151645, 151643]
    with pytest.raises(ValueError, match="builtin:qwen2.5-tiny"):
        build_builtin_qwen("qwen2.5-7b")


def test_save_qwen_model_writes_weights_tokenizer_and_stopping_tokens(tmp_path, model_cache):
    import json

    from gdpo_trl.models.qwen import save_qwen_model

    path = save_qwen_model(tmp_path / "m", "tiny", seed=1)
    names = {p.name for p in path.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "generation_config.json",
        "tokenizer.json",
        "chat_template.jinja",
    } <= names
    assert json.loads((path / "generation_config.json").read_text())["eos_token_id"] == [151645, 151643]


ACCEPTANCE = [
    "--config", "recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml",
    "--model_name_or_path", "builtin:qwen2.5-tiny", "--dataset_name", "sample",
    "--use_cpu", "true", "--bf16", "false", "--use_vllm", "false", "--max_steps", "1",
    "--per_device_train_batch_size", "4", "--num_generations", "4", "--gradient_accumulation_steps", "1",
    "--max_completion_length", "16",
]  # fmt: skip
# The recipe asks for FlashAttention-2 and Weights & Biases, neither of which a CPU machine without them can use.
@pytest.mark.slow
def test_gdpo_train_on_qwen_tiny(tokenizer, tmp_path, monkeypatch):
    """The issue's acceptance command as written: one GDPO step on the CPU (flash-attn becomes sdpa and the absent
    wandb is left out, each with a warning), and the saved tokenizer is Qwen's."""
    from pathlib import Path

    from transformers import AutoTokenizer

    from gdpo_trl.cli.train import main

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    output = tmp_path / "run"
    start = time.perf_counter()
    main([*ACCEPTANCE, "--output_dir", str(output)])
    print(f"gdpo train, one step on builtin:qwen2.5-tiny: {time.perf_counter() - start:.1f} s in all")
    _same_behaviour(tokenizer, AutoTokenizer.from_pretrained(output))
    assert tokenizer.encode("a<tool_call>b") == AutoTokenizer.from_pretrained(output).encode("a<tool_call>b")
