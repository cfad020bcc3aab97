"""Shared fixtures: a tiny locally built model, a toy dataset and toy rewards. Everything here is offline."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory):
    """Build built-in models into a per-session folder, so tests never read or write the user's cache."""
    os.environ["GDPO_TRL_CACHE"] = str(tmp_path_factory.mktemp("gdpo_cache"))


@pytest.fixture(scope="session")
def tiny_model_path(_model_cache):
    from gdpo_trl.demo.tiny import resolve_model

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
