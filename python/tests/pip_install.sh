#!/usr/bin/env bash
# `pip install .` of the source tree into a scratch directory (scikit-build-core, with the build's Python and its
# torch), then the package's own tests and the torch backend's registration on what pip installed.
#   pip_install.sh PYTHON SOURCE_DIR SCRATCH_DIR
set -euo pipefail
python="$1" source="$2" scratch="$3"
rm -rf "$scratch"
mkdir -p "$scratch"
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$python" -m pip install --quiet --no-build-isolation --no-deps --target "$scratch/site" "$source"
ls "$scratch/site/chorus"
PYTHONPATH="$scratch/site" "$python" -c "import chorus.torch, torch.distributed as d; assert 'chorus' in d.Backend.backend_list"
CHORUS_PYTHON_PATH="$scratch/site" "$python" -m pytest -q -p no:cacheprovider "$source/python/tests/test_package.py"
