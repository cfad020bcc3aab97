"""Run by tests/test_process_rewards.py under torchrun with 2 CPU processes: trains 2 GDPO steps with a process
reward, completions cut to rank-dependent lengths, and dumps per rank its completion ids and texts, the gathered
outcome rewards and the token advantages it trained on."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest  # noqa: E402
import torch.distributed as dist  # noqa: E402

from gdpo_trl import GDPOTrainer  # noqa: E402
from tests.test_process_rewards import TokenRecorder, char_steps, vary_lengths  # noqa: E402
from tests.toy import parity_reward, toy_config, toy_dataset  # noqa: E402

monkeypatch = pytest.MonkeyPatch()
recorder = TokenRecorder(monkeypatch)
vary_lengths(monkeypatch, rank=int(os.environ["RANK"]))
out = Path(os.environ["GDPO_TEST_OUT"])
trainer = GDPOTrainer(
    os.environ["GDPO_TEST_MODEL"],
    reward_funcs=[parity_reward, char_steps],
    args=toy_config(out / "run", use_cpu=True),
    train_dataset=toy_dataset(32),
)
trainer.train()
dump = {
    "ids": recorder.ids,
    "texts": recorder.texts,
    "rewards": [t.tolist() for t in recorder.rewards],
    "advantages": [t.tolist() for t in recorder.advantages],
}
(out / f"rank{trainer.accelerator.process_index}.json").write_text(json.dumps(dump))
if dist.is_initialized():
    dist.barrier()
