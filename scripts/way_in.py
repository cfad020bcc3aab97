"""The way in, measured: ``gdpo train``'s arguments followed call by call from ``gdpo_trl.cli.train.main`` to the
moment the run is handed to TRL (``GRPOTrainer.__init__``), counting the package's modules on the way.

    python scripts/way_in.py             # the figures and the drawing docs/layout.md quotes
    python scripts/way_in.py --path      # and the walk itself, one module per line
    python scripts/way_in.py --depth 2   # two modules off the spine instead of one

What is counted. Every call and return of the package's Python functions is recorded (``sys.setprofile``; module
bodies run by an import are not calls: the package and the libraries it builds on are imported before the walk).
The *spine* is the calls on the stack when TRL's constructor is reached: ``cli_errors``' wrapper, ``main``,
``train``, ``train_run``, ``build_trainer``, ``GDPOTrainer.__init__``. The walk is the spine and every call at most
``--depth`` modules off it (a call within a module stays as far off as its caller, so a helper function hides
nothing): the module the interpreter is in after each call and return, repeats collapsed. *Modules entered*: the
distinct modules of the walk; *returns*: the times the walk comes back to a module it had already left. Also
counted, over the whole run: how often a shipped recipe's file is read and YAML parsed.

The run is ``gdpo train --config cpu/gdpo --synthetic_size 64`` into a temporary folder (the shipped warm start,
built offline); it stops where TRL's constructor would start loading the model, so it writes nothing there but the
run's lock.
``--child`` walks a process accelerate starts instead (``gdpo_trl.cli.train``'s ``process_main``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import tempfile
from pathlib import Path

DEPTH = 1
RECIPE = [
    "--config",
    "cpu/gdpo",
    "--synthetic_size",
    "64",
    "--max_steps",
    "1",
    "--save_strategy",
    "no",
    "--report_to",
    "none",
]


class HandedToTRL(BaseException):
    """Raised in place of ``GRPOTrainer.__init__``: the walk ends where TRL's own work begins."""


def import_everything() -> None:
    """The package's modules and the libraries it builds on, imported before the walk, so that the walk holds calls
    only (a module that cannot import here, vLLM's say, is skipped: the run does not use it)."""
    import datasets  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401
    import trl  # noqa: F401

    import gdpo_trl

    root = Path(gdpo_trl.__file__).parent
    for file in sorted(root.rglob("*.py")):  # some layers are namespace packages, which pkgutil does not walk
        parts = file.relative_to(root.parent).with_suffix("").parts
        try:
            importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        except Exception:  # noqa: BLE001 (an optional engine or task missing here)
            continue


def short(module: str) -> str:
    """``gdpo_trl.run.build`` -> ``run/build``."""
    return module.removeprefix("gdpo_trl.").replace(".", "/")


class Walk:
    """Every call and return of the package's functions during the run, and at the end the spine."""

    def __init__(self):
        self.events: list[tuple] = []  # ("call", id, caller id, module, function) or ("return", id)
        self.ids: dict[int, int] = {}  # live frame -> its call's id
        self.spine: list[int] = []  # the calls on the stack at the end, outermost first

    def caller(self, frame) -> int | None:
        while frame is not None:
            if id(frame) in self.ids:
                return self.ids[id(frame)]
            frame = frame.f_back
        return None

    def __call__(self, frame, event, arg) -> None:
        if event not in ("call", "return"):
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("gdpo_trl.") or frame.f_code.co_name == "<module>":
            return
        if event == "call":
            self.ids[id(frame)] = len(self.events)
            call = ("call", len(self.events), self.caller(frame.f_back), module, frame.f_code.co_name)
            self.events.append(call)
        elif id(frame) in self.ids:
            self.events.append(("return", self.ids.pop(id(frame))))

    def end(self, frame) -> None:
        """The spine, read off the stack from ``frame`` down."""
        self.spine = []
        while frame is not None:
            if id(frame) in self.ids:
                self.spine.insert(0, self.ids[id(frame)])
            frame = frame.f_back

    def steps(self, depth: int = DEPTH) -> list[tuple[str, bool, str]]:
        """``(module, on the spine, function)`` each time the walk enters a module or comes back to one, in order."""
        spine = set(self.spine)
        off = {call: 0 for call in self.spine}
        where: dict[int, tuple[str, str]] = {}
        found, stack = [], []
        for event in self.events:
            if event[0] == "call":
                _, call, caller, module, function = event
                if call not in off and caller in off:
                    if (step := off[caller] + (module != where[caller][0])) <= depth:
                        off[call] = step
                if call not in off:
                    continue
                where[call] = (module, function)
                stack.append(call)
            elif stack and event[1] == stack[-1]:
                stack.pop()
            else:
                continue
            if stack and (not found or found[-1][0] != where[stack[-1]][0]):
                found.append((where[stack[-1]][0], stack[-1] in spine, where[stack[-1]][1]))
        return found


def figures(steps: list[tuple[str, bool, str]]) -> dict:
    """Modules entered, and returns: the walk coming back to a module it had already left."""
    path = [module for module, _, _ in steps]
    return {"modules": len(set(path)), "returns": len(path) - len(set(path))}


def drawing(steps: list[tuple[str, bool, str]]) -> str:
    """The walk as docs/layout.md draws it: one line per module of the spine, with the spine's functions there and
    the modules entered from it, in order (a module entered twice in a row from the spine is named twice)."""
    lines: list[tuple[str, list[str], list[str]]] = []
    for module, on_spine, function in steps:
        if on_spine and (not lines or lines[-1][0] != module):
            lines.append((module, [function], []))
        elif on_spine and function not in lines[-1][1]:
            lines[-1][1].append(function)
        elif not on_spine:
            lines[-1][2].append(short(module))
    width = max(len(short(module)) for module, _, _ in lines) + 2
    return "\n".join(
        f"{short(module):<{width}}{', '.join(functions)}" + (f" -> {', '.join(visits)}" if visits else "")
        for module, functions, visits in lines
    )


@contextlib.contextmanager
def counted_reads():
    """``{"read", "parsed"}``: reads of a shipped recipe's file and YAML parses while the block runs."""
    import yaml

    counts = {"read": 0, "parsed": 0}
    originals = [(Path, "read_text"), (Path, "read_bytes"), (yaml, "load"), (yaml, "safe_load")]
    saved = [getattr(owner, name) for owner, name in originals]

    def counted(function, key):
        def wrapper(*args, **kwargs):
            recipe = key == "parsed" or (args[0].suffix == ".yaml" and "recipes" in args[0].parts)
            counts[key] += recipe
            return function(*args, **kwargs)

        return wrapper

    for (owner, name), function in zip(originals, saved, strict=True):
        setattr(owner, name, counted(function, "read" if owner is Path else "parsed"))
    try:
        yield counts
    finally:
        for (owner, name), function in zip(originals, saved, strict=True):
            setattr(owner, name, function)


def walk(argv: list[str], child: bool = False) -> tuple[Walk, dict]:
    """Run ``gdpo train argv`` (``child``: a launched process's ``process_main``) under the walk until TRL's
    constructor; returns the walk and the recipe counts."""
    import_everything()
    import trl

    from gdpo_trl.cli import train

    steps = Walk()

    def handed(self, *args, **kwargs):
        sys.setprofile(None)  # the walk ends here, not where the exception unwinds to
        steps.end(sys._getframe(1))
        raise HandedToTRL

    constructor, trl.GRPOTrainer.__init__ = trl.GRPOTrainer.__init__, handed
    try:
        with counted_reads() as counts:
            sys.setprofile(steps)
            (train.process_main if child else train.main)(argv)
    except HandedToTRL:
        pass
    finally:
        sys.setprofile(None)
        trl.GRPOTrainer.__init__ = constructor
    if not steps.spine:
        raise SystemExit("the walk did not reach TRL's GRPOTrainer.__init__")
    return steps, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", action="store_true", help="print the walk, one module per line")
    parser.add_argument("--depth", type=int, default=DEPTH, help=f"modules off the spine followed (default {DEPTH})")
    parser.add_argument("--child", action="store_true", help="walk a launched process (process_main) instead")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as folder:
        walked, counts = walk([*RECIPE, "--output_dir", str(Path(folder) / "run")], child=args.child)
    steps = walked.steps(args.depth)
    if args.path:
        print("\n".join(short(module) for module, _, _ in steps))
    print(drawing(steps))
    found = figures(steps)
    print(
        f"{found['modules']} modules entered, {found['returns']} returns ({args.depth} module(s) off the spine); "
        f"the recipe read {counts['read']} time(s), parsed {counts['parsed']} time(s)"
    )


if __name__ == "__main__":
    main()
