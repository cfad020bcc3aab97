"""Whether prompts fit a model's positions, checked before generating: ``gdpo train`` (with
``max_completion_length``) and ``gdpo eval`` (with ``--max_new_tokens``) alike.

A prompt longer than the model's positions makes generation run past its context: garbage positions, a run many times
slower, and with one 100k-character prompt ``gdpo eval`` grew to 7.6 GB until it was killed, printing nothing. Each
check raises :class:`~gdpo_trl.core.errors.InputError` in one line naming how many prompts and the longest.
"""

from __future__ import annotations

from gdpo_trl.core.errors import InputError

# Config keys where a model stores how many positions it has, most common first.
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def model_context(model_path: str) -> int | None:
    """How many positions the model at ``model_path`` has (None when its config does not say)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_path)
    config = getattr(config, "text_config", None) or config
    return next((getattr(config, key) for key in CONTEXT_KEYS if isinstance(getattr(config, key, None), int)), None)


def prompt_lengths(prompts: list, tokenizer) -> list[int]:
    """Token counts of ``prompts`` as the trainer will feed them (chat template and generation prompt applied)."""
    if prompts and not isinstance(prompts[0], str):
        ids = tokenizer.apply_chat_template(prompts, add_generation_prompt=True, tokenize=True)
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids  # transformers 5 returns a BatchEncoding
    else:
        ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
    return [len(x) for x in ids]


def prompt_characters(prompt) -> int:
    return len(prompt) if isinstance(prompt, str) else sum(len(str(turn.get("content") or "")) for turn in prompt)


def refuse_longer_than(sizes: list[int], limit: int, longest_has) -> None:
    """One line naming how many prompts have a size above ``limit``, and the longest; ``longest_has(size)`` says
    what it has and why that does not fit."""
    over = [i for i, n in enumerate(sizes) if n > limit]
    if over:
        longest = max(over, key=sizes.__getitem__)
        raise InputError(
            f"{len(over)} of {len(sizes)} prompts do not fit the model: the longest (row {longest}) has "
            f"{longest_has(sizes[longest])}"
        )


def check_prompt_lengths(
    dataset, tokenizer, model_path: str, max_completion_length: int, budget_name: str = "max_completion_length"
) -> None:
    """Error when any prompt plus ``max_completion_length`` tokens (``budget_name`` in the message: the setting that
    gave it) exceeds the model's positions.

    Prompts too long by their characters alone are refused first, without tokenizing: a fast tokenizer's time grows
    faster than linearly with one long run of text (a 10 MB row took minutes after the conversion bar, with nothing
    on screen). No token covers more characters than the vocabulary's longest, so more than ``budget`` times that
    many characters cannot fit.
    """
    context = model_context(model_path)
    if context is None:
        return
    prompts = list(dataset["prompt"])
    budget = max(context - (max_completion_length or 0), 0)
    widest = max((len(token) for token in tokenizer.get_vocab()), default=1)
    refuse_longer_than(
        [prompt_characters(p) for p in prompts], budget * widest,
        lambda n: f"{n:,} characters, more than the {budget} tokens left of the model's {context} positions (with "
        f"{budget_name}={max_completion_length}) can hold at {widest} characters per token at most. Drop or "
        "shorten them.",
    )  # fmt: skip
    refuse_longer_than(
        prompt_lengths(prompts, tokenizer), budget,
        lambda n: f"{n} tokens, and with {budget_name}={max_completion_length} the limit is {budget} of the "
        f"model's {context} positions. Drop or shorten them, or lower {budget_name}.",
    )  # fmt: skip
