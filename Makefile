# Quick start: `make demo` trains GDPO on CPU, offline; `make test` runs the test suite.
# Both create .venv on first use. torch is pinned to 2.13.0 first so pip takes the local CPU wheel where one is
# configured (and never a newer CUDA build pulled in by a loose range).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install demo test test-multinode lint bench clean

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

# Two accelerate machines on 127.0.0.1, and scripts/slurm_train.sh under a real single-host Slurm. Installs slurm-wlm
# and munge with apt first when run as root (scripts/setup_slurm_test.sh); otherwise the Slurm tests report a skip.
test-multinode: install
	scripts/setup_slurm_test.sh
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m multinode

lint: install
	$(BIN)/ruff check gdpo_trl tests scripts

bench: install
	$(BIN)/python scripts/benchmark_trainer.py
	$(BIN)/python scripts/benchmark_rewards.py

clean:
	rm -rf $(VENV) outputs .pytest_cache
