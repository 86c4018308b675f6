"""torch.distributed with chorus as its backend: an all_reduce of a CPU tensor, one process per rank.

    PYTHONPATH=build/python .venv/bin/torchrun --standalone --nproc-per-node 2 examples/torch_allreduce.py
"""

import torch
import torch.distributed as dist

import chorus.torch  # noqa: F401 - registers the backend "chorus" with torch.distributed

dist.init_process_group("chorus")  # the environment torchrun sets (or init_method=, store=, as for Gloo)
t = torch.full((1024,), float(dist.get_rank() + 1))
dist.all_reduce(t)  # sum over the ranks, in place
world = dist.get_world_size()
if not torch.equal(t, torch.full_like(t, world * (world + 1) / 2)):
    raise SystemExit(f"rank {dist.get_rank()}: wrong result")
print(f"rank {dist.get_rank()} of {world}: all_reduce gave {t[0].item():g}")
dist.destroy_process_group()
