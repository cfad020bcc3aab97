"""Checkpoints and the final model written under a temporary name and renamed when whole.

transformers' ``Trainer._save_checkpoint`` (which TRL's ``GRPOTrainer._save_checkpoint`` wraps to write the model
card and its entropy-control state) writes ``checkpoint-<step>`` straight under ``self._get_output_dir(trial)``:
weights, optimizer, scheduler, each rank's RNG state, ``trainer_state.json`` last, then ``rotate_checkpoints``.
A kill in between left a folder with the right name and half its files. Here ``_get_output_dir`` answers a staging
folder (:data:`STAGING_NAME`) for the length of that save, so every file of every rank lands in
``.checkpoint.partial/checkpoint-<step>``; after a barrier the main process renames it to ``checkpoint-<step>`` (one
``rename``) and only then rotates old checkpoints, so a rotation never deletes the last whole one for a half-written
one.

:func:`save_final_model` does the same for ``Trainer.save_model``: every rank joins (ZeRO-3 gathers the weights),
the files land in ``output_dir/.final-model.partial``, and the main process publishes them with their sizes and
hashes (:mod:`gdpo_trl.storage.final_model`). A hyper-parameter search (``trial``) keeps transformers' own paths.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from gdpo_trl.storage.final_model import PARTIAL_NAME, publish

STAGING_NAME = ".checkpoint.partial"


class StagedSaves:
    """Mixin for a transformers ``Trainer`` (listed before it): checkpoints renamed into place when whole."""

    _staging_dir: str | None = None

    def _get_output_dir(self, trial) -> str:
        return self._staging_dir or super()._get_output_dir(trial)

    def _save_checkpoint(self, model, trial) -> None:
        if trial is not None or getattr(self, "hp_search_backend", None) is not None:
            return super()._save_checkpoint(model, trial)
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints

        run_dir = Path(super()._get_output_dir(trial))
        staging = run_dir / STAGING_NAME
        name = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
        if self.args.should_save:
            shutil.rmtree(staging / name, ignore_errors=True)  # what a killed save of this step left
        self.accelerator.wait_for_everyone()  # no rank writes into the staging folder before it is emptied
        limit, self.args.save_total_limit = self.args.save_total_limit, None  # rotation waits for the rename
        self._staging_dir = str(staging)
        try:
            super()._save_checkpoint(model, trial)
        except BaseException:  # a full disk, a failed rank: the cut checkpoint goes, the space with it
            if self.args.should_save:
                shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            self._staging_dir, self.args.save_total_limit = None, limit
        self.accelerator.wait_for_everyone()  # every rank's RNG state (and ZeRO shards) is written
        if not self.args.should_save:
            return
        target = run_dir / name
        if target.exists():  # the same step saved before (a resume that saves its first step again)
            shutil.rmtree(target)
        os.replace(staging / name, target)
        shutil.rmtree(staging, ignore_errors=True)
        best = self.state.best_model_checkpoint
        if best and best.startswith(str(staging)):
            self.state.best_model_checkpoint = str(run_dir) + best[len(str(staging)) :]
        rotate_checkpoints(
            output_dir=str(run_dir),
            save_total_limit=limit,
            best_model_checkpoint=self.state.best_model_checkpoint,
            use_mtime=True,
        )


def save_final_model(trainer, output_dir: str) -> None:
    """``trainer.save_model`` into a temporary folder on every rank, then (main process) publish it into
    ``output_dir`` with its record, then push to the Hub as ``save_model`` would have (``push_to_hub``)."""
    folder = Path(output_dir)
    staged = folder / PARTIAL_NAME
    if trainer.args.should_save:
        shutil.rmtree(staged, ignore_errors=True)
    trainer.accelerator.wait_for_everyone()
    try:
        trainer.save_model(str(staged), _internal_call=True)  # _internal_call: no push from the temporary folder
        trainer.accelerator.wait_for_everyone()
        if trainer.args.should_save:
            publish(staged, folder)
    except BaseException:  # a full disk: nothing half-written stays, and the space it took is free again
        if trainer.args.should_save:
            shutil.rmtree(staged, ignore_errors=True)
        raise
    if trainer.args.push_to_hub:
        trainer.push_to_hub(commit_message="Model save", revision=trainer.args.hub_revision)
