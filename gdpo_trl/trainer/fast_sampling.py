"""Draw sampled tokens by inverse CDF over blocks of the vocabulary, for ``fast_sampling``: the same distribution as
transformers' sampler at a tenth of its cost on a CPU.

transformers samples a token by ``torch.multinomial(softmax(scores), 1)``, which on a CPU draws one exponential
random number for every token of the vocabulary (the "exponential race": the largest ``p / E`` wins). With
SmolLM2's 49,152 tokens and 16 sequences that is 786,432 random numbers per decode step, about 16 ms of a 95 ms
step on the 2-core AMD EPYC; with Qwen2.5's 151,936 tokens three times as many (docs/real_model.md#speed).

:func:`sample_tokens` draws from the same probabilities with two uniform numbers per row: it sums the probabilities
in blocks of 128 tokens, picks a block by inverse CDF over the block sums (accumulated in float64), then a token
inside that block by inverse CDF over its 128 probabilities (float64 again). Each token's chance is its probability
to within float32 rounding of the block sums (a relative error of about 1e-7, the same order as softmax's own
normalization); a token of probability 0 (masked to ``-inf``) is never drawn. What changes: the random stream, so a
seeded run samples other tokens than transformers' sampler does (same distribution, different draws).

:func:`exact_sampling` hooks it into ``model.generate`` for plain temperature sampling (the GDPO recipes': no
top-k, top-p, min-p, typical, epsilon, eta or top-h filter): generation runs transformers' greedy loop with a last
logits processor, :class:`InverseCdfSampler`, that applies the temperature (as transformers' warper does), draws
the token, and leaves it the only finite score, so the greedy ``argmax`` picks it. Other settings (a filter, beams,
watermarking, renormalized logits) fall through to transformers' sampler unchanged, as does greedy decoding.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList

BLOCK = 128  # tokens per block: vocabularies are multiples of 128 (SmolLM2 49,152 = 384 x 128; Qwen2.5 151,936)
# Generation settings under which transformers' sampler applies a filter besides the temperature, and the value at
# which each filters nothing (transformers' own tests: top_k 0 or None, top_p >= 1, min_p None, ...).
NO_FILTER = {
    "top_k": lambda v: v in (None, 0),
    "top_p": lambda v: v is None or v >= 1.0,
    "min_p": lambda v: v is None,
    "typical_p": lambda v: v is None or v >= 1.0,
    "epsilon_cutoff": lambda v: v is None or not 0.0 < v < 1.0,
    "eta_cutoff": lambda v: v is None or not 0.0 < v < 1.0,
    "top_h": lambda v: v is None,
    "num_beams": lambda v: v in (None, 1),
    "watermarking_config": lambda v: v is None,
    "renormalize_logits": lambda v: not v,
}


def sample_tokens(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token index per row of ``probs`` (``[rows, vocab]``, each row nonnegative with a positive finite sum),
    drawn with probability proportional to its entry (see the module doc). Raises ValueError on a row that is not a
    distribution (NaN, infinite or all zero), as ``torch.multinomial`` does."""
    rows, vocab = probs.shape
    padded = -vocab % BLOCK
    weights = torch.nn.functional.pad(probs, (0, padded)) if padded else probs
    blocks = weights.view(rows, -1, BLOCK)
    block_cdf = blocks.sum(-1).double().cumsum(-1)
    total = block_cdf[:, -1:]
    if not bool(torch.isfinite(total).all() and (total > 0).all()):
        raise ValueError("sample_tokens: a row of probabilities holds NaN or inf, or sums to 0")
    block = _inverse_cdf(block_cdf, total, generator)
    inside = blocks.gather(1, block[:, :, None].expand(rows, 1, BLOCK)).squeeze(1).double().cumsum(-1)
    token = _inverse_cdf(inside, inside[:, -1:], generator)
    return (block * BLOCK + token).squeeze(1)


def _inverse_cdf(cdf: torch.Tensor, total: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Per row, the first index whose cumulative weight exceeds a uniform draw in ``[0, total)``: index ``i`` with
    chance ``(cdf[i] - cdf[i - 1]) / total``; an entry of weight 0 is never the first to exceed it."""
    uniform = torch.rand(total.shape, dtype=torch.float64, device=cdf.device, generator=generator)
    # rand is below 1, but rand * total can round up to total itself: keep the draw strictly below it.
    draw = torch.minimum(uniform * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, draw, right=True).clamp_(max=cdf.shape[-1] - 1)


class InverseCdfSampler(LogitsProcessor):
    """The last logits processor of a sampled generation run as greedy: temperature, softmax, :func:`sample_tokens`;
    the drawn token keeps score 0 and every other gets ``-inf``, so transformers' ``argmax`` picks it."""

    def __init__(self, temperature: float | None):
        self.temperature = temperature

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.temperature is not None and self.temperature != 1.0:
            scores = scores / self.temperature  # transformers' TemperatureLogitsWarper computes exactly this
        tokens = sample_tokens(torch.softmax(scores, dim=-1))
        return torch.full_like(scores, float("-inf")).scatter_(1, tokens[:, None], 0.0)


def effective_setting(name: str, config: GenerationConfig, model_config: GenerationConfig | None):
    """A generation setting as ``generate`` resolves it: the call's config, else the model's, else transformers'
    default (``generate`` fills unset fields in that order)."""
    for source in (config, model_config):
        value = getattr(source, name, None) if source is not None else None
        if value is not None:
            return value
    return GenerationConfig._get_default_generation_params().get(name)


def plain_temperature_sampling(config: GenerationConfig, model_config: GenerationConfig | None = None) -> bool:
    """Whether ``config`` samples with a temperature alone (no filter, one beam): what :func:`exact_sampling`
    takes over."""
    if not effective_setting("do_sample", config, model_config):
        return False
    return all(plain(effective_setting(name, config, model_config)) for name, plain in NO_FILTER.items())


@contextmanager
def exact_sampling(model: torch.nn.Module):
    """Within the body, ``model.generate`` draws sampled tokens with :class:`InverseCdfSampler` wherever sampling is
    plain temperature sampling; the model's own ``generate`` is put back on exit (see the module doc)."""
    original = model.generate
    had_own = "generate" in vars(model)  # an instance attribute already there (another wrapper) is restored as is

    def generate(*args, generation_config: GenerationConfig | None = None, logits_processor=None, **kwargs):
        if generation_config is None:  # settings given as keywords: resolved onto the model's config, as generate does
            generation_config = copy.deepcopy(model.generation_config)
            kwargs = generation_config.update(**kwargs)
        config = generation_config
        if not plain_temperature_sampling(config, getattr(model, "generation_config", None)):
            return original(*args, generation_config=config, logits_processor=logits_processor, **kwargs)
        temperature = effective_setting("temperature", config, getattr(model, "generation_config", None))
        greedy = GenerationConfig.from_dict(config.to_dict())
        greedy.do_sample, greedy.temperature, greedy.top_k, greedy.top_p = False, 1.0, None, None
        processors = LogitsProcessorList(logits_processor or [])
        processors.append(InverseCdfSampler(temperature))
        return original(*args, generation_config=greedy, logits_processor=processors, **kwargs)

    model.generate = generate
    try:
        yield model
    finally:
        if had_own:
            model.generate = original
        else:
            del model.generate
