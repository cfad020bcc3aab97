"""The reward registry: names and dotted paths resolve, errors name the known rewards, registering checks its input."""

import functools
import os.path

import pytest

from gdpo_trl.rewards import REWARD_FUNCS, get_reward_func, get_reward_funcs, register_reward
from gdpo_trl.rewards.gsm8k import correctness_reward, format_reward, integer_reward


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("format", format_reward),
        ("correctness", correctness_reward),
        ("integer", integer_reward),
        ("gdpo_trl.rewards.gsm8k.format_reward", format_reward),
        ("gdpo_trl.rewards.gsm8k.integer_reward", integer_reward),
        ("os.path.join", os.path.join),  # any callable resolves, reward-shaped or not
    ],
)
def test_get_reward_func(name, expected):
    assert get_reward_func(name) is expected


def test_known_names():
    assert {"format", "correctness", "integer"} <= set(REWARD_FUNCS)


def test_unknown_name_lists_known_names_and_dotted_paths():
    with pytest.raises(ValueError, match="unknown reward 'nope'") as info:
        get_reward_func("nope")
    message = str(info.value)
    known = ", ".join(sorted(REWARD_FUNCS))
    assert f"known rewards: {known}." in message
    assert "dotted import path" in message


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("no_such_module_xyz.fn", "reward path 'no_such_module_xyz.fn': cannot import module 'no_such_module_xyz'"),
        ("gdpo_trl.no_such_module.fn", "cannot import module 'gdpo_trl.no_such_module'"),
        ("os.path.no_such_fn", "reward path 'os.path.no_such_fn': module 'os.path' has no attribute 'no_such_fn'"),
        ("os.sep", "reward path 'os.sep': 'sep' is a str, which is not callable"),
        (".format_reward", "'.format_reward' is not a valid dotted path"),
        ("os..join", "'os..join' is not a valid dotted path"),
        ("os.", "'os.' is not a valid dotted path"),
    ],
)
def test_bad_dotted_path(path, fragment):
    with pytest.raises(ValueError) as info:
        get_reward_func(path)
    assert fragment in str(info.value)


def test_get_reward_funcs_keeps_order():
    assert get_reward_funcs(["correctness", "integer", "format"]) == [
        correctness_reward,
        integer_reward,
        format_reward,
    ]
    assert get_reward_funcs([]) == []


@pytest.mark.parametrize(
    ("names", "fragment"),
    [
        (["format", "integer", "format"], "duplicate reward names ['format']"),
        (
            ["format", "gdpo_trl.rewards.gsm8k.format_reward"],
            "rewards 'format' and 'gdpo_trl.rewards.gsm8k.format_reward' are both named 'format_reward'",
        ),
        (["format", "nope"], "unknown reward 'nope'"),
    ],
)
def test_get_reward_funcs_errors(names, fragment):
    with pytest.raises(ValueError) as info:
        get_reward_funcs(names)
    assert fragment in str(info.value)


def test_get_reward_funcs_rejects_a_bare_string():
    with pytest.raises(TypeError, match="wrap it in a list"):
        get_reward_funcs("format")


@pytest.fixture
def registry(monkeypatch):
    """A throwaway copy of the registry, so tests can register names without leaking them."""
    fresh = dict(REWARD_FUNCS)
    monkeypatch.setattr("gdpo_trl.rewards.REWARD_FUNCS", fresh)
    return fresh


def test_register_reward(registry):
    def char_count_reward(completions, **kwargs):
        return [float(len(c)) for c in completions]

    assert register_reward("char_count", char_count_reward) is char_count_reward
    assert get_reward_func("char_count") is char_count_reward
    assert "char_count" in registry
    with pytest.raises(ValueError) as info:
        get_reward_func("missing")
    assert f"known rewards: {', '.join(sorted(registry))}." in str(info.value)


def test_partials_are_named_after_the_wrapped_function(registry):
    register_reward("format_strict", functools.partial(format_reward))
    with pytest.raises(ValueError, match="both named 'format_reward'"):
        get_reward_funcs(["format", "format_strict"])


@pytest.mark.parametrize(
    ("name", "func", "error", "fragment"),
    [
        ("format", integer_reward, ValueError, "'format' is already registered"),
        ("my.reward", integer_reward, ValueError, "must not contain a dot"),
        ("broken", 42, TypeError, "must be callable, got int"),
    ],
)
def test_register_reward_errors(registry, name, func, error, fragment):
    with pytest.raises(error) as info:
        register_reward(name, func)
    assert fragment in str(info.value)
    assert registry.get("format") is format_reward
