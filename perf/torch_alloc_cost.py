#!/usr/bin/env python3
"""What chorus.torch.use_shareable_memory costs tensors that never meet a collective: the time of torch operations
that allocate their results, with torch's allocator and with chorus's, in fresh processes, interleaved (A B A B ...),
the median of the repeats.

    .venv/bin/python perf/torch_alloc_cost.py --repeats 5

Each launch times, at every size, `torch.empty(n).fill_(1)` (a tensor made and written once), `a + b` (an operation
that allocates its result), and distinct sizes, each larger than the last (each a new block: what the reuse cache cannot serve).
Needs the build's package (PYTHONPATH=build/python, `make build-python`).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = (64 << 10, 1 << 20, 16 << 20, 64 << 20)


def one_launch(shareable, base_iters):
    """Runs in a fresh process: prints 'case bytes us' lines."""
    import torch

    import chorus.torch as ct

    torch.set_num_threads(1)
    if shareable:
        ct.use_shareable_memory()
    for size in SIZES:
        n = size // 4
        iters = min(2000, base_iters * max(1, (16 << 20) // size))  # small sizes repeat more: their times are short
        a, b = torch.ones(n), torch.ones(n)
        cases = {
            "empty+fill": lambda: torch.empty(n).fill_(1.0),
            "a+b": lambda: a + b,
            "distinct sizes": None,
        }
        for name, call in cases.items():
            if call is None:  # a new size each time, each a third larger than the last: past the cache's quarter
                sizes = [n + i * (n // 3 + 1536) for i in range(base_iters)]
                start = time.perf_counter()
                for m in sizes:
                    torch.empty(m).fill_(1.0)
                us = (time.perf_counter() - start) / base_iters * 1e6
            else:
                for _ in range(3):
                    call()
                start = time.perf_counter()
                for _ in range(iters):
                    call()
                us = (time.perf_counter() - start) / iters * 1e6
            print(f"{name}\t{size}\t{us:.2f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--iters", type=int, default=20, help="iterations per case from 16 MiB (more below, up to 2000)")
    p.add_argument("--launch", choices=("default", "shareable"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.launch:
        one_launch(args.launch == "shareable", args.iters)
        return
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "build", "python"),
                                                        os.environ.get("PYTHONPATH")])))
    runs = {"default": [], "shareable": []}
    for rep in range(args.repeats):
        for mode in runs:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--launch", mode, "--iters",
                                  str(args.iters)], env=env, capture_output=True, text=True, check=True).stdout
            runs[mode].append({(c, int(s)): float(t) for c, s, t in (l.split("\t") for l in out.splitlines())})
    print(f"torch allocations, {args.repeats} interleaved launches each, {args.iters} iterations per case from 16 MiB "
          "(more below), median µs per iteration\n")
    print("| case | size | torch's allocator µs | shareable µs | shareable / torch's |")
    print("|---|---|---|---|---|")
    for key in runs["default"][0]:
        d, s = (statistics.median(r[key] for r in runs[mode]) for mode in runs)
        print(f"| {key[0]} | {key[1] >> 10} KiB | {d:.1f} | {s:.1f} | {s / d:.2f} |")


if __name__ == "__main__":
    main()
