"""DeepSpeed ZeRO (stage 1 or 2) on CPU over torch.distributed, with chorus or Gloo as the backend: prints each
rank's loss per step, the time per step and a checksum of the trained parameters.

    DS_ACCELERATOR=cpu torchrun --nproc-per-node 2 examples/deepspeed_zero.py --stage 2                 # chorus
    DS_ACCELERATOR=cpu torchrun --nproc-per-node 2 examples/deepspeed_zero.py --stage 2 --backend gloo  # Gloo

DeepSpeed (`pip install deepspeed`) finds the backend by name: where chorus is pip-installed, its entry point
registers it; from the build tree (PYTHONPATH=build/python) the import below does.
"""

import argparse
import time

import deepspeed
import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="chorus", help="chorus or gloo")
    parser.add_argument("--stage", type=int, default=2, choices=(1, 2), help="ZeRO stage")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--width", type=int, default=256)
    args = parser.parse_args()
    if args.backend == "chorus":
        import chorus.torch  # noqa: F401 - registers the backend
    torch.set_num_threads(1)  # one core per rank: the communication, not the math, is what differs
    deepspeed.init_distributed(dist_backend=args.backend)

    torch.manual_seed(0)
    w = args.width
    model = torch.nn.Sequential(torch.nn.Linear(64, w), torch.nn.Tanh(), torch.nn.Linear(w, w), torch.nn.Tanh(),
                                torch.nn.Linear(w, 8))
    config = {
        "train_micro_batch_size_per_gpu": 16,
        "optimizer": {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}},
        # Small buckets, so that a step moves its gradients and parameters in several collectives.
        "zero_optimization": {"stage": args.stage, "reduce_bucket_size": 20000, "allgather_bucket_size": 20000},
    }
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    rank = dist.get_rank()
    times = []
    for step in range(args.steps):
        gen = torch.Generator().manual_seed(1000 * step + rank)
        x, y = torch.randn(16, 64, generator=gen), torch.randn(16, 8, generator=gen)
        start = time.perf_counter()
        loss = torch.nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        times.append(time.perf_counter() - start)
        print(f"rank {rank} step {step} loss {loss.item():.9g}", flush=True)
    checksum = sum(float(p.detach().double().sum()) for p in engine.module.parameters())
    times.sort()
    print(f"rank {rank} backend {dist.get_backend()} stage {args.stage}"
          f" median step {times[len(times) // 2] * 1e3:.2f} ms parameters {checksum:.12g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
