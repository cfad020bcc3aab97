"""Checks and teardown around the distributed engines (DeepSpeed, FSDP) that ``gdpo train`` runs under.

Four things the engines do not do for us:

- **FSDP on a machine without an accelerator.** accelerate (1.15) only turns FSDP on for GPU-like devices. With an
  FSDP config on a CPU-only machine, ``accelerate launch`` sets ``ACCELERATE_USE_FSDP=true`` and the run silently
  becomes plain DDP (``MULTI_CPU``: every process holds the whole model) or, with ``use_cpu: false``, independent
  single processes writing one folder. :func:`check_fsdp_engaged` refuses such a run in one line.
- **A clean exit.** Nothing destroys the process group before the interpreter shuts down. ZeRO-3 gathers and
  scatters weights with asynchronous collectives; on the gloo backend (CPU) their work objects live on gloo's C++
  worker threads and hold tensors. When those are destroyed during interpreter finalization, releasing a tensor
  needs the GIL of an interpreter that is going away, and the process aborts (``terminate called without an active
  exception``, SIGABRT; the mechanism is described in pytorch/pytorch PR #179291, which proposed an atexit
  teardown in torch and was abandoned). A ZeRO-3 run could so end with one rank aborting after a successful run,
  and ``accelerate launch`` exiting non-zero. :func:`shutdown_distributed` waits for every rank, then destroys the
  process groups while the interpreter is fully alive.
- **An exit without interpreter teardown.** Even with the groups destroyed, a ZeRO-3 run on CPU still ended now and
  then (most often on the first run on a machine, while the machine was busiest) with one rank aborting after
  "Model saved" (``terminate called without an active exception``, exit codes ``[-15, -6]``): a native thread (gloo's,
  or one finishing a collective's callback) met the interpreter's finalization or the C++ static destructors. Python
  3.11 ends a thread that needs the GIL during finalization with ``pthread_exit``, whose forced unwinding through a
  ``noexcept`` C++ frame calls ``std::terminate``, and a ``std::thread`` destroyed while still joinable does the
  same. Nothing a training process does after saving needs that teardown, so :func:`end_process` runs Python's
  ``atexit`` handlers (trackers and loggers flush there), flushes the standard streams and leaves with ``os._exit``:
  no finalization, no static destructors, nothing left to race.
- **vLLM's groups first.** vLLM colocated in the training processes (TRL's ``vllm_mode="colocate"``) builds its own
  process groups on top of the default one, and its engine destroys them when it is finalized (at the latest at
  interpreter exit). Destroying the default group first destroys every group, vLLM's included, so that finalizer
  then failed in every process (``Exception ignored ... ValueError: Invalid process group specified``). So vLLM's
  own teardown (``vllm.distributed.parallel_state.cleanup_dist_env_and_memory``, the one its engine runs) goes
  first; the engine's later run of it finds nothing left to destroy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gdpo_trl.core.errors import InputError

FSDP_ENV = "ACCELERATE_USE_FSDP"  # set by `accelerate launch` from a config with `distributed_type: FSDP`


def fsdp_fallback_message(fsdp_requested: bool, distributed_type: str) -> str | None:
    """The one-line refusal when FSDP was asked for but accelerate chose another distributed type, else None.

    ``distributed_type`` is accelerate's ``DistributedType`` value (``"FSDP"``, ``"MULTI_CPU"``, ``"NO"``, ...).
    """
    if not fsdp_requested or distributed_type == "FSDP":
        return None
    became = {
        "MULTI_CPU": "plain DDP (every process holds the whole model)",
        "NO": "independent single processes writing the same output_dir",
    }.get(distributed_type, distributed_type)
    return (
        f"The accelerate config asks for FSDP, but accelerate runs {became}: it only enables FSDP on GPU-like "
        "devices. Run on GPUs, or use accelerate_configs/ddp.yaml (or zero3.yaml, which shards on CPU) here."
    )


def check_fsdp_engaged() -> None:
    """Raise an ``InputError`` if an FSDP config silently fell back to another engine (see module docstring).

    Call it after the training arguments exist (they create accelerate's process state) and before the model loads.
    """
    fsdp_requested = os.environ.get(FSDP_ENV, "false").lower() == "true"
    if not fsdp_requested:
        return
    from accelerate.state import PartialState

    message = fsdp_fallback_message(fsdp_requested, PartialState().distributed_type.value)
    if message:
        raise InputError(message)


def shutdown_distributed() -> None:
    """Wait for every rank, then destroy the process groups: vLLM's first, if vLLM runs in this process, by vLLM's own
    teardown, then the default one (a no-op outside torch.distributed).

    Call it last in ``main``, after the model is saved. Idempotent.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    dist.barrier()
    if "vllm.distributed.parallel_state" in sys.modules:  # only vLLM imports it: no need to import vLLM here
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

        cleanup_dist_env_and_memory()  # vLLM's groups, then (vLLM does this too) the default one
    if dist.is_initialized():
        dist.destroy_process_group()


def end_process(main, argv: list[str] | None = None) -> None:
    """Run ``main(argv)`` as a process's whole life and end the process with its status without interpreter teardown
    (see the module docstring): ``atexit`` handlers run, the standard streams are flushed, then ``os._exit``.

    Only for a process's entry point (``python -m gdpo_trl.cli.train`` under a launcher), never inside a process that
    goes on (a test calling ``main``). An exception that escapes ``main`` keeps the normal exit, with its traceback.
    """
    import atexit

    try:
        main(argv)
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
    atexit._run_exitfuncs()  # what a normal exit runs first: logging's shutdown, trackers' flushes, TRL's event loop
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing more can be written to it anyway
            pass
    os._exit(status)


STALE_LOCK_S = 600  # a JIT build of DeepSpeed's ops takes about a minute here; ten without a change is no build


def stale_extension_locks(now: float | None = None) -> list[str]:
    """One warning line per torch-extension build lock older than :data:`STALE_LOCK_S` seconds.

    torch's JIT builder (``torch.utils.cpp_extension``, used by DeepSpeed for its ops) marks a build with a ``lock``
    file in ``TORCH_EXTENSIONS_DIR/<python>/<op>/`` and every other process waits, sleeping, while it exists. A build
    that was killed leaves it behind, and from then on every DeepSpeed run on the machine waits forever without a
    word (met here: a ZeRO-2 run asleep in both processes). The lock holds no process id, so an old one is named, not
    removed: the user can tell whether a build is still running.
    """
    import time

    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or Path.home() / ".cache" / "torch_extensions")
    now = time.time() if now is None else now
    lines = []
    for lock in sorted(root.glob("*/*/lock")):
        try:
            age = now - lock.stat().st_mtime
        except OSError:  # removed meanwhile: a build finished
            continue
        if age > STALE_LOCK_S:
            lines.append(
                f"gdpo train: warning: {lock} is {age / 60:.0f} min old: a torch extension build (DeepSpeed's "
                f"{lock.parent.name}) that was stopped left it, and DeepSpeed runs wait on it without end; delete it "
                "unless such a build is running now."
            )
    return lines
