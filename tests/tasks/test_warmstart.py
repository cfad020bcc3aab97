"""Tests for gdpo_trl.tasks.warmstart: the flawed-trace generator, the SFT data, and the built warm start's starting rewards.

The warm start is built once per machine by ``resolve_model("builtin:warmstart")`` into the user's model cache (see
conftest), so ``make demo``, these tests and other test modules asking for it share one build.
"""

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gdpo_trl.core.plugins import resolve_model
from gdpo_trl.models.tiny import SPECIAL_TOKENS, TAGS, build_tokenizer, save_tiny_model
from gdpo_trl.rewards.gsm8k import correctness_reward, format_reward, integer_reward
from gdpo_trl.tasks.sft import measure_rewards, weights_checksum
from gdpo_trl.tasks.traces import FORMAT_BREAKS, NON_INTEGER_STYLES, TraceMix, gold_answer, make_trace, reasoning
from gdpo_trl.tasks.warmstart_data import Recipe, sft_dataset, warmstart_problems

BAND = (0.2, 0.7)  # every starting reward must leave RL room to move in both directions
ROWS = warmstart_problems(2000, seed=0)


def _traces(n, mix, seed=1):
    rng = random.Random(seed)
    return [(row, *make_trace(row, rng, mix)) for row in (ROWS[i % len(ROWS)] for i in range(n))]


@pytest.mark.parametrize("mix", [TraceMix(), TraceMix(broken_format=0.2, wrong_answer=0.6, non_integer=0.1)])
def test_trace_rates_match_the_mix(mix):
    traces = _traces(20_000, mix)
    n = len(traces)
    # Binomial standard deviation at n=20k is under 0.004; 0.015 is about 4 of them.
    assert sum(f["format"] is not None for _, _, f in traces) / n == pytest.approx(mix.broken_format, abs=0.015)
    assert sum(f["wrong"] for _, _, f in traces) / n == pytest.approx(mix.wrong_answer, abs=0.015)
    assert sum(f["style"] is not None for _, _, f in traces) / n == pytest.approx(mix.non_integer, abs=0.015)
    for kind in FORMAT_BREAKS:
        share = sum(f["format"] == kind for _, _, f in traces) / n
        assert share == pytest.approx(mix.broken_format / len(FORMAT_BREAKS), abs=0.01), kind
    for style in NON_INTEGER_STYLES:
        share = sum(f["style"] == style for _, _, f in traces) / n
        assert share == pytest.approx(mix.non_integer / len(NON_INTEGER_STYLES), abs=0.01), style


def test_each_imperfection_costs_exactly_its_reward():
    """The rewards of every trace follow from its flags, so the mix sets the starting rewards as intended."""
    traces = _traces(4000, TraceMix())
    texts = [text for _, text, _ in traces]
    golds = [str(gold_answer(row)) for row, _, _ in traces]
    fmt, correct, integer = format_reward(texts), correctness_reward(texts, answer=golds), integer_reward(texts)
    for (_, text, flags), f, c, i in zip(traces, fmt, correct, integer, strict=True):
        has_answer = flags["format"] != "no_answer_tags"
        assert f == float(flags["format"] is None), text
        assert c == float(has_answer and not flags["wrong"]), text
        assert i == float(has_answer and flags["style"] is None), text


def test_extreme_mixes():
    clean = _traces(200, TraceMix(broken_format=0, wrong_answer=0, non_integer=0))
    assert all(
        text == f"<think>{reasoning(row)}</think>\n<answer>{gold_answer(row)}</answer>" for row, text, _ in clean
    )
    broken = _traces(200, TraceMix(broken_format=1, wrong_answer=1, non_integer=1))
    texts = [text for _, text, _ in broken]
    golds = [str(gold_answer(row)) for row, _, _ in broken]
    assert sum(format_reward(texts)) == sum(correctness_reward(texts, answer=golds)) == sum(integer_reward(texts)) == 0


def test_traces_are_short_and_deterministic():
    assert reasoning(ROWS[0]) == "{}*{}={}".format(*_numbers(ROWS[0]))
    assert max(len(text) for _, text, _ in _traces(2000, TraceMix())) < 60  # well under a 64-96 token budget
    assert _traces(50, TraceMix(), seed=3) == _traces(50, TraceMix(), seed=3)


def _numbers(row):
    return row["operands"]["count"], row["operands"]["price"], gold_answer(row)


def test_problems_are_easy_and_splits_disjoint():
    recipe = Recipe()
    assert {row["template"] for row in ROWS} == set(recipe.templates)
    assert all(max(row["operands"].values()) <= recipe.max_factor for row in ROWS)
    train = {row["question"] for row in warmstart_problems(3000, seed=0)}
    held_out = {row["question"] for row in warmstart_problems(300, seed=5, split="eval")}
    assert train and held_out and not train & held_out
    assert warmstart_problems(20, seed=4) == warmstart_problems(20, seed=4)
    with pytest.raises(ValueError, match="split"):
        warmstart_problems(1, split="test")


def test_sft_data_trains_on_the_completion_and_its_end():
    """The prompt renders to a prefix of prompt + completion, which ends with the eos token, so the model learns to stop."""
    dataset = sft_dataset(8, seed=0)
    tokenizer = build_tokenizer()
    for example in dataset:
        assert example["prompt"][0]["role"] == "system" and example["completion"][0]["role"] == "assistant"
        prompt = tokenizer.apply_chat_template(example["prompt"], add_generation_prompt=True)["input_ids"]
        full = tokenizer.apply_chat_template(example["prompt"] + example["completion"])["input_ids"]
        assert full[: len(prompt)] == prompt
        completion = full[len(prompt) :]
        assert tokenizer.eos_token_id in completion and len(completion) < 64


def test_tokenizer_survives_autotokenizer(tmp_path):
    """TRL loads the tokenizer with AutoTokenizer from the model folder: spaces and newlines must survive that."""
    from transformers import AutoTokenizer

    save_tiny_model(tmp_path)
    built, loaded = build_tokenizer(), AutoTokenizer.from_pretrained(tmp_path)
    text = "<|im_start|>user\nSam buys 3 pens at $4 each.<|im_end|>\n<think>3*4=12</think>\n<answer>12</answer>"
    assert loaded(text)["input_ids"] == built(text)["input_ids"]
    assert loaded.decode(loaded(text)["input_ids"]) == text
    # One token per character, and one per tag or special token.
    whole = [*TAGS, *SPECIAL_TOKENS]
    assert len(built(text)["input_ids"]) == len(text) - sum((len(tok) - 1) * text.count(tok) for tok in whole)


@pytest.fixture(scope="session")
def warmstart_path(model_cache):
    start = time.perf_counter()
    path = resolve_model("builtin:warmstart")
    print(f"warm start resolved in {time.perf_counter() - start:.1f}s: {path}")
    return path


def test_builtin_warmstart_is_the_shipped_build(warmstart_path):
    from transformers import AutoModelForCausalLM

    from gdpo_trl.models.shipped import SHIPPED_DIR, manifest, weights_sha256

    assert Path(warmstart_path) == SHIPPED_DIR / "warmstart-seed0"  # not a local build: the same on every machine
    assert resolve_model("builtin:warmstart@0") == warmstart_path  # the same seed, spelled out
    assert weights_sha256(warmstart_path) == manifest()["warmstart"]["weights_sha256"]
    model = AutoModelForCausalLM.from_pretrained(warmstart_path)
    assert sum(p.numel() for p in model.parameters()) == 155_008
    record = json.loads((Path(warmstart_path) / "warmstart.json").read_text())
    assert record["seed"] == 0 and record["recipe"]["mix"] == vars(TraceMix())
    assert set(record["starting_rewards"]) >= {"format", "correctness", "integer", "completion_length"}


@pytest.mark.slow
def test_starting_rewards_are_mid_range(warmstart_path):
    """Measured afresh, on held-out prompts and another sampling seed than the build's own record."""
    rewards = measure_rewards(warmstart_path, num_prompts=64, num_samples=4, seed=1234)
    print(rewards)
    for name in ("format", "correctness", "integer"):
        assert BAND[0] <= rewards[name] <= BAND[1], (name, rewards)
    assert rewards["completion_length"] < 40 and rewards["clipped"] < 0.05  # it learned to stop


@pytest.mark.slow
def test_same_seed_same_weights(tmp_path):
    """Two short builds from one seed (in child processes, as resolve_model builds) give identical weights."""
    paths = [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    for name in ("a", "b"):
        command = [
            sys.executable,
            "-m",
            "gdpo_trl.tasks.warmstart",
            str(tmp_path / name),
            "--seed",
            "3",
            "--steps",
            "3",
        ]
        subprocess.run([*command, "--no-measure"], env=env, check=True, capture_output=True)
    assert weights_checksum(tmp_path / "a") == weights_checksum(tmp_path / "b")
