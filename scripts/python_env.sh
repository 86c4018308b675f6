#!/usr/bin/env bash
# Creates the virtual environment the Python package and its tests use (default: .venv at the repository root)
# and installs the pinned packages of python/requirements-test.txt into it. Safe to run repeatedly: it does nothing
# when the environment already holds those exact versions.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv}"
requirements="$root/python/requirements-test.txt"
stamp="$venv/.chorus-requirements"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$requirements" "$stamp"; then exit 0; fi
python3 -m venv "$venv"
echo "chorus: installing $(grep -cv '^#' "$requirements") Python packages into $venv (torch is large: a few minutes)"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$requirements"
cp "$requirements" "$stamp"
