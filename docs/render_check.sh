#!/usr/bin/env bash
# Renders pages of the built docs site in headless Chromium (Debian's `chromium`) and fails when a page does not load,
# logs a JavaScript or resource error, or lacks the text it must show: the front page and the C++ and C API
# reference pages. Writes a screenshot of each beside the site (<build>/docs/screenshots/).
# Usage: docs/render_check.sh <build dir>            (after `make docs`; apt-get install chromium)
set -uo pipefail
html=$(cd "$1" && pwd)/docs/html
shots=$(dirname "$html")/screenshots
browser=$(command -v chromium || command -v chromium-browser) ||
  { echo "render_check: chromium is missing (apt-get install chromium)" >&2; exit 1; }
mkdir -p "$shots"
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1400 --enable-logging=stderr --v=0)
failed=0
check() {  # page, text it must contain
  local page=$1 text=$2 name dom log
  name=$(basename "$page" .html)
  dom=$("$browser" "${flags[@]}" --dump-dom "file://$html/$page" 2>"$shots/$name.log")
  if ! grep -qF "$text" <<<"$dom"; then echo "FAILED: $page does not show '$text'"; failed=1; fi
  if grep -E "CONSOLE|Uncaught|net::ERR_" "$shots/$name.log" | grep -v "ERR_BLOCKED" >/dev/null; then
    echo "FAILED: $page logged errors:"; grep -E "CONSOLE|Uncaught|net::ERR_" "$shots/$name.log"; failed=1
  fi
  "$browser" "${flags[@]}" --screenshot="$shots/$name.png" "file://$html/$page" 2>/dev/null >/dev/null
  [ -s "$shots/$name.png" ] || { echo "FAILED: no screenshot of $page"; failed=1; }
  [ $failed = 0 ] && echo "rendered $page ($(wc -c <<<"$dom") bytes of DOM): $shots/$name.png"
}
check docs/index.html "Getting started"
check docs/cpp-api.html "createFromEnvironment"
check docs/c-api.html "ncclAllReduce"
exit $failed
