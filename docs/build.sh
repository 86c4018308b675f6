#!/usr/bin/env bash
# Builds the docs site into <build dir>/docs/html: the API reference from the public headers (Doxygen), the settings
# table from chorus-info (the settings registry, so the page lists exactly what the code reads), then Sphinx with
# warnings as errors, so an undocumented declaration, a broken link or a page outside the table of contents fails.
# Usage: docs/build.sh <build dir> <python of the docs environment>          (`make docs`)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
python=$2
generated=$build/docs/generated
command -v doxygen >/dev/null || { echo "docs/build.sh: doxygen is missing (scripts/install_deps.sh installs it)" >&2; exit 1; }
[ -x "$build/tools/chorus-info" ] || { echo "docs/build.sh: $build/tools/chorus-info is missing: build first" >&2; exit 1; }
mkdir -p "$generated/doxygen"
(cat "$root/docs/Doxyfile"; echo "OUTPUT_DIRECTORY=$generated/doxygen") | (cd "$root" && doxygen -)
"$build/tools/chorus-info" --settings-markdown >"$generated/settings-table.md"
CHORUS_DOCS_GENERATED=$generated "$python" -m sphinx -W --keep-going -q -b html -c "$root/docs" "$root" \
  "$build/docs/html"
# The site's front page is docs/index.html (the source directory is the repository root): the top level points there.
echo '<!doctype html><meta http-equiv="refresh" content="0; url=docs/index.html"><a href="docs/index.html">chorus</a>' \
  >"$build/docs/html/index.html"
echo "chorus: the docs are in $build/docs/html/index.html"
