#!/usr/bin/env bash
# Run docs/training.md's ZeRO-3 two-process command RUNS times in a row and count the runs that ended cleanly: exit
# status 0, no rank aborting at exit ("terminate called"), the model saved. Runs listed in FRESH (default "1 11") start
# with an empty DeepSpeed extension cache (TORCH_EXTENSIONS_DIR), so they also compile DeepSpeed's shared-memory op, as
# the first run on a machine does; the others share one cache. Logs and output folders go to WORK.
#
#   scripts/repeat_zero3.sh [RUNS=20] [WORK=/tmp/gdpo-zero3-repeat] [FRESH="1 11"]
#
# Prints one line per run (status, abort, seconds, fresh cache) and the count: "clean: C of N".
set -u
RUNS=${1:-20}
WORK=${2:-/tmp/gdpo-zero3-repeat}
FRESH=" ${3:-1 11} "
GDPO=${GDPO:-$(dirname "$0")/../.venv/bin/gdpo}
mkdir -p "$WORK"
clean=0
for n in $(seq 1 "$RUNS"); do
    out="$WORK/out$n"
    rm -rf "$out"
    if [[ "$FRESH" == *" $n "* ]]; then cache="$WORK/extensions$n"; rm -rf "$cache"; else cache="$WORK/extensions"; fi
    start=$(date +%s)
    TORCH_EXTENSIONS_DIR="$cache" HF_HUB_OFFLINE=1 "$GDPO" train --config recipes/cpu/zero3/config.yaml \
        --accelerate_config zero3 --num_processes 2 --mixed_precision no --max_steps 2 --output_dir "$out" \
        >"$WORK/run$n.out" 2>"$WORK/run$n.err"
    status=$?
    aborts=$(grep -c "terminate called" "$WORK/run$n.err")
    saved=$([[ -f "$out/model.safetensors" && -f "$out/trainer_state.json" ]] && echo yes || echo no)
    echo "run $n: exit $status, aborts $aborts, saved $saved, $(($(date +%s) - start)) s, fresh cache $([[ "$FRESH" == *" $n "* ]] && echo yes || echo no)"
    if [[ $status -eq 0 && $aborts -eq 0 && $saved == yes ]]; then clean=$((clean + 1)); fi
done
echo "clean: $clean of $RUNS"
