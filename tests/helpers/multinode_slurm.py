"""A real Slurm cluster on this host for tests/multinode/test_multinode.py: munged, one slurmctld and two slurmd ("n1", "n2",
both 127.0.0.1 on their own ports), configuration, keys and state in temporary folders, every daemon started here
in the foreground and stopped by its PID. Needs root and Debian's slurm-wlm and munge
(scripts/setup_slurm_test.sh installs them)."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BINARIES = ("slurmctld", "slurmd", "sbatch", "srun", "scontrol", "squeue", "scancel", "sinfo", "munged")
TERMINAL_STATES = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
}
NODES = ("n1", "n2")


def missing_requirement() -> str | None:
    """Why a Slurm cluster cannot be started here (the skip reason), or None."""
    missing = [name for name in BINARIES if shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin") is None]
    if missing:
        return f"Slurm test not run: {', '.join(missing)} not installed (run `make test-multinode` as root on Debian)"
    if os.geteuid() != 0:
        return "Slurm test not run: starting slurmd and munged needs root"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "Slurm test not run: no 'munge' user (install the munge package)"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


SLURM_CONF = """\
ClusterName=gdpotest
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={state}/ctld
SlurmdSpoolDir={state}/d%n
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd-%n.pid
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
InactiveLimit=0
MailProg=/bin/true
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={n1_port} CPUs=1 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port={n2_port} CPUs=1 State=UNKNOWN
PartitionName=test Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    """Start with :meth:`start`, always :meth:`stop` (it also ends whatever the jobs left running)."""

    def __init__(self, state: Path):
        self.state = state
        self.conf = state / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.daemons: list[subprocess.Popen] = []
        # munged reads its key as the munge user and wants its socket's folder writable by it alone and searchable
        # by all, so that folder sits directly under /tmp (pytest's tmp folders are root-only).
        self.munge_dir = Path(tempfile.mkdtemp(prefix="gdpo-munge-", dir="/tmp"))

    def start(self) -> None:
        self._start_munged()
        ports = {"ctld_port": free_port(), "n1_port": free_port(), "n2_port": free_port()}
        self.conf.write_text(
            SLURM_CONF.format(state=self.state, munge_socket=self.munge_dir / "munge.socket", **ports)
        )
        for name in NODES:
            (self.state / f"d{name}").mkdir()
        (self.state / "ctld").mkdir()
        self._spawn(["slurmctld", "-D", "-f", str(self.conf)], "slurmctld.out")
        for name in NODES:
            self._spawn(["slurmd", "-D", "-N", name, "-f", str(self.conf)], f"slurmd-{name}.out")
        self._wait_idle(timeout=60)

    def _start_munged(self) -> None:
        munge = pwd.getpwnam("munge")
        key = self.munge_dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for path in (self.munge_dir, key):
            os.chown(path, munge.pw_uid, munge.pw_gid)
        self.munge_dir.chmod(0o755)
        files = {name: self.munge_dir / name for name in ("munge.socket", "munged.pid", "munged.log", "munged.seed")}
        command = ["munged", "-F", f"--socket={files['munge.socket']}", f"--key-file={key}"]
        command += [f"--pid-file={files['munged.pid']}", f"--log-file={files['munged.log']}"]
        command += [f"--seed-file={files['munged.seed']}"]
        self._spawn(command, "munged.out", user=munge.pw_uid, group=munge.pw_gid, extra_groups=[])
        deadline = time.monotonic() + 20
        while not files["munge.socket"].exists():
            if time.monotonic() > deadline or self.daemons[-1].poll() is not None:
                raise RuntimeError(f"munged did not start: {self._read(self.state / 'munged.out')}")
            time.sleep(0.2)

    def _spawn(self, command: list[str], log: str, **user) -> None:
        out = open(self.state / log, "w")  # noqa: SIM115 (the daemon holds it until it exits)
        self.daemons.append(subprocess.Popen(command, env=self.env, stdout=out, stderr=subprocess.STDOUT, **user))

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        states = ""
        while time.monotonic() < deadline:
            dead = [d.args[0] for d in self.daemons if d.poll() is not None]
            if dead:
                raise RuntimeError(f"{dead} exited at start; logs in {self.state}: {self.logs()}")
            states = self.command(["sinfo", "-h", "-N", "-o", "%N %T"], check=False).stdout
            if sorted(states.split()) == sorted([*NODES, "idle", "idle"]):
                return
            time.sleep(0.5)
        raise RuntimeError(f"nodes not idle after {timeout} s (sinfo: {states!r}); logs: {self.logs()}")

    def command(self, args: list[str], check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(
            args,
            env={**self.env, **kwargs.pop("env", {})},
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
            **kwargs,
        )

    def job_state(self, job_id: str) -> str:
        info = self.command(["scontrol", "show", "job", "-o", job_id]).stdout
        return re.search(r"JobState=(\S+)", info).group(1)

    def wait_job(self, job_id: str, timeout: float) -> str:
        """Poll until the job reaches a terminal state; cancel it and raise after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while (state := self.job_state(job_id)) not in TERMINAL_STATES:
            if time.monotonic() > deadline:
                self.command(["scancel", job_id], check=False)
                raise TimeoutError(f"job {job_id} still {state} after {timeout} s; logs: {self.logs()}")
            time.sleep(1)
        return state

    def leftovers(self) -> list[int]:
        """PIDs of processes started by this cluster (their environment names its slurm.conf): job steps and
        training processes. The daemons and their own helpers (slurmctld's slurmscriptd) are not counted while the
        daemons run; once they are stopped, anything still there is."""
        marker = f"SLURM_CONF={self.conf}".encode()
        daemons = {d.pid for d in self.daemons if d.poll() is None} | {os.getpid()}
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if not entry.name.isdigit() or int(entry.name) in daemons:
                    continue
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent not in daemons and marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):  # gone meanwhile, or not ours to read
                pass
        return found

    def stop(self) -> None:
        """Cancel jobs and give their processes (slurmstepd, launchers) 15 s to end, kill what is left by PID, then
        stop the daemons by PID (TERM, then KILL after 15 s)."""
        if self.conf.exists() and all(d.poll() is None for d in self.daemons[:2]):
            self.command(["scancel", "--full", "--partition=test"], check=False)
        deadline = time.monotonic() + 15
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in self.leftovers():
            _kill(pid)
        for daemon in reversed(self.daemons):  # slurmd before slurmctld before munged
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        for pid in self.leftovers():
            _kill(pid)
        shutil.rmtree(self.munge_dir, ignore_errors=True)

    def logs(self) -> str:
        return " | ".join(f"{p.name}: {self._read(p)[-1500:]}" for p in sorted(self.state.glob("*.log")))

    @staticmethod
    def _read(path: Path) -> str:
        return path.read_text(errors="replace") if path.exists() else "(no log)"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
