"""Today's CPU path against the lean one, side by side on this machine, for the SmolLM2 recipe.

* **Recipe step**: `gdpo train --config recipes/cpu/smollm2_gdpo/config.yaml` for a few steps, before (float32, the
  16 completions trained on in one batch, OpenMP's threads spinning: ``OMP_WAIT_POLICY=ACTIVE``) and after (the
  recipe as it is: ``cpu_dtype: auto``, its micro-batches, passive waiting), alternating, in fresh processes: seconds
  per step (TRL's ``step_time``) and the process's peak resident memory (``/usr/bin/time``).
* **Micro-batches**: one run of the lean path with micro-batches of 8 (twice) beside the recipe's 4 (four times): the
  same completions, so the same rewards and loss, and the peak memory each keeps.
* **Threads**: 16 x 64 sampled tokens with 1 and 2 torch threads, OpenMP waiting active and passive, on the machine
  as it is and beside ``--busy`` processes that spin (a busy machine).
* **Evaluation**: `gdpo eval` greedy on 200 GSM8K test problems (256 tokens, batches of 50), in the lean dtype
  (and, with ``--eval_before``, in float32).
* **Bounds**: this machine's matrix-product rate (float32, bfloat16) and memory bandwidth, next to the tokens/s.

Writes ``docs/results/real_model/cpu_path.json``. Needs the smollm2 extra; ``--data`` is the GSM8K folder
(openai/grade-school-math's ``train.jsonl``/``test.jsonl``), without which the step uses the shipped sample and the
evaluation is skipped::

    python scripts/benchmark_cpu_path.py --data DATA [--rounds 2] [--steps 3] [--busy 4] [--eval_before]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes/cpu/smollm2_gdpo/config.yaml"
OUT = ROOT / "docs/results/real_model/cpu_path.json"
MODEL = "builtin:smollm2-135m-gsm8k-format"
PATHS = {
    "before": (
        ["--cpu_dtype", "float32", "--per_device_train_batch_size", "16", "--gradient_accumulation_steps", "1"],
        "ACTIVE",
    ),
    "after": ([], "PASSIVE"),
    # The lean path with the micro-batches the recipes had first (8, twice): what micro-batches of 4 change.
    "after, micro-batches of 8": (
        ["--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "2"],
        "PASSIVE",
    ),
}


def gdpo(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("gdpo")), *args]


def recipe_step(path: str, args, scratch: Path) -> dict:
    """One short run of the recipe on ``path``'s settings: its step times, tokens and peak memory."""
    overrides, policy = PATHS[path]
    out = scratch / f"{path}-{time.monotonic_ns()}"
    data = ["--dataset_name", str(Path(args.data) / "train.jsonl")] if args.data else []
    command = gdpo("train", "--config", str(RECIPE), "--max_steps", str(args.steps), "--output_dir", str(out))
    command += [
        "--save_strategy",
        "no",
        "--disable_tqdm",
        "true",
        "--model_name_or_path",
        args.model,
        *data,
        *overrides,
    ]
    rss = scratch / "rss.txt"
    env = {**os.environ, "OMP_WAIT_POLICY": policy, "HF_HUB_OFFLINE": "1"}
    subprocess.run(["/usr/bin/time", "-o", str(rss), "-f", "%M", *command], env=env, check=True, capture_output=True)
    logs = [e for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "step_time" in e]
    return {
        "step_seconds": [round(e["step_time"], 1) for e in logs],
        "completion_tokens": [round(e["completions/mean_length"] * 16) for e in logs],
        "peak_gb": round(int(rss.read_text().split()[-1]) / 2**20, 2),
        # Each step's reward means and loss: two runs of one path on one machine must log the same (reproducibility).
        "rewards": [[e[f"rewards/{r}_reward/mean"] for r in ("format", "correctness", "integer")] for e in logs],
        "loss": [e["loss"] for e in logs],
    }


def _model_and_batch(threads: int, model: str):
    """The format start in the lean dtype and 16 prompts (2 GSM8K problems x 8), left-padded as TRL generates."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gdpo_trl.core.cpu_speed import choose_cpu_dtype
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.data.gsm8k import load_gsm8k

    torch.set_num_threads(threads)
    path = resolve_model(model)
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    dtype = choose_cpu_dtype("auto")[0]
    loaded = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).eval()
    prompts = [row["prompt"] for row in load_gsm8k("sample").select(range(2))] * 8
    batch = tokenizer.apply_chat_template(
        prompts, add_generation_prompt=True, return_tensors="pt", padding=True, return_dict=True
    )
    return loaded, batch, dtype


def generate(threads: int, model: str, lora: str = "none") -> dict:
    """16 x 64 sampled tokens of the format start in the lean dtype (run in a child: the wait policy is read once).
    ``lora``: ``none``, or the recipes' LoRA (rank 16 on every linear layer) sampled ``through`` the adapters, as TRL
    does, or ``merged`` into a copy of the weights, as ``merge_lora_for_generation`` does."""
    import contextlib

    import torch

    model, batch, dtype = _model_and_batch(threads, model)
    merged = contextlib.nullcontext()
    if lora != "none":
        from peft import LoraConfig, get_peft_model

        from gdpo_trl.trainer.lora_generation import lora_merged_for_generation

        config = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
        model = get_peft_model(model, config).eval()
        merged = lora_merged_for_generation(model) if lora == "merged" else merged
    torch.manual_seed(0)
    with torch.no_grad(), merged:
        model.generate(**batch, max_new_tokens=4, do_sample=True)  # warm-up
        start = time.perf_counter()
        model.generate(**batch, max_new_tokens=64, min_new_tokens=64, do_sample=True)
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 1), "tokens_per_second": round(16 * 64 / seconds, 1), "dtype": dtype}


def decode_breakdown(threads: int, model: str) -> dict:
    """Where a decode step's time goes (run in a child, like :func:`generate`): the prompt pass (one new token), one
    decode step of 16 sequences (64 new tokens, less the prompt pass, over 63), every linear layer applied to 16 rows
    (the weights read once, as in a decode step) and the rate it reads them at, and drawing 16 tokens from the
    49,152-token vocabulary as generate samples (``torch.multinomial``)."""
    import torch

    model, batch, _ = _model_and_batch(threads, model)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]

    def timed(work, repeats: int = 3) -> float:  # the fastest of a few: the machine's noise only adds
        found = []
        for _ in range(repeats):
            start = time.perf_counter()
            work()
            found.append(time.perf_counter() - start)
        return min(found)

    torch.manual_seed(0)
    with torch.no_grad():
        model.generate(**batch, max_new_tokens=4, do_sample=True)  # warm-up
        prompt = timed(lambda: model.generate(**batch, max_new_tokens=1, do_sample=True))
        whole = timed(lambda: model.generate(**batch, max_new_tokens=64, min_new_tokens=64, do_sample=True))
        rows = {n: torch.randn(16, n, dtype=model.dtype) for n in {m.in_features for m in linears}}
        matmuls = timed(lambda: [m(rows[m.in_features]) for m in linears], repeats=10)
        probs = torch.softmax(torch.randn(16, model.config.vocab_size), dim=-1)
        draw = timed(lambda: torch.multinomial(probs, 1), repeats=10)
    weights = sum(m.weight.numel() * m.weight.element_size() for m in linears)
    return {
        "prompt_tokens": int(batch["input_ids"].numel()),
        "prompt_pass_seconds": round(prompt, 2),
        "decode_step_ms": round((whole - prompt) / 63 * 1e3, 1),
        "linear_layers_ms": round(matmuls * 1e3, 1),
        "linear_layers_weights_gb_per_s": round(weights / matmuls / 1e9, 2),
        "sampling_ms": round(draw * 1e3, 1),
    }


def threads_under_load(busy: int, limit: float, model: str) -> list[dict]:
    """Each thread count and wait policy, on the machine as it is and beside ``busy`` spinning processes."""
    rows = []
    for load in (0, busy):
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
        try:
            time.sleep(2 if load else 0)
            for threads, policy in [(2, "ACTIVE"), (2, "PASSIVE"), (1, "ACTIVE"), (1, "PASSIVE")]:
                env = {**os.environ, "OMP_WAIT_POLICY": policy}
                command = [sys.executable, __file__, "--_generate", str(threads), "--model", model]
                row = {"busy_processes": load, "threads": threads, "wait_policy": policy, "load": os.getloadavg()[0]}
                try:
                    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=limit, check=True)
                    row.update(json.loads(done.stdout.splitlines()[-1]))
                except subprocess.TimeoutExpired:
                    row.update({"seconds": f"> {limit:.0f} (stopped)"})
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            for spinner in spinners:
                spinner.kill()
    return rows


def bounds() -> dict:
    """Matrix-product GFLOP/s (float32, bfloat16; 2048^3, this process's threads) and copy bandwidth in GB/s."""
    import torch

    found = {}
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(2048, 2048, dtype=dtype)
        a @ a
        start = time.perf_counter()
        for _ in range(5):
            a @ a
        found[f"gemm_gflops_{str(dtype).split('.')[1]}"] = round(
            5 * 2 * 2048**3 / (time.perf_counter() - start) / 1e9, 1
        )
    big = torch.empty(2**28 // 4)  # 256 MiB
    big.clone()
    start = time.perf_counter()
    for _ in range(5):
        big.clone()
    found["copy_gb_per_s"] = round(5 * 2 * big.numel() * 4 / (time.perf_counter() - start) / 1e9, 1)  # read + write
    return found


# SmolLM2-135M's parameters (input embedding and head tied, counted once): a decode step multiplies by each once per
# sequence (2 FLOPs a parameter a token) and reads each once for the batch of 16 sequences.
PARAMETERS, SEQUENCES = 134_515_008, 16


def against_bounds(threads: list[dict], bounds: dict) -> dict:
    """Generation as ``gdpo`` runs it (two threads, passive waiting, nothing beside it) next to this machine's
    matrix-product rate and copy bandwidth: the shares of each that decoding uses."""
    row = next(r for r in threads if (r["busy_processes"], r["threads"], r["wait_policy"]) == (0, 2, "PASSIVE"))
    gflops = row["tokens_per_second"] * 2 * PARAMETERS / 1e9
    weights_gb_per_s = row["tokens_per_second"] * PARAMETERS * 2 / SEQUENCES / 1e9  # bfloat16: 2 bytes a parameter
    return {
        "tokens_per_second": row["tokens_per_second"],
        "gflops_used": round(gflops, 1),
        "share_of_bf16_gemm": round(gflops / bounds["gemm_gflops_bfloat16"], 3),
        "weights_gb_per_s": round(weights_gb_per_s, 2),
        "share_of_copy_bandwidth": round(weights_gb_per_s / bounds["copy_gb_per_s"], 2),
    }


def evaluation(args, dtype: str, scratch: Path) -> float:
    """Minutes for `gdpo eval` greedy on the first 200 GSM8K test problems (the lean dtype's into ``--eval_dir``
    when given: the same command as study H8's evaluation of the start, which can reuse it)."""
    out = Path(args.eval_dir) if args.eval_dir and dtype != "float32" else scratch / f"eval-{dtype}"
    start = time.perf_counter()
    command = gdpo("eval", "--model", args.model, "--dataset", str(Path(args.data) / "test.jsonl"), "--limit", "200")
    command += ["--max_new_tokens", "256", "--batch_size", "50", "--dtype", dtype, "--output_dir", str(out)]
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return round((time.perf_counter() - start) / 60, 1)


def check_arguments(args) -> None:
    """Refuse, in one line naming the argument and the fix, what would fail late or hang (see --help)."""
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: give 1 or more (runs of each path, alternating)")
    if args.steps < 2:
        raise SystemExit(f"--steps {args.steps}: give 2 or more (the first step of each run is left out)")
    if args.busy < 0:
        raise SystemExit(f"--busy {args.busy}: give 0 or more spinning processes")
    if args.data and not all((Path(args.data) / name).is_file() for name in ("train.jsonl", "test.jsonl")):
        raise SystemExit(f"--data {args.data}: no train.jsonl and test.jsonl there (openai/grade-school-math's files)")
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.storage.local_paths import missing_folder_line

    for model in [args.model]:
        if not model.lower().endswith(".gguf") and (line := missing_folder_line(model, "--model")):
            raise SystemExit(line)  # a mistyped local folder: gdpo train would name it only after the setup
        try:
            resolve_model(model)  # converts (and merges) once, outside the timings
        except Exception as error:  # noqa: BLE001 - any failure to find the model is answered in one line
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise SystemExit(f"--model {model}: {first}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data", help="the GSM8K folder (train.jsonl, test.jsonl); default: the shipped sample, no eval"
    )
    parser.add_argument("--rounds", type=int, default=2, help="runs of each path, alternating (default 2)")
    parser.add_argument("--steps", type=int, default=3, help="steps per run; the first is left out (default 3)")
    parser.add_argument("--busy", type=int, default=4, help="spinning processes for the busy-machine rows (default 4)")
    parser.add_argument("--thread_limit", type=float, default=240.0, help="seconds before a generation row is stopped")
    parser.add_argument("--eval_before", action="store_true", help="also time the evaluation in float32 (slow)")
    parser.add_argument("--model", default=MODEL, help=f"the model (default {MODEL}, the recipe's)")
    parser.add_argument("--eval_dir", help="keep the lean dtype's evaluation here (default: a temporary folder)")
    parser.add_argument("--output", default=str(OUT))
    parser.add_argument("--_generate", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--_lora", default="none", choices=("none", "through", "merged"), help=argparse.SUPPRESS)
    parser.add_argument("--_breakdown", type=int, help="only where a decode step's time goes, with this many threads")
    args = parser.parse_args()
    if args._generate:
        print(json.dumps(generate(args._generate, args.model, args._lora)))
        return
    if args._breakdown:
        print(json.dumps(decode_breakdown(args._breakdown, args.model)))
        return
    check_arguments(args)

    from gdpo_trl.core.cpu_speed import choose_cpu_dtype
    from gdpo_trl.models.shipped import machine

    load = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for path in ("before", "after") if r % 2 == 0 else ("after", "before"):
                runs[path].append(recipe_step(path, args, Path(tmp)))
                print(f"round {r + 1} {path}: {json.dumps(runs[path][-1])}", flush=True)
        micro = "after, micro-batches of 8"
        runs[micro] = [recipe_step(micro, args, Path(tmp))]
        print(f"{micro}: {json.dumps(runs[micro][-1])}", flush=True)
        dtype, why = choose_cpu_dtype("auto")
        evals = {}
        if args.data:
            evals[dtype] = evaluation(args, dtype, Path(tmp))
            if args.eval_before and dtype != "float32":
                evals["float32"] = evaluation(args, "float32", Path(tmp))
    threads = threads_under_load(args.busy, args.thread_limit, args.model)
    steps = {path: [t for run in found for t in run["step_seconds"][1:]] for path, found in runs.items()}
    micro = runs["after, micro-batches of 8"][0]
    measured_bounds = bounds()
    result = {
        "step_seconds_before": statistics.median(steps["before"]),
        "step_seconds_after": statistics.median(steps["after"]),
        "step_ratio_after_over_before": round(statistics.median(steps["after"]) / statistics.median(steps["before"]), 2),
        "peak_gb_before": max(run["peak_gb"] for run in runs["before"]),
        "peak_gb_after": max(run["peak_gb"] for run in runs["after"]),
        "peak_gb_micro_batches_of_8": micro["peak_gb"],
        "same_training_as_micro_batches_of_8": (micro["rewards"], micro["loss"])
        == (runs["after"][0]["rewards"], runs["after"][0]["loss"]),
        "eval_200_minutes": evals.get(dtype),
        "eval_200_minutes_float32": evals.get("float32"),
        "dtype": why,
        "machine": f"{machine()}, {os.cpu_count()} CPU cores, no GPU",
        "load": {"before": load, "after": [round(x, 2) for x in os.getloadavg()]},
        "runs": runs,
        "threads": threads,
        "bounds": measured_bounds,
        "generation_vs_bounds": against_bounds(threads, measured_bounds),
        "decode_breakdown": json.loads(
            subprocess.run([sys.executable, __file__, "--_breakdown", "2", "--model", args.model], check=True,
                           capture_output=True, text=True, env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},
                           ).stdout.splitlines()[-1]
        ),  # as gdpo runs it: two threads, passive  # fmt: skip
        "setup": f"{args.model}, recipes/cpu/smollm2_gdpo, {args.rounds} runs x {args.steps} steps per path (first left out)",
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("runs", "threads")}, indent=2))


if __name__ == "__main__":
    main()
