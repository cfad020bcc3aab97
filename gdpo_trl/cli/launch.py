"""``gdpo train`` with accelerate's launch options: split them from the recipe's flags and start accelerate.

As ``trl grpo`` does, the recipe's flags win: an argument that names a training field (say
``--gradient_accumulation_steps``, which ``accelerate launch`` also has) goes to the recipe; any other argument that
``accelerate launch`` knows goes to accelerate. ``--accelerate_config`` takes a file or the name of one shipped in
the package (``ddp``, ``zero2``, ``zero3``, ``fsdp2``, ``single_gpu``: the repository's ``accelerate_configs/``,
found from any folder). Then::

    accelerate launch <launch options> -m gdpo_trl.cli.train <recipe flags>

runs in this process (accelerate starts the workers), exactly what users of ``accelerate launch`` type themselves.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

from gdpo_trl.cli.errors import EXIT_INPUT_ERROR
from gdpo_trl.core.errors import InputError
from gdpo_trl.core.shipped import shipped_folder

CONFIG_FLAG = "--accelerate_config"


def _accelerate_options() -> dict[str, bool]:
    """Every ``accelerate launch`` option string -> whether it takes a value."""
    from accelerate.commands.launch import launch_command_parser

    actions = launch_command_parser()._option_string_actions  # argparse keeps no public list of them
    return {name: action.nargs != 0 for name, action in actions.items() if name not in ("-h", "--help", "-m")}


def split_launch_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(recipe flags, accelerate launch options)`` from ``gdpo train``'s arguments."""
    from gdpo_trl.recipe.arguments import DATACLASSES

    training_fields = {f"--{f.name}" for dataclass_type in DATACLASSES for f in fields(dataclass_type)}
    accelerate = _accelerate_options()
    accelerate[CONFIG_FLAG] = True
    recipe, launch, i = [], [], 0
    while i < len(argv):
        name = argv[i].split("=", 1)[0]
        if name in accelerate and name not in training_fields:
            takes_value = accelerate[name] and "=" not in argv[i]
            if takes_value and (i + 1 == len(argv) or argv[i + 1].startswith("--")):
                raise InputError(f"{name} needs a value, e.g. {name} 2.")
            launch += argv[i : i + 1 + takes_value]
            i += 1 + takes_value
        else:
            recipe.append(argv[i])
            i += 1
    return recipe, resolve_accelerate_config(launch)


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
    if "--main_process_port" not in given and _num_machines(launch, given) == 1:
        extra += ["--main_process_port", str(free_port())]
    return [*launch, *extra]


def _num_machines(launch: list[str], given: dict[str, int]) -> int:
    """The number of machines the launch options (or their config file) ask for."""
    if "--num_machines" in given:
        item = launch[given["--num_machines"]]
        return int(item.split("=", 1)[1] if "=" in item else launch[given["--num_machines"] + 1])
    if "--config_file" in given:
        import yaml

        item = launch[given["--config_file"]]
        path = item.split("=", 1)[1] if "=" in item else launch[given["--config_file"] + 1]
        return int((yaml.safe_load(Path(path).read_text()) or {}).get("num_machines", 1))
    return 1


def launch_training(recipe_argv: list[str], launch: list[str]) -> None:
    """``accelerate launch <launch> -m gdpo_trl.cli.train <recipe_argv>``, in this process.

    A worker that stopped on an input error has printed its one line (rank 0) and exited 2: this process then exits
    2 too, without the launcher's traceback on top. Any other failure keeps the workers' tracebacks and ends in one
    line naming the exit codes.
    """
    from accelerate.commands.launch import launch_command, launch_command_parser
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    args = launch_command_parser().parse_args([*launch_defaults(launch), "-m", "gdpo_trl.cli.train", *recipe_argv])
    # torch's elastic agent logs each worker's exit at warning/error level; the summary below says it in one line.
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    try:
        launch_command(args)
    except (ChildFailedError, subprocess.CalledProcessError) as error:
        codes = sorted({f.exitcode for f in error.failures.values()}) if isinstance(error, ChildFailedError) else [
            error.returncode
        ]
        # The launcher stops the other workers with SIGTERM (-15) once one exits: an input error is still one.
        if EXIT_INPUT_ERROR in codes and set(codes) <= {EXIT_INPUT_ERROR, -15}:
            raise SystemExit(EXIT_INPUT_ERROR) from None
        print(f"gdpo train: error: a training process failed (exit codes {codes}); see its output above.", file=sys.stderr)
        raise SystemExit(1) from None
