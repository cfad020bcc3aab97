"""Multi-node training for real: two `accelerate launch` machines on 127.0.0.1, and scripts/slurm_train.sh under a
real Slurm (one slurmctld, two slurmd nodes on this host). Each run trains 2 steps of the CPU recipe on
builtin:tiny through tests/helpers/multinode_probe.py (the CLI plus a recorder), and each process's advantages must equal
its slice of gdpo_advantages over the gathered rewards, and TRL's own.

Run with `make test-multinode` (installs slurm-wlm and munge first, see scripts/setup_slurm_test.sh); without
root or the Slurm binaries the Slurm tests are skipped with the reason."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gdpo_trl.core.advantages import gdpo_advantages
from tests.helpers.multinode_slurm import SlurmCluster, free_port, missing_requirement

pytestmark = [pytest.mark.slow, pytest.mark.multinode]  # two machines: never in `make test-fast`

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "recipes/cpu/gdpo/config.yaml"
PER_PROCESS = 8  # completions per process and step: 2 prompts x 4 generations
TIMEOUT = 420  # seconds for one training job; far above the ~30-60 s it takes here, to fail instead of hanging
UNRESOLVABLE = "gdpo-head-node.invalid"  # .invalid never resolves (RFC 2606)


def train_flags(output_dir: Path) -> list[str]:
    """Flags over the CPU recipe, for a small run: a random tiny model, toy rewards with spread and NaNs (the recipe's rewards are
    all 0 on a random model, which would make every advantage 0 and the check empty), unequal weights."""
    return [
        "--model_name_or_path", "builtin:tiny", "--max_steps", "2",
        "--per_device_train_batch_size", str(PER_PROCESS), "--num_generations", "4", "--max_completion_length", "12",
        "--synthetic_size", "32", "--reward_funcs", "tests.helpers.toy.parity_reward", "tests.helpers.toy.length_mod_reward",
        "--reward_weights", "1.0", "0.5", "--output_dir", str(output_dir),
    ]  # fmt: skip


def check_probes(output_dir: Path, num_processes: int) -> list[dict]:
    """Every process trained 2 steps on its slice of the global GDPO advantages of the same gathered rewards."""
    ranks = [json.loads((output_dir / f"probe-rank{r}.json").read_text()) for r in range(num_processes)]
    for rank, probe in enumerate(ranks):
        assert (probe["process_index"], probe["num_processes"], probe["global_step"]) == (rank, num_processes, 2)
        assert len(probe["rewards"]) == len(probe["ours"]) == len(probe["trl"]) == 2
    for step in range(2):
        rewards = torch.tensor(ranks[0]["rewards"][step])
        assert rewards.shape == (num_processes * PER_PROCESS, 2)
        for probe in ranks[1:]:  # gathered: every process holds the same matrix (NaN where a reward is None)
            torch.testing.assert_close(torch.tensor(probe["rewards"][step]), rewards, equal_nan=True)
        first = ranks[0]
        expected = gdpo_advantages(rewards, first["weights"], first["num_generations"], batch_norm=first["batch_norm"])
        assert expected.abs().max() > 0.1  # the toy rewards have spread: an all-zero check would prove nothing
        for rank, probe in enumerate(ranks):
            ours = torch.tensor(probe["ours"][step])
            torch.testing.assert_close(ours, expected[rank * PER_PROCESS : (rank + 1) * PER_PROCESS])
            torch.testing.assert_close(ours, torch.tensor(probe["trl"][step]), atol=1e-5, rtol=1e-5)
    assert [r["weights"] for r in ranks] == [[1.0, 0.5]] * num_processes
    return ranks


def start_machine(rank: int, port: int, output_dir: Path, log) -> subprocess.Popen:
    """`accelerate launch` as machine `rank` of 2, one process, rendezvous on 127.0.0.1:port."""
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--num_machines", "2", "--num_processes", "2"]
    launch += ["--machine_rank", str(rank), "--main_process_ip", "127.0.0.1", "--main_process_port", str(port)]
    launch += ["--multi_gpu", "--mixed_precision", "no", "-m", "tests.helpers.multinode_probe", "--config", RECIPE]
    return subprocess.Popen([*launch, *train_flags(output_dir)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def test_two_accelerate_machines_on_localhost(tiny_model_path, tmp_path):
    """Two `accelerate launch --num_machines 2` side by side, one process each: one 2-process training job."""
    port = free_port()
    logs = [open(tmp_path / f"machine{rank}.log", "w") for rank in range(2)]  # noqa: SIM115 (closed below)
    machines = [start_machine(rank, port, tmp_path / "run", logs[rank]) for rank in range(2)]
    try:
        codes = [machine.wait(TIMEOUT) for machine in machines]
    finally:
        for machine in machines:
            if machine.poll() is None:
                machine.kill()
                machine.wait()
        for log in logs:
            log.close()
    tails = "\n".join((tmp_path / f"machine{r}.log").read_text()[-3000:] for r in range(2))
    assert codes == [0, 0], tails
    ranks = check_probes(tmp_path / "run", num_processes=2)
    assert [r["machine_rank"] for r in ranks] == [0, 1]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    reason = missing_requirement()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        assert cluster.leftovers() == [] and all(d.poll() is not None for d in cluster.daemons)


def sbatch(cluster: SlurmCluster, tmp_path: Path, env: dict, *flags: str) -> tuple[str, str]:
    """Submit scripts/slurm_train.sh on 2 nodes from the repository root; the job's final state and its log."""
    log = tmp_path / "job.out"
    job_env = {"PYTHON": sys.executable, "TRAIN_MODULE": "tests.helpers.multinode_probe", "MASTER_PORT": str(free_port())}
    submit = ["sbatch", "--parsable", "--nodes", "2", "--time", "10", f"--output={log}", "scripts/slurm_train.sh"]
    job_id = cluster.command([*submit, *flags], cwd=ROOT, env={**job_env, **env}).stdout.strip().split(";")[0]
    state = cluster.wait_job(job_id, TIMEOUT)
    return state, log.read_text() if log.exists() else "(no job log)"


def test_sbatch_two_slurm_nodes_trains(slurm, tiny_model_path, tmp_path):
    """`sbatch --nodes 2 scripts/slurm_train.sh <cpu recipe> ...`: one process per node, job COMPLETED."""
    state, log = sbatch(slurm, tmp_path, {}, RECIPE, *train_flags(tmp_path / "run"))
    assert state == "COMPLETED", log[-4000:]
    assert "2 nodes x 1 CPU processes" in log and "mixed precision no" in log
    ranks = check_probes(tmp_path / "run", num_processes=2)
    assert sorted(r["slurm_node"] for r in ranks) == ["n1", "n2"]


def test_sbatch_unreachable_rendezvous_fails_fast_with_one_line(slurm, tmp_path):
    """A rendezvous host no node resolves ends the job FAILED with one line, before any training process starts."""
    state, log = sbatch(
        slurm, tmp_path, {"MASTER_ADDR": UNRESOLVABLE, "RDZV_TIMEOUT": "5"}, RECIPE, *train_flags(tmp_path / "run")
    )
    assert state == "FAILED"
    errors = [line for line in log.splitlines() if line.startswith("rendezvous_check on")]
    assert errors and all(f"rendezvous host {UNRESOLVABLE!r} does not resolve" in line for line in errors), log
    assert "set MASTER_ADDR" in errors[0]
    assert not (tmp_path / "run").exists()


FAKE_SRUN = '#!/bin/bash\necho "srun $*"\n'
FAKE_SCONTROL = """#!/bin/bash
case "$2" in hostnames) printf 'gpu01\\ngpu02\\n';; node) echo "NodeName=$3 NodeAddr=$3.ib NodeHostName=$3";; esac
"""


@pytest.mark.parametrize(
    "env, flags, expected",
    [
        ({"SLURM_GPUS_ON_NODE": "8"}, [], ["2 nodes x 8 GPUs", "--num_processes 16", "--mixed_precision bf16"]),
        ({"SLURM_GPUS_PER_NODE": "a100:4"}, ["--bf16", "false"], ["--num_processes 8", "--mixed_precision no"]),
        ({"GPUS_PER_NODE": "2", "SLURM_GPUS_ON_NODE": "8", "MASTER_ADDR": "10.0.0.1"}, [], ["--num_processes 4"]),
        ({}, [], ["1 CPU processes", "ddp.yaml", "--num_processes 2"]),
    ],
)
def test_slurm_script_sizes_itself_from_slurm(tmp_path, env, flags, expected):
    """Without a cluster (fake srun and scontrol): processes per node from Slurm's GPU count or the override, the
    rendezvous at the first node's NodeAddr unless MASTER_ADDR says otherwise, precision from the recipe."""
    for name, text in (("srun", FAKE_SRUN), ("scontrol", FAKE_SCONTROL)):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    slurm = {"SLURM_JOB_ID": "7", "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "gpu[01-02]", "PYTHON": sys.executable}
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GPUS_PER_NODE", "MASTER_"))}
    result = subprocess.run(
        ["bash", "scripts/slurm_train.sh", "recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml", *flags],
        env={**clean, **slurm, **env, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    launch = " ".join(result.stdout.split())  # one line per srun, whitespace collapsed
    address = env.get("MASTER_ADDR", "gpu01.ib")
    assert f"rendezvous_check.py {address} 29500 --rank $SLURM_PROCID --world 2" in launch
    assert "--num_machines 2 --num_processes" in launch and f"--main_process_ip {address}" in launch
    assert all(text in launch for text in expected), launch
