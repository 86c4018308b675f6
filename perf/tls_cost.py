#!/usr/bin/env python3
"""What TLS costs over the tcp transport: AllReduce at 8 B, 1 MiB and 64 MiB with and without a key
(CHORUS_TLS_PSK_FILE), interleaved (plaintext first on even repeats, TLS first on odd ones), medians of the repeats.

    python3 perf/tls_cost.py --ranks 2 --repeats 5 [--build build]

Prints one line per size: the out-of-place time and bus bandwidth of each, their ratio, and each one's range.
"""
import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile

SIZES = [("8", 2000, 200), ("1M", 100, 10), ("64M", 5, 1)]  # size, timed iterations, warm-up iterations


def run(build, ranks, size, iters, warmup, key_file):
    env = dict(os.environ, CHORUS_TRANSPORT="tcp")
    env.pop("CHORUS_TLS_PSK_FILE", None)
    if key_file:
        env["CHORUS_TLS_PSK_FILE"] = key_file
    cmd = [os.path.join(build, "perf", "all_reduce_perf"), "--nprocs", str(ranks), "-b", size, "-e", size,
           "-n", str(iters), "-w", str(warmup), "-c", "0"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        fields = line.split()
        if fields and not line.startswith("#") and len(fields) > 7:
            return float(fields[5]), float(fields[7])  # out-of-place time (us), bus bandwidth (GB/s)
    sys.exit(f"{' '.join(cmd)} gave no result:\n{out.stdout}{out.stderr}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                        "build"))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", prefix="chorus-tls-key-") as key:
        key.write(secrets.token_hex(32))
        key.flush()
        results = {}
        for repeat in range(args.repeats):
            for size, iters, warmup in SIZES:
                for tls in ((False, True) if repeat % 2 == 0 else (True, False)):
                    results.setdefault((size, tls), []).append(
                        run(args.build, args.ranks, size, iters, warmup, key.name if tls else None))
    for size, _, _ in SIZES:
        plain, tls = results[(size, False)], results[(size, True)]
        pt, tt = statistics.median(t for t, _ in plain), statistics.median(t for t, _ in tls)
        pb, tb = statistics.median(b for _, b in plain), statistics.median(b for _, b in tls)
        print(f"{size:>4}: plaintext {pt:10.1f} us ({pb:.2f} GB/s)  TLS {tt:10.1f} us ({tb:.2f} GB/s)  "
              f"ratio {tt / pt:.2f}  [plaintext {min(t for t, _ in plain):.1f}-{max(t for t, _ in plain):.1f}, "
              f"TLS {min(t for t, _ in tls):.1f}-{max(t for t, _ in tls):.1f}]")


if __name__ == "__main__":
    main()
