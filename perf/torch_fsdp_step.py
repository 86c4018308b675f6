"""FSDP2's training step on backend "chorus", its communication buffers from torch's allocator or from the backend
(set_allocate_memory_from_process_group_for_comm, which chorus answers with memory the peers read in place); prints
rank 0's median step.

    for i in 1 2 3; do for m in torch backend; do
      PYTHONPATH=build/python .venv/bin/torchrun --standalone --nproc-per-node 2 perf/torch_fsdp_step.py --memory $m
    done; done
"""

import argparse

import torch
import torch.distributed as dist
from torch_steps import median_step_ms, mlp


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory", choices=("torch", "backend"), default="torch")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--width", type=int, default=2048, help="hidden width of a 4-layer MLP (about 12 M parameters)")
    args = parser.parse_args()
    import chorus.torch  # noqa: F401 - registers the backend
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    torch.set_num_threads(1)
    dist.init_process_group("chorus")
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    torch.manual_seed(0)
    model = mlp(args.width)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if args.memory == "backend":
        for module in model.modules():
            if hasattr(module, "set_allocate_memory_from_process_group_for_comm"):
                module.set_allocate_memory_from_process_group_for_comm(True)
    step_ms = median_step_ms(model, args.steps)
    if dist.get_rank() == 0:
        print(f"memory {args.memory} median step {step_ms:.2f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
