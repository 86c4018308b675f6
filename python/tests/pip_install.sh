#!/usr/bin/env bash
# `pip install .` of the source tree into a scratch directory (scikit-build-core, with the build's Python and its
# torch), then the package's own tests and the torch backend's registration on what pip installed.
#   pip_install.sh PYTHON SOURCE_DIR SCRATCH_DIR
set -euo pipefail
python="$1" source="$2" scratch="$3"
rm -rf "$scratch"
mkdir -p "$scratch"
# What is checked here is the packaging, not speed or device code: the build leaves out link-time optimisation and
# CUDA (the whole test took 203 s instead of 330 in a clean clone's `make test` on 2 cores). Its CMake tree sits in
# the scratch directory under the build tree, where ccache's relative paths match every clone's (cmake/ccache.cmake).
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$python" -m pip install --quiet --no-build-isolation --no-deps --target "$scratch/site" \
  -C cmake.define.CHORUS_LTO=OFF -C cmake.define.CHORUS_CUDA=OFF -C build-dir="$scratch/build" "$source"
ls "$scratch/site/chorus"
PYTHONPATH="$scratch/site" "$python" -c "import chorus.torch, torch.distributed as d; assert 'chorus' in d.Backend.backend_list"
# A program that never imports chorus: torch finds the backend by the package's entry point.
PYTHONPATH="$scratch/site" "$python" - <<'EOF'
import sys
import torch
import torch.distributed as dist
assert "chorus" not in sys.modules
dist.init_process_group("chorus", store=dist.HashStore(), rank=0, world_size=1)
assert "chorus" in sys.modules, "the backend came without chorus being imported?"
t = torch.arange(4, dtype=torch.float32)
dist.all_reduce(t)
assert t.tolist() == [0.0, 1.0, 2.0, 3.0], t
assert dist.get_backend() == "chorus", dist.get_backend()
dist.destroy_process_group()
print("init_process_group('chorus') without importing chorus: ok")
EOF
CHORUS_PYTHON_PATH="$scratch/site" "$python" -m pytest -q -p no:cacheprovider "$source/python/tests/test_package.py"
