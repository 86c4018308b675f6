#!/usr/bin/env bash
# Makes a virtual environment with pinned packages: by default .venv at the repository root with
# python/requirements-test.txt (the Python package and its tests); `python_env.sh .venv-docs docs/requirements.txt`
# for the docs site. The environment itself is made once per requirements file's contents in a cache outside the
# clone (CHORUS_VENV_CACHE, default ~/.cache/chorus/venvs), and the path asked for is a link to it: every clone of the
# same requirements (a developer's tree, scripts/ci_local.sh's, CI's) shares one environment instead of installing
# 6 GB again. Safe to run repeatedly and from several clones at once.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv}"
requirements="${2:-$root/python/requirements-test.txt}"
cache="${CHORUS_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chorus/venvs}"
shared="$cache/$(basename "$venv")-$(sha256sum "$requirements" | cut -c1-16)"

ready() { [ -x "$1/bin/python" ] && [ -f "$1/.chorus-requirements" ] && cmp -s "$requirements" "$1/.chorus-requirements"; }

if [ -L "$venv" ] && [ "$(readlink "$venv")" = "$shared" ] && ready "$shared"; then exit 0; fi
mkdir -p "$cache"
(
  flock 9
  if ! ready "$shared"; then
    python3 -m venv --clear "$shared"
    echo "chorus: installing $(grep -cv '^#' "$requirements") Python packages into $shared" \
      "$(grep -q "^torch" "$requirements" && echo "(torch is large: a few minutes)")"
    "$shared/bin/python" -m pip install --quiet --upgrade pip
    "$shared/bin/python" -m pip install --quiet -r "$requirements"
    cp "$requirements" "$shared/.chorus-requirements"
  fi
) 9> "$shared.lock"
# An environment made in place by an earlier version of this script gives way to the link.
[ -L "$venv" ] || rm -rf "$venv"
ln -sfn "$shared" "$venv"
