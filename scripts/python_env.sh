#!/usr/bin/env bash
# Creates a virtual environment and installs pinned packages into it: by default .venv at the repository root with
# python/requirements-test.txt (the Python package and its tests); `python_env.sh .venv-docs docs/requirements.txt`
# for the docs site. Safe to run repeatedly: it does nothing when the environment already holds those exact versions.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv}"
requirements="${2:-$root/python/requirements-test.txt}"
stamp="$venv/.chorus-requirements"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$requirements" "$stamp"; then exit 0; fi
python3 -m venv "$venv"
echo "chorus: installing $(grep -cv '^#' "$requirements") Python packages into $venv $(grep -q "^torch" "$requirements" && echo "(torch is large: a few minutes)")"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$requirements"
cp "$requirements" "$stamp"
