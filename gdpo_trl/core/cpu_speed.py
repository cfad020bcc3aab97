"""Training a real model on a CPU: which dtype the CPU computes fast, and how its threads wait.

Pure functions of the machine (``/proc/cpuinfo`` and the environment); no torch import, so the ``gdpo`` command can
call them before torch loads. Measured on a 2-core AMD EPYC with ``avx512_bf16``, SmolLM2-135M, 16 sampled
completions (scripts/benchmark_cpu_path.py; docs/real_model.md#speed):

* **dtype.** bfloat16 generates about 1.5-1.8x faster than float32 where the CPU has native bf16 instructions
  (AVX-512 BF16 or AMX) and halves activation memory; without them (an Intel Xeon without AVX-512 BF16) bf16 is
  emulated and no faster, so ``cpu_dtype: auto`` keeps float32 there. Choosing float32 leaves every number of a run
  exactly what it was before this setting existed.
* **threads.** With OpenMP's default waiting (spin a while, then sleep) or active waiting, a 2-thread job on 2 busy cores spends its time in OpenMP's
  barrier (``gomp_team_barrier_wait_end``): 16 x 64 tokens took over 180 s beside three busy processes instead of
  about 6 s alone. Passive waiting (threads sleep instead of spinning) kept it at about 25 s, ahead of one thread
  (about 55 s). GNU OpenMP reads ``OMP_WAIT_POLICY`` once, when torch loads it, so it must be set before
  ``import torch``: :func:`quiet_thread_waits` does that for the ``gdpo`` command.
* **sampling.** transformers' sampler draws one exponential random number per vocabulary entry for every sampled
  token (``torch.multinomial``): under the profiler 27.7 ms of a SmolLM2 decode step of 16 sequences and 84.2 ms of
  a Qwen2.5 one (151,936 tokens), at a load of 4-5. ``fast_sampling`` (gdpo_trl/trainer/fast_sampling.py) draws the
  same distribution by inverse CDF in 2.6 and 9.5 ms; the rest of a decode step is the linear layers reading the
  weights (memory bound) and Python between small kernels.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from gdpo_trl.core.errors import InputError

CPU_DTYPES = ("auto", "bfloat16", "float32")
# The instruction sets that make bf16 matrix products native on x86 CPUs (Linux /proc/cpuinfo flag names), best first.
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (or the given text); empty where there is no such file."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text(errors="replace") if path.is_file() else ""
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")):  # x86 says flags, ARM says Features
            return set(line.split(":", 1)[1].split())
    return set()


def native_bf16_flag(flags: set[str]) -> str | None:
    """The flag that gives this CPU native bf16 matrix products, or None."""
    return next((flag for flag in NATIVE_BF16_FLAGS if flag in flags), None)


def choose_cpu_dtype(setting: str, flags: set[str] | None = None) -> tuple[str, str]:
    """``(dtype, why)`` for ``cpu_dtype=setting``: ``auto`` gives bfloat16 where the CPU has native bf16, float32
    elsewhere; ``bfloat16`` and ``float32`` are taken as they are. ``why`` is the one line a run logs."""
    if setting not in CPU_DTYPES:
        raise ValueError(f"cpu_dtype={setting!r}: use one of {', '.join(CPU_DTYPES)}")
    flag = native_bf16_flag(cpu_flags() if flags is None else flags)
    if setting != "auto":
        native = f"native bf16 ({flag})" if flag else "no native bf16"
        return setting, f"{setting}: set by cpu_dtype (this CPU has {native})"
    if flag:
        return (
            "bfloat16",
            f"bfloat16: this CPU has native bf16 ({flag}), about twice float32's speed (cpu_dtype: auto)",
        )
    return "float32", "float32: this CPU has no native bf16 (no avx512_bf16 or amx_bf16), so bf16 is no faster"


@functools.cache
def cpu_dtype_choice(setting: str) -> tuple[str, str]:
    """:func:`choose_cpu_dtype` for this machine, once per setting; a wrong setting is an :class:`InputError`."""
    try:
        return choose_cpu_dtype(setting)
    except ValueError as error:
        raise InputError(str(error)) from None


def accelerator_available() -> bool:
    """Whether torch sees a GPU-like device (CUDA/ROCm, XPU or Apple MPS) that bf16 training can use."""
    import torch

    xpu = getattr(torch, "xpu", None)
    return torch.cuda.is_available() or bool(xpu and xpu.is_available()) or torch.backends.mps.is_available()


def trains_on_cpu(args) -> bool:
    """Whether a run with TrainingArguments ``args`` trains on the CPU: asked to (``use_cpu``), or no accelerator."""
    return bool(getattr(args, "use_cpu", False)) or not accelerator_available()


def quiet_thread_waits(environ=os.environ) -> None:
    """Make OpenMP's idle threads sleep rather than spin (``OMP_WAIT_POLICY=PASSIVE``) unless the user chose a
    policy; call before torch is imported (it is read once, when the OpenMP runtime loads). Waiting changes only
    the time a run takes, never its numbers."""
    environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
