"""torch's parallelism libraries over backend="chorus": FSDP2 (fully_shard), torch.distributed.pipelining (GPipe and
1F1B) and DTensor tensor parallelism, each against the same model trained or run in one process."""

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from ranks import run_ranks  # noqa: E402

WIDTH = 16


def init(rank, n, port):
    import datetime

    import chorus.torch  # noqa: F401 - registers the backend

    dist.init_process_group(
        "chorus", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n,
        timeout=datetime.timedelta(seconds=60))


def mlp(layers=4):
    torch.manual_seed(0)
    blocks = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh()]
    return torch.nn.Sequential(*blocks)


def batch(seed, rows=8):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(rows, WIDTH, generator=gen), torch.randn(rows, WIDTH, generator=gen)


# Sums of float32 products in another order than the one-process reference: a few ulps after a few steps.
CLOSE = dict(rtol=1e-5, atol=1e-6)


def fsdp2_body(rank, n, port, memory_from_backend=False):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    init(rank, n, port)
    mesh = init_device_mesh("cpu", (n,))
    model, reference = mlp(), mlp()
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if memory_from_backend:  # FSDP's buffers from the backend's allocate_tensor: memory the peers read in place
        for module in model.modules():
            if hasattr(module, "set_allocate_memory_from_process_group_for_comm"):
                module.set_allocate_memory_from_process_group_for_comm(True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(4):
        # Each rank its own batch; the reference sees all of them, and FSDP averages the ranks' gradients.
        batches = [batch(100 * step + r) for r in range(n)]
        x, y = batches[rank]
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        ref_opt.zero_grad()
        sum(torch.nn.functional.mse_loss(reference(bx), by) for bx, by in batches).div(n).backward()
        ref_opt.step()
    for sharded, full in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(sharded.full_tensor(), full.detach(), **CLOSE)
    if memory_from_backend:
        import chorus.torch

        stats = chorus.torch.shareable_memory_stats()
        assert stats["allocations"] > stats["created"] > 0, stats
    dist.destroy_process_group()


@pytest.mark.parametrize("nranks", [2, 4])
def test_fsdp2_trains_as_one_process(nranks):
    run_ranks(fsdp2_body, nranks, timeout=300)


def test_fsdp2_with_buffers_from_the_backend():
    run_ranks(fsdp2_body, 2, True, timeout=300)


def pipeline_body(rank, n, port, schedule_name):
    from torch.distributed import pipelining

    init(rank, n, port)
    layers_per_stage = 2
    full = mlp(layers=n * layers_per_stage)
    reference = mlp(layers=n * layers_per_stage)
    # Stage `rank` holds its slice of the layers (each layer a Linear and a Tanh).
    per = 2 * layers_per_stage
    stage_module = torch.nn.Sequential(*list(full)[rank * per:(rank + 1) * per])
    microbatches = 4
    stage = pipelining.PipelineStage(stage_module, rank, n, torch.device("cpu"))
    loss_fn = torch.nn.functional.mse_loss
    schedule = getattr(pipelining, schedule_name)(stage, n_microbatches=microbatches, loss_fn=loss_fn)
    x, y = batch(7, rows=16)
    losses = []
    if rank == 0:
        schedule.step(x)
    elif rank == n - 1:
        schedule.step(target=y, losses=losses)
    else:
        schedule.step()
    # The reference: the same microbatches through the whole model; the schedule averages their gradients.
    ref_losses = [loss_fn(reference(mx), my) for mx, my in zip(x.chunk(microbatches), y.chunk(microbatches))]
    (sum(ref_losses) / microbatches).backward()
    ref_stage = list(reference)[rank * per:(rank + 1) * per]
    for got, want in zip(stage_module.parameters(), torch.nn.Sequential(*ref_stage).parameters()):
        torch.testing.assert_close(got.grad, want.grad, **CLOSE)
    if rank == n - 1:
        torch.testing.assert_close(torch.stack(losses), torch.stack(ref_losses).detach(), **CLOSE)
    dist.barrier()
    dist.destroy_process_group()


@pytest.mark.parametrize("schedule", ["ScheduleGPipe", "Schedule1F1B"])
@pytest.mark.parametrize("nranks", [2, 4])
def test_pipeline_schedule_over_send_recv(nranks, schedule):
    run_ranks(pipeline_body, nranks, schedule, timeout=300)


def tensor_parallel_body(rank, n, port):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    init(rank, n, port)
    mesh = init_device_mesh("cpu", (n,))
    model, reference = mlp(layers=2), mlp(layers=2)
    # Megatron's MLP split: the first Linear by columns, the second by rows (one all_reduce of the output).
    parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x, y = batch(11)
    out = model(x)
    torch.testing.assert_close(out, reference(x), **CLOSE)
    torch.nn.functional.mse_loss(out, y).backward()
    torch.nn.functional.mse_loss(reference(x), y).backward()
    for (name, got), want in zip(model.named_parameters(), reference.parameters()):
        full_grad = got.grad.full_tensor() if hasattr(got.grad, "full_tensor") else got.grad
        torch.testing.assert_close(full_grad, want.grad, **CLOSE, msg=lambda m: f"{name}: {m}")
    dist.destroy_process_group()


def test_dtensor_tensor_parallel_matches_one_process():
    run_ranks(tensor_parallel_body, 2, timeout=300)
