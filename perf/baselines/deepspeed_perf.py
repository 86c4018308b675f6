#!/usr/bin/env python3
"""DeepSpeed's shared-memory AllReduce on CPU tensors, timed like all_reduce_perf (its table rows, so perf/compare
reads it as it reads the other tools).

    deepspeed_perf.py all_reduce --nprocs 2 -b 8 -e 64M -f 2 -n 20 -w 5 -c 1 -d float [--cold_buffers 1]

The ranks are local processes that this script starts (the environment DeepSpeed's op reads: MASTER_ADDR,
MASTER_PORT, WORLD_SIZE, RANK, LOCAL_SIZE), met through torch.distributed's gloo backend, which DeepSpeed's CPU
path also uses to start. Each call is `torch.ops.deepspeed.inference_all_reduce_` (deepspeed_shm_comm, built by
DeepSpeed's ShareMemCommBuilder on first use), what `deepspeed.comm.inference_all_reduce` runs on a CPU tensor of
float32, bf16 or fp16 when every rank is on one machine. The op works in place, so both halves of a row time the
in-place call. With --cold_buffers 1 each timed call runs on the next tensor of a pool twice the last-level cache.
"""
import argparse
import importlib.machinery
import importlib.util
import os
import socket
import subprocess
import sys
import time


def load_compare():
    """perf/compare's helpers (the size syntax), shared rather than copied, as perf/torch_compare does."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compare")
    loader = importlib.machinery.SourceFileLoader("chorus_perf_compare", path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


parse_size = load_compare().parse_size


def last_level_cache_bytes():
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in os.listdir(base) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip().upper()
        except OSError:
            continue
        best = max(best, parse_size(text.rstrip("B")))
    return best or 32 << 20


def options(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("collective", choices=["all_reduce"])
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("-b", "--minbytes", default="8")
    p.add_argument("-e", "--maxbytes", default="64M")
    p.add_argument("-f", "--stepfactor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-d", "--datatype", default="float", choices=["float", "bfloat16", "half"])
    p.add_argument("--cold_buffers", type=int, default=0, choices=[0, 1])
    p.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def load_op():
    """Builds (once, cached by torch's extension loader) and loads DeepSpeed's shared-memory op."""
    from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder
    return ShareMemCommBuilder().load(verbose=False)


def run_rank(args):
    import torch
    import torch.distributed as dist

    rank, world = args.rank, args.nprocs
    dist.init_process_group("gloo", rank=rank, world_size=world)
    op = load_op()
    op.initialize(world, rank)
    dtype = {"float": torch.float32, "bfloat16": torch.bfloat16, "half": torch.float16}[args.datatype]
    elem = torch.tensor([], dtype=dtype).element_size()
    if rank == 0:
        import deepspeed
        print(f"# DeepSpeed {deepspeed.__version__} deepspeed_shm_comm, torch {torch.__version__}, {world} ranks, "
              f"in place (both halves time the in-place call){', cold buffers' if args.cold_buffers else ''}")
        print("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
              "algbw   busbw  #wrong")
    size = parse_size(args.minbytes)
    last = parse_size(args.maxbytes)
    factor = 2 * (world - 1) / world
    while size <= last:
        count = size // elem
        if count > 0:
            pool_len = 1
            if args.cold_buffers:
                pool_len = max(2, (2 * last_level_cache_bytes() + count * elem - 1) // (count * elem))
                pool_len = min(pool_len, args.iters)
            pool = [torch.ones(count, dtype=dtype) for _ in range(pool_len)]
            for t in pool:
                torch.ops.deepspeed.inference_all_reduce_(t)
            for i in range(args.warmup_iters):
                torch.ops.deepspeed.inference_all_reduce_(pool[i % pool_len])
            dist.barrier()
            start = time.perf_counter()
            for i in range(args.iters):
                torch.ops.deepspeed.inference_all_reduce_(pool[i % pool_len])
            elapsed = (time.perf_counter() - start) / args.iters
            wrong = 0
            if args.check:
                # Small integers: every order of the sum gives the same bits.
                t = torch.full((count,), float(rank % 4 + 1), dtype=dtype)
                torch.ops.deepspeed.inference_all_reduce_(t)
                expected = float(sum(r % 4 + 1 for r in range(world)))
                wrong = int((t != expected).sum().item())
            numbers = torch.tensor([elapsed, float(wrong)], dtype=torch.float64)
            dist.all_reduce(numbers)
            us = numbers[0].item() / world * 1e6
            if rank == 0:
                algbw = size / us / 1e3
                half = f"{us:9.2f}  {algbw:6.2f}  {algbw * factor:6.2f}  {int(numbers[1].item()):6d}"
                print(f"{size:12d}  {count:12d}  {args.datatype:>8}  {'sum':>6}  {-1:6d}  {half}  {half}", flush=True)
        size *= args.stepfactor
    dist.barrier()
    dist.destroy_process_group()


def main():
    args = options(sys.argv[1:])
    if args.rank >= 0:
        run_rank(args)
        return 0
    load_op()  # build it once here, not in every rank at the same time
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(args.nprocs),
               LOCAL_SIZE=str(args.nprocs))
    # The op's copies and reductions are OpenMP loops; each rank gets its share of the cores, as DeepSpeed's
    # launcher gives it with --bind_cores_to_rank (a team per rank of every core would oversubscribe them).
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // args.nprocs)))
    ranks = [subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:] + ["--rank", str(r)],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(args.nprocs)]
    codes = [r.wait() for r in ranks]
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
