"""What a training run prints: logging set-up, known library noise silenced, and a compact line per logged step.

Transformers' progress bar prints every logged step as a Python dict (about 40 keys for GDPO) into the bar;
:class:`CompactProgress` prints the few numbers a person watches instead, while ``report_to`` trackers and
``trainer_state.json`` still get every metric.
"""

from __future__ import annotations

import logging
import re
import sys
import warnings
from pathlib import Path

from gdpo_trl.core.noise import quiet_known_warnings  # the entry points import it from here too

# Completions printed per logged step when `log_completions` is on and no `num_completions_to_print` is set: TRL
# prints the whole batch otherwise (hundreds of rows per step).
DEFAULT_COMPLETIONS_TO_PRINT = 4


_PACKAGE = str(Path(__file__).resolve().parents[1])


def command_console(prog: str) -> None:
    """A gdpo command's console, set before its recipe is parsed: the known library warnings silenced
    (:func:`gdpo_trl.core.noise.quiet_known_warnings`) and the package's own printed as one line
    (:func:`package_warnings_as_lines`)."""
    quiet_known_warnings()
    package_warnings_as_lines(prog)


def process_console(training_args, argv: list[str] = ()) -> None:
    """This process's console once its recipe is parsed: logging at the Trainer's level for this process (quieter on
    the other ranks, :func:`setup_logging`) and TRL's completions table bounded (:func:`bound_completions_logging`)."""
    setup_logging(training_args.get_process_log_level())
    bound_completions_logging(training_args, argv)


def package_warnings_as_lines(prog: str) -> None:
    """Print gdpo-trl's own warnings as one line, ``PROG: warning: MESSAGE``, as its errors print.

    Python's default form names our source file and repeats a line of our code, which says nothing to a user of the
    command (a reward that applied to no row of a batch, say). Other libraries' warnings keep the default form.
    """
    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if not str(Path(filename).resolve()).startswith(_PACKAGE):
            return default(message, category, filename, lineno, file, line)
        from tqdm.auto import tqdm

        tqdm.write(f"{prog}: warning: {message}", file=file or sys.stderr)  # on a line of its own, under the bar

    warnings.showwarning = show


def setup_logging(level: int) -> None:
    """Log to stdout at ``level`` (the Trainer's level for this process: quieter on non-main ranks)."""
    import datasets
    import transformers

    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    logging.getLogger("gdpo_trl").setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)


def bound_completions_logging(args, argv: list[str] = (), on_cpu: bool | None = None) -> None:
    """How many completions TRL prints per logged step when ``log_completions`` is on (it prints the whole batch
    otherwise, as a table of several lines per completion).

    On a run without an accelerator (a CPU smoke run of a GPU recipe, 350-440 lines of tables per run) none: the
    console keeps one line per step, and the completions still go to ``output_dir/completions/`` and the trackers.
    ``--num_completions_to_print N`` on the command line asks for N anyway. Elsewhere the recipe's number, or
    :data:`DEFAULT_COMPLETIONS_TO_PRINT` when it sets none.
    """
    if not getattr(args, "log_completions", False):
        return
    asked = any(item.split("=", 1)[0] == "--num_completions_to_print" for item in argv)
    if on_cpu is None:
        from gdpo_trl.core.cpu_speed import trains_on_cpu

        on_cpu = trains_on_cpu(args)
    if on_cpu and not asked:
        args.num_completions_to_print = (
            0  # TRL prints nothing for 0 (trl.trainer.utils.print_prompt_completions_sample)
        )
    elif args.num_completions_to_print is None:
        args.num_completions_to_print = DEFAULT_COMPLETIONS_TO_PRINT


_REWARD = re.compile(r"rewards/(.+?)(?:_reward)?/mean")
CONFLICT_LABELS = (("conflict/share", "conflict"), ("conflict/masked_share", "masked"))


def format_loss(value: float) -> str:
    """A loss for the step line: four decimals, or two significant digits when that would print a small nonzero loss
    as ``0.0000`` (``3.2e-05``)."""
    if value != 0 and abs(value) < 5e-4:
        return f"{value:.1e}"
    return f"{value:.4f}"


def compact_line(logs: dict, step: int, max_steps: int) -> str | None:
    """One line for a Trainer log entry: step, each reward's mean, the total, completion length, the conflict shares
    (multi-reward runs) and loss; or None for an entry without a reward (e.g. the final runtime summary, which the
    Trainer prints itself)."""
    rewards = [(m.group(1), value) for key, value in logs.items() if (m := _REWARD.fullmatch(key))]
    if not rewards:
        return None
    parts = [f"step {step}/{max_steps}", " ".join(f"{name} {format_value(value, '.2f')}" for name, value in rewards)]
    for key, label, spec in (("reward", "total", ".2f"), ("completions/mean_length", "len", ".1f")):
        if key in logs:
            parts.append(f"{label} {format_value(logs[key], spec)}")
    # Multi-reward runs: the share of rollouts whose rewards conflict and the share GD2PO's rule masks (docs/gd2po.md).
    conflict = [f"{label} {format_value(logs[key], '.2f')}" for key, label in CONFLICT_LABELS if key in logs]
    if conflict:
        parts.append(" ".join(conflict))
    if "loss" in logs:
        loss = logs["loss"]
        parts.append(f"loss {format_loss(loss) if _is_number(loss) else NO_VALUE}")
    return " | ".join(parts)


# What the step line shows for a metric without a value: TRL logs None for a reward that returned None/NaN for every
# completion of the logged steps (it applied to no row), and such a step still trains on the other rewards.
NO_VALUE = "n/a"


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and value == value  # NaN != NaN


def format_value(value, spec: str) -> str:
    """``value`` formatted with ``spec``, or :data:`NO_VALUE` for None or NaN."""
    return f"{value:{spec}}" if _is_number(value) else NO_VALUE


def use_compact_progress(trainer) -> None:
    """Replace the Trainer's progress bar by one that prints :func:`compact_line` above the bar."""
    from transformers.trainer_callback import ProgressCallback

    class CompactProgress(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and self.training_bar is not None and logs:
                line = compact_line(logs, state.global_step, state.max_steps)
                if line is not None:
                    self.training_bar.write(line)

    if trainer.pop_callback(ProgressCallback) is not None:  # absent with disable_tqdm: then print nothing extra
        trainer.add_callback(CompactProgress)
