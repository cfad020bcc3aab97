"""``gdpo train`` with accelerate's launch options: split them from the recipe's flags and start accelerate.

As ``trl grpo`` does, the recipe's flags win: an argument that names a training field (say
``--gradient_accumulation_steps``, which ``accelerate launch`` also has) goes to the recipe; any other argument that
``accelerate launch`` knows goes to accelerate. ``--accelerate_config`` takes a file or the name of one shipped in
the package (``ddp``, ``zero2``, ``zero3``, ``fsdp2``, ``single_gpu``: the repository's ``accelerate_configs/``,
found from any folder). Then::

    accelerate launch <launch options> -m gdpo_trl.cli.train <recipe flags>

runs in this process (accelerate starts the workers), exactly what users of ``accelerate launch`` type themselves.

Before anything starts, the launch options are checked (:func:`check_launch_options`): counts and ranks that are not
whole numbers in range, a port outside 1-65535, an accelerate config that is not valid YAML or not a mapping, and an
FSDP config on a machine without an accelerator are each one line, exit 2. Once started, the run's first error is
printed once, whichever process met it (:mod:`gdpo_trl.cli.run_records`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

from gdpo_trl.cli.launch_args import CONFIG_FLAG
from gdpo_trl.cli.orphans import INTERRUPTED, LAUNCHER_ENV, interrupted_line
from gdpo_trl.cli.run_records import RECORDS_ENV, report_failure
from gdpo_trl.core.errors import InputError
from gdpo_trl.core.shipped import shipped_folder
from gdpo_trl.recipe.recipe_file import yaml_problem


def live_option_sets() -> tuple[set[str], dict[str, bool]]:
    """The recipe fields' flags and ``accelerate launch``'s options (name -> whether it takes a value), from TRL's
    dataclasses and accelerate's parser: what the field table holds, for a machine the table does not fit."""
    from accelerate.commands.launch import launch_command_parser

    from gdpo_trl.recipe.arguments import DATACLASSES

    training_fields = {f"--{f.name}" for dataclass_type in DATACLASSES for f in fields(dataclass_type)}
    actions = launch_command_parser()._option_string_actions  # argparse keeps no public list of them
    accelerate = {name: action.nargs != 0 for name, action in actions.items() if name not in ("-h", "--help", "-m")}
    return training_fields, accelerate


def resolve_accelerate_config(launch: list[str]) -> list[str]:
    """``--accelerate_config NAME_OR_FILE`` -> ``--config_file PATH``: a file wins, else the shipped ``NAME.yaml``."""
    if CONFIG_FLAG not in launch:
        return launch
    i = launch.index(CONFIG_FLAG)
    value = launch[i + 1]
    shipped = shipped_folder("accelerate_configs")
    found = next((path for path in (Path(value), shipped / f"{value}.yaml") if path.is_file()), None)
    if found is None:
        names = sorted(path.stem for path in shipped.glob("*.yaml"))
        raise InputError(f"{CONFIG_FLAG} {value!r} is neither a file nor one of the configs {names}.")
    return [*launch[:i], "--config_file", str(found), *launch[i + 2 :]]


def recipe_precision(launch: list[str], training_args) -> list[str]:
    """``launch`` with accelerate's ``--mixed_precision`` taken from the recipe (``bf16``/``fp16``) unless given.

    A config file's own value would otherwise apply: the shipped ``zero2.yaml`` says ``bf16`` (for GPUs), and
    DeepSpeed stops at the first step when the recipe trains in full precision (``bf16: false``, every CPU recipe).
    """
    if any(item.split("=", 1)[0] == "--mixed_precision" for item in launch):
        return launch
    precision = "bf16" if training_args.bf16 else "fp16" if training_args.fp16 else "no"
    return [*launch, "--mixed_precision", precision]


def free_port() -> int:
    """A TCP port free on this machine now (29500, accelerate's default, is often taken by another run)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_defaults(launch: list[str]) -> list[str]:
    """What ``gdpo train`` adds when the user left it out: accelerate's quiet defaults (so it does not warn about
    each); with several processes and no config file, torchrun's launcher (``--multi_gpu``, which on a CPU-only
    machine runs DDP over gloo when the recipe sets ``use_cpu``); on one machine, a free port."""
    given = {item.split("=", 1)[0]: j for j, item in enumerate(launch)}
    extra = []
    if "--config_file" not in given:
        extra += [] if "--num_machines" in given else ["--num_machines", "1"]
        extra += [] if "--mixed_precision" in given else ["--mixed_precision", "no"]
        extra += [] if "--dynamo_backend" in given else ["--dynamo_backend", "no"]
        if not given.keys() & {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--cpu"}:
            extra.append("--multi_gpu")
    if "--main_process_port" not in given and _num_machines(launch) == 1:
        extra += ["--main_process_port", str(free_port())]
    return [*launch, *extra]


def option_value(launch: list[str], name: str) -> str | None:
    """The value of option ``name`` in ``launch`` (``--name value`` or ``--name=value``), or None."""
    for i, item in enumerate(launch):
        if item == name and i + 1 < len(launch):
            return launch[i + 1]
        if item.startswith(f"{name}="):
            return item.split("=", 1)[1]
    return None


def _num_machines(launch: list[str]) -> int:
    """The number of machines the launch options (or their config file) ask for."""
    value = option_value(launch, "--num_machines")
    if value is not None:
        return int(value)
    return int(read_accelerate_config(launch).get("num_machines", 1))


def read_accelerate_config(launch: list[str]) -> dict:
    """The accelerate config file of ``launch`` as a mapping (``{}`` without one); a file that is not YAML, or not a
    mapping, is an ``InputError`` naming it (and the line)."""
    import yaml

    path = option_value(launch, "--config_file")
    if path is None:
        return {}
    try:
        config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise InputError(f"accelerate config {yaml_problem(path, error)}.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"accelerate config {path} cannot be read: {error}.") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise InputError(f"accelerate config {path} must be a mapping of settings, not a {type(config).__name__}.")
    return config


# Launch options (and accelerate config keys) that are whole numbers, and their smallest allowed value.
WHOLE_NUMBERS = {
    "num_processes": 1,
    "num_machines": 1,
    "machine_rank": 0,
    "main_process_port": 1,
    "num_cpu_threads_per_process": 1,
}
MAX_PORT = 65535


def check_launch_options(launch: list[str]) -> None:
    """One ``InputError`` for the first launch option (or accelerate config value) accelerate would fail on with a
    traceback after starting, or an FSDP config on a machine without an accelerator. ``launch`` has
    ``--config_file`` resolved."""
    config = read_accelerate_config(launch)
    for key, low in WHOLE_NUMBERS.items():
        flag = option_value(launch, f"--{key}")
        value, where = (flag, f"--{key}") if flag is not None else (config.get(key), f"{key} in the accelerate config")
        if value is None:
            continue
        try:
            number = int(str(value))
        except ValueError:
            raise InputError(f"{where} is {value!r}: it must be a whole number.") from None
        high = MAX_PORT if key == "main_process_port" else None
        if number < low or (high is not None and number > high):
            allowed = f"{low}-{high}" if high is not None else f">= {low}"
            raise InputError(f"{where} is {number}: it must be {allowed}.")
    if str(config.get("distributed_type", "")).upper() == "FSDP" or "--use_fsdp" in launch:
        check_fsdp_has_accelerator()
    if str(config.get("distributed_type", "")).upper() == "DEEPSPEED" or "--use_deepspeed" in launch:
        check_deepspeed_installed(launch)


def launch_engine(launch: list[str]) -> tuple[str | None, int | None]:
    """The engine ``launch`` runs the processes under, as its flags and accelerate config say: ``("deepspeed",
    ZeRO stage or None where neither says)``, ``("fsdp", None)`` or ``(None, None)``."""
    config = read_accelerate_config(launch)
    kind = str(config.get("distributed_type", "")).upper()
    if kind == "FSDP" or "--use_fsdp" in launch:
        return "fsdp", None
    if kind != "DEEPSPEED" and "--use_deepspeed" not in launch:
        return None, None
    settings = config.get("deepspeed_config") if isinstance(config.get("deepspeed_config"), dict) else {}
    stage = option_value(launch, "--zero_stage") or settings.get("zero_stage")
    file = option_value(launch, "--deepspeed_config_file") or settings.get("deepspeed_config_file")
    if stage is None and file:
        try:
            stage = json.loads(Path(file).read_text(encoding="utf-8")).get("zero_optimization", {}).get("stage")
        except (OSError, ValueError, AttributeError):
            stage = None
    try:
        return "deepspeed", int(str(stage)) if stage is not None else None
    except ValueError:
        return "deepspeed", None


def check_engine_settings(launch: list[str], training_args) -> None:
    """Recipe settings the launch's engine cannot run, before any process starts (the trainer said so only after
    the model loaded: 91 s into a ZeRO-2 run, with ZeRO-3's reason)."""
    from gdpo_trl.trainer.lora_generation import engine_refusal

    if getattr(training_args, "merge_lora_for_generation", False):
        if refusal := engine_refusal(*launch_engine(launch)):
            raise InputError(refusal)


def check_deepspeed_installed(launch: list[str]) -> None:
    """A DeepSpeed config where the package was installed without its ``deepspeed`` extra: accelerate would fail in
    every process with a 22-line traceback."""
    import importlib.util

    if importlib.util.find_spec("deepspeed") is None:
        config = option_value(launch, "--config_file")
        where = f"the accelerate config {Path(config).name}" if config else "--use_deepspeed"
        raise InputError(
            f'{where} runs DeepSpeed, which is not installed: pip install "gdpo-trl[deepspeed]", or launch with '
            "--accelerate_config ddp."
        )


def check_fsdp_has_accelerator() -> None:
    """Refuse FSDP before starting on a machine without an accelerator (the processes would refuse it each)."""
    import torch

    from gdpo_trl.cli.engines import fsdp_fallback_message

    if torch.accelerator.current_accelerator() is None:
        raise InputError(fsdp_fallback_message(True, "MULTI_CPU"))


def launch_training(recipe_argv: list[str], launch: list[str], output_dir: str | None = None) -> None:
    """``accelerate launch <launch> -m gdpo_trl.cli.train <recipe_argv>``, in this process (``launch`` checked by
    :func:`check_launch_options` first).

    The processes record how they end in a temporary folder instead of printing their errors; when one fails, this
    prints the run's first error once (a bug with its one traceback) and exits with its status: 2 for an input
    error, 1 otherwise, 0 when a process died only after everything was saved to ``output_dir``
    (:func:`gdpo_trl.cli.run_records.report_failure`).
    """
    from accelerate.commands.launch import launch_command, launch_command_parser
    from torch.distributed.elastic.multiprocessing import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    from gdpo_trl.cli.engines import stale_extension_locks

    args = launch_command_parser().parse_args([*launch_defaults(launch), "-m", "gdpo_trl.cli.train", *recipe_argv])
    for line in stale_extension_locks():  # a killed DeepSpeed op build would make this run wait without a word
        print(line, file=sys.stderr, flush=True)
    # torch's elastic agent logs each worker's exit at warning/error level; the summary below says it in one line.
    import torch.distributed.launcher.api  # noqa: F401 - its loggers exist (each with its own level) once imported

    for name in [n for n in logging.root.manager.loggerDict if n.startswith("torch.distributed.elastic")]:
        logging.getLogger(name).setLevel(logging.CRITICAL)  # e.g. "Received 2 death signal, shutting down workers"
    folder = Path(tempfile.mkdtemp(prefix="gdpo-run-"))
    os.environ[RECORDS_ENV] = str(folder)  # the processes inherit it
    os.environ[LAUNCHER_ENV] = str(os.getpid())  # and end when this process ends (gdpo_trl.cli.orphans)
    try:
        launch_command(args)
    except (ChildFailedError, subprocess.CalledProcessError) as error:
        if isinstance(error, ChildFailedError):
            codes = {rank: failure.exitcode for rank, failure in error.failures.items()}
        else:
            codes = {0: error.returncode}
        lines, status = report_failure(folder, codes, output_dir)
        # On a line of its own: a process's progress bar may have been cut off mid-line (it shares this stderr).
        print("\n" + "\n".join(lines), file=sys.stderr, flush=True)
        if status:
            raise SystemExit(status) from None
    except (SignalException, KeyboardInterrupt) as stop:  # torchrun's agent stopped the workers (quietly, each)
        sigval = stop.sigval if isinstance(stop, SignalException) else signal.SIGINT
        print("\n" + interrupted_line(sigval, output_dir), file=sys.stderr, flush=True)
        raise SystemExit(128 + int(sigval) if sigval else INTERRUPTED) from None
    finally:
        os.environ.pop(RECORDS_ENV, None)
        os.environ.pop(LAUNCHER_ENV, None)
        shutil.rmtree(folder, ignore_errors=True)
