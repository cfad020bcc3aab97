"""Generate small GSM8K-style word problems offline, for demos and tests that cannot reach the Hub.

Each template draws its numbers so every intermediate result is a non-negative integer and the answer stays
under 1000: the demo model is tiny and reads questions one character at a time, so questions are short too.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gdpo_trl.data.gsm8k import to_gdpo_example

if TYPE_CHECKING:
    import datasets

NAMES = ("Ava", "Ben", "Mia", "Leo", "Zoe", "Sam", "Ivy", "Max", "Nia", "Eli")
THINGS = ("apples", "pencils", "marbles", "stickers", "cookies", "cards", "shells", "beads")
GOODS = ("pens", "books", "cups", "toys", "hats", "kites")
VEHICLES = ("car", "bus", "train", "bike", "boat")
FRACTIONS = {2: "half", 3: "a third", 4: "a quarter", 5: "a fifth"}

# One arithmetic step of a solution: (left, operator, right, result), e.g. (3, "*", 4, 12).
Equation = tuple[int, str, int, int]
# A template returns (question, solution steps, answer, operands). Each step is a sentence with a "{}" where its
# equation goes and the equation itself, so the solution text and its structured equations come from one source.
# Operands are the question's numbers by name, so tests can recompute the answer without parsing English.
Problem = tuple[str, list[tuple[str, Equation]], int, dict[str, int]]
# How many times a template is redrawn to meet `max_operand` before giving up (see generate_problems).
MAX_REDRAWS = 1000


def _buy_items(rng: random.Random) -> Problem:
    name, item = rng.choice(NAMES), rng.choice(GOODS)
    count, price = rng.randint(2, 9), rng.randint(2, 20)
    total = count * price
    question = f"{name} buys {count} {item} at ${price} each. How many dollars does {name} spend?"
    return (
        question,
        [(f"{name} spends {{}} dollars.", (count, "*", price, total))],
        total,
        {"count": count, "price": price},
    )


def _share_equally(rng: random.Random) -> Problem:
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    friends, each = rng.randint(2, 9), rng.randint(2, 12)
    total = friends * each  # built from the quotient so the division is exact
    question = (
        f"{name} has {total} {thing} and shares them equally among {friends} friends. "
        f"How many {thing} does each friend get?"
    )
    lines = [(f"Each friend gets {{}} {thing}.", (total, "/", friends, each))]
    return question, lines, each, {"total": total, "friends": friends}


def _speed_time(rng: random.Random) -> Problem:
    vehicle = rng.choice(VEHICLES)
    speed, hours = rng.randint(2, 12) * 5, rng.randint(2, 9)
    distance = speed * hours
    question = f"A {vehicle} goes {speed} miles per hour for {hours} hours. How many miles does it go?"
    return (
        question,
        [("It goes {} miles.", (speed, "*", hours, distance))],
        distance,
        {"speed": speed, "hours": hours},
    )


def _add_remove(rng: random.Random) -> Problem:
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    start, gained = rng.randint(5, 60), rng.randint(2, 40)
    lost = rng.randint(1, start + gained)  # never more than the running count
    middle, left = start + gained, start + gained - lost
    question = (
        f"{name} has {start} {thing}, gets {gained} more, then gives away {lost}. "
        f"How many {thing} does {name} have now?"
    )
    lines = [
        ("After getting more: {}.", (start, "+", gained, middle)),
        ("After giving away: {}.", (middle, "-", lost, left)),
    ]
    return question, lines, left, {"start": start, "gained": gained, "lost": lost}


def _multiply_groups(rng: random.Random) -> Problem:
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    boxes, per_box, extra = rng.randint(2, 9), rng.randint(2, 12), rng.randint(1, 20)
    in_boxes = boxes * per_box
    total = in_boxes + extra
    question = (
        f"There are {boxes} boxes of {per_box} {thing}. {name} adds {extra} more {thing}. "
        f"How many {thing} are there in all?"
    )
    lines = [
        (f"The boxes hold {{}} {thing}.", (boxes, "*", per_box, in_boxes)),
        ("In all: {}.", (in_boxes, "+", extra, total)),
    ]
    return question, lines, total, {"boxes": boxes, "per_box": per_box, "extra": extra}


def _leftover_after_spending(rng: random.Random) -> Problem:
    name, item = rng.choice(NAMES), rng.choice(GOODS)
    count, price = rng.randint(2, 6), rng.randint(2, 15)
    cost = count * price
    money = cost + rng.randint(0, 30)  # enough money to pay, so the change is never negative
    left = money - cost
    question = f"{name} has ${money} and buys {count} {item} at ${price} each. How many dollars does {name} have left?"
    lines = [
        (f"The {item} cost {{}} dollars.", (count, "*", price, cost)),
        (f"{name} has {{}} left.", (money, "-", cost, left)),
    ]
    return question, lines, left, {"money": money, "count": count, "price": price}


def _fraction_given_away(rng: random.Random) -> Problem:
    name, friend = rng.sample(NAMES, 2)
    thing = rng.choice(THINGS)
    denominator, part = rng.choice(sorted(FRACTIONS)), rng.randint(2, 20)
    total = denominator * part  # a multiple of the denominator so the fraction is a whole number
    left = total - part
    question = (
        f"{name} has {total} {thing} and gives {FRACTIONS[denominator]} of them to {friend}. "
        f"How many {thing} does {name} have left?"
    )
    lines = [
        (f"{name} gives away {{}}.", (total, "/", denominator, part)),
        (f"{name} has {{}} left.", (total, "-", part, left)),
    ]
    return question, lines, left, {"total": total, "denominator": denominator}


def _two_items_total(rng: random.Random) -> Problem:
    name = rng.choice(NAMES)
    item1, item2 = rng.sample(GOODS, 2)
    count1, price1, count2, price2 = rng.randint(2, 6), rng.randint(2, 12), rng.randint(2, 6), rng.randint(2, 12)
    cost1, cost2 = count1 * price1, count2 * price2
    total = cost1 + cost2
    question = (
        f"{name} buys {count1} {item1} at ${price1} each and {count2} {item2} at ${price2} each. "
        f"How many dollars does {name} spend?"
    )
    lines = [
        (f"The {item1} cost {{}}.", (count1, "*", price1, cost1)),
        (f"The {item2} cost {{}}.", (count2, "*", price2, cost2)),
        ("In total: {} dollars.", (cost1, "+", cost2, total)),
    ]
    return question, lines, total, {"count1": count1, "price1": price1, "count2": count2, "price2": price2}


def _wage_then_spend(rng: random.Random) -> Problem:
    name = rng.choice(NAMES)
    rate, hours, days = rng.randint(5, 15), rng.randint(2, 6), rng.randint(2, 5)
    per_day = rate * hours
    earned = per_day * days
    spent = rng.randint(1, earned)
    left = earned - spent
    question = (
        f"{name} earns ${rate} an hour, works {hours} hours a day for {days} days, then spends ${spent}. "
        f"How many dollars are left?"
    )
    lines = [
        ("Each day: {} dollars.", (rate, "*", hours, per_day)),
        ("Earned: {} dollars.", (per_day, "*", days, earned)),
        ("Left: {} dollars.", (earned, "-", spent, left)),
    ]
    return question, lines, left, {"rate": rate, "hours": hours, "days": days, "spent": spent}


def _packs_keep_share(rng: random.Random) -> Problem:
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    while True:  # redraw until what is left after keeping some splits exactly; usually one or two tries
        packs, per_pack, friends = rng.randint(2, 6), rng.randint(2, 12), rng.randint(2, 6)
        total = packs * per_pack
        # Kept amounts that leave a multiple of `friends`, at least one each, and keep at least one.
        options = [kept for kept in range(1, total - friends + 1) if (total - kept) % friends == 0][:3]
        if options:
            break
    kept = rng.choice(options)
    rest = total - kept
    each = rest // friends
    question = (
        f"{name} buys {packs} packs of {per_pack} {thing}, keeps {kept}, and shares the rest equally "
        f"among {friends} friends. How many does each friend get?"
    )
    lines = [
        (f"{name} buys {{}} {thing}.", (packs, "*", per_pack, total)),
        ("After keeping some: {}.", (total, "-", kept, rest)),
        ("Each friend gets {}.", (rest, "/", friends, each)),
    ]
    return question, lines, each, {"packs": packs, "per_pack": per_pack, "kept": kept, "friends": friends}


# name -> (number of arithmetic steps, template function)
TEMPLATES: dict[str, tuple[int, Callable[[random.Random], Problem]]] = {
    "buy_items": (1, _buy_items),
    "share_equally": (1, _share_equally),
    "speed_time": (1, _speed_time),
    "add_remove": (2, _add_remove),
    "multiply_groups": (2, _multiply_groups),
    "leftover_after_spending": (2, _leftover_after_spending),
    "fraction_given_away": (2, _fraction_given_away),
    "two_items_total": (3, _two_items_total),
    "wage_then_spend": (3, _wage_then_spend),
    "packs_keep_share": (3, _packs_keep_share),
}


def show_equation(equation: Equation) -> str:
    """``(3, "*", 4, 12)`` -> ``"3 * 4 = 12"``, as the worked solutions write it."""
    left, op, right, result = equation
    return f"{left} {op} {right} = {result}"


def _draw(make: Callable[[random.Random], Problem], rng: random.Random, max_operand: int | None) -> Problem:
    """One problem from ``make``, redrawn until every question number is at most ``max_operand`` (None: any)."""
    for _ in range(MAX_REDRAWS):
        problem = make(rng)
        if max_operand is None or max(problem[3].values()) <= max_operand:
            return problem
    raise ValueError(f"{make.__name__.lstrip('_')} never drew numbers all <= max_operand={max_operand}")


def generate_problems(
    n: int,
    seed: int = 0,
    *,
    min_steps: int = 1,
    max_steps: int = 3,
    templates: Sequence[str] | None = None,
    max_operand: int | None = None,
) -> list[dict]:
    """Return ``n`` GSM8K-shaped word problems, deterministic in ``seed``.

    ``templates`` limits the draw to those names of :data:`TEMPLATES` (default: every template with between
    ``min_steps`` and ``max_steps`` steps); ``max_operand`` redraws a problem until every number in its question is
    at most that (the warm start uses ``templates=["buy_items"], max_operand=7``: products of two small factors).

    Each row has ``question``, ``answer`` (worked solution then ``#### N``, as in GSM8K), ``equations`` (the
    solution's steps as ``[left, operator, right, result]``), ``steps`` (their number), ``template`` (its name in
    :data:`TEMPLATES`) and ``operands`` (the question's numbers by name). Answers are non-negative integers below
    1000.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 1 <= min_steps <= max_steps <= 3:
        raise ValueError(f"need 1 <= min_steps <= max_steps <= 3, got min_steps={min_steps}, max_steps={max_steps}")
    if templates is not None:
        unknown = sorted(set(templates) - set(TEMPLATES))
        if unknown or not templates:
            raise ValueError(f"unknown or no templates {unknown or list(templates)}; choose from {sorted(TEMPLATES)}")
    eligible = [
        name
        for name, (steps, _) in TEMPLATES.items()
        if (name in templates if templates is not None else min_steps <= steps <= max_steps)
    ]
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        template = rng.choice(eligible)
        steps, make = TEMPLATES[template]
        question, solution, answer, operands = _draw(make, rng, max_operand)
        lines = [sentence.format(show_equation(equation)) for sentence, equation in solution]
        rows.append(
            {
                "question": question,
                "answer": "\n".join(lines) + f"\n#### {answer}",
                "equations": [list(equation) for _, equation in solution],
                "steps": steps,
                "template": template,
                "operands": operands,
            }
        )
    return rows


def load_synthetic(n: int, seed: int = 0, **kw) -> datasets.Dataset:
    """Return ``n`` synthetic problems as a ``datasets.Dataset`` in the same shape as ``load_gsm8k``.

    Columns: ``prompt`` (conversational), ``answer`` (gold number as a string), ``steps`` and ``template``.
    ``kw`` goes to :func:`generate_problems` (``min_steps``, ``max_steps``, ``templates``, ``max_operand``).
    """
    import datasets

    rows = generate_problems(n, seed, **kw)
    examples = [to_gdpo_example(row, index) for index, row in enumerate(rows)]
    # `operands` and `equations` are left out: their shapes differ by template, which Arrow cannot store as one column.
    return datasets.Dataset.from_dict(
        {
            "prompt": [example["prompt"] for example in examples],
            "answer": [example["answer"] for example in examples],
            "steps": [row["steps"] for row in rows],
            "template": [row["template"] for row in rows],
        }
    )
