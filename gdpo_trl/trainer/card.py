"""The model card's paper and the rewrite of TRL's card: the base model's name, and notes before the citations."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable

# The paper, for the model card TRL writes (``create_model_card`` reads ``_name``, ``_tag_names`` and ``_paper``).
GDPO_PAPER = {
    "title": "GDPO: Group reward-Decoupled Normalization Policy Optimization for Multi-reward RL Optimization",
    "id": "2601.05242",
    "citation": textwrap.dedent("""\
        @article{liu2026gdpo,
            title        = {{GDPO: Group reward-Decoupled Normalization Policy Optimization for Multi-reward RL Optimization}},
            author       = {Shih-Yang Liu and Xin Dong and Ximing Lu and Shizhe Diao and Peter Belcak and Mingjie Liu and Min-Hung Chen and Hongxu Yin and Yu-Chiang Frank Wang and Kwang-Ting Cheng and Yejin Choi and Jan Kautz and Pavlo Molchanov},
            year         = 2026,
            eprint       = {arXiv:2601.05242},
        }"""),
}


def rewrite_card(output_dir: str, base_model: str | None, notes: list[str | Callable[[], str]]) -> None:
    """Rewrite the ``README.md`` TRL wrote in ``output_dir``: ``base_model`` where TRL, given a local folder, names
    none; ``notes`` (Markdown sections, or callables returning them) before the citations."""
    path = os.path.join(output_dir, "README.md")
    with open(path, encoding="utf-8") as file:
        card = file.read()
    # TRL's template links the base model as a Hub id; for a model loaded from a folder it has none ("None").
    base = f"`{base_model}`" if base_model else "a local model"
    card = card.replace("[None](https://huggingface.co/None)", base)
    if notes:
        head, mark, tail = card.partition("## Citations")
        texts = [note() if callable(note) else note for note in notes]
        card = head + "\n\n".join(texts).strip() + "\n\n" + mark + tail
    with open(path, "w", encoding="utf-8") as file:
        file.write(card)
