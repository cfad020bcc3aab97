"""Rebuild a shipped warm start on this machine and say whether it equals the shipped weights; verify or replace the
shipped copies (:mod:`gdpo_trl.models.shipped` says why they ship)::

    python -m gdpo_trl.tasks.rebuild warmstart outputs/warmstart-rebuilt   # build here, compare SHA-256
    python -m gdpo_trl.tasks.rebuild --verify                             # the shipped files against their hashes
    python -m gdpo_trl.tasks.rebuild --ship warmstart [--from CACHED]     # maintainers: replace the shipped copy
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from gdpo_trl.models.shipped import (
    MANIFEST,
    SHIPPED_DIR,
    WEIGHTS,
    file_sha256,
    machine,
    manifest,
    verify,
    weights_sha256,
)
from gdpo_trl.tasks.warm_starts import WARM_STARTS, build_warm_start_isolated, warm_start_build_id

NAMES = sorted(WARM_STARTS)


def _target(name: str) -> tuple[int, str]:
    """(seed, build id) of the default warm start ``name``, as ``builtin:NAME`` asks for it."""
    return 0, warm_start_build_id(name, 0)


def rebuild(name: str, out: Path) -> tuple[Path, str, str | None]:
    """Build warm start ``name`` (seed 0, its default recipe) into ``out`` on this machine; return the folder, its
    weights' SHA-256 and the shipped one (None if none ships)."""
    if out.exists():
        raise SystemExit(f"{out} exists: name a new folder (the build never overwrites one).")
    build_warm_start_isolated(out, name, 0)
    entry = manifest().get(name)
    return out, weights_sha256(out), entry["weights_sha256"] if entry else None


def _say_comparison(name: str, built: str, shipped: str | None) -> None:
    if shipped is None:
        print(f"weights SHA-256 {built}; no builtin:{name} ships to compare with.")
    elif built == shipped:
        print(f"weights SHA-256 {built}: equal to the shipped builtin:{name}.")
    else:
        print(
            f"weights SHA-256 {built}: differs from the shipped builtin:{name} ({shipped}). This machine's kernels "
            f"round differently during the SFT; builtin:{name} still loads the shipped weights (pass this folder as "
            "model_name_or_path to train from this build)."
        )


def ship(name: str, source: Path | None = None) -> None:
    """Rebuild ``name`` here (or take ``source``, a build of it in the cache) and make it the shipped copy (for
    maintainers: after a recipe change)."""
    seed, build_id = _target(name)
    folder = SHIPPED_DIR / f"{name}-seed{seed}"
    scratch = SHIPPED_DIR / f".{name}.building"
    shutil.rmtree(scratch, ignore_errors=True)
    if source is None:
        rebuild(name, scratch)
    elif not source.name.startswith(f"{name}-seed{seed}-{build_id}"):
        raise SystemExit(
            f"{source} is not builtin:{name}@{seed} of the current recipe ({name}-seed{seed}-{build_id})."
        )
    else:
        shutil.copytree(source, scratch)
    shutil.rmtree(folder, ignore_errors=True)
    scratch.rename(folder)
    entries = manifest()
    entries[name] = {
        "seed": seed,
        "build_id": build_id,
        "folder": folder.name,
        "weights_sha256": weights_sha256(folder),
        "file_sha256": file_sha256(folder / WEIGHTS),
        "built_on": machine(),
    }
    MANIFEST.write_text(json.dumps(dict(sorted(entries.items())), indent=2) + "\n")
    print(f"shipped builtin:{name}: {folder} ({entries[name]['weights_sha256']})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", choices=NAMES, help="the warm start to rebuild")
    parser.add_argument("out", nargs="?", type=Path, help="a new folder for the build")
    parser.add_argument("--verify", action="store_true", help="check the shipped weights against their SHA-256")
    parser.add_argument("--ship", action="store_true", help="maintainers: make the build the shipped copy")
    parser.add_argument("--from", dest="source", type=Path, help="with --ship: a finished build, instead of building")
    args = parser.parse_args(argv)
    if args.verify:
        sys.exit(1 if verify() else 0)
    if args.name is None:
        parser.error("name a warm start to rebuild (or --verify)")
    if args.ship:
        ship(args.name, args.source)
        return
    if args.out is None:
        parser.error("name a new folder for the build")
    _, built, shipped = rebuild(args.name, args.out)
    _say_comparison(args.name, built, shipped)


if __name__ == "__main__":
    main()
