#!/bin/bash
# Multi-node GDPO training on Slurm: one `accelerate launch` per node, 8 GPUs each, DeepSpeed ZeRO-3.
#
#   sbatch --nodes 2 scripts/slurm_train.sh recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml [--flag value ...]
#
# The first argument is the recipe; the rest are passed to gdpo-train and override it. Submit from the repository
# root (accelerate_configs/ is read relative to it), with the Python environment activated. The log (stdout and
# stderr) goes to <job-name>-<job-id>.out in the submission folder.
#SBATCH --job-name=gdpo
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=32
#SBATCH --exclusive
#SBATCH --output=%x-%j.out

set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: sbatch [--nodes N] $0 <recipe.yaml> [gdpo-train flags ...]" >&2
    exit 1
fi

GPUS_PER_NODE=8
ACCELERATE_CONFIG=${ACCELERATE_CONFIG:-accelerate_configs/zero3.yaml}
MASTER_PORT=${MASTER_PORT:-29500}
# The first node of the allocation hosts the rendezvous.
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR MASTER_PORT
# Fail fast instead of hanging when one rank dies during a collective.
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1

echo "Job $SLURM_JOB_ID: $SLURM_NNODES nodes x $GPUS_PER_NODE GPUs, rendezvous at $MASTER_ADDR:$MASTER_PORT"

# \$SLURM_PROCID is escaped so that each srun task (one per node) expands its own rank, not the batch script's.
srun --kill-on-bad-exit=1 bash -c "accelerate launch \
    --config_file $ACCELERATE_CONFIG \
    --num_machines $SLURM_NNODES \
    --num_processes $((SLURM_NNODES * GPUS_PER_NODE)) \
    --machine_rank \$SLURM_PROCID \
    --main_process_ip $MASTER_ADDR \
    --main_process_port $MASTER_PORT \
    -m gdpo_trl.cli.train --config $(printf '%q ' "$@")"
