"""Tools under watch: a tool that raises, exits or hangs is counted, named once with what the model sent it,
logged as ``tools/<name>/errors``, and a broken tool stops training in one line.

The unit rows call :class:`ToolWatch`'s wrapped tools directly (no model); the trainer rows run ``GDPOTrainer`` on
the tiny agent model with a scripted generation (every turn is one call of ``price``), so TRL's own tool loop runs.
"""

import asyncio
import os
import sys
import time
from collections import defaultdict

import pytest
import torch
from datasets import Dataset

from gdpo_trl.trainer import tool_watch
from gdpo_trl.trainer.tool_watch import ToolFailureError, ToolWatch


class OneProcess:
    """What ``ToolWatch.settle`` uses of an ``Accelerator``, for one process."""

    device = torch.device("cpu")
    is_main_process = True
    num_processes = 1

    def gather(self, tensor):
        return tensor


def price(item: str) -> int:
    """Price of an item.

    Args:
        item: The item.
    """
    if item == "pen":
        return 3
    raise KeyError(item)


def exiting(item: str) -> int:
    sys.exit(5)


def process_exiting(item: str) -> int:
    os._exit(7)


def hanging(item: str) -> int:
    time.sleep(3)
    return 1


async def slow_async(item: str) -> int:
    await asyncio.sleep(3)
    return 1


def watched(func, timeout=None):
    watch = ToolWatch([func.__name__], timeout)
    tools = {func.__name__: func}
    if asyncio.iscoroutinefunction(func):
        watch.wrap([], [tools])
    else:
        watch.wrap([tools], [])
    return watch, tools[func.__name__]


def test_a_raising_tool_is_fed_back_counted_and_warned_once():
    watch, tool = watched(price)
    metrics = defaultdict(list)
    assert tool(item="pen") == 3
    with pytest.raises(KeyError, match="cup"):  # TRL catches it and the model reads str(error)
        tool(item="cup")
    with pytest.raises(TypeError):  # the model's wrong arguments: TRL's error, not the tool's
        tool(name="cup")
    with pytest.warns(UserWarning) as caught:
        watch.settle(OneProcess(), metrics)
    (warning,) = caught
    assert str(warning.message).startswith(
        "Tool 'price' raised KeyError: 'cup' when called as price(item='cup'): the model reads the error as the "
        "tool's result (TRL's design) and training goes on; tools/price/errors logs failed calls per step."
    )
    assert metrics["tools/price/errors"] == [1.0]
    assert watch.totals.tolist() == [[3.0, 1.0, 1.0, 0.0, 0.0, 0.0]]  # calls, errors, ok, timeouts, exits, invalid
    with pytest.raises(KeyError):
        tool(item="hat")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per tool: the second batch says nothing
        watch.settle(OneProcess(), metrics)
    assert metrics["tools/price/errors"] == [1.0, 1.0]


@pytest.mark.parametrize(
    ("func", "words"),
    [
        (exiting, "called sys.exit(5) when called as exiting(item='pen')"),
        (process_exiting, "called os._exit(7) when called as process_exiting(item='pen')"),
    ],
    ids=["sys_exit", "os_exit"],
)
def test_a_tool_that_exits_stops_training_naming_it(func, words):
    watch, tool = watched(func, timeout=5)
    with pytest.raises(RuntimeError, match=f"tool '{func.__name__}' failed"):  # the process lives on
        tool(item="pen")
    with pytest.raises(ToolFailureError) as info:
        watch.settle(OneProcess(), defaultdict(list))
    assert str(info.value) == (
        f"Tool '{func.__name__}' {words}; a tool must return its result or raise an exception (the model reads it)."
    )


@pytest.mark.parametrize("func", [hanging, slow_async], ids=["sync", "async"])
def test_a_hanging_tool_times_out_and_stops_after_three(func, monkeypatch):
    watch, tool = watched(func, timeout=0.2)
    metrics = defaultdict(list)
    started = time.monotonic()
    for _ in range(tool_watch.STOP_AFTER_TIMEOUTS):
        with pytest.raises(TimeoutError, match=f"tool '{func.__name__}' .*took longer than 0.2 s"):
            asyncio.run(tool(item="pen")) if asyncio.iscoroutinefunction(func) else tool(item="pen")
    assert time.monotonic() - started < 2.0  # abandoned after 0.2 s each, not waited for (3 s each)
    with pytest.raises(ToolFailureError) as info:
        watch.settle(OneProcess(), metrics)
    assert str(info.value) == (
        f"Tool '{func.__name__}' failed on every one of its 3 calls (3 timed out; first: took longer than "
        f"tool_timeout=0.2 s when called as {func.__name__}(item='pen')); fix the tool (or raise tool_timeout if it "
        "is just slow): training stopped."
    )


def test_a_strict_tool_that_sometimes_works_never_stops_training(monkeypatch):
    monkeypatch.setattr(tool_watch, "STOP_AFTER_FAILURES", 2)
    watch, tool = watched(price)
    tool(item="pen")
    for _ in range(5):
        with pytest.raises(KeyError):
            tool(item="cup")
    with pytest.warns(UserWarning):
        watch.settle(OneProcess(), defaultdict(list))  # 5 failures, but one success: a strict tool, not a broken one


# --- through GDPOTrainer and TRL's tool loop -------------------------------------------------------------------------


class BrokenShop:
    """An environment whose only tool raises on every call (its price table was never loaded)."""

    def reset(self, **kwargs) -> None:
        self.prices = None

    def price(self, item: str) -> int:
        """The price of one item.

        Args:
            item: The item's name.
        """
        return self.prices[item]


CALL = '<tool_call>{"name": "price", "arguments": {"item": "pen"}}</tool_call><|im_end|>'


@pytest.fixture(scope="module")
def agent_tiny(tmp_path_factory):
    from gdpo_trl.models.tiny import build_model
    from gdpo_trl.tasks.agent_task import build_tokenizer

    path = tmp_path_factory.mktemp("agent-tiny")
    tokenizer = build_tokenizer()
    build_model(tokenizer, "tiny", seed=0).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path), tokenizer


def test_a_tool_failing_on_every_call_stops_the_run_in_one_line(agent_tiny, tmp_path, monkeypatch):
    from gdpo_trl import GDPOTrainer
    from tests.helpers.toy import toy_config

    path, tokenizer = agent_tiny
    ids = tokenizer(CALL, add_special_tokens=False)["input_ids"]
    # Every turn the "model" calls price(item='pen'): TRL's loop parses it, calls the tool, appends its error.
    monkeypatch.setattr(GDPOTrainer, "_generate_single_turn", lambda self, p, *a, **k: ([list(ids) for _ in p], None))
    monkeypatch.setattr(tool_watch, "STOP_AFTER_FAILURES", 4)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "cost of 3 pen"}]}] * 4)
    trainer = GDPOTrainer(
        path,
        reward_funcs=[lambda completions, **kw: [float(len(c)) for c in completions]],
        args=toy_config(tmp_path, per_device_train_batch_size=2, num_generations=2, max_steps=4,
                        max_completion_length=64, max_tool_calling_iterations=1),
        train_dataset=rows,
        environment_factory=BrokenShop,
    )  # fmt: skip
    with pytest.warns(UserWarning, match="Tool 'price' raised TypeError: 'NoneType' object is not subscriptable "
                                         "when called as price\\(item='pen'\\)"):  # fmt: skip
        with pytest.raises(ToolFailureError) as info:
            trainer.train()
    assert str(info.value).startswith("Tool 'price' failed on every one of its 4 calls (0 timed out; first: raised")
    (logged,) = [entry for entry in trainer.state.log_history if "tools/price/errors" in entry]
    assert logged["tools/price/errors"] == 2.0  # the first step's two rollouts, one failed call each
    assert logged["tools/failure_frequency"] == 1.0  # TRL's own count agrees
