"""Run by tests/trainer/test_trainer.py under torchrun with 2 CPU processes: trains 2 GDPO steps and dumps, per rank, the
gathered rewards, TRL's native advantages and the advantages GDPOTrainer trained on."""

import json
import os
from pathlib import Path

import pytest

from gdpo_trl.cli.engines import end_process
from tests.helpers.recorders import Recorder
from tests.helpers.toy import length_mod_reward, parity_reward, two_process_trainer


def main(argv=None) -> None:
    monkeypatch = pytest.MonkeyPatch()
    recorder = Recorder(monkeypatch)
    out = Path(os.environ["GDPO_TEST_OUT"])
    trainer = two_process_trainer([parity_reward, length_mod_reward])
    trainer.train()
    rank = trainer.accelerator.process_index
    dump = {key: [t.tolist() for t in getattr(recorder, key)] for key in ("rewards", "trl", "ours")}
    (out / f"rank{rank}.json").write_text(json.dumps(dump))


# Like gdpo train's processes: leave without interpreter teardown, where a gloo thread could abort a rank that
# finished (`terminate called without an active exception`, seen here once in a CI run; gdpo_trl/cli/engines.py).
end_process(main)
