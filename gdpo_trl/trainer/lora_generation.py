"""Generate from LoRA adapters merged into a copy of the weights, for ``merge_lora_for_generation``.

A LoRA layer computes ``W x + scale * B (A x)``: two more small matrix products per layer. In training they are
cheap next to the backward pass; in generation they run at every layer of every decode step, and on a CPU, where a
decode step is a few hundred small kernels, they made SmolLM2's sampling about 1.7 times slower
(docs/real_model.md#speed). Inside :func:`lora_merged_for_generation` every LoRA layer's base weight is replaced by a
new tensor ``W + scale * B A`` (peft's own ``get_delta_weight``, once per generation) and its adapters are switched
off, so a decode step runs the plain model; on exit the original weight tensors are put back as they were (the same
objects: nothing is subtracted, so training's weights carry no rounding from the merge) and the adapters are
switched on again with their ``requires_grad`` as before.

What changes: the sampled tokens, by rounding (``W + scale * B A`` rounded once, against two products added at each
step), from the second step on; at the first step ``B`` is zero and the merged weight equals ``W`` exactly.
Memory: one more copy of the adapted weights while generating.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch


def lora_layers(model: torch.nn.Module) -> list:
    """The model's peft LoRA layers that are not merged already (none for a model without peft)."""
    try:
        from peft.tuners.lora import LoraLayer
    except ImportError:  # peft is an optional dependency: without it there is no LoRA layer to merge
        return []
    return [module for module in model.modules() if isinstance(module, LoraLayer) and not module.merged]


def engine_refusal(engine: str | None, zero_stage: int | None = None) -> str | None:
    """Why ``merge_lora_for_generation`` cannot run under ``engine`` (``"deepspeed"`` with its ZeRO ``zero_stage``,
    ``"fsdp"``), or None (one process, or DDP). Said before the processes start (:mod:`gdpo_trl.cli.launch`) and again
    by the trainer; ZeRO-1 and ZeRO-2 keep whole weights on every process, so the reason there is not sharding."""
    head = "merge_lora_for_generation=true"
    fix = "drop merge_lora_for_generation (it is meant for one CPU or GPU process, or DDP: --accelerate_config ddp)"
    if engine == "fsdp" or (engine == "deepspeed" and zero_stage is not None and zero_stage >= 3):
        where = "FSDP" if engine == "fsdp" else f"DeepSpeed ZeRO-{zero_stage}"
        return f"{head} needs each process to hold whole weights; under {where} they are sharded: {fix}."
    if engine == "deepspeed" and zero_stage is None:
        return f"{head} is refused under DeepSpeed (whose ZeRO stage is not known here): {fix}."
    if engine == "deepspeed":
        return (
            f"{head} is not checked under DeepSpeed ZeRO-{zero_stage}: the weights stay whole on each process there "
            "(only ZeRO-3 shards them), but DeepSpeed's engine wraps the model and keeps the adapters in its own "
            f"flattened buffers, and the merge and its restore are tested without it: {fix}."
        )
    return None


def check_merge_for_generation(model: torch.nn.Module, sharded: bool) -> None:
    """``merge_lora_for_generation`` needs LoRA layers to merge and no DeepSpeed or FSDP engine (``sharded``: either
    is on; the reason names which, from accelerate's state)."""
    from gdpo_trl.core.errors import InputError

    if sharded:
        raise InputError(engine_refusal(*running_engine()))
    if not lora_layers(model):
        raise InputError(
            "merge_lora_for_generation=true, but the model has no LoRA layer to merge: set lora_r (and "
            "lora_target_modules) to train LoRA adapters, or drop merge_lora_for_generation."
        )


def running_engine() -> tuple[str, int | None]:
    """``("deepspeed", ZeRO stage)`` or ``("fsdp", None)``, from accelerate's state of this process."""
    from accelerate.state import AcceleratorState

    plugin = getattr(AcceleratorState(), "deepspeed_plugin", None)
    if plugin is None:
        return "fsdp", None
    return "deepspeed", getattr(plugin, "zero_stage", None)


@contextmanager
def lora_merged_for_generation(model: torch.nn.Module):
    """Run the body with every LoRA layer's adapters merged into a copy of its base weight (see the module doc)."""
    swapped, switched = [], []
    try:
        with torch.no_grad():
            for layer in lora_layers(model):
                if layer.disable_adapters:
                    continue  # adapters off already: the layer computes W x, nothing to merge
                names = [name for name in layer.active_adapters if name in layer.lora_A]
                if not names:
                    continue
                base = layer.get_base_layer()
                delta = sum(layer.get_delta_weight(name) for name in names)
                swapped.append((base, base.weight.data))
                base.weight.data = base.weight.data + delta.to(base.weight.dtype)
                trainable = [(p, p.requires_grad) for p in layer.parameters() if p is not base.weight]
                layer.enable_adapters(False)
                switched.append((layer, trainable))
        yield model
    finally:
        for layer, trainable in switched:
            layer.enable_adapters(True)
            for parameter, requires_grad in trainable:
                parameter.requires_grad_(requires_grad)
        for base, original in swapped:
            base.weight.data = original
