#!/usr/bin/env bash
# Installs the CPU peers perf/compare measures beyond scripts/install_deps.sh's (Open MPI, Gloo): MPICH from Debian,
# and Intel MPI and oneCCL from PyPI (impi-devel, oneccl-devel) into a virtual environment at PREFIX (default
# .peers; about 2 GB, most of it Intel's runtime). Then `make build` builds perf/baselines/mpi_perf_mpich,
# mpi_perf_impi and oneccl_perf. Not needed by `make test`. Safe to run again.
# DeepSpeed (its shared-memory AllReduce, perf/baselines/deepspeed_perf.py) is in the .venv of scripts/python_env.sh,
# beside the torch it runs on; it is measured where the CPU has avx512bw (its bf16/fp16 reductions need it), and its
# op is compiled on first use (ninja, about a minute).
# Usage: scripts/install_peers.sh [PREFIX]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$root/.peers}
if ! dpkg-query -W -f='${Status}' libmpich-dev 2>/dev/null | grep -q "install ok installed"; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install_peers: MPICH is missing (apt-get install mpich libmpich-dev as root); going on without it" >&2
  else
    echo "install_peers: installing MPICH (Debian's mpich, libmpich-dev; Open MPI stays the default mpirun)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mpich libmpich-dev >/dev/null
  fi
fi
if [ ! -x "$prefix/bin/pip" ]; then python3 -m venv "$prefix"; fi
echo "install_peers: Intel MPI and oneCCL into $prefix"
"$prefix/bin/pip" install -q --disable-pip-version-check impi-devel oneccl-devel
"$prefix/bin/pip" list --disable-pip-version-check 2>/dev/null | grep -iE "^(impi|oneccl)" || true
