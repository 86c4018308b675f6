#!/usr/bin/env bash
# The perf tools' output options: -J writes nccl-tests' JSON report (checked field by field), -I adds per-iteration
# columns and -K leaves leading iterations out of them; bad values of both are refused with the reason.
# Usage: json_and_iteration_timing.sh <all_reduce_perf> <python3>
set -uo pipefail
tool=$1
python=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$tool" --nprocs 2 -b 8 -e 1K -f 8 -n 20 -w 1 -c 1 -I 1 -K 3 -J "$dir/run.json" >"$dir/table" 2>&1 ||
  { cat "$dir/table"; fail "the run failed"; }
cat "$dir/table"
grep -q "i_min    i_max    i_p99   i_cv%" "$dir/table" || fail "-I did not add the per-iteration columns"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float' "$dir/table")
# Each row: 5 leading fields, then 8 per half.
fields=$(grep -E '^ +8 +2 +float' "$dir/table" | wc -w)
[ "$rows" -eq 3 ] && [ "$fields" -eq 21 ] || fail "expected 3 rows of 21 fields, got $rows rows, $fields fields"
"$python" - "$dir/run.json" <<'PY' || fail "the JSON report is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 3 and d["library"].startswith("chorus perf"), d["library"]
assert d["nccl_version"] >= 22707
assert "-J" in d["args"] and any(e.startswith("PATH=") for e in d["env"])
c = d["config"]
assert (c["iterations"], c["warmup_iters"], c["per_iter_timing"], c["per_iter_skip"], c["step_factor"]) == \
       (20, 1, "true", 3, 8), c
assert sorted(dev["rank"] for dev in c["devices"]) == [0, 1], c["devices"]
sizes = [r["size"] for r in d["results"]]
assert sizes == [8, 64, 512], sizes
for r in d["results"]:
    assert (r["type"], r["redop"], r["root"], r["actual_iterations"]) == ("float", "sum", -1, 20), r
    for half in ("out_of_place", "in_place"):
        h, p = r[half], r[half + "_per_iter"]
        assert h["nwrong"] == 0 and h["time"] > 0 and h["bus_bw"] >= 0, h
        assert len(p["times_us"]) == 20 and p["skipped_iterations"] == 3, p
        kept = sorted(p["times_us"][3:])
        assert p["min"] == kept[0] and p["max"] == kept[-1], p
        assert p["min"] <= p["p50"] <= p["p95"] <= p["p99"] <= p["max"], p
assert d["out_of_bounds"] == {"count": 0, "okay": "true"}, d["out_of_bounds"]
assert d["average_bus_bandwidth"]["bandwidth"] > 0 and d["errors"] == [] and d["end_time"]
print("JSON report ok:", len(d["results"]), "results")
PY

# An existing report is kept: the next one goes to FILE.0.
"$tool" --nprocs 2 -b 8 -e 8 -n 2 -J "$dir/run.json" >/dev/null 2>&1 || fail "the second run failed"
[ -s "$dir/run.json.0" ] || fail "the second report did not go to run.json.0"

# Bad values end the run with the reason, before any rank starts.
expect_refused() {
  local why=$1
  shift
  out=$("$tool" "$@" 2>&1)
  code=$?
  [ "$code" -eq 255 ] || fail "'$*' exited with $code, not 255"
  grep -q "$why" <<<"$out" || fail "'$*' did not say '$why': $out"
}
expect_refused "must end in .json" -J "$dir/report.txt"
expect_refused "needs -I 1" -K 2
expect_refused "0 <= K < iterations" -I 1 -K 20 -n 20
expect_refused "invalid value 'x' for -I" -I x
echo "ok"
