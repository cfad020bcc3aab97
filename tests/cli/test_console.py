"""What a run prints: the compact step line, and the known warnings silenced (and only those)."""

import warnings
from types import SimpleNamespace

import pytest

from gdpo_trl.cli.console import bound_completions_logging, compact_line, format_loss, quiet_known_warnings


def test_compact_line():
    logs = {
        "loss": 0.0922,
        "rewards/format_reward/mean": 0.5,
        "rewards/format_reward/std": 0.4,
        "rewards/correctness_reward/mean": 0.25,
        "rewards/length_reward_if_correctness_reward/mean": 0.125,
        "reward": 0.875,
        "completions/mean_length": 14.04,
        "advantages/distinct_per_group": 3.0,
    }
    assert compact_line(logs, 4, 40) == (
        "step 4/40 | format 0.50 correctness 0.25 length_reward_if_correctness 0.12 | total 0.88 | len 14.0 | "
        "loss 0.0922"
    )
    assert compact_line({"train_runtime": 12.0, "train_loss": 0.1}, 40, 40) is None  # the Trainer's own summary
    # A multi-reward run: how often the rollouts' rewards conflict, and what GD2PO's rule masks (or would mask).
    conflict = {"conflict/share": 0.359, "conflict/masked_share": 0.125, "conflict/kept_share": 0.875}
    assert compact_line({**logs, **conflict}, 4, 40).endswith("| len 14.0 | conflict 0.36 masked 0.12 | loss 0.0922")



def test_compact_line_prints_n_a_for_a_reward_without_a_value():
    """TRL logs None for a reward that returned None/NaN for every completion of the logged steps; the line printed
    `TypeError: unsupported format string passed to NoneType.__format__` and the run died unsaved."""
    logs = {"rewards/format_reward/mean": None, "rewards/correctness_reward/mean": 0.25, "reward": float("nan")}
    assert compact_line({**logs, "loss": None}, 2, 6) == "step 2/6 | format n/a correctness 0.25 | total n/a | loss n/a"

def test_only_known_warnings_are_silenced():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_known_warnings()
        warnings.warn("`gradient_checkpointing` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
        warnings.warn("`max_steps` is deprecated", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["`max_steps` is deprecated"]


@pytest.mark.parametrize(
    ("log", "given", "on_cpu", "argv", "expected"),
    [
        (True, None, False, [], 4),
        (True, 10, False, [], 10),
        (False, None, False, [], None),
        # A CPU run prints no completion table (the LoRA smoke recipe asks for 4 per step: 400 lines a run) ...
        (True, 4, True, [], 0),
        (True, None, True, [], 0),
        # ... unless the command line asks for it.
        (True, 3, True, ["--num_completions_to_print", "3"], 3),
        (True, 3, True, ["--num_completions_to_print=3"], 3),
    ],
)
def test_completions_logging_is_bounded(log, given, on_cpu, argv, expected):
    class Args:
        log_completions, num_completions_to_print = log, given

    args = Args()
    bound_completions_logging(args, argv, on_cpu=on_cpu)
    assert args.num_completions_to_print == expected


@pytest.mark.parametrize(
    ("loss", "shown"),
    [
        (0.0922, "0.0922"),
        (3.2e-05, "3.2e-05"),
        (-4.1e-06, "-4.1e-06"),
        (0.0, "0.0000"),
        (0.0005, "0.0005"),
        (2.5, "2.5000"),
    ],
)
def test_small_losses_do_not_read_as_zero(loss, shown):
    assert format_loss(loss) == shown
    line = compact_line({"rewards/format_reward/mean": 0.5, "loss": loss}, 1, 2)
    assert line.endswith(f"| loss {shown}")


@pytest.mark.parametrize(
    "message",
    [
        "`torch.distributed.all_gather_into_tensor` is deprecated. Please use `torch.distributed.all_gather_single`.",
        "`torch.distributed.reduce_scatter_tensor` is deprecated. Please use `torch.distributed.reduce_scatter_single`.",
        "`torch.distributed._all_gather_base` is a private function and will be deprecated. Please use ...",
    ],
)
def test_deepspeed_collective_renames_are_silenced(message):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_known_warnings()
        warnings.warn(message, FutureWarning, stacklevel=1)
        warnings.warn("`torch.distributed.broadcast` is deprecated.", FutureWarning, stacklevel=1)  # not known: shown
        warnings.warn(message, UserWarning, stacklevel=1)  # another category: shown
    assert [(w.category, str(w.message)) for w in caught] == [
        (FutureWarning, "`torch.distributed.broadcast` is deprecated."),
        (UserWarning, message),
    ]


def test_deepspeed_cpu_notice_is_dropped_and_nothing_else():
    import logging

    quiet_known_warnings()
    quiet_known_warnings()  # twice: one filter
    logger = logging.getLogger("DeepSpeed")  # DeepSpeed's own logger does not propagate: listen on it directly
    assert sum(type(f).__name__ == "_DropKnownRecords" for f in logger.filters) == 1
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger.addHandler(handler)
    try:
        logger.warning(
            "Setting accelerator to CPU. If you have GPU or other accelerator, we were unable to detect it."
        )
        logger.warning("ds bf16.enabled=True vs hf bf16=False")
    finally:
        logger.removeHandler(handler)
    assert seen == ["ds bf16.enabled=True vs hf bf16=False"]


def test_gdpo_installs_the_filters_before_any_subcommand(monkeypatch):
    """The launcher process (`gdpo train` with accelerate options parses the recipe before launching) is quiet too."""
    from gdpo_trl.cli import console, main

    calls = []
    monkeypatch.setattr(console, "quiet_known_warnings", lambda: calls.append("quiet"))
    assert main.main(["--help"]) == 0
    assert calls == ["quiet"]


def test_compact_progress_prints_lines_not_metric_dicts():
    from types import SimpleNamespace

    from transformers.trainer_callback import ProgressCallback

    from gdpo_trl.cli.console import use_compact_progress

    class Trainer:
        callbacks = [ProgressCallback]

        def pop_callback(self, callback):
            return self.callbacks.pop() if callback in self.callbacks else None

        def add_callback(self, callback):
            self.callbacks.append(callback)

    trainer = Trainer()
    use_compact_progress(trainer)
    progress = trainer.callbacks[0]()
    written = []
    progress.training_bar = SimpleNamespace(write=written.append)
    state = SimpleNamespace(is_world_process_zero=True, global_step=3, max_steps=40)
    progress.on_log(None, state, None, logs={"rewards/format_reward/mean": 0.5, "loss": 1e-5, "grad_norm": 0.1})
    progress.on_log(None, state, None, logs={"train_runtime": 12.0, "train_loss": 0.1})  # the Trainer's summary
    assert written == ["step 3/40 | format 0.50 | loss 1.0e-05"]


def test_gdpo_compare_runs_print_the_compact_lines(monkeypatch, tmp_path):
    """Each run of gdpo compare is built by train_run with the same console hook as gdpo train."""
    from gdpo_trl.cli import compare
    from gdpo_trl.cli.console import use_compact_progress
    from gdpo_trl.run import build

    hooks = []
    monkeypatch.setattr(compare, "run_config", lambda *a: ("script", "training", "model", ["reward"]))
    monkeypatch.setattr(build, "train_run", lambda *a, on_built=None, **k: hooks.append(on_built))
    compare.train_one(SimpleNamespace(save_models=False), "recipe.yaml", {}, "gdpo", 0)
    assert hooks == [use_compact_progress]


def test_the_python_api_is_as_quiet_as_the_command(tmp_path):
    """GDPOConfig installs the known-noise filters itself (TRL's gradient_checkpointing rename warned from the
    Python API only) and turns pinning off where there is no accelerator (torch warned at every epoch)."""
    import logging

    from gdpo_trl.core.config import GDPOConfig
    from gdpo_trl.core.cpu_speed import accelerator_available

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = GDPOConfig(str(tmp_path), report_to="none", use_cpu=True)
        warnings.warn("`gradient_checkpointing_enable` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
    assert not [w for w in caught if "gradient_checkpointing" in str(w.message)], [str(w.message) for w in caught]
    assert any(type(f).__name__ == "_DropKnownRecords" for f in logging.getLogger("DeepSpeed").filters)
    assert config.dataloader_pin_memory is False
    assert GDPOConfig(str(tmp_path), report_to="none").dataloader_pin_memory is accelerator_available()


def test_package_warnings_print_as_one_line_and_others_keep_their_form(capsys):
    """gdpo-trl's own warnings (an all-None reward batch) print as `PROG: warning: MESSAGE`, like its errors; a
    library's warning goes to the handler that was there before (Python's form: file, line, category)."""
    from gdpo_trl.cli.console import package_warnings_as_lines
    from gdpo_trl.trainer.reward_checks import CheckedReward

    def never_applies(completions, **kwargs):
        return [None] * len(completions)

    before, passed_on = warnings.showwarning, []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = lambda message, category, filename, lineno, *rest: passed_on.append(
                (str(message), category, filename, lineno)
            )
            package_warnings_as_lines("gdpo train")
            CheckedReward(never_applies, timeout=0)(prompts=["p"] * 2, completions=["a", "b"])
            warnings.warn_explicit("a library's warning", UserWarning, "/elsewhere/lib.py", 7)
    finally:
        warnings.showwarning = before
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(
        "gdpo train: warning: Reward function 'never_applies' returned None/NaN for all 2 completions of a batch"
    )
    assert "rewards/never_applies/applied" in err[0] and "training goes on" in err[0]
    assert passed_on == [("a library's warning", UserWarning, "/elsewhere/lib.py", 7)]
