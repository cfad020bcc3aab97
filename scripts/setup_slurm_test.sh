#!/bin/bash
# Installs what tests/test_multinode.py needs to start a real single-host Slurm cluster: Debian/Ubuntu's slurm-wlm
# (slurmctld, slurmd, sbatch, srun, scontrol) and munge (munged). Run by `make test-multinode`; idempotent: does
# nothing when they are already installed. Installs nothing system-wide besides the packages: the test writes its
# own configuration, keys and state under temporary folders and starts and stops the daemons itself.
#
# Without root or apt-get it installs nothing, says why, and exits 0: the Slurm test then reports itself as skipped
# with the reason (never as passed). A failing apt-get (no network) is an error.
set -euo pipefail

NEEDED=(slurmctld slurmd sbatch srun scontrol squeue munged)
missing=()
for binary in "${NEEDED[@]}"; do
    command -v "$binary" >/dev/null 2>&1 || [ -x "/usr/sbin/$binary" ] || missing+=("$binary")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup_slurm_test.sh: slurm-wlm and munge already installed."
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup_slurm_test.sh: missing ${missing[*]}; installing slurm-wlm and munge needs root and apt-get," \
        "so the Slurm test will be skipped." >&2
    exit 0
fi
echo "setup_slurm_test.sh: installing slurm-wlm and munge (missing: ${missing[*]})."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
