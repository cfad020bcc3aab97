"""How ``gdpo train``'s arguments split between the recipe and ``accelerate launch``: the rule
:func:`gdpo_trl.cli.first_checks.split_launch` applies once, before torch is imported. Stdlib only, so it stays
fast; :mod:`gdpo_trl.cli.launch` reads ``--accelerate_config`` by the name kept here."""

from __future__ import annotations

from gdpo_trl.core.errors import InputError

CONFIG_FLAG = "--accelerate_config"  # ours: a shipped config's name or a file (becomes accelerate's --config_file)


def partition_args(argv: list[str], training: set[str], accelerate: dict[str, bool]) -> tuple[list[str], list[str]]:
    """``(recipe flags, accelerate options)``: an option of ``accelerate`` (name -> whether it takes a value;
    :data:`CONFIG_FLAG` added) that is not a training field's flag in ``training`` goes to accelerate with its value,
    everything else to the recipe."""
    accelerate = {**accelerate, CONFIG_FLAG: True}
    recipe, launch, i = [], [], 0
    while i < len(argv):
        name = argv[i].split("=", 1)[0]
        if name in accelerate and name not in training:
            takes_value = accelerate[name] and "=" not in argv[i]
            if takes_value and (i + 1 == len(argv) or argv[i + 1].startswith("--")):
                raise InputError(f"{name} needs a value, e.g. {name} 2.")
            launch += argv[i : i + 1 + takes_value]
            i += 1 + takes_value
        else:
            recipe.append(argv[i])
            i += 1
    return recipe, launch
