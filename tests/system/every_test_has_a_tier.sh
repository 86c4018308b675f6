#!/usr/bin/env bash
# Every ctest entry of a build tree carries exactly one tier label (cmake/test_tiers.cmake), GoogleTest cases too,
# whose entries exist only once their executables list them: what the configure-time check cannot see.
# Usage: every_test_has_a_tier.sh <build dir> <tier,tier,...>
set -euo pipefail
cd "$1"
ctest -N --show-only=json-v1 | python3 -c '
import json, sys
tiers = set(sys.argv[1].split(","))
bad = []
tests = json.load(sys.stdin)["tests"]
for test in tests:
    labels = next((p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"), [])
    if len([l for l in labels if l in tiers]) != 1:
        bad.append(test["name"] + " " + str(labels))
if bad:
    sys.exit(f"{len(bad)} of {len(tests)} tests without exactly one tier label:\n  " + "\n  ".join(bad))
print(f"{len(tests)} tests, each with one tier label")
' "$2"
