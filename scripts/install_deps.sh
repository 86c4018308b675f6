#!/usr/bin/env bash
# Installs the Debian packages chorus builds and tests with. Safe to run repeatedly:
# it only calls apt-get when something is missing, and only when running as root.
set -euo pipefail
packages=(cmake g++ make pkg-config libgtest-dev libgmock-dev libbenchmark-dev libhwloc-dev hwloc libpugixml-dev iproute2
          openmpi-bin libopenmpi-dev clang-format libgloo-dev libucx-dev libibverbs-dev python3-matplotlib
          zlib1g-dev dataset-fashion-mnist procps clang libclang-rt-dev nlohmann-json3-dev doxygen libssl-dev ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "chorus: missing packages: ${missing[*]} (run as root, or install them yourself)" >&2
  exit 0
fi
echo "chorus: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
