#!/usr/bin/env bash
# Every setting chorus-info lists (the settings registry) has its documentation in the table the docs' environment
# variable page is generated from (chorus-info --settings-markdown), and the page still takes that table in, so a new
# setting cannot ship undocumented.
# Usage: settings_documented.sh <build dir> <docs/settings.md>
set -uo pipefail
build=$1
page=$2
names=$("$build/tools/chorus-info" 2>/dev/null | awk '/^Settings/ {on = 1; next} /^$/ {if (on) exit} on {print $1}')
[ "$(wc -l <<<"$names")" -ge 30 ] || { echo "FAILED: chorus-info listed too few settings: $names"; exit 1; }
table=$("$build/tools/chorus-info" --settings-markdown) || { echo "FAILED: chorus-info --settings-markdown"; exit 1; }
missing=0
for name in $names; do
  # | `NAME` | alias | default | meaning of at least a few words |
  grep -qE "^\| \`$name\` \|[^|]*\|[^|]*\| [^|]{12,}" <<<"$table" ||
    { echo "FAILED: $name has no documentation in the settings registry"; missing=1; }
done
rows=$(grep -c '^| `' <<<"$table")
[ "$rows" = "$(wc -l <<<"$names")" ] || { echo "FAILED: the table has $rows rows for $(wc -l <<<"$names") settings"; missing=1; }
grep -qx '% chorus: the generated settings table' "$page" ||
  { echo "FAILED: $page lost the line where the generated table goes"; missing=1; }
[ $missing = 0 ] && echo "$(wc -l <<<"$names") settings, each documented in the generated table of $page"
exit $missing
