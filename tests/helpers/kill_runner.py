"""Run by tests/run/test_resume.py: ``gdpo train`` in this process, SIGKILLed at a chosen point when asked.

``GDPO_TEST_KILL`` is ``<point>:<step>`` or empty (no kill):

- ``step:<k>``: in the middle of optimizer step k+1 (global_step == k when its training step starts);
- ``optimizer:<k>``: while checkpoint-k is written, halfway through ``optimizer.pt`` (weights already saved; no
  scheduler, RNG or trainer state yet): a truncated file, as a kill during ``torch.save`` leaves;
- ``state:<k>``: while checkpoint-k is written, after the RNG state and before ``trainer_state.json``;
- ``final:<k>``: while the final model is written after step k, halfway through ``model.safetensors``.

SIGKILL of the process itself: no Python cleanup, no ``finally``, no flush, as with ``kill -9`` or the OOM killer.
"""

import io
import os
import signal
import sys

import torch
from transformers import Trainer

from gdpo_trl.cli.train import main


def die():
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


point, _, at = os.environ.get("GDPO_TEST_KILL", "").partition(":")
at = int(at) if at else -1
original_step = Trainer.training_step
original_optimizer = Trainer._save_optimizer_and_scheduler
original_rng = Trainer._save_rng_state


def training_step(self, *args, **kwargs):
    if point == "step" and self.state.global_step == at:
        die()
    return original_step(self, *args, **kwargs)


def save_optimizer_and_scheduler(self, output_dir):
    if point == "optimizer" and self.state.global_step == at:
        buffer = io.BytesIO()
        torch.save(self.optimizer.state_dict(), buffer)
        data = buffer.getvalue()
        with open(os.path.join(output_dir, "optimizer.pt"), "wb") as f:
            f.write(data[: len(data) // 2])
        die()
    return original_optimizer(self, output_dir)


def save_rng_state(self, output_dir):
    original_rng(self, output_dir)
    if point == "state" and self.state.global_step == at:
        die()


def save(self, output_dir=None, state_dict=None):
    original_save(self, output_dir, state_dict)
    if point == "final" and self.state.global_step == at and "checkpoint-" not in str(output_dir):
        weights = os.path.join(output_dir, "model.safetensors")
        os.truncate(weights, os.path.getsize(weights) // 2)
        die()


original_save = Trainer._save
Trainer._save = save
Trainer.training_step = training_step
Trainer._save_optimizer_and_scheduler = save_optimizer_and_scheduler
Trainer._save_rng_state = save_rng_state
main(sys.argv[1:])
