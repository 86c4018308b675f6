"""What perf/ray_train_step.py and perf/torch_fsdp_step.py share: examples/torch_ddp.py's model and the timing of its
training steps."""
import time

import torch
import torch.distributed as dist


def mlp(width):
    """examples/torch_ddp.py's 4-layer MLP (2.4 M parameters at width 1024)."""
    return torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                               torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 10))


def median_step_ms(model, steps):
    """Trains `model` (wrapped for data parallelism) with SGD on this rank's random batches for `steps` steps; the
    median step in ms of all but the first fifth, which warms up."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(dist.get_rank())
    times = []
    for _ in range(steps):
        x, y = torch.randn(32, 256, generator=gen), torch.randint(0, 10, (32,), generator=gen)
        start = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    times = sorted(times[steps // 5:])
    return times[len(times) // 2] * 1e3
