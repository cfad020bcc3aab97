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
SIDE_BY_SIDE = ROOT / "docs/results/real_model/cpu_path_side_by_side.json"
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
    # The lean path with the exact fast sampler (fast_sampling): what --side_by_side compares with "before".
    "after, fast sampling": (["--fast_sampling", "true"], "PASSIVE"),
}


def gdpo(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("gdpo")), *args]


def recipe_step(path: str, args, scratch: Path, model: str | None = None, steps: int | None = None) -> dict:
    """One short run of the recipe on ``path``'s settings (``model``, ``steps``: other than ``--model``,
    ``--steps``): its step times, tokens and peak memory."""
    overrides, policy = PATHS[path]
    steps = steps or args.steps
    out = scratch / f"{path}-{time.monotonic_ns()}"
    data = ["--dataset_name", str(Path(args.data) / "train.jsonl")] if args.data else []
    command = gdpo("train", "--config", str(RECIPE), "--max_steps", str(steps), "--output_dir", str(out))
    command += [
        "--save_strategy",
        "no",
        "--disable_tqdm",
        "true",
        "--model_name_or_path",
        model or args.model,
        *data,
        *overrides,
    ]
    rss = scratch / "rss.txt"
    env = {**os.environ, "OMP_WAIT_POLICY": policy, "HF_HUB_OFFLINE": "1"}
    load = load_now()
    done = subprocess.run(
        ["/usr/bin/time", "-o", str(rss), "-f", "%M", *command], env=env, capture_output=True, text=True
    )
    if done.returncode:  # a kill by signal (the OOM killer: -9) leaves no line of its own worth quoting
        killed = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"gdpo train ({path}) failed, {killed}: {last[:200]}")
    logs = [e for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "step_time" in e]
    return {
        "load": [load, load_now()],
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


# The sampling settings TRL's transformers generation uses with the recipes (GRPOConfig's defaults: no top-k or
# top-p filter; transformers' own default would add top-k 50, which training never samples with).
TRL_SAMPLING = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
SAMPLERS = ("transformers", "fast")


def sampler_context(model, sampler: str):
    """``transformers``: generate's own sampler; ``fast``: gdpo_trl.trainer.fast_sampling's (``fast_sampling``)."""
    import contextlib

    from gdpo_trl.trainer.fast_sampling import exact_sampling

    return exact_sampling(model) if sampler == "fast" else contextlib.nullcontext()


def generate(threads: int, model: str, lora: str = "none", sampler: str = "transformers") -> dict:
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
    with torch.no_grad(), merged, sampler_context(model, sampler):
        model.generate(**batch, max_new_tokens=4, **TRL_SAMPLING)  # warm-up
        start = time.perf_counter()
        model.generate(**batch, max_new_tokens=64, min_new_tokens=64, **TRL_SAMPLING)
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 1), "tokens_per_second": round(16 * 64 / seconds, 1), "dtype": dtype}


# Where a decode step's time goes, by the profiler's self time of each operator (self time: nothing is counted twice
# where one operator calls another). Operators not named here are "the rest", with Python between operators.
CATEGORIES = {
    "linear_layers": ("aten::mm", "aten::addmm", "aten::linear", "aten::matmul", "aten::t"),
    "attention": ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::scaled_dot_product_attention"),
    # transformers' sampler (softmax, then multinomial: an exponential per vocabulary entry, divide, argmax) and
    # fast_sampling's (softmax, block sums, float64 cumulative sums, two uniforms, searchsorted, the one-hot scores)
    "sampling": (
        "aten::softmax", "aten::_softmax", "aten::multinomial", "aten::exponential_", "aten::div", "aten::argmax",
        "aten::cumsum", "aten::searchsorted", "aten::gather", "aten::uniform_", "aten::rand",
        "aten::minimum", "aten::nextafter", "aten::isfinite", "aten::full_like", "aten::fill_", "aten::scatter_",
        "aten::constant_pad_nd",
    ),
    "kv_cache_and_concatenation": ("aten::cat",),  # the growing key/value cache, rotary halves, the token ids
}  # fmt: skip
# Operators both the model and a sampler call (the norms' float32 upcasts, generate's float32 copy of the last
# logits, the sampler's block sums): kept apart as "casts_and_copies", not guessed into one side.
SHARED = ("aten::_to_copy", "aten::copy_", "aten::sum")


def profile_categories(work) -> dict:
    """Milliseconds of self CPU time per category (and ``casts_and_copies``) for one call of ``work``."""
    from torch.profiler import ProfilerActivity, profile

    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        work()
    found = dict.fromkeys([*CATEGORIES, "casts_and_copies"], 0.0)
    found["profiled_wall"] = (time.perf_counter() - start) * 1e3
    for event in prof.key_averages():
        if event.key in SHARED:
            found["casts_and_copies"] += event.self_cpu_time_total / 1e3
            continue
        for name, ops in CATEGORIES.items():
            if event.key in ops:
                found[name] += event.self_cpu_time_total / 1e3
    return found


def decode_breakdown(threads: int, model: str, rounds: int = 3) -> dict:
    """Where a decode step's time goes, with transformers' sampler and fast_sampling's, in one process (run in a
    child, like :func:`generate`), 16 sequences sampled as TRL samples (temperature 1, no filter).

    ``rows``: ``rounds`` rounds, each timing both samplers one after the other (the order alternating by round, the
    load average beside each): the prompt pass (one new token) and one decode step (64 new tokens less the prompt
    pass, over 63), unprofiled. Alternating within one process keeps the machine's load alike for both, which on a
    shared machine whole runs one after the other do not. Then, profiled once per sampler, the decode step and each
    category's milliseconds of it (the 64-token run less the 1-token run, over 63), "the rest" being the profiled step
    less the categories (Python between operators, small kernels named nowhere, the profiler's own cost). Also every
    linear layer applied to 16 rows alone (the weights read once, as in a decode step) and the rate it reads them
    at, and the bytes a decode step must read at least (every linear layer's weights, the output head's included)."""
    import torch

    model, batch, _ = _model_and_batch(threads, model)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]

    def timed(work) -> float:
        start = time.perf_counter()
        work()
        return time.perf_counter() - start

    one = lambda: model.generate(**batch, max_new_tokens=1, **TRL_SAMPLING)  # noqa: E731
    whole = lambda: model.generate(**batch, max_new_tokens=64, min_new_tokens=64, **TRL_SAMPLING)  # noqa: E731
    rows, profiled = [], {}
    torch.manual_seed(0)
    with torch.no_grad():
        for sampler in SAMPLERS:
            with sampler_context(model, sampler):
                model.generate(**batch, max_new_tokens=4, **TRL_SAMPLING)  # warm-up
        for r in range(rounds):
            for sampler in SAMPLERS if r % 2 == 0 else SAMPLERS[::-1]:
                load = load_now()
                with sampler_context(model, sampler):
                    prompt, steps = timed(one), timed(whole)
                rows.append(
                    {
                        "round": r + 1,
                        "sampler": sampler,
                        "load": [load, load_now()],
                        "prompt_pass_seconds": round(prompt, 2),
                        "decode_step_ms": round((steps - prompt) / 63 * 1e3, 1),
                    }
                )
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        for sampler in SAMPLERS:
            with sampler_context(model, sampler):
                found = [profile_categories(one), profile_categories(whole)]
            per_step = {name: (found[1][name] - found[0][name]) / 63 for name in found[0]}
            step = per_step.pop("profiled_wall")
            categories = {name: round(ms, 1) for name, ms in per_step.items()}
            categories["rest"] = round(step - sum(per_step.values()), 1)  # Python, small kernels, the profiler
            profiled[sampler] = {"load": load_now(), "decode_step_ms": round(step, 1), "by_category_ms": categories}
        inputs = {n: torch.randn(16, n, dtype=model.dtype) for n in {m.in_features for m in linears}}
        matmuls = min(timed(lambda: [m(inputs[m.in_features]) for m in linears]) for _ in range(5))
    weights = sum(m.weight.numel() * m.weight.element_size() for m in linears)
    return {
        "vocabulary": model.config.vocab_size,
        "prompt_tokens": int(batch["input_ids"].numel()),
        "weights_read_per_step_gb": round(weights / 1e9, 3),
        "rows": rows,
        "profiled": profiled,
        "linear_layers_alone_ms": round(matmuls * 1e3, 1),
        "linear_layers_alone_weights_gb_per_s": round(weights / matmuls / 1e9, 2),
    }


def train_share(threads: int, model: str, completion: int = 150) -> dict:
    """One micro-batch of the recipe's training (4 sequences: a GSM8K prompt and ``completion`` tokens, LoRA r=16 on
    every linear layer, bfloat16 where the CPU has it), forward and backward as TRL's loss takes them (log-
    probabilities of the completion positions only), timed (fastest of three) and counted in matrix FLOPs by torch's
    FlopCounterMode; then this process's bfloat16 2048^3 matrix-product rate, right after, for the share."""
    import torch
    from peft import LoraConfig, get_peft_model
    from torch.utils.flop_counter import FlopCounterMode

    load = os.getloadavg()[0]
    loaded, batch, dtype = _model_and_batch(threads, model)
    config = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    peft_model = get_peft_model(loaded, config).train()
    prompt = batch["input_ids"][:4]
    ids = torch.cat([prompt, torch.randint(100, 1000, (4, completion), generator=torch.Generator().manual_seed(0))], 1)
    mask = torch.cat([batch["attention_mask"][:4], torch.ones(4, completion, dtype=torch.long)], 1)

    def step():
        logits = peft_model(input_ids=ids, attention_mask=mask, logits_to_keep=completion + 1).logits[:, :-1]
        logps = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, -completion:, None])
        (-logps.mean()).backward()
        peft_model.zero_grad(set_to_none=True)

    step()  # warm-up
    with FlopCounterMode(display=False) as counter:
        step()
    found = []
    for _ in range(3):
        start = time.perf_counter()
        step()
        found.append(time.perf_counter() - start)
    seconds = min(found)
    rate = bounds(copy=False)["gemm_gflops_bfloat16"]
    flops = counter.get_total_flops()
    return {
        "load": [round(load, 2), round(os.getloadavg()[0], 2)],
        "dtype": dtype,
        "tokens": int(mask.sum()),
        "matrix_gflop": round(flops / 1e9, 1),
        "seconds": round(seconds, 2),
        "gemm_gflops_bfloat16": rate,
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


def bounds(copy: bool = True) -> dict:
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
    if not copy:
        return found
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


def child(*args: str, limit: float = 1800.0) -> dict:
    """This script run again in a fresh process as gdpo runs (two threads, OpenMP waiting passive): its last line."""
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True, timeout=limit)
    if done.returncode:
        raise SystemExit(f"benchmark_cpu_path.py {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.splitlines()[-1])


def load_now() -> float:
    return round(os.getloadavg()[0], 2)


def side_by_side(args, save) -> dict:
    """The decode-step breakdown with transformers' sampler and fast_sampling's, alternating, ``--rounds`` each per
    model; one training micro-batch per model against the bf16 matrix rate; the machine's bounds before and after;
    and, with ``--step_rounds``, the SmolLM2 recipe step on float32 against the lean path with fast sampling,
    alternating; one step of each ``--big_model_step`` model. Every row carries the load average at its start and
    end; ``save(record)`` is called after each row (a long run leaves what it measured)."""
    record = {
        "bounds": [bounds() | {"load": load_now()}],
        "decode": [],
        "training": [],
        "runs": {},
        "big_model_step": [],
    }

    def add(key: str, row: dict) -> None:  # each row printed and the file written as it comes (a long run)
        record[key].append(row)
        print(json.dumps(row), flush=True)
        save(record)

    for model in args.models:
        add("decode", {"model": model, **child("--_breakdown", "2", "--rounds", str(args.rounds), "--model", model)})
        add("training", {"model": model, **child("--_train", "2", "--model", model)})
    with tempfile.TemporaryDirectory() as tmp:
        if args.step_rounds:
            record["runs"] = runs = {"before": [], "after, fast sampling": []}
            for r in range(args.step_rounds):
                for path in list(runs) if r % 2 == 0 else list(runs)[::-1]:
                    try:
                        runs[path].append(recipe_step(path, args, Path(tmp)))
                    except SystemExit as failed:  # e.g. the OOM killer on a shared machine: say so, go on
                        record.setdefault("failures", []).append(f"round {r + 1}, {path}: {failed}")
                        save(record)
                        continue
                    print(f"round {r + 1} {path}: {json.dumps(runs[path][-1])}", flush=True)
                    save(record)
        for model in args.big_model_step:  # one step of the recipe on a bigger model: its time and peak memory
            add("big_model_step", {"model": model, **recipe_step("after, fast sampling", args, Path(tmp), model, 1)})
    record["bounds"].append(bounds() | {"load": load_now()})
    return record


def median_of(rows: list[dict], key) -> float:
    return round(statistics.median(key(r) for r in rows), 1)


def side_by_side_summary(record: dict) -> dict:
    """The figures the docs quote, from ``record``'s raw rows: per model and sampler the median decode step, the
    profiled categories and the share of the copy bandwidth a whole decode step reaches (the weights it must read
    over its time); fast over transformers, the median of each round's ratio (both timed one after the other);
    training's share of the bf16 matrix rate; the recipe step's ratio and peaks; the bigger model's step."""
    copy = round(statistics.median(b["copy_gb_per_s"] for b in record["bounds"]), 2)
    summary: dict = {"copy_gb_per_s": copy, "models": {}}
    for found in record["decode"]:
        model: dict = {}
        for sampler in SAMPLERS:
            rows = [r for r in found["rows"] if r["sampler"] == sampler]
            step = median_of(rows, lambda r: r["decode_step_ms"])
            model[sampler] = {
                "decode_step_ms": step,
                "share_of_copy_bandwidth": round(found["weights_read_per_step_gb"] / (step / 1e3) / copy, 2),
                "load": [min(min(r["load"]) for r in rows), max(max(r["load"]) for r in rows)],
            }
        ratios = [next(r for r in found["rows"] if r["round"] == n and r["sampler"] == "fast")["decode_step_ms"]
                  / next(r for r in found["rows"] if r["round"] == n and r["sampler"] == "transformers")["decode_step_ms"]
                  for n in sorted({r["round"] for r in found["rows"]})]  # fmt: skip
        model["decode_step_fast_over_transformers"] = round(statistics.median(ratios), 2)
        model["decode_step_fast_over_transformers_by_round"] = [round(x, 2) for x in ratios]
        train = [r for r in record["training"] if r["model"] == found["model"]]
        if train:
            t = train[0]
            model["training_gflops"] = round(t["matrix_gflop"] / t["seconds"], 1)
            model["training_share_of_bf16_gemm"] = round(
                t["matrix_gflop"] / t["seconds"] / t["gemm_gflops_bfloat16"], 2
            )
        summary["models"][found["model"]] = model
    runs = record.get("runs") or {}
    if runs:
        steps = {path: [t for run in found for t in run["step_seconds"][1:]] for path, found in runs.items()}
        before, after = statistics.median(steps["before"]), statistics.median(steps["after, fast sampling"])
        summary["step_seconds"] = {"before": before, "after, fast sampling": after}
        summary["step_ratio_after_over_before"] = round(after / before, 2)
        summary["peak_gb"] = {path: max(run["peak_gb"] for run in found) for path, found in runs.items()}
        # Two runs of one path on one machine must train alike (the same rewards and loss at every step; None where
        # every reward is 0, which would say nothing): reproducibility, checked on rewards that are not all 0.
        summary["same_training_in_both_runs"] = {
            path: same_training(found[0], found[1]) if len(found) > 1 else None for path, found in runs.items()
        }
    for row in record.get("big_model_step", []):  # one step: its time (warm-up included) and peak memory
        summary.setdefault("big_model_step", {})[row["model"]] = {
            "step_seconds": row["step_seconds"][0],
            "completion_tokens": row["completion_tokens"][0],
            "peak_gb": row["peak_gb"],
        }
    return summary


def evaluation(args, dtype: str, scratch: Path) -> float:
    """Minutes for `gdpo eval` greedy on the first 200 GSM8K test problems (the lean dtype's into ``--eval_dir``
    when given: the same command as study H8's evaluation of the start, which can reuse it)."""
    out = Path(args.eval_dir) if args.eval_dir and dtype != "float32" else scratch / f"eval-{dtype}"
    start = time.perf_counter()
    command = gdpo("eval", "--model", args.model, "--dataset", str(Path(args.data) / "test.jsonl"), "--limit", "200")
    command += ["--max_new_tokens", "256", "--batch_size", "50", "--dtype", dtype, "--output_dir", str(out)]
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return round((time.perf_counter() - start) / 60, 1)


def same_training(one: dict, other: dict) -> bool | None:
    """Whether two runs logged the same rewards and loss at every step; None (not checked) where every reward of
    both is 0: runs that score nothing train on nothing, so their equality says nothing."""
    if not any(v for run in (one, other) for step in run["rewards"] for v in step):
        return None
    return (one["rewards"], one["loss"]) == (other["rewards"], other["loss"])


def check_arguments(args) -> None:
    """Refuse, in one line naming the argument and the fix, what would fail late or hang (see --help)."""
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: give 1 or more (runs of each path, alternating)")
    if args.steps < 2:
        raise SystemExit(f"--steps {args.steps}: give 2 or more (the first step of each run is left out)")
    if args.busy < 0:
        raise SystemExit(f"--busy {args.busy}: give 0 or more spinning processes")
    if args.step_rounds < 0:
        raise SystemExit(f"--step_rounds {args.step_rounds}: give 0 (no recipe step) or more")
    if args.data and not all((Path(args.data) / name).is_file() for name in ("train.jsonl", "test.jsonl")):
        raise SystemExit(f"--data {args.data}: no train.jsonl and test.jsonl there (openai/grade-school-math's files)")
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.storage.local_paths import missing_folder_line

    for model in [args.model, *args.models]:
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
    parser.add_argument("--_sampler", default="transformers", choices=("transformers", "fast"), help=argparse.SUPPRESS)
    parser.add_argument("--_train", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--side_by_side",
        action="store_true",
        help="only the decode breakdown (transformers' sampler against fast_sampling, alternating, --rounds each), "
        "a training micro-batch against the bf16 matrix rate, per --models, and --step_rounds recipe steps; writes "
        f"{SIDE_BY_SIDE.relative_to(ROOT)}",
    )
    parser.add_argument("--models", nargs="*", default=[], help="models for --side_by_side (default: --model)")
    parser.add_argument("--step_rounds", type=int, default=0, help="--side_by_side: recipe-step runs per path")
    parser.add_argument(
        "--big_model_step",
        nargs="*",
        default=[],
        help="--side_by_side: models to run one recipe step of (peak memory)",
    )
    args = parser.parse_args()
    if args._generate:
        print(json.dumps(generate(args._generate, args.model, args._lora, args._sampler)))
        return
    if args._breakdown:
        print(json.dumps(decode_breakdown(args._breakdown, args.model, args.rounds)))
        return
    if args._train:
        print(json.dumps(train_share(args._train, args.model)))
        return
    check_arguments(args)
    if args.side_by_side:
        from gdpo_trl.models.shipped import machine

        args.models = args.models or [args.model]
        output = Path(args.output) if args.output != str(OUT) else SIDE_BY_SIDE
        setup = {
            "machine": f"{machine()}, {os.cpu_count()} CPU cores, no GPU",
            "setup": f"{' '.join(args.models)}: {args.rounds} rounds per sampler; recipe step: {args.step_rounds} "
            f"runs x {args.steps} steps per path (first left out), {args.model}",
            "command": "python scripts/benchmark_cpu_path.py " + " ".join(sys.argv[1:]),
        }

        def save(record: dict, final: bool = False) -> None:
            try:
                summary = side_by_side_summary(record)
            except (StopIteration, IndexError, KeyError, statistics.StatisticsError, ZeroDivisionError):
                summary = None  # not every path measured yet
            done = {"complete": final, **setup, "summary": summary, **record}
            output.write_text(json.dumps(done, indent=2) + "\n")

        record = side_by_side(args, save)
        save(record, final=True)
        print(json.dumps(side_by_side_summary(record), indent=2))
        return

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
        "step_ratio_after_over_before": round(
            statistics.median(steps["after"]) / statistics.median(steps["before"]), 2
        ),
        "peak_gb_before": max(run["peak_gb"] for run in runs["before"]),
        "peak_gb_after": max(run["peak_gb"] for run in runs["after"]),
        "peak_gb_micro_batches_of_8": micro["peak_gb"],
        "same_training_as_micro_batches_of_8": same_training(micro, runs["after"][0]),
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
            subprocess.run(
                [sys.executable, __file__, "--_breakdown", "2", "--model", args.model],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},
            ).stdout.splitlines()[-1]
        ),  # as gdpo runs it: two threads, passive  # fmt: skip
        "setup": f"{args.model}, recipes/cpu/smollm2_gdpo, {args.rounds} runs x {args.steps} steps per path (first left out)",
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("runs", "threads")}, indent=2))


if __name__ == "__main__":
    main()
