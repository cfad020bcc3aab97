"""Reward functions named by where they live: an import path or a file of the user's own.

Three spellings, as TRL's own loaders take them (``trl grpo``'s dotted paths, its Harbor agents' ``module:Class``
and ``file.py:Class``):

- ``my_pkg.rewards.my_fn``: the module ``my_pkg.rewards``, its attribute ``my_fn``;
- ``my_pkg.rewards:my_fn``: the same, the colon marking where the module ends;
- ``path/to/rewards.py:my_fn``: a file (relative to the current folder, or absolute).

A module in the current folder imports without ``PYTHONPATH=.``: ``gdpo`` is a console script, so the current folder
is not on ``sys.path`` (``python -m`` and ``trl grpo`` put it there). It is appended, only when the module is found
nowhere else, so a file there never shadows an installed package; a file's own folder is appended the same way, so
it can import the modules beside it.

:func:`check_path_spec` tells what the files alone can tell, running none of their code, so ``gdpo train`` answers a
missing file or a misspelled function in one line before torch is imported: the module's source is read and parsed,
and the names it defines at top level are compared (with the nearest names on a miss). A module that makes its names
at run time (``from x import *``, ``globals()``, a module ``__getattr__``) is left to :func:`import_reward`.
Stdlib only, like the registry.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

from gdpo_trl.core.errors import InputError

RUNTIME_NAMES = "runtime"  # what top_level_names returns for a module that makes its names at run time


def split_spec(spec: str) -> tuple[str, str, bool]:
    """``(module or file, function, is_file)`` for an import path or a file spelling."""
    if ":" in spec:
        target, _, attr = spec.rpartition(":")  # rpartition: a Windows drive (C:\\...) stays in the path
        is_file = target.endswith(".py") or "/" in target or os.sep in target
    else:
        target, _, attr = spec.rpartition(".")
        is_file = False
    if not target or not attr.isidentifier() or (not is_file and not all(p.isidentifier() for p in target.split("."))):
        raise InputError(
            f"reward path {spec!r} is not a valid dotted path like 'my_pkg.rewards.my_fn' (or 'my_pkg.rewards:my_fn', "
            "or a file: 'path/to/rewards.py:my_fn')"
        )
    return target, attr, is_file


def nearest(name: str, candidates, what: str) -> str:
    """`` (did you mean a, b?)`` for the closest of ``candidates`` to ``name``, else ``; it has a, b, c`` or ``""``."""
    candidates = sorted({c for c in candidates if not c.startswith("_")})
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    if close:
        return f" (did you mean {', '.join(close)}?)"
    if candidates:
        more = f" and {len(candidates) - 8} more" if len(candidates) > 8 else ""
        return f"; {what}: {', '.join(candidates[:8])}{more}"
    return ""


def folder_modules(folder: Path) -> list[str]:
    """The modules a folder holds: ``x.py`` files and packages."""
    if not folder.is_dir():
        return []
    found = [p.stem for p in folder.glob("*.py")] + [p.name for p in folder.iterdir() if (p / "__init__.py").is_file()]
    return [name for name in found if name.isidentifier()]


def no_module(spec: str, module: str, missing: str) -> InputError:
    """The line for a module that is not there: ``missing`` is the first part not found (``a.b`` of ``a.b.c``)."""
    parent = missing.rpartition(".")[0]
    if parent:
        search = getattr(sys.modules.get(parent), "__path__", None) or module_search_path(parent) or []
        places = [m for folder in search for m in folder_modules(Path(folder))]
    else:
        places = folder_modules(Path.cwd())  # the user's own modules: the current folder
    hint = nearest(missing.rpartition(".")[2], places, "the current folder holds" if not parent else f"{parent} has")
    return InputError(
        f"reward path {spec!r}: cannot import module {module!r} (No module named {missing!r}){hint}. A module of "
        "your own goes in the current folder or on PYTHONPATH; a file can be named as 'path/to/rewards.py:function'."
    )


def module_search_path(name: str) -> list[str] | None:
    """The folders package ``name``'s submodules are found in, located without running the package."""
    spec = find_module(name)
    return list(spec.submodule_search_locations or []) if spec is not None else None


def find_module(name: str):
    """``name``'s module spec, found without running any module: on ``sys.path``, then in the current folder (a
    top-level name only); a submodule in its package's folders. None when it is not there."""
    top, _, rest = name.partition(".")
    if name in sys.modules and getattr(sys.modules[name], "__spec__", None) is not None:
        return sys.modules[name].__spec__
    if not rest:
        spec = importlib.util.find_spec(top)  # a top-level name: nothing runs
        return spec or importlib.machinery.PathFinder.find_spec(top, [str(Path.cwd())])
    search = module_search_path(name.rpartition(".")[0])
    return importlib.machinery.PathFinder.find_spec(name, search) if search else None


def top_level_names(source: str, filename: str):
    """The names a module's source defines at top level (functions, classes, assignments, imports, also inside
    top-level ``if``/``try``/``with`` blocks), or :data:`RUNTIME_NAMES` when it makes names at run time."""
    tree = ast.parse(source, filename=filename)
    names: set[str] = set()

    def visit(body) -> bool:  # True: names are made at run time
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                if node.name == "__getattr__":
                    return True
                continue
            if any(isinstance(n, ast.Name) and n.id in ("globals", "exec", "setattr") for n in ast.walk(node)):
                return True
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name == "*":
                        return True
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
                blocks += [handler.body for handler in getattr(node, "handlers", [])]
                if any(visit(block) for block in blocks):
                    return True
        return False

    return RUNTIME_NAMES if visit(tree.body) else names


def missing_attribute(spec: str, where: str, attr: str, candidates) -> InputError:
    return InputError(f"reward path {spec!r}: {where} has no attribute {attr!r}{nearest(attr, candidates, 'it has')}")


def check_source(spec: str, origin: str, where: str, attr: str, extra=()) -> None:
    """The function ``attr`` among the names the source file ``origin`` defines (``extra``: a package's
    submodules); a syntax error is named with its line."""
    path = Path(origin)
    try:
        names = top_level_names(path.read_text(encoding="utf-8"), str(path))
    except SyntaxError as error:
        raise InputError(f"reward path {spec!r}: {path} line {error.lineno}: {error.msg}") from None
    except (OSError, UnicodeDecodeError, ValueError):
        return  # unreadable here: the import will say
    if names != RUNTIME_NAMES and attr not in names and attr not in extra:
        raise missing_attribute(spec, where, attr, [*names, *extra])


def check_file(spec: str, target: str, attr: str) -> Path:
    """The file of a ``file.py:function`` spelling, checked: there, a Python source, defining ``attr``."""
    path = Path(target).expanduser()
    if not path.is_file():
        files = [p.name for p in path.parent.glob("*.py")] if path.parent.is_dir() else []
        close = difflib.get_close_matches(path.name, files, n=1, cutoff=0.6)
        hint = f"; did you mean {str(path.with_name(close[0]))!r}?" if close else ""
        where = "" if path.is_absolute() else f" (paths are relative to the current folder, {Path.cwd()})"
        raise InputError(f"reward path {spec!r}: there is no file {target}{where}{hint}")
    if path.suffix != ".py":
        raise InputError(f"reward path {spec!r}: {target} is not a Python file (.py)")
    check_source(spec, str(path), f"file {target!r}", attr)
    return path


def check_path_spec(spec: str) -> None:
    """Raise the one-line ``InputError`` :func:`import_reward` would raise for a missing module or file or a
    misspelled function, reading the files only (no module is run: before torch is imported)."""
    target, attr, is_file = split_spec(spec)
    if is_file:
        check_file(spec, target, attr)
        return
    module = sys.modules.get(target)
    if module is not None:  # already imported: ask it
        if not hasattr(module, attr):
            raise missing_attribute(spec, f"module {target!r}", attr, dir(module))
        return
    parts = target.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules and find_module(name) is None:
            raise no_module(spec, target, name)
    found = find_module(target)
    origin = getattr(found, "origin", None)
    if origin and origin.endswith(".py"):
        submodules = folder_modules(Path(origin).parent) if Path(origin).name == "__init__.py" else []
        check_source(spec, origin, f"module {target!r}", attr, submodules)


def import_module(spec: str, name: str):
    """Import module ``name``; a top-level module found only in the current folder is imported from there."""
    top = name.partition(".")[0]
    importlib.invalidate_caches()  # a file written since this process last looked is found
    if importlib.util.find_spec(top) is None:
        here = str(Path.cwd())
        if importlib.machinery.PathFinder.find_spec(top, [here]) is not None and here not in sys.path:
            sys.path.append(here)  # appended: it is found nowhere else, so nothing installed is shadowed
    try:
        return importlib.import_module(name)
    except SystemExit as error:  # a BaseException: it would end gdpo train with its status and no word
        raise exit_at_import(spec, module_file(name), error) from None
    except ModuleNotFoundError as error:
        if error.name and (name == error.name or name.startswith(error.name + ".")):
            raise no_module(spec, name, error.name) from error
        raise InputError(f"reward path {spec!r}: importing {name!r} raised ModuleNotFoundError: {error}") from error
    except ImportError as error:
        raise InputError(f"reward path {spec!r}: cannot import module {name!r} ({error})") from error
    except Exception as error:  # noqa: BLE001 - the user's module failed while it ran: named in one line
        raise InputError(f"reward path {spec!r}: importing {name!r} raised {type(error).__name__}: {error}") from error


def module_file(name: str) -> str:
    """The source file of module ``name`` (found without running it), else the name itself."""
    try:
        origin = getattr(find_module(name), "origin", None)
    except (ImportError, ValueError):
        origin = None
    return shown_path(origin) if origin and origin not in ("built-in", "frozen") else name


def shown_path(path: str) -> str:
    """``path`` relative to the current folder where it lies inside it, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def exit_at_import(spec: str, file: str, error: SystemExit) -> InputError:
    """The line for a reward file whose top level called ``sys.exit`` (a script's ``main()`` run on import)."""
    return InputError(
        f"reward path {spec!r}: importing {file} called sys.exit({error.code!r}) at its top level, so none of its "
        'rewards could be read; put the script part under `if __name__ == "__main__":`.'
    )


def load_file(spec: str, path: Path):
    """The module of a reward file, run once per process. Imported under its own name where that name finds this
    file (its folder is then on ``sys.path``, so the file imports its neighbours), else under a name of its own."""
    path = path.resolve()
    folder, stem = str(path.parent), path.stem
    importlib.invalidate_caches()
    found = importlib.util.find_spec(stem) if stem.isidentifier() else None
    if stem.isidentifier() and (found is None or Path(found.origin or "").resolve() == path):
        if found is None and folder not in sys.path:
            sys.path.append(folder)
        return import_module(spec, stem)
    name = f"gdpo_reward_file_{zlib.crc32(str(path).encode()):08x}"  # the stem names another module, or nothing
    if name not in sys.modules:
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except SystemExit as error:
            del sys.modules[name]
            raise exit_at_import(spec, shown_path(str(path)), error) from None
        except Exception as error:  # noqa: BLE001
            del sys.modules[name]
            what = f"{type(error).__name__}: {error}"
            raise InputError(f"reward path {spec!r}: running {path.name} raised {what}") from error
    return sys.modules[name]


# SHA-256 of each reward source file as this process read it when it imported it (path -> digest).
_imported: dict[str, str] = {}


def remember_source(path: str | None) -> None:
    """Record ``path``'s SHA-256 the first time it is seen: right after its import, what the process runs."""
    if not path:
        return
    key = str(Path(path).resolve())
    if key in _imported:
        return
    digest = hashlib.sha256()
    try:
        with open(key, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return
    _imported[key] = digest.hexdigest()


def imported_sha256(path: str) -> str:
    """The SHA-256 of reward source ``path`` as this process imported it (read now if it was imported before this
    module kept count: a built-in reward's module); "" where it cannot be read."""
    remember_source(path)
    return _imported.get(str(Path(path).resolve()), "")


def import_reward(spec: str) -> Callable:
    """The function an import path or a file spelling names (see the module docstring). Raises ``InputError`` in
    one line for a malformed spelling, a module or file that is not there or fails to import, a missing attribute
    (with the nearest names) or one that is not callable."""
    target, attr, is_file = split_spec(spec)
    if is_file:
        module, where = load_file(spec, check_file(spec, target, attr)), f"file {target!r}"
    else:
        module, where = import_module(spec, target), f"module {target!r}"
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise missing_attribute(spec, where, attr, dir(module)) from None
    if not callable(obj):
        raise InputError(f"reward path {spec!r}: {attr!r} is a {type(obj).__name__}, which is not callable")
    remember_source(getattr(module, "__file__", None))  # the file as this process ran it (gdpo_trl.run.fingerprints)
    return obj
