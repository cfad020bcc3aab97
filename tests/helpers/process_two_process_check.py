"""Run by tests/trainer/test_process_rewards.py under torchrun with 2 CPU processes: trains 2 GDPO steps with a process
reward, completions cut to rank-dependent lengths, and dumps per rank its completion ids and texts, the gathered
outcome rewards and the token advantages it trained on."""

import json
import os
from pathlib import Path

import pytest
import torch.distributed as dist

from gdpo_trl.cli.engines import end_process
from tests.helpers.recorders import TokenRecorder, char_steps, vary_lengths
from tests.helpers.toy import parity_reward, two_process_trainer


def main(argv=None) -> None:
    monkeypatch = pytest.MonkeyPatch()
    recorder = TokenRecorder(monkeypatch)
    vary_lengths(monkeypatch, rank=int(os.environ["RANK"]))
    out = Path(os.environ["GDPO_TEST_OUT"])
    trainer = two_process_trainer([parity_reward, char_steps])
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


# Like gdpo train's processes: leave without interpreter teardown, where a gloo thread could abort a rank that
# finished (`terminate called without an active exception`, seen here once in a CI run; gdpo_trl/cli/engines.py).
end_process(main)
