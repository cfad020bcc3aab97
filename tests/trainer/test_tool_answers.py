"""What a tool answers, and how long a hanging tool holds a batch.

Before: a tool returning ``None`` or an object reached the model as ``'None'`` or ``'<object object at 0x...>'``,
silently; one returning a list crashed TRL's chat template (76 lines, ``TypeError: can only concatenate str``); a
tool that never returned timed out once per call, one call after another (7 x 60 s before the run stopped).
"""

import time
import warnings
from collections import defaultdict

import pytest
from datasets import Dataset

from gdpo_trl.trainer.tool_answers import ToolAnswerError, readable_answer
from gdpo_trl.trainer.tool_watch import ToolFailureError
from tests.trainer.test_tool_watch import CALL, OneProcess, agent_tiny, watched  # noqa: F401 - agent_tiny: fixture

BLOCKS = [{"type": "text", "text": "3"}]
# (id, answer, what the model reads)
PASSED = [
    ("str", "3 dollars", "3 dollars"),
    ("int", 3, 3),
    ("bool", True, True),
    ("dict", {"price": 3}, {"price": 3}),
    ("content_blocks", BLOCKS, BLOCKS),
    ("list", [3, "pen"], '[3, "pen"]'),
    ("tuple", (3, 4), "[3, 4]"),
]
REFUSED = [("none", None, "NoneType"), ("object", object(), "object"), ("dict_of_object", {"a": object()}, "dict")]


@pytest.mark.parametrize(("answer", "read"), [r[1:] for r in PASSED], ids=[r[0] for r in PASSED])
def test_a_readable_answer_passes_and_a_list_becomes_json(answer, read):
    converted = set()
    assert readable_answer("price", answer, converted) == read
    assert converted == ({"price"} if isinstance(answer, (list, tuple)) and answer is not BLOCKS else set())


def test_the_list_conversion_is_warned_once_per_tool():
    converted = set()
    with pytest.warns(UserWarning, match=r"Tool 'price' returned a list: the model reads it as its JSON text"):
        readable_answer("price", [1], converted)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert readable_answer("price", [2], converted) == "[2]"


@pytest.mark.parametrize(("answer", "kind"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_an_unreadable_answer_stops_training_naming_the_tool_and_type(answer, kind):
    def price(item: str):
        return answer

    watch, tool = watched(price, timeout=5)
    with pytest.raises(ToolAnswerError, match=f"tool 'price' returned {kind}, which the model cannot read"):
        tool(item="pen")  # TRL catches it: the model reads the error for this call
    with pytest.raises(ToolFailureError) as info:
        watch.settle(OneProcess(), defaultdict(list))
    assert str(info.value) == (
        f"Tool 'price' returned {kind}, which the model cannot read: a tool must return a string or a "
        "JSON-serializable value (dict, list, number, bool) when called as price(item='pen'): fix what it returns; "
        "training stopped."
    )


def test_a_hanging_tool_holds_a_batch_for_one_timeout_not_one_per_call():
    def hangs(item: str) -> int:
        time.sleep(5)
        return 1

    watch, tool = watched(hangs, timeout=0.5)
    started = time.monotonic()
    for _ in range(7):  # TRL calls a batch's tools one after another
        with pytest.raises(TimeoutError):
            tool(item="pen")
    seconds = time.monotonic() - started
    assert 0.5 <= seconds < 1.5  # before: 7 x 0.5 s = 3.5 s
    with pytest.raises(ToolFailureError, match="failed on every one of its 7 calls \\(7 timed out"):
        watch.settle(OneProcess(), defaultdict(list))


def test_a_slow_tool_that_finished_is_called_again():
    def slow(item: str) -> int:
        time.sleep(0.4)
        return 1

    watch, tool = watched(slow, timeout=0.2)
    with pytest.raises(TimeoutError):
        tool(item="pen")
    time.sleep(0.4)  # the abandoned call has ended: the next one is made
    watch.timeout = 1.0
    assert tool(item="pen") == 1


class ListShop:
    """An environment whose tool answers with a plain list."""

    def reset(self, **kwargs) -> None:
        return None

    def price(self, item: str) -> list:
        """The prices of one item.

        Args:
            item: The item's name.
        """
        return [3, 4]


def test_a_tool_returning_a_list_trains(agent_tiny, tmp_path, monkeypatch):  # noqa: F811
    from gdpo_trl import GDPOTrainer
    from tests.helpers.toy import toy_config

    path, tokenizer = agent_tiny
    ids = tokenizer(CALL, add_special_tokens=False)["input_ids"]
    monkeypatch.setattr(GDPOTrainer, "_generate_single_turn", lambda self, p, *a, **k: ([list(ids) for _ in p], None))
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "cost of 3 pen"}]}] * 2)
    trainer = GDPOTrainer(
        path,
        reward_funcs=[lambda completions, **kw: [float(len(c)) for c in completions]],
        args=toy_config(tmp_path, per_device_train_batch_size=2, num_generations=2, max_steps=1,
                        max_completion_length=64, max_tool_calling_iterations=1),
        train_dataset=rows,
        environment_factory=ListShop,
    )  # fmt: skip
    with pytest.warns(UserWarning, match="Tool 'price' returned a list: the model reads it as its JSON text"):
        trainer.train()  # before: TypeError: can only concatenate str (not "list") to str
    assert trainer.state.global_step == 1
    (logged,) = [entry for entry in trainer.state.log_history if "tools/price/errors" in entry]
    assert logged["tools/price/errors"] == 0.0
