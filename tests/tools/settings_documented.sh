#!/usr/bin/env bash
# Every setting chorus-info lists (the settings registry) has a row in the README's settings table, so a new
# setting cannot ship undocumented.
# Usage: settings_documented.sh <build dir> <README.md>
set -uo pipefail
build=$1
readme=$2
names=$("$build/tools/chorus-info" 2>/dev/null | awk '/^Settings/ {on = 1; next} /^$/ {if (on) exit} on {print $1}')
[ "$(wc -l <<<"$names")" -ge 30 ] || { echo "FAILED: chorus-info listed too few settings: $names"; exit 1; }
missing=0
for name in $names; do
  grep -qE "^\| [^|]*\`$name\`" "$readme" || { echo "FAILED: $name has no row in the README's settings table"; missing=1; }
done
[ $missing = 0 ] && echo "$(wc -l <<<"$names") settings, each documented in the README"
exit $missing
