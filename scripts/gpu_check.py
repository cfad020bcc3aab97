"""``make gpu-check``: the Qwen2.5 paths on one CUDA GPU, with the figures a GPU run is judged by.

Runs ``builtin:qwen2.5-0.5b`` (Qwen2.5-0.5B's shape and real tokenizer, random weights: no download) in bf16
through ``gdpo train`` and ``gdpo eval`` exactly as a user would, each in its own process:

1. the LoRA smoke recipe (recipes/Qwen2.5-0.5B-Instruct/lora_smoke) for a few steps;
2. a full fine-tune step of the paper's GDPO recipe under DeepSpeed ZeRO-3 with one process;
3. ``gdpo eval`` through transformers, and through vLLM where it is installed.

For each it prints the step time (TRL's ``step_time``, first step left out when there are more), the peak GPU
memory (``nvidia-smi``, polled while the process runs: it sees every allocator, DeepSpeed's too) and tokens per
second; the table also goes to ``outputs/gpu-check/report.md``. Needs a CUDA GPU; refuses in one line without one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = "builtin:qwen2.5-0.5b"
LORA = ROOT / "recipes" / "Qwen2.5-0.5B-Instruct" / "lora_smoke" / "config.yaml"
PAPER = ROOT / "recipes" / "Qwen2.5-1.5B-Instruct" / "gdpo" / "config.yaml"


def checks(out: Path, steps: int) -> list[tuple[str, list[str]]]:
    """(name, gdpo arguments) of each check; every run writes its own folder under ``out``."""
    data = ["--dataset_name", "sample", "--report_to", "none", "--model_name_or_path", MODEL]
    runs = [
        ("LoRA smoke, bf16", ["train", "--config", str(LORA), *data, "--max_steps", str(steps)]),
        (
            "full fine-tune, ZeRO-3, 1 process",
            ["train", "--config", str(PAPER), *data, "--use_vllm", "false", "--max_steps", "1"]
            + ["--per_device_train_batch_size", "16", "--gradient_accumulation_steps", "1"]
            + ["--accelerate_config", "zero3", "--num_processes", "1"],
        ),
    ]
    evals = ["transformers"] + (["vllm"] if importlib.util.find_spec("vllm") else [])
    for backend in evals:
        runs.append(
            (
                f"gdpo eval, {backend}",
                ["eval", "--model", MODEL, "--dataset", "sample", "--limit", "32", "--n", "4"]
                + ["--max_new_tokens", "256", "--dtype", "bfloat16", "--backend", backend],
            )
        )
    for i, (_, argv) in enumerate(runs):
        argv += ["--output_dir", str(out / f"check{i}")]
    return runs


class PeakMemory:
    """The largest ``memory.used`` nvidia-smi reports while the ``with`` block runs, in MiB (polled every 0.2 s)."""

    def __enter__(self) -> PeakMemory:
        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        query = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "--id=0"]
        while not self._stop.wait(0.2):
            result = subprocess.run(query, capture_output=True, text=True)
            if result.returncode == 0 and result.stdout.strip():
                self.peak = max(self.peak, int(result.stdout.split()[0]))

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def training_figures(folder: Path) -> tuple[float, float]:
    """(seconds per step, tokens per second) from a run's ``trainer_state.json`` (TRL's step_time and num_tokens)."""
    history = [e for e in json.loads((folder / "trainer_state.json").read_text())["log_history"] if "step_time" in e]
    times = [e["step_time"] for e in history]
    timed = times[1:] or times  # the first step also pays for warm-up
    tokens = [e["num_tokens"] for e in history]
    rate = (tokens[-1] - tokens[0]) / sum(times[1:]) if len(tokens) > 1 else tokens[0] / times[0]
    return statistics.mean(timed), rate


def eval_figures(folder: Path, seconds: float) -> tuple[float, float]:
    """(seconds per completion, completion tokens per second of the whole command) from ``completions.jsonl``."""
    rows = [json.loads(line) for line in (folder / "completions.jsonl").read_text().splitlines()]
    lengths = [n for row in rows for n in row["num_tokens"]]
    return seconds / max(len(lengths), 1), sum(lengths) / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "gpu-check", help="a new folder for the runs")
    parser.add_argument("--steps", type=int, default=3, help="LoRA smoke steps (default 3)")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available() or shutil.which("nvidia-smi") is None:
        print("gpu-check: error: needs a CUDA GPU and nvidia-smi; none here.", file=sys.stderr)
        return 2
    if args.out.exists():
        print(f"gpu-check: error: {args.out} exists; remove it or pass --out NEW_FOLDER.", file=sys.stderr)
        return 2
    rows = [f"GPU: {torch.cuda.get_device_name(0)}; model {MODEL} (random weights), bf16", ""]
    rows += ["| check | seconds per step | peak GPU memory (GiB) | tokens/s | wall (s) |", "|---|---:|---:|---:|---:|"]
    failed = 0
    for name, gdpo_args in checks(args.out, args.steps):
        print(f"== {name}: gdpo {' '.join(gdpo_args)}", flush=True)
        start = time.perf_counter()
        with PeakMemory() as memory:
            code = subprocess.run([sys.executable, "-m", "gdpo_trl.cli.main", *gdpo_args], cwd=ROOT).returncode
        wall = time.perf_counter() - start
        folder = Path(gdpo_args[gdpo_args.index("--output_dir") + 1])
        if code != 0:
            failed += 1
            rows.append(f"| {name} | failed (exit {code}) | {memory.peak / 1024:.1f} | | {wall:.0f} |")
            continue
        per_step, rate = training_figures(folder) if gdpo_args[0] == "train" else eval_figures(folder, wall)
        rows.append(f"| {name} | {per_step:.2f} | {memory.peak / 1024:.1f} | {rate:.0f} | {wall:.0f} |")
    report = "\n".join(rows)
    print("\n" + report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.md").write_text(report + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
