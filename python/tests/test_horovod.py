"""chorus.horovod, Horovod's PyTorch API over chorus: the collectives against their definitions, the
DistributedOptimizer against one process training on the whole batch, its options, join with uneven data, and the
errors Horovod gives."""

import os

import pytest

torch = pytest.importorskip("torch")

from ranks import run_ranks  # noqa: E402


def init(rank, n, port):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import chorus.horovod as hvd

    hvd.init()
    return hvd


def collectives_body(rank, n, port):
    hvd = init(rank, n, port)
    assert (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size()) == (rank, n, rank, n)
    x = torch.arange(6, dtype=torch.float32) * (rank + 1)
    total = sum(r + 1 for r in range(n))
    assert torch.equal(hvd.allreduce(x, op=hvd.Sum), torch.arange(6, dtype=torch.float32) * total)
    assert torch.allclose(hvd.allreduce(x), torch.arange(6, dtype=torch.float32) * total / n)  # Average
    assert torch.equal(x, torch.arange(6, dtype=torch.float32) * (rank + 1)), "allreduce changed its input"
    assert torch.equal(hvd.allreduce(x, op=hvd.Max), torch.arange(6, dtype=torch.float32) * n)
    assert torch.equal(hvd.allreduce(x, op=hvd.Min), torch.arange(6, dtype=torch.float32))
    y = x.clone()
    assert hvd.allreduce_(y, op=hvd.Sum) is y and torch.equal(y, torch.arange(6, dtype=torch.float32) * total)
    handle = hvd.allreduce_async_(torch.ones(3), op=hvd.Sum)
    assert torch.equal(hvd.synchronize(handle), torch.full((3,), float(n)))
    half = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert half.dtype == torch.float32 and torch.equal(half, torch.arange(6, dtype=torch.float32) * total)
    # allgather: first dimensions differ by rank.
    mine = torch.full((rank + 1, 2), rank, dtype=torch.int64)
    gathered = hvd.allgather(mine)
    assert torch.equal(gathered, torch.cat([torch.full((r + 1, 2), r, dtype=torch.int64) for r in range(n)]))
    assert torch.equal(hvd.broadcast(torch.full((4,), rank), root_rank=n - 1), torch.full((4,), n - 1))
    assert hvd.broadcast_object({"from": rank}, root_rank=1) == {"from": 1}
    assert hvd.allgather_object(rank * 10) == [r * 10 for r in range(n)]
    # broadcast_parameters and broadcast_optimizer_state: root 0's model and momentum everywhere.
    torch.manual_seed(rank)
    model = torch.nn.Linear(5, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * (rank + 1), momentum=0.9)
    if rank == 0:
        model(torch.ones(2, 5)).sum().backward()
        opt.step()  # only root has momentum buffers
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    weights = hvd.allgather(model.weight.detach().reshape(1, -1))
    assert all(torch.equal(weights[0], w) for w in weights)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
    momentum = opt.state[model.weight]["momentum_buffer"].reshape(1, -1)
    assert all(torch.equal(m, momentum[0]) for m in hvd.allgather(momentum))
    with pytest.raises(ValueError, match="Adasum"):
        hvd.allreduce(x, op=hvd.Adasum)
    hvd.shutdown()


def test_collectives():
    run_ranks(collectives_body, 3)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def batch(step):
    gen = torch.Generator().manual_seed(100 + step)
    return torch.randn(12, 8, generator=gen), torch.randn(12, 4, generator=gen)


def train_body(rank, n, port, compression, passes, fusion):
    os.environ["HOROVOD_FUSION_THRESHOLD"] = str(fusion)
    hvd = init(rank, n, port)
    model, reference = make_model(), make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(), backward_passes_per_step=passes,
                                   compression=getattr(hvd.Compression, compression))
    assert isinstance(opt, torch.optim.SGD)
    assert len(opt._hvd_buckets) == (4 if fusion < 300 else 1)  # 16, 256, 64 and 512 bytes
    for step in range(5):
        opt.zero_grad()
        ref_opt.zero_grad()
        for micro in range(passes):
            x, y = batch(step * passes + micro)
            share = slice(rank * len(x) // n, (rank + 1) * len(x) // n)  # this rank's part of the batch
            torch.nn.functional.mse_loss(model(x[share]), y[share]).backward()
            torch.nn.functional.mse_loss(reference(x), y).backward()  # the whole batch in one process
        opt.step()
        ref_opt.step()
    # Averaged gradients of equal shares are the whole batch's gradient; float sums in another order, and fp16 on
    # the wire, differ in the last bits.
    tolerance = 2e-3 if compression == "fp16" else 1e-5
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=tolerance), (p - q).abs().max()
    x, y = batch(0)
    for _ in range(passes):  # the allreduces start with the last pass
        torch.nn.functional.mse_loss(model(x), y).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        opt.zero_grad()
    opt.synchronize()
    with opt.skip_synchronize():
        opt.step()
    hvd.shutdown()


@pytest.mark.parametrize("compression,passes,fusion", [("none", 1, 1 << 24), ("fp16", 1, 200),
                                                       ("none", 2, 200)])
def test_distributed_optimizer_matches_one_process(compression, passes, fusion):
    run_ranks(train_body, 2, compression, passes, fusion)


def join_body(rank, n, port):
    hvd = init(rank, n, port)
    model, reference = make_model(), make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    steps = 2 + 2 * rank  # rank 0 runs out of data first
    for step in range(steps):
        x, y = batch(step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        # The reference: the ranks still training average with zeros from those that joined.
        ref_opt.zero_grad()
        active = [r for r in range(n) if step < 2 + 2 * r]
        for r in active:
            torch.nn.functional.mse_loss(reference(x), y).backward()
        for p in reference.parameters():
            p.grad /= n
        ref_opt.step()
    assert hvd.join() == n - 1
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=1e-5), (p - q).abs().max()
    assert torch.equal(hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.full((1,), float(n)))  # in step again
    hvd.shutdown()


def test_join_with_uneven_data():
    run_ranks(join_body, 3)


def test_calls_before_init_are_refused():
    import chorus.horovod as hvd

    with pytest.raises(ValueError, match="hvd.init"):
        hvd.rank()
