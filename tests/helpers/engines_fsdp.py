"""Test-only: make accelerate run FSDP on CPU processes, so the FSDP2 path of gdpo train can be tested here.

Why an override is needed: accelerate 1.15 enables FSDP only for GPU-like devices (``AcceleratorState.__init__``
sets ``DistributedType.FSDP`` in its MULTI_GPU/XPU/NPU/... branch, never for MULTI_CPU). torch's FSDP2
(``fully_shard``) itself works on CPU tensors with the gloo backend, so after accelerate's own initialization we flip
the distributed type to FSDP wherever an FSDP plugin is given, in both the AcceleratorState and the PartialState
shared state (the Trainer reads one, TrainingArguments the other). Nothing else changes: the plugin, its settings
from accelerate_configs/fsdp2.yaml and the wrapping code are accelerate's own.
"""

import os

from accelerate.state import AcceleratorState, DistributedType, PartialState


def _fsdp_requested(fsdp_plugin=None) -> bool:
    return fsdp_plugin is not None or os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"


def force_fsdp_on_cpu() -> None:
    """Patch ``PartialState.__init__`` and ``AcceleratorState.__init__`` in this process (test-only; see above)."""
    partial_init, accelerator_init = PartialState.__init__, AcceleratorState.__init__

    def partial_init_with_fsdp(self, *args, **kwargs):
        partial_init(self, *args, **kwargs)
        if _fsdp_requested() and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = DistributedType.FSDP  # PartialState keeps its attributes in _shared_state

    def accelerator_init_with_fsdp(self, *args, fsdp_plugin=None, **kwargs):
        accelerator_init(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
        if _fsdp_requested(fsdp_plugin) and self.distributed_type in (DistributedType.MULTI_CPU, DistributedType.FSDP):
            self.distributed_type = DistributedType.FSDP
            PartialState._shared_state["distributed_type"] = DistributedType.FSDP
            if fsdp_plugin is not None:  # accelerate stores the plugin only in its GPU branch
                self.fsdp_plugin = fsdp_plugin

    PartialState.__init__ = partial_init_with_fsdp
    AcceleratorState.__init__ = accelerator_init_with_fsdp
