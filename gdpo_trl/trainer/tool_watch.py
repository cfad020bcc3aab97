"""Tools under watch, as rewards are (:mod:`gdpo_trl.trainer.reward_checks`): a tool that fails is named, not silent.

TRL 1.16's ``_tool_call_loop`` calls each tool of a rollout (``self._sync_tool_dicts[i][name](**arguments)``, async
ones gathered on its event loop) and turns an ``Exception`` into ``{"error": str(e)}``, the tool's result that the
model reads on its next turn. We keep that design deliberately (a model learns from a tool's error, as from a wrong
item's price), but never silently:

- each call runs under ``tool_timeout`` seconds (:class:`WatchedTool`); one still running then is abandoned (Python
  cannot kill a thread) and the model reads ``TimeoutError: tool 'x' took longer than N s``. While that abandoned
  call still runs, the tool's later calls are not made (they fail at once, as timeouts): TRL calls a batch's tools
  one after another, so a hanging tool cost one ``tool_timeout`` per call (7 x 60 s before the run stopped), and now
  costs one per batch;
- an answer the model cannot read is refused, a plain list converted to JSON text (:mod:`tool_answers`);
- ``sys.exit()`` and ``os._exit()`` inside a tool become an error instead of ending the process with no word;
- calls are counted per tool and per batch, summed over every process (:meth:`ToolWatch.settle`, called by every
  process after each batch's rollouts, so all take the same decisions): ``tools/<name>/errors`` is logged per step,
  and the first failure of each tool is warned about once for the run, by rank 0, with what the model sent it;
- a call whose arguments do not fit the tool's signature is the model's mistake, not the tool's: the model reads
  TRL's ``TypeError``; it is not counted as the tool's error (TRL's ``tools/failure_frequency`` counts it);
- the run stops with one line (:class:`ToolFailureError`) when a tool is broken rather than strict: it called
  ``sys.exit``/``os._exit``, or it never succeeded and failed :data:`STOP_AFTER_FAILURES` calls, or timed out
  :data:`STOP_AFTER_TIMEOUTS` calls.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
import warnings
from collections import Counter

import torch

from gdpo_trl.core.errors import GDPOError
from gdpo_trl.trainer.exit_guard import ProcessExit, exits_raise
from gdpo_trl.trainer.tool_answers import ToolAnswerError, readable_answer

# A tool that never succeeded is taken as broken after this many failed calls (all processes): a strict tool that
# raises on the model's bad inputs succeeds on some call long before, while a tool broken on every call (a missing
# key, a wrong path) would otherwise train on zero rewards to the end.
STOP_AFTER_FAILURES = 16
# A tool that never returned within tool_timeout, this many times and never succeeded: it hangs.
STOP_AFTER_TIMEOUTS = 3
COUNTS = ("calls", "errors", "ok", "timeouts", "exits", "invalid")  # per tool, per batch (this process)
SHOWN_ARGUMENTS = 200  # characters of a call's arguments quoted in the warning


class ToolFailureError(GDPOError, RuntimeError):
    """A tool is broken (it exited, or failed on every call): training stops, naming it."""


def _where() -> str:
    return f" on rank {os.environ['RANK']}" if int(os.environ.get("WORLD_SIZE", "1")) > 1 else ""


def call_text(name: str, kwargs: dict) -> str:
    """``name(a=1, b='x')``, cut to :data:`SHOWN_ARGUMENTS` characters of arguments."""
    arguments = ", ".join(f"{key}={value!r}" for key, value in kwargs.items())
    if len(arguments) > SHOWN_ARGUMENTS:
        arguments = arguments[:SHOWN_ARGUMENTS] + "..."
    return f"{name}({arguments})"


def _fits(func, kwargs: dict) -> TypeError | None:
    """The ``TypeError`` calling ``func(**kwargs)`` would raise for its arguments alone, or None."""
    try:
        inspect.signature(func).bind(**kwargs)
    except TypeError as error:
        return error
    except ValueError:  # no signature to read (a builtin): let the call say
        return None
    return None


class WatchedTool:
    """One tool of one rollout, called under the watch; keeps TRL's dict key (``__name__``)."""

    def __init__(self, func, name: str, watch: ToolWatch):
        self.func, self.__name__, self.watch = func, name, watch

    def _failed(self, kind: str, kwargs: dict, text: str) -> None:
        self.watch.record(self.__name__, kind, f"{text} when called as {call_text(self.__name__, kwargs)}")

    def _exit_error(self, error: BaseException, kwargs: dict) -> RuntimeError:
        how = "sys.exit" if isinstance(error, SystemExit) else "os._exit"
        self._failed("exits", kwargs, f"called {how}({error.code!r})")
        return RuntimeError(f"tool '{self.__name__}' failed")

    def _answer(self, value, kwargs: dict):
        """``value`` as the model will read it; an unreadable one fails the call and stops training after the batch."""
        try:
            value = readable_answer(self.__name__, value, self.watch.converted)
        except ToolAnswerError as error:
            self._failed("invalid", kwargs, str(error).removeprefix(f"tool '{self.__name__}' "))
            raise
        self.watch.count[self.__name__, "ok"] += 1
        return value

    def __call__(self, **kwargs):
        self.watch.count[self.__name__, "calls"] += 1
        if (mismatch := _fits(self.func, kwargs)) is not None:
            raise mismatch  # the model's mistake: it reads TRL's error text, the tool is not blamed
        timeout = self.watch.timeout
        stuck = self.watch.stuck.get(self.__name__)
        if stuck is not None and stuck.is_alive():  # one hang per batch, not one per call
            self._failed("timeouts", kwargs, f"took longer than tool_timeout={timeout:g} s")
            raise TimeoutError(
                f"tool '{self.__name__}' is still running an earlier call that took longer than {timeout:g} s; "
                "this call was not made"
            )
        result, done = {}, threading.Event()

        def run():
            try:
                with exits_raise():
                    result["value"] = self.func(**kwargs)
            except BaseException as error:  # noqa: BLE001 - handed back to the calling thread
                result["error"] = error
            done.set()

        if timeout:
            thread = threading.Thread(target=run, name=f"tool-{self.__name__}", daemon=True)
            thread.start()
            if not done.wait(timeout):
                self.watch.stuck[self.__name__] = thread
                self._failed("timeouts", kwargs, f"took longer than tool_timeout={timeout:g} s")
                raise TimeoutError(f"tool '{self.__name__}' took longer than {timeout:g} s and was abandoned")
        else:
            run()
        error = result.get("error")
        if isinstance(error, (SystemExit, ProcessExit)):
            raise self._exit_error(error, kwargs) from None
        if isinstance(error, Exception):
            self._failed("errors", kwargs, f"raised {type(error).__name__}: {error}")
            raise error  # TRL feeds str(error) back to the model
        if error is not None:
            raise error  # KeyboardInterrupt and the like stop training as they would
        return self._answer(result["value"], kwargs)


class WatchedAsyncTool(WatchedTool):
    """An ``async`` tool under the same watch (on TRL's event loop, so a timeout cancels it)."""

    async def __call__(self, **kwargs):
        self.watch.count[self.__name__, "calls"] += 1
        if (mismatch := _fits(self.func, kwargs)) is not None:
            raise mismatch
        try:
            with exits_raise():
                call = self.func(**kwargs)
                value = await (asyncio.wait_for(call, self.watch.timeout) if self.watch.timeout else call)
        except (SystemExit, ProcessExit) as error:
            raise self._exit_error(error, kwargs) from None
        except TimeoutError:
            self._failed("timeouts", kwargs, f"took longer than tool_timeout={self.watch.timeout:g} s")
            raise TimeoutError(f"tool '{self.__name__}' took longer than {self.watch.timeout:g} s") from None
        except Exception as error:
            self._failed("errors", kwargs, f"raised {type(error).__name__}: {error}")
            raise
        return self._answer(value, kwargs)


class ToolWatch:
    """Counts of one trainer's tool calls; ``names`` is every tool's name (the same on every process)."""

    def __init__(self, names: list[str], timeout: float | None):
        self.names = list(dict.fromkeys(names))
        self.timeout = timeout
        self.count: Counter = Counter()  # (name, kind) -> this batch's count on this process
        self.totals = torch.zeros(len(self.names), len(COUNTS))  # the run's counts, all processes
        self.first: dict[str, str] = {}  # name -> this process's first unreported failure, described
        self.described: dict[str, str] = {}  # name -> the run's first failure, from whichever process met it
        self.stuck: dict[str, threading.Thread] = {}  # name -> its abandoned call (timed out), maybe still running
        self.converted: set[str] = set()  # tools whose list answers were converted to JSON text (warned once)

    def record(self, name: str, kind: str, text: str) -> None:
        self.count[name, kind] += 1
        if kind in ("timeouts", "invalid"):  # errors too; an exit is counted on its own (it stops training)
            self.count[name, "errors"] += 1
        self.first.setdefault(name, text)

    def wrap(self, sync_dicts: list[dict], async_dicts: list[dict]) -> None:
        """Put every tool of this batch's rollouts (TRL's per-rollout dicts) under watch, in place."""
        for dicts, kind in ((sync_dicts, WatchedTool), (async_dicts, WatchedAsyncTool)):
            for tools in dicts:
                for name, func in tools.items():
                    if not isinstance(func, WatchedTool):
                        tools[name] = kind(func, name, self)

    def settle(self, accelerator, metrics: dict) -> None:
        """After a batch's rollouts, on every process: sum the counts over processes, log ``tools/<name>/errors``,
        warn once per tool (rank 0), and raise :class:`ToolFailureError` for a broken tool (every process alike)."""
        local = torch.tensor([[float(self.count[n, k]) for k in COUNTS] for n in self.names])
        self.count.clear()
        batch = accelerator.gather(local.to(accelerator.device).unsqueeze(0)).sum(0).cpu()
        self.totals += batch
        for name, row in zip(self.names, batch.tolist(), strict=True):
            metrics[f"tools/{name}/errors"].append(row[1] + row[4])
        new = [n for n, row in zip(self.names, batch.tolist(), strict=True) if row[1] + row[4]]
        new = [n for n in new if n not in self.described]
        described = self._described(accelerator, new) if new else {}
        self.first.clear()
        self.described.update(described)
        broken = self._broken()
        if broken:
            raise ToolFailureError(broken)
        if accelerator.is_main_process:
            for name in new:
                warnings.warn(
                    f"Tool '{name}' {described.get(name, 'failed')}: the model reads the error as the tool's result (TRL's design) "
                    f"and training goes on; tools/{name}/errors logs failed calls per step. Warned once per tool.",
                    UserWarning,
                    stacklevel=2,
                )

    def _described(self, accelerator, names: list[str]) -> dict[str, str]:
        """The first failure of each of ``names``, from whichever process met it (every process calls this)."""
        mine = {n: self.first[n] + _where() for n in names if n in self.first}
        if accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            found = {}
            for part in gather_object([mine]):
                for name, text in part.items():
                    found.setdefault(name, text)
            return found
        return mine

    def _broken(self) -> str | None:
        """The line that stops training, when a tool is broken; else None."""
        for name, (calls, errors, ok, timeouts, exits, invalid) in zip(self.names, self.totals.tolist(), strict=True):
            what = self.described.get(name, "failed")
            if exits:
                return (
                    f"Tool '{name}' {what}; a tool must return its result or raise an exception (the model reads it)."
                )
            if invalid:
                return f"Tool '{name}' {what}: fix what it returns; training stopped."
            if ok:
                continue
            if timeouts >= STOP_AFTER_TIMEOUTS or errors >= STOP_AFTER_FAILURES:
                return (
                    f"Tool '{name}' failed on every one of its {int(calls)} calls ({int(timeouts)} timed out; first: "
                    f"{what}); fix the tool (or raise tool_timeout if it is just slow): training stopped."
                )
        return None
