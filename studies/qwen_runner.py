"""Study H9 (``qwen_gdpo_grpo``): GDPO against GRPO on Qwen2.5-Coder-0.5B-Instruct, where the rewards can disagree;
its pilot, its runs and their status. Pre-registered in docs/results/README.md (H9); resumable across sessions.

``pilot`` samples groups of completions from the start at the study's settings (``gdpo eval --n 8 --temperature 1``
on GSM8K train problems) and measures, per candidate set of rewards, what decides whether GDPO and GRPO can differ
(:mod:`studies.reward_conflict`): docs/results/qwen_pilot.{json,md}.

``run`` goes through the design's jobs in order: the start's evaluations first (the training prompt, then the model's
own chat default, scored by the last number), then for each seed GDPO and GRPO (``gdpo train`` with
recipes/cpu/qwen_gdpo or qwen_grpo, checkpoints every 2 steps and resumed from the newest), each evaluated greedy on
the first 200 GSM8K test problems. A finished job is never run again; every command runs with one torch thread (the
thread count changes sampled completions); each job's output goes to ``<job>.log`` beside it. Run it in the
background, niced, and again after a stop to go on::

    nohup nice -n 10 python -m studies.qwen_runner run --data DATA > outputs/qwen_gdpo_grpo.log 2>&1 &
    python -m studies.qwen_runner status     # where it stands, no outcome
    python -m studies.qwen_runner analyze    # once the stopping rule says so: tables, curves, raw logs, completions

A machine can be renewed between sessions, taking the study's folder with it. So each finished job is committed as
it finishes, unread: ``keep`` copies what the analysis needs of every finished job (each evaluation's summary and
gzipped completions, each trained run's trainer_state.json, each job's log of commands, gzipped, and the runner's
log of stamps) into docs/results/qwen_gdpo_grpo/, printing only the jobs' names; ``restore`` puts them back into a
new study folder, so the runner goes on with the first unfinished job instead of repeating finished ones. It never
overwrites a file, and refuses while the study runs (``run`` holds the folder's lock) or holds a job partly done::

    python -m studies.qwen_runner keep       # after a job finishes; then commit docs/results/qwen_gdpo_grpo
    python -m studies.qwen_runner restore    # on a renewed machine, before run
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDY = "qwen_gdpo_grpo"
MODEL = "builtin:qwen2.5-coder-0.5b-instruct"
ARMS = ("gdpo", "grpo")
SEEDS = (0, 1, 2, 3, 4)
THREADS = 1  # every command of the study, training and evaluation alike
STEPS = 10
SAVE_STEPS = 2
RECIPE = ROOT / "recipes" / "cpu" / "qwen_{arm}" / "config.yaml"
# Every trained run and its evaluation compute in float32, on any CPU (amendment 2 of the pre-registration): the
# registered bfloat16 ran at native speed only where the CPU has avx512_bf16 or amx_bf16, and the study's machine was
# renewed as one without (bf16 products 5-8x slower than float32 there). float32 is the one precision every machine
# runs at speed, so runs on different machines differ in kernels' rounding only, not in precision.
DTYPE = "float32"
EVAL_LIMIT = 200
MAX_NEW_TOKENS = 400  # the recipes' max_completion_length
EVAL = [
    "--limit",
    str(EVAL_LIMIT),
    "--max_new_tokens",
    str(MAX_NEW_TOKENS),
    "--batch_size",
    "50",
    "--dtype",
    DTYPE,
]
# The start as released, with the model's own chat default (no system prompt of ours): scored by the last number of
# the completion (and \boxed{}), since it never writes our layout.
OWN_DEFAULT = ["--no_system_prompt", "--rewards", "gdpo_trl.rewards.gsm8k.last_number_reward"]
PILOT = {"problems": 16, "n": 8, "max_new_tokens": MAX_NEW_TOKENS, "temperature": 1.0, "seed": 0}


def recipe_prompt() -> str:
    """The system prompt of the study's recipes (the training prompt)."""
    import yaml

    return yaml.safe_load((ROOT / "recipes" / "cpu" / "qwen_gdpo" / "config.yaml").read_text())["system_prompt"]


def evaluation(run: Path) -> Path:
    return run.with_name(f"eval-{run.name}")


def trained(out: Path) -> bool:
    return (out / "trainer_state.json").is_file()


def train_command(arm: str, seed: int, data: Path, out: Path) -> list[str]:
    from studies.study_jobs import tool

    # Resume from the newest checkpoint; a run stopped before its first one starts over.
    resume = ["--resume_from_checkpoint", "true"] if any(out.glob("checkpoint-*")) else []
    resume = resume or (["--overwrite_output_dir", "true"] if out.exists() else [])
    return [tool("gdpo"), "train", "--config", str(RECIPE).format(arm=arm), "--dataset_name", str(data / "train.jsonl"),
            "--seed", str(seed), "--max_steps", str(STEPS), "--save_steps", str(SAVE_STEPS), "--save_total_limit", "1",
            "--cpu_dtype", DTYPE, "--output_dir", str(out), *resume]  # fmt: skip


def eval_command(model: str, data: Path, out: Path, extra: list[str]) -> list[str]:
    from studies.study_jobs import tool

    return [tool("gdpo"), "eval", "--model", model, "--dataset", str(data / "test.jsonl"), *EVAL, *extra,
            "--output_dir", str(out)]  # fmt: skip


def jobs(root: Path):
    """(arm, seed, folder) in the design's order: the start's two evaluations, then seed-major GDPO, GRPO."""
    yield "start", None, root / "eval-start"
    yield "start-own-default", None, root / "eval-start-own-default"
    for seed in SEEDS:
        for arm in ARMS:
            yield arm, seed, root / f"{arm}-seed{seed}"


def run_job(arm: str, seed: int | None, out: Path, data: Path) -> None:
    """Train one (arm, seed) unless trained, then evaluate it unless evaluated; output to <out>.log."""
    from studies.study_jobs import run_logged, stamp

    log = out.with_name(f"{out.name}.log")
    if arm.startswith("start"):
        extra = ["--system_prompt", recipe_prompt()] if arm == "start" else OWN_DEFAULT
        if not (out / "summary.json").is_file():
            stamp(f"evaluate {arm}")
            run_logged(eval_command(MODEL, data, out, extra), log, THREADS, ROOT)
    else:
        if not trained(out):
            stamp(f"train {arm} seed {seed}")
            run_logged(train_command(arm, seed, data, out), log, THREADS, ROOT)
        if not (evaluation(out) / "summary.json").is_file():
            stamp(f"evaluate {arm} seed {seed}")
            run_logged(eval_command(str(out), data, evaluation(out), ["--system_prompt", recipe_prompt()]), log,
                       THREADS, ROOT)  # fmt: skip
    stamp(f"done {arm} seed {seed}")


def machine() -> str:
    """This machine's CPU, its cores and its native bf16 flag (or none), for the study's log."""
    from gdpo_trl.core.cpu_speed import cpu_flags, native_bf16_flag

    info = Path("/proc/cpuinfo").read_text(errors="replace") if Path("/proc/cpuinfo").is_file() else ""
    fields = {
        key.strip(): value.strip()
        for key, value in (line.split(":", 1) for line in info.splitlines()[:30] if ":" in line)
    }
    name = f"{fields.get('model name', '?')}, family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}"
    return f"{name}, {os.cpu_count()} cores, native bf16: {native_bf16_flag(cpu_flags()) or 'none'}"


def check_data(data: Path) -> None:
    missing = [name for name in ("train.jsonl", "test.jsonl") if not (data / name).is_file()]
    if missing:
        raise SystemExit(f"error: --data {data}: no {' or '.join(missing)} there (the GSM8K folder has both)")


def run(args) -> None:
    from studies.study_jobs import run_jobs, runner_lock, stamp

    root, data = Path(args.out), Path(args.data)
    check_data(data)
    root.mkdir(parents=True, exist_ok=True)
    with runner_lock(root):  # restore refuses while it is held
        stamp(f"machine: {machine()}")  # each stretch of the study names the CPU its jobs ran on
        run_jobs(((*job, data) for job in jobs(root)), run_job, workers=args.workers)


# A progress bar as tqdm writes it: "3/10 [13:03<30:27, 261.09s/it]". The status reads nothing else of a job's log,
# whose other lines hold training rewards that the study keeps unread until its stopping rule.
PROGRESS_BAR = re.compile(r"\b\d+/\d+ \[[^\]\n]*\]")


def progress(log: Path) -> str:
    """The last progress bar in a job's log (its step, elapsed, remaining and pace), or "" where there is none."""
    if not log.is_file():
        return ""
    with log.open("rb") as f:
        f.seek(max(0, log.stat().st_size - 8192))  # the tail is enough: bars are rewritten in place with \r
        bars = PROGRESS_BAR.findall(f.read().decode("utf-8", errors="replace"))
    return f"at {bars[-1]}" if bars else ""


def status(args) -> None:
    """One line per job: trained, evaluated, its checkpoint and, while it runs, where its progress bar stands (no
    outcome and no training reward is shown before the study ends)."""
    from studies.study_jobs import check_study_folder

    root = Path(args.out)
    check_study_folder(root, "status")
    for arm, seed, out in jobs(root):
        start = arm.startswith("start")
        done_eval = ((out if start else evaluation(out)) / "summary.json").is_file()
        checkpoints = sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
        saved = [f"{c.name} ({time.strftime('%H:%M UTC', time.gmtime(c.stat().st_mtime))})" for c in checkpoints[-1:]]
        running = "" if finished(arm, out) else progress(out.with_name(f"{out.name}.log"))
        line = f"{arm:17} seed {seed!s:4} trained {start or trained(out)!s:5} evaluated {done_eval!s:5}"
        print(" ".join(part for part in (line, *saved, running) if part))


def finished(arm: str, out: Path) -> bool:
    """Whether a job is done: its evaluation written and, for a trained arm, its training too."""
    start = arm.startswith("start")
    return ((out if start else evaluation(out)) / "summary.json").is_file() and (start or trained(out))


def keep_job(arm: str, out: Path, kept: Path) -> bool:
    """Copy what the analysis needs of one finished job from the study folder ``out.parent`` into ``kept``, in the
    same layout, completions and logs gzipped (mtime 0: keeping twice writes the same bytes); False if unfinished."""
    from studies.smollm2_study import copy_evaluation

    if not finished(arm, out):
        return False
    start = arm.startswith("start")
    copy_evaluation(out if start else evaluation(out), kept / (out if start else evaluation(out)).name)
    if not start:
        (kept / out.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(out / "trainer_state.json", kept / out.name / "trainer_state.json")
    log = out.with_name(f"{out.name}.log")
    if log.is_file():
        (kept / f"{log.name}.gz").write_bytes(gzip.compress(log.read_bytes(), mtime=0))
    return True


def job_files(arm: str, out: Path) -> list[Path]:
    """What a job has written in a study folder: its folder, its evaluation's folder, its log (those that exist)."""
    places = [out, out.with_name(f"{out.name}.log")] + ([] if arm.startswith("start") else [evaluation(out)])
    return [place for place in places if place.exists()]


def write_new(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, which must not exist: restore never overwrites a file of the study's own."""
    with path.open("xb") as handle:
        handle.write(data)


def restore_job(arm: str, kept_out: Path, out: Path) -> bool:
    """The reverse of :func:`keep_job`: a kept job back into a study folder as the runner left it (completions and
    log unzipped), where that folder has nothing of it yet (see :func:`check_restorable`); True if it was restored."""
    if not finished(arm, kept_out) or job_files(arm, out):
        return False
    start = arm.startswith("start")
    source, target = (kept_out, out) if start else (evaluation(kept_out), evaluation(out))
    target.mkdir(parents=True, exist_ok=True)
    write_new(target / "summary.json", (source / "summary.json").read_bytes())
    write_new(target / "completions.jsonl", gzip.decompress((source / "completions.jsonl.gz").read_bytes()))
    if not start:
        out.mkdir(parents=True, exist_ok=True)
        write_new(out / "trainer_state.json", (kept_out / "trainer_state.json").read_bytes())
    log = kept_out.with_name(f"{kept_out.name}.log.gz")
    if log.is_file():
        write_new(out.with_name(f"{out.name}.log"), gzip.decompress(log.read_bytes()))
    return True


def check_restorable(root: Path) -> None:
    """Refuse, in one line, to restore into a study that is running (its runner holds the lock) or holds a job that
    is partly done (a checkpoint, a log, an evaluation without its training): restoring beside it would replace
    its trainer_state.json and its log with the kept ones, and the running job would then write over them."""
    from studies.study_jobs import running_holder

    if holder := running_holder(root):
        raise SystemExit(f"error: restore: {root} is being run now ({holder}): stop the runner first, then restore")
    for arm, _, out in jobs(root):
        if not finished(arm, out) and (found := job_files(arm, out)):
            names = ", ".join(path.name for path in found)
            raise SystemExit(
                f"error: restore: {out.name} is partly done in {root} ({names}); restore goes into a new study "
                "folder (--out), or finish that job with run first"
            )


def keep(args) -> None:
    """Every finished job of the study folder into docs/results/qwen_gdpo_grpo/ (names printed, no outcome)."""
    from studies.qwen_study import study_log

    root, kept = Path(args.out), Path(args.docs) / STUDY
    names = [out.name for arm, _, out in jobs(root) if keep_job(arm, out, kept)]
    if study_log(root).is_file():
        kept.mkdir(
            parents=True, exist_ok=True
        )  # its stamps say when each job ran and on which machine: progress, no outcome
        shutil.copy(study_log(root), kept / "study.log")
    print(f"kept in {kept}: {' '.join(names) or 'nothing finished yet'}")


def restore(args) -> None:
    """Every job kept in docs/results/qwen_gdpo_grpo/ back into the study folder, where it is not finished there."""
    from studies.qwen_study import study_log

    root, kept = Path(args.out), Path(args.docs) / STUDY
    if root.is_file():
        raise SystemExit(f"error: restore --out {root}: a file, not a study folder")
    check_restorable(root)
    pairs = zip(jobs(kept), jobs(root), strict=True)
    names = [out.name for (arm, _, kept_out), (_, _, out) in pairs if restore_job(arm, kept_out, out)]
    if (kept / "study.log").is_file() and not study_log(root).is_file():
        shutil.copy(kept / "study.log", study_log(root))
    print(f"restored into {root}: {' '.join(names) or 'nothing (none kept, or all there already)'}")


def pilot(args) -> None:
    """Sample the start at the study's settings on GSM8K train problems, then write the pilot's figures."""
    from studies.qwen_pilot import write_pilot
    from studies.study_jobs import run_logged, stamp

    data = Path(args.data)
    check_data(data)
    out = Path(args.out) / "pilot"
    if not (out / "summary.json").is_file():
        stamp(f"pilot: {PILOT['problems']} train problems x {PILOT['n']} samples")
        command = eval_command(MODEL, data, out, ["--system_prompt", recipe_prompt()])
        command[command.index("--dataset") + 1] = str(data / "train.jsonl")
        command[command.index("--limit") + 1] = str(PILOT["problems"])
        command += ["--split", "train", "--n", str(PILOT["n"]), "--temperature", str(PILOT["temperature"]),
                    "--seed", str(PILOT["seed"])]  # fmt: skip
        out.parent.mkdir(parents=True, exist_ok=True)
        run_logged(command, out.with_name("pilot.log"), THREADS, ROOT)
    write_pilot(out, Path(args.docs))


def analyze(args) -> None:
    """Write the tables, the curves, the raw logs and every evaluation under docs/results/ (as pre-registered)."""
    from studies.qwen_study import write

    write(Path(args.out), Path(args.docs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["pilot", "run", "status", "keep", "restore", "analyze"])
    parser.add_argument("--data", help="the GSM8K folder (train.jsonl, test.jsonl), for pilot and run")
    parser.add_argument("--out", default=str(ROOT / "outputs" / STUDY), help=f"default: outputs/{STUDY}")
    parser.add_argument("--workers", type=int, default=1, help="jobs at a time, one torch thread each (default 1)")
    parser.add_argument(
        "--docs",
        default=str(ROOT / "docs" / "results"),
        help="where pilot, keep and analyze write and restore reads (docs/results)",
    )
    args = parser.parse_args()
    if args.command in ("pilot", "run") and not args.data:
        parser.error(f"{args.command} needs --data (the GSM8K folder)")
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    commands = {"pilot": pilot, "run": run, "status": status, "keep": keep, "restore": restore, "analyze": analyze}
    commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
