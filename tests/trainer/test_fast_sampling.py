"""fast_sampling: the inverse-CDF sampler draws the distribution transformers' sampler draws (a chi-square test on a
fixed vocabulary with many draws, which a slightly wrong distribution fails), never a masked token, refuses what is
not a distribution; generate under it samples through it where sampling is plain, leaves greedy decoding and filters
to transformers, and is put back; the trainer samples through it with ``fast_sampling``."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chi2
from transformers import AutoModelForCausalLM, GenerationConfig

from gdpo_trl import GDPOConfig, GDPOTrainer
from gdpo_trl.core.errors import InputError
from gdpo_trl.trainer import fast_sampling
from gdpo_trl.trainer.fast_sampling import exact_sampling, plain_temperature_sampling, sample_tokens
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset

# 300 tokens: two whole blocks of 128 and a padded third; a spread of probabilities over 1e-4..0.05, and masked tokens
# (probability 0) in the first block, at a block's edge and in the padded tail.
VOCAB, MASKED = 300, [0, 5, 127, 128, 299]


def distribution(seed: int = 0) -> torch.Tensor:
    logits = torch.randn(VOCAB, generator=torch.Generator().manual_seed(seed)) * 2.0
    logits[MASKED] = float("-inf")
    return torch.softmax(logits, -1)


def counts(draw, probs: torch.Tensor, rows: int = 4000, calls: int = 50) -> torch.Tensor:
    """Token counts of ``rows * calls`` draws of ``draw`` from ``probs`` (each call: ``rows`` copies of the row)."""
    batch = probs.expand(rows, VOCAB).contiguous()
    found = torch.zeros(VOCAB, dtype=torch.long)
    for _ in range(calls):
        found += torch.bincount(draw(batch), minlength=VOCAB)
    return found


def chi_square_p(observed: torch.Tensor, probs: torch.Tensor) -> float:
    """Pearson's chi-square test of ``observed`` counts against ``probs`` (tokens of probability 0 left out)."""
    keep = probs > 0
    expected = probs[keep].double() * observed.sum()
    statistic = float(((observed[keep].double() - expected) ** 2 / expected).sum())
    return float(chi2.sf(statistic, int(keep.sum()) - 1))


def test_draws_the_distribution_and_never_a_masked_token():
    torch.manual_seed(0)
    probs = distribution()
    observed = counts(sample_tokens, probs)
    assert observed[MASKED].sum() == 0
    assert chi_square_p(observed, probs) > 1e-3  # 200,000 draws: a correct sampler fails this one time in 1,000
    # transformers' own sampler, through the same test: the two agree on what they draw from.
    reference = counts(lambda b: torch.multinomial(b, 1).squeeze(1), probs)
    assert chi_square_p(reference, probs) > 1e-3


def test_the_test_has_teeth():
    # The same draws judged against a distribution a little off (temperature 1.05; a tenth of the likeliest token's
    # weight moved to its neighbour, as an off-by-one at a boundary would): a sampler that drew those would fail.
    torch.manual_seed(1)
    probs = distribution()
    observed = counts(sample_tokens, probs)
    warmer = torch.softmax(torch.log(probs) / 1.05, -1)
    assert chi_square_p(observed, warmer) < 1e-6
    moved = probs.clone()
    top = int(probs.argmax())
    moved[top], moved[top + 1] = moved[top] * 0.9, moved[top + 1] + moved[top] * 0.1
    assert chi_square_p(observed, moved) < 1e-6


def test_a_row_that_is_not_a_distribution_is_refused():
    for bad in (float("nan"), float("inf")):
        probs = distribution().expand(2, VOCAB).clone()
        probs[1, 3] = bad
        with pytest.raises(ValueError, match="NaN or inf, or sums to 0"):
            sample_tokens(probs)
    with pytest.raises(ValueError, match="sums to 0"):
        sample_tokens(torch.zeros(1, VOCAB))


def test_one_possible_token_is_always_drawn():
    probs = torch.zeros(64, VOCAB)
    probs[:, 257] = 1.0
    assert sample_tokens(probs).eq(257).all()


def test_plain_temperature_sampling_is_what_the_sampler_takes_over():
    model_default = GenerationConfig(do_sample=True)
    assert plain_temperature_sampling(GenerationConfig(do_sample=True, temperature=0.7, top_k=0), model_default)
    # transformers' default top_k (50) applies when nobody sets one: a filter, left to transformers.
    assert not plain_temperature_sampling(GenerationConfig(do_sample=True), None)
    assert not plain_temperature_sampling(GenerationConfig(do_sample=True, top_k=0, top_p=0.9), None)
    assert not plain_temperature_sampling(GenerationConfig(do_sample=True, top_k=0, min_p=0.1), None)
    assert not plain_temperature_sampling(GenerationConfig(do_sample=False, top_k=0), None)


def test_generate_samples_through_it_greedy_is_unchanged_and_generate_comes_back(tiny_model_path, monkeypatch):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    drawn = []
    real = fast_sampling.sample_tokens
    monkeypatch.setattr(fast_sampling, "sample_tokens", lambda p: drawn.append(p.shape) or real(p))
    with torch.no_grad():
        greedy = model.generate(ids, max_new_tokens=6, do_sample=False)
        with exact_sampling(model):
            assert torch.equal(model.generate(ids, max_new_tokens=6, do_sample=False), greedy)
            assert drawn == []  # greedy decoding never samples
            sampled = model.generate(ids, max_new_tokens=6, min_new_tokens=6, do_sample=True, top_k=0, temperature=0.8)
            assert drawn == [(2, model.config.vocab_size)] * 6 and sampled.shape == (2, 10)
            model.generate(ids, max_new_tokens=3, do_sample=True, top_k=5)  # a filter: transformers' sampler
            assert len(drawn) == 6
    assert "generate" not in vars(model)


def test_the_trainer_samples_through_it(tiny_model_path, tmp_path, monkeypatch):
    drawn = []
    real = fast_sampling.sample_tokens
    monkeypatch.setattr(fast_sampling, "sample_tokens", lambda p: drawn.append(p.shape[0]) or real(p))
    trainer = GDPOTrainer(
        tiny_model_path,
        reward_funcs=[parity_reward, length_mod_reward],
        args=toy_config(tmp_path, max_steps=1, fast_sampling=True),
        train_dataset=toy_dataset(),
    )
    trainer.train()
    assert drawn and set(drawn) == {8}  # 2 prompts x 4 completions, one draw per new token
    assert "generate" not in vars(trainer.model)
    with pytest.raises(InputError, match="fast_sampling=true applies to transformers generation"):
        GDPOConfig(str(tmp_path), use_cpu=True, bf16=False, use_vllm=True, fast_sampling=True)
