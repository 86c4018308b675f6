"""DDP training of a small MLP over torch.distributed, with chorus or Gloo as the backend; prints time per step.

    torchrun --nproc-per-node 4 examples/torch_ddp.py                   # backend "chorus"
    torchrun --nproc-per-node 4 examples/torch_ddp.py --backend gloo    # the same with Gloo

The build's package must be importable: `make test` (or `make build-python`) builds it into build/python, so
PYTHONPATH=build/python, or `pip install .`.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="chorus", help="chorus or gloo")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--width", type=int, default=1024, help="hidden width (4 layers: about 3 M parameters)")
    args = parser.parse_args()
    if args.backend == "chorus":
        import chorus.torch  # noqa: F401 - registers the backend
    torch.set_num_threads(1)  # one core per rank: the communication, not the math, is what differs
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)
    w = args.width
    model = torch.nn.Sequential(torch.nn.Linear(256, w), torch.nn.ReLU(), torch.nn.Linear(w, w), torch.nn.ReLU(),
                                torch.nn.Linear(w, w), torch.nn.ReLU(), torch.nn.Linear(w, 10))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(rank)
    times = []
    for step in range(args.steps):
        x, y = torch.randn(32, 256, generator=gen), torch.randint(0, 10, (32,), generator=gen)
        start = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
    params = sum(p.numel() for p in model.parameters())
    steady = times[5:] or times  # the first steps build DDP's buckets
    median = sorted(steady)[len(steady) // 2]
    if rank == 0:
        print(f"{args.backend}: {world} ranks, {params / 1e6:.1f} M parameters, median step {median * 1e3:.2f} ms, "
              f"final loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
