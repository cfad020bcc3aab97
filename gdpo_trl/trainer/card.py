"""The model card's paper and the rewrite of TRL's card: the base model's name, and notes before the citations."""

from __future__ import annotations

import json
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


def _paper(title: str, arxiv_id: str, key: str, authors: str, year: int) -> dict:
    citation = (
        f"@article{{{key},\n    title        = {{{{{title}}}}},\n    author       = {{{authors}}},\n"
        f"    year         = {year},\n    eprint       = {{arXiv:{arxiv_id}}},\n}}"
    )
    return {"title": title, "id": arxiv_id, "citation": citation}


MO_GRPO_PAPER = _paper(
    "MO-GRPO: Mitigating Reward Hacking of Group Relative Policy Optimization on Multi-Objective Problems",
    "2509.22047",
    "ichihara2025mogrpo",
    "Yuki Ichihara and Yuu Jinnai and Tetsuro Morimura and Mitsuki Sakamoto and Ryota Mitsuhashi and Eiji Uchibe",
    2025,
)
SAW_PAPER = _paper(
    "SAW: Stage-Aware Dynamic Weighting for Multi-Objective Reinforcement Learning in Large Language Models",
    "2606.07705",
    "he2026saw",
    "Yuchen He and Baolong Bi and Shenghua Liu and Huaming Liao and Yuyao Ge and Bolin Wan and Siqian Tong and "
    "Juan Chen and Jiafeng Guo and Xueqi Cheng",
    2026,
)
ODRPO_PAPER = _paper(
    "ODRPO: Ordinal Decompositions of Discrete Rewards for Robust Policy Optimization",
    "2605.12667",
    "patel2026odrpo",
    "Nirmal Patel and Fei Wang and Inderjit S. Dhillon",
    2026,
)
# The card of a run trained by one of GDPO's published follow-ups (gdpo_trl.core.rules.RULES): the trainer's name,
# tags and paper as TRL's create_model_card reads them (``_name``, ``_tag_names``, ``_paper``).
RULE_CARDS: dict[str, tuple[str, list[str], dict]] = {
    "mo_grpo": ("MO-GRPO", ["trl", "gdpo", "mo-grpo"], MO_GRPO_PAPER),
    "saw_gdpo": ("SAW (gdpo-h)", ["trl", "gdpo", "saw"], SAW_PAPER),
    "saw_grpo": ("SAW (grpo-h)", ["trl", "grpo", "saw"], SAW_PAPER),
    "odrpo": ("ODRPO", ["trl", "odrpo"], ODRPO_PAPER),
}


PROCEDURE = "## Training procedure"
QUICK_START = "## Quick start"
# TRL's card data writes this placeholder into the metadata (`licence="license"`, a misspelt field with a dummy value):
# the Hub reads `license`, and the licence that applies is the base model's, which the card cannot know for a Hub id.
PLACEHOLDER_LICENCE = "licence: license\n"


def rewrite_card(output_dir: str, base_model: str | None, notes: list[str | Callable[[], str]]) -> None:
    """Rewrite the ``README.md`` TRL wrote in ``output_dir``: ``base_model`` where TRL, given a local folder, names
    none; the quick start's pipeline loads this folder where the run was not pushed (TRL writes ``model="None"``);
    TRL's placeholder licence line goes. A note that starts with ``## Quick start`` replaces TRL's generic usage
    example; one that starts with ``## Training procedure`` fills that section of TRL's card (whose badges for
    trackers not used leave blank lines); the other ``notes`` (Markdown sections, or callables returning them) go
    before the citations."""
    path = os.path.join(output_dir, "README.md")
    with open(path, encoding="utf-8") as file:
        card = file.read()
    card = card.replace(PLACEHOLDER_LICENCE, "", 1)
    texts = [note() if callable(note) else note for note in notes]
    quick_start = [text for text in texts if text.startswith(QUICK_START)]
    if quick_start and QUICK_START in card:  # this model's own usage: its prompt, its settings
        head, mark, tail = card.partition(QUICK_START)
        rest = tail[tail.index("\n## ") :] if "\n## " in tail else ""
        card = head + quick_start[0].rstrip() + "\n" + rest
    # TRL's template links the base model as a Hub id; for a model loaded from a folder it has none ("None").
    base = f"`{base_model}`" if base_model else "a local model"
    card = card.replace("[None](https://huggingface.co/None)", base)
    if base_model:
        card = card.replace("generator = pipeline(", f"# fine-tuned from {base_model}\ngenerator = pipeline(", 1)
    card = card.replace('model="None"', f"model={json.dumps(output_dir)}")  # this folder, where not pushed
    procedure = [text for text in texts if text.startswith(PROCEDURE)]
    if procedure and PROCEDURE in card:
        head, mark, tail = card.partition(PROCEDURE)
        badges, versions, rest = tail.partition("### Framework versions")
        badges = "\n".join(line for line in badges.splitlines() if line.strip())  # unused trackers: blank lines
        body = procedure[0][len(PROCEDURE) :].strip()
        card = head + mark + "\n\n" + "\n\n".join(filter(None, (body, badges))) + "\n\n" + versions + rest
    others = [text for text in texts if not text.startswith((PROCEDURE, QUICK_START))]
    if others:
        head, mark, tail = card.partition("## Citations")
        card = head + "\n\n".join(others).strip() + "\n\n" + mark + tail
    with open(path, "w", encoding="utf-8") as file:
        file.write(card)
