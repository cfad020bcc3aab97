"""A recipe's values read as its fields' flags would read them, before they become the parser's defaults.

TrlParser hands each YAML value to argparse as a default. argparse converts a string default with the flag's type,
and a type error there used to print the whole usage without naming the recipe; a non-string default it takes as it
is, so ``reward_funcs: format`` reached the trainer as a string and was iterated letter by letter. Here:

- a string is converted with the field's type; one that does not convert (``learning_rate: fast``, ``seed: forty``)
  is an :class:`~gdpo_trl.core.errors.InputError` naming the recipe file, the key, the type expected and an example;
- a single value where a list belongs (``reward_funcs: format``) is read as a one-element list, as
  ``--reward_funcs format`` is on the command line; its string items are converted like the flag's.

Other values (numbers, lists, mappings) go on unchanged to the dataclasses' own checks, which name the field.
"""

from __future__ import annotations

from argparse import Action, ArgumentTypeError

from gdpo_trl.core.errors import InputError

LIST_NARGS = ("+", "*")


def expected(action: Action) -> str:
    """What the field's flag reads, in words: 'an integer', 'a number', 'true or false', 'one of [...]'."""
    if action.choices:
        return f"one of {[str(c) for c in action.choices]}"
    return {int: "an integer", float: "a number"}.get(action.type) or (
        "true or false" if getattr(action.type, "__name__", "") == "string_to_bool" else f"a {action.type.__name__}"
    )


def convert(action: Action, value: str, key: str, recipe: str):
    """``value`` converted with the flag's type, or an InputError naming the recipe, key, type and an example."""
    try:
        return action.type(value)
    except (ValueError, TypeError, KeyError, ArgumentTypeError):
        field = key.split("[")[0]
        default = action.default if action.default not in (None, [], "") else None
        example = "" if default is None else f", e.g. {field}: {default[0] if isinstance(default, list) else default}"
        raise InputError(f"recipe {recipe}: {key}: {value!r} is not {expected(action)}{example}.") from None


def read_values(actions: list[Action], config: dict, recipe: str) -> dict:
    """``config`` with string values converted and single values for list fields wrapped, as described above."""
    by_name = {action.dest: action for action in actions}
    read = dict(config)
    for key, value in config.items():
        action = by_name.get(key)
        if action is None or value is None or action.type in (None, str):
            if action is not None and action.nargs in LIST_NARGS and value is not None and not isinstance(value, list):
                read[key] = [value]
            continue
        if action.nargs in LIST_NARGS:
            items = value if isinstance(value, list) else [value]
            read[key] = [
                convert(action, item, f"{key}[{i}]", recipe) if isinstance(item, str) else item
                for i, item in enumerate(items)
            ]
        elif isinstance(value, str):
            read[key] = convert(action, value, key, recipe)
        elif action.type is int and isinstance(value, float):  # argparse keeps a non-string default as it is
            read[key] = convert(action, str(int(value)) if value.is_integer() else str(value), key, recipe)
    return read
