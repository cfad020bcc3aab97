"""The callbacks that keep a resume exact: one writes a run's recipe into every checkpoint's ``trainer_state.json``,
one applies a changed run length to the learning rate the checkpoint restored.

An ``ExportableState`` callback: transformers stores its :meth:`RecipeRecord.state` under ``stateful_callbacks`` in
the same ``trainer_state.json`` write that completes a checkpoint, so a whole checkpoint always carries the settings
it was trained with (read back by :mod:`gdpo_trl.run.resume_settings` before a resume loads the model). Apart
from that module because it imports transformers, which takes seconds.
"""

from __future__ import annotations

from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState


class RecipeRecord(TrainerCallback, ExportableState):
    """Holds the JSON-safe recipe (:func:`gdpo_trl.run.resume_settings.recipe_record`); changes nothing."""

    def __init__(self, recipe: dict):
        self.recipe = recipe

    def state(self) -> dict:
        return {"args": {"recipe": self.recipe}, "attributes": {}}


class NewRunLength(TrainerCallback):
    """On a resume with a changed ``max_steps``: the next step's learning rate is the new schedule's.

    transformers builds the scheduler for the new length, then restores the optimizer, whose learning rate was set
    by the old schedule at the checkpoint's last step: without this the first resumed step would use the old
    schedule's rate and the next ones the new one's. ``on_train_begin`` runs after that restore (``Trainer.
    _inner_training_loop``). Only transformers' schedules (a ``LambdaLR``) are recomputed.
    """

    def on_train_begin(self, args, state, control, optimizer=None, lr_scheduler=None, **kwargs):
        from torch.optim.lr_scheduler import LambdaLR

        if state.global_step == 0 or not isinstance(lr_scheduler, LambdaLR):
            return
        rules = zip(lr_scheduler.base_lrs, lr_scheduler.lr_lambdas, strict=True)
        rates = [base * rule(lr_scheduler.last_epoch) for base, rule in rules]
        for group, rate in zip(optimizer.param_groups, rates, strict=True):
            group["lr"] = rate
        lr_scheduler._last_lr = rates  # what the trainer logs as learning_rate
