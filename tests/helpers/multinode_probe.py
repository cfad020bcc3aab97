"""`gdpo train` with a recorder: run by tests/multinode/test_multinode.py in place of ``-m gdpo_trl.cli.train`` (directly
under ``accelerate launch``, or through ``scripts/slurm_train.sh``'s ``TRAIN_MODULE``).

It trains exactly as the CLI does, and records per generation batch the gathered reward matrix ``[N_global, K]``,
TRL's own advantages for this process and the advantages GDPOTrainer trained on, then writes them with the weights,
``num_generations`` and the process's place in the job to ``<output_dir>/probe-rank<global rank>.json``. The test
recomputes the global advantages from the rewards and checks each process's slice.
"""

import json
import os
import socket
from pathlib import Path

from trl import GRPOTrainer

from gdpo_trl.cli import train as cli
from gdpo_trl.trainer import GDPOTrainer

records = {"rewards": [], "trl": [], "ours": []}
seen = {}
native_calculate, native_generate = GRPOTrainer._calculate_rewards, GRPOTrainer._generate_and_score_completions
gdpo_generate = GDPOTrainer._generate_and_score_completions


def record_rewards(trainer, *args):
    rewards = native_calculate(trainer, *args)
    records["rewards"].append(rewards.tolist())
    return rewards


def record_trl(trainer, inputs):
    output = native_generate(trainer, inputs)
    records["trl"].append(output["advantages"].tolist())
    return output


def record_ours(trainer, inputs):
    output = gdpo_generate(trainer, inputs)
    records["ours"].append(output["advantages"].tolist())
    seen["trainer"] = trainer
    return output


GRPOTrainer._calculate_rewards = record_rewards
GRPOTrainer._generate_and_score_completions = record_trl
GDPOTrainer._generate_and_score_completions = record_ours


def main() -> None:
    cli.process_main()
    trainer = seen["trainer"]
    accelerator = trainer.accelerator
    dump = {
        **records,
        "weights": trainer.reward_weights.tolist(),
        "num_generations": trainer.num_generations,
        "batch_norm": trainer.args.gdpo_batch_norm,
        "process_index": accelerator.process_index,
        "num_processes": accelerator.num_processes,
        "machine_rank": int(os.environ.get("GROUP_RANK", os.environ.get("SLURM_NODEID", "-1"))),
        "slurm_node": os.environ.get("SLURMD_NODENAME"),
        "host": socket.gethostname(),
        "global_step": trainer.state.global_step,
    }
    out = Path(trainer.args.output_dir) / f"probe-rank{accelerator.process_index}.json"
    out.write_text(json.dumps(dump))


if __name__ == "__main__":
    main()
