"""Shared fixtures: a tiny locally built model, a toy dataset and toy rewards. Everything here is offline."""

import os
from pathlib import Path

# Scripts the tests launch in child processes (torchrun, accelerate launch, a killed run) import `tests.*`: the
# repository root on PYTHONPATH lets them, without a sys.path edit in each script.
_ROOT = str(Path(__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join([_ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def model_cache():
    """Where built-in models come from: the user's cache (``$GDPO_TRL_CACHE``, else ``~/.cache/gdpo_trl``), so the
    tests reuse the warm start that ``make demo`` built, and a build here serves the demo too. Builds are keyed by
    their recipe and written atomically under a lock, so a test never sees a half-built model, and two sessions
    wait for one build. Tests of building itself use a folder under tmp instead."""
    from gdpo_trl.models.builtins import cache_dir

    return cache_dir()


@pytest.fixture(scope="session")
def tiny_model_path(model_cache):
    from gdpo_trl.core.plugins import resolve_model

    return resolve_model("builtin:tiny")


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy 2-core machine threads waiting for each other
    made training steps many times slower (see the CPU recipe's `cpu_threads`)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


# A test's folder says what it needs: these folders' tests start several processes or engines, so they are `slow`
# (left out by `make test-fast`) and carry their engine's marker (`make test-vllm`, `make test-multinode`).
FOLDER_MARKERS = {"engines": ("slow", "engines"), "multinode": ("slow", "multinode"), "vllm_cpu": ("slow", "vllm")}


def pytest_collection_modifyitems(items):
    for item in items:
        for name in FOLDER_MARKERS.get(Path(str(item.fspath)).parent.name, ()):
            item.add_marker(name)
