"""Run by tests/trainer/test_published_rules_trainer.py under torchrun with 2 CPU processes: trains 2 steps of SAW's
gdpo-h and dumps, per rank, the gathered rewards, this rank's completion token counts and the advantages it trained on."""

import json
import os
from pathlib import Path

import pytest
from trl import GRPOTrainer

from gdpo_trl import GDPOTrainer
from gdpo_trl.cli.engines import end_process
from tests.helpers.recorders import Recorder
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset


def main(argv=None) -> None:
    monkeypatch = pytest.MonkeyPatch()
    lengths, native = [], GRPOTrainer._generate_and_score_completions

    def record(trainer, inputs):
        output = native(trainer, inputs)
        lengths.append(output["completion_mask"].sum(dim=1).tolist())
        return output

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", record)
    recorder = Recorder(monkeypatch)  # wraps the recording above, so both see every batch
    out = Path(os.environ["GDPO_TEST_OUT"])
    config = toy_config(out / "run", use_cpu=True, multi_objective_aggregation="saw_gdpo")
    trainer = GDPOTrainer(
        os.environ["GDPO_TEST_MODEL"],
        reward_funcs=[parity_reward, length_mod_reward],
        args=config,
        train_dataset=toy_dataset(32),
    )
    trainer.train()
    rank = trainer.accelerator.process_index
    dump = {"rewards": [t.tolist() for t in recorder.rewards], "ours": [t.tolist() for t in recorder.ours]}
    dump["lengths"] = lengths
    (out / f"rank{rank}.json").write_text(json.dumps(dump))


# Like gdpo train's processes: leave without interpreter teardown (see tests/helpers/two_process_check.py).
end_process(main)
