#!/bin/bash
# Multi-node GDPO training on Slurm: one `accelerate launch` per node, one process per GPU (DeepSpeed ZeRO-3 by
# default), or N CPU processes per node where no GPU is allocated (how tests/test_multinode.py runs it).
#
#   sbatch --nodes 2 --gpus-per-node 8 scripts/slurm_train.sh recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml [--flag value ...]
#   sbatch --nodes 2 scripts/slurm_train.sh recipes/cpu/gdpo/config.yaml --max_steps 2      # CPU, 1 process per node
#
# The first argument is the recipe; the rest are passed to gdpo train and override it. Submit from the repository
# root (accelerate_configs/ and scripts/ are read relative to it), with the Python environment activated: sbatch
# passes your environment to the job, so every knob below can be set on the command line
# (`MASTER_PORT=29600 sbatch ...`). The log (stdout and stderr) goes to <job-name>-<job-id>.out in the submission
# folder. Resources are requested on the sbatch command line, not here, so that the script runs unchanged on any
# partition: --gpus-per-node N (GPUs), --cpus-per-task N (CPU cores per node; --exclusive below takes whole nodes).
#
# Knobs (environment variables):
#   GPUS_PER_NODE           processes per node on GPU nodes. Default: the GPUs Slurm allocated on the node
#                           (SLURM_GPUS_ON_NODE, else SLURM_GPUS_PER_NODE); none allocated means CPU mode.
#   CPU_PROCESSES_PER_NODE  processes per node in CPU mode (default 1).
#   ACCELERATE_CONFIG       accelerate config file. Default: accelerate_configs/zero3.yaml on GPUs,
#                           accelerate_configs/ddp.yaml in CPU mode (accelerate runs it as gloo DDP on CPU).
#   MIXED_PRECISION         accelerate --mixed_precision (no, bf16, fp16). Default: taken from the recipe's `bf16`
#                           (or a --bf16 flag) so that DeepSpeed's and the trainer's settings agree; the config
#                           file's value when the recipe does not say.
#   MASTER_ADDR             rendezvous address, served by the first node. Default: the first node's NodeAddr
#                           as Slurm knows it (`scontrol show node`), which need not resolve as a host name.
#   MASTER_PORT             rendezvous port on the first node (default 29500).
#   RDZV_TIMEOUT            seconds the pre-flight waits for every node to reach MASTER_ADDR:MASTER_PORT before
#                           failing with one line (default 60). The launcher itself would hang far longer.
#   PYTHON                  interpreter of the environment with gdpo-trl installed (default python).
#   TRAIN_MODULE            module run on each process (default gdpo_trl.cli.train; a custom trainer's entry point).
#SBATCH --job-name=gdpo
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
#SBATCH --output=%x-%j.out

set -euo pipefail

die() { echo "slurm_train.sh: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: sbatch [--nodes N] [--gpus-per-node G] $0 <recipe.yaml> [gdpo train flags ...]"
[ -n "${SLURM_JOB_ID:-}" ] || die "not inside a Slurm job: submit with sbatch (or run under salloc)."
[ -f "$1" ] || die "recipe '$1' not found; submit from the repository root with a recipe path such as recipes/cpu/gdpo/config.yaml."

PYTHON=${PYTHON:-python}
TRAIN_MODULE=${TRAIN_MODULE:-gdpo_trl.cli.train}
NNODES=$SLURM_NNODES

# Processes per node: GPUs Slurm allocated here (a number, or type:number in SLURM_GPUS_PER_NODE), else CPU mode.
SLURM_GPUS=${SLURM_GPUS_ON_NODE:-${SLURM_GPUS_PER_NODE:-0}}
GPUS_PER_NODE=${GPUS_PER_NODE:-${SLURM_GPUS##*:}}
[[ "$GPUS_PER_NODE" =~ ^[0-9]+$ ]] || die "GPUS_PER_NODE='$GPUS_PER_NODE' is not a number of GPUs per node."
if [ "$GPUS_PER_NODE" -gt 0 ]; then
    PROCESSES_PER_NODE=$GPUS_PER_NODE
    ACCELERATE_CONFIG=${ACCELERATE_CONFIG:-accelerate_configs/zero3.yaml}
    DEVICE="$GPUS_PER_NODE GPUs"
else
    PROCESSES_PER_NODE=${CPU_PROCESSES_PER_NODE:-1}
    ACCELERATE_CONFIG=${ACCELERATE_CONFIG:-accelerate_configs/ddp.yaml}
    DEVICE="$PROCESSES_PER_NODE CPU processes (no GPU allocated: request them with sbatch --gpus-per-node N)"
fi
[ -f "$ACCELERATE_CONFIG" ] || die "accelerate config '$ACCELERATE_CONFIG' not found (set ACCELERATE_CONFIG)."

# Mixed precision from the recipe: the last --bf16 flag wins over the YAML's bf16 key.
if [ -z "${MIXED_PRECISION:-}" ]; then
    MIXED_PRECISION=$("$PYTHON" - "$@" <<'PY'
import sys

import yaml

recipe, flags = sys.argv[1], sys.argv[2:]
value = (yaml.safe_load(open(recipe)) or {}).get("bf16")
for i, flag in enumerate(flags):
    if flag == "--bf16":
        value = flags[i + 1] if i + 1 < len(flags) and not flags[i + 1].startswith("-") else True
    elif flag.startswith("--bf16="):
        value = flag.split("=", 1)[1]
print({"true": "bf16", "false": "no"}.get(str(value).lower(), ""))
PY
    ) || die "could not read '$1' with $PYTHON (is the environment with gdpo-trl activated?)."
fi
PRECISION_FLAG=${MIXED_PRECISION:+--mixed_precision $MIXED_PRECISION}

# The first node of the allocation hosts the rendezvous; its NodeAddr is how Slurm itself reaches it. (sed reads
# all of its input: `head -n 1` could exit first, and scontrol's SIGPIPE would end this script under pipefail.)
HEAD_NODE=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)
MASTER_ADDR=${MASTER_ADDR:-$(scontrol show node "$HEAD_NODE" | grep -oP 'NodeAddr=\K\S+' || echo "$HEAD_NODE")}
MASTER_PORT=${MASTER_PORT:-29500}
RDZV_TIMEOUT=${RDZV_TIMEOUT:-60}
export MASTER_ADDR MASTER_PORT
# Fail fast instead of hanging when one rank dies during a collective.
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1

echo "Job $SLURM_JOB_ID: $NNODES nodes x $DEVICE, $ACCELERATE_CONFIG, mixed precision ${MIXED_PRECISION:-from the config}, rendezvous at $MASTER_ADDR:$MASTER_PORT"

# Pre-flight: every node resolves and reaches MASTER_ADDR:MASTER_PORT (the first node listening there), or the job
# ends now with one line saying which; the launcher would otherwise wait in its rendezvous for many minutes.
srun --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c "$PYTHON scripts/rendezvous_check.py \
    $MASTER_ADDR $MASTER_PORT --rank \$SLURM_PROCID --world $NNODES --timeout $RDZV_TIMEOUT" \
    || die "rendezvous $MASTER_ADDR:$MASTER_PORT not reachable from every node (see the line above)."

# \$SLURM_PROCID is escaped so that each srun task (one per node) expands its own rank, not the batch script's.
LAUNCH_OPTIONS="$PRECISION_FLAG --num_machines $NNODES --num_processes $((NNODES * PROCESSES_PER_NODE)) \
    --machine_rank \$SLURM_PROCID --main_process_ip $MASTER_ADDR --main_process_port $MASTER_PORT"
if [ "$TRAIN_MODULE" = gdpo_trl.cli.train ]; then
    # `gdpo train` with accelerate's options: it checks the recipe, then starts accelerate on this node.
    COMMAND="$PYTHON -m gdpo_trl.cli.main train --accelerate_config $ACCELERATE_CONFIG $LAUNCH_OPTIONS"
else  # a custom trainer's entry point, launched by accelerate itself
    COMMAND="$PYTHON -m accelerate.commands.launch --config_file $ACCELERATE_CONFIG $LAUNCH_OPTIONS -m $TRAIN_MODULE"
fi
srun --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c "$COMMAND --config $(printf '%q ' "$@")"
