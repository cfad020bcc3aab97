"""A script of scripts/ imported as a module, for tests that call its functions (the scripts are no package)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.helpers.studies import ROOT


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` executed as a fresh module named ``name`` (its ``main`` guard keeps it from running)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
