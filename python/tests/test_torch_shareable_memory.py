"""chorus.torch.use_shareable_memory: which tensors get shareable memory, its reuse and release, the setting, and
collectives on such tensors (new ones each call, and reused ones) exact on several ranks."""

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from ranks import run_ranks  # noqa: E402

MIB = 1 << 20


def allocator_body(rank, n, port):
    import chorus.torch as ct

    plain = torch.empty(MIB // 4)  # before: torch's allocator
    ct.use_shareable_memory(min_bytes=MIB // 2, cache_bytes=8 * MIB)
    big, small = torch.empty(MIB // 4), torch.empty(MIB // 8 - 1)
    assert ct.is_shareable(big) and not ct.is_shareable(small) and not ct.is_shareable(plain)
    assert ct.is_shareable(big[1000:]), "a view shares its base's storage"
    big.fill_(3.0)
    assert bool(big.eq(3.0).all())  # a bool tensor of a quarter of the size: from torch's allocator
    stats = ct.shareable_memory_stats()
    assert stats["live_bytes"] == MIB and stats["created"] == 1, stats

    # A freed block serves the next tensor of about its size (at most a quarter larger), not a smaller one's.
    del big
    assert ct.shareable_memory_stats()["cached_bytes"] == MIB
    again = torch.empty(MIB // 4 - 4096)
    assert ct.is_shareable(again)
    stats = ct.shareable_memory_stats()
    assert (stats["created"], stats["allocations"], stats["cached_bytes"]) == (1, 2, 0), stats
    del again
    larger = torch.empty(2 * MIB // 4)
    assert ct.shareable_memory_stats()["created"] == 2, "a 1 MiB block cannot hold 2 MiB"
    del larger

    # The cache holds at most cache_bytes: 3 MiB freed into 8 MiB, then 2 x 4 MiB, of which one is released.
    blocks = [torch.empty(4 * MIB // 4) for _ in range(2)]
    del blocks
    assert ct.shareable_memory_stats()["cached_bytes"] <= 8 * MIB
    torch.ones(3 * MIB).sum()  # tensors come and go through torch's own operations too

    ct.use_default_memory()
    assert ct.shareable_memory_stats()["cached_bytes"] == 0, "giving torch its allocator back releases the cache"
    kept = torch.empty(MIB)
    assert not ct.is_shareable(kept)
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        ct.use_shareable_memory(min_bytes=-1)


def test_allocator():
    run_ranks(allocator_body, 1)


def collectives_body(rank, n, port):
    import datetime

    import chorus.torch as ct  # CHORUS_TORCH_SHAREABLE is set: registering the backend installed the allocator

    dist.init_process_group("chorus", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n,
                            timeout=datetime.timedelta(seconds=60))
    for step, elements in enumerate([MIB, 4 * MIB // 4 + 4, MIB, 8 * MIB // 4, MIB // 8]):
        # Integers, exact in float32: sums of n small values.
        x = torch.arange(elements, dtype=torch.float32).remainder_(97) + rank + step
        assert ct.is_shareable(x) == (elements * 4 >= 256 << 10), elements
        dist.all_reduce(x)
        expected = n * (torch.arange(elements, dtype=torch.float32).remainder_(97) + step) + n * (n - 1) // 2
        assert torch.equal(x, expected), (step, elements)
        mine = torch.full((elements,), float(rank * 10 + step))
        out = torch.empty(elements * n)
        dist.all_gather_into_tensor(out, mine)
        assert torch.equal(out, torch.cat([torch.full((elements,), float(r * 10 + step)) for r in range(n)]))
        part = torch.empty(elements // n)
        dist.reduce_scatter_tensor(part, torch.ones(elements // n * n) * (rank + 1))
        assert torch.equal(part, torch.full((elements // n,), float(n * (n + 1) // 2)))
        b = torch.full((elements,), float(rank))
        dist.broadcast(b, src=n - 1)
        assert torch.equal(b, torch.full((elements,), float(n - 1)))
    stats = ct.shareable_memory_stats()
    assert stats["allocations"] > stats["created"] > 0, stats
    # torch's hook for a backend's own memory (FSDP2 asks it for its buffers): shareable at any size.
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    assert backend.supports_tensor_alloc(torch.device("cpu"))
    t = backend.allocate_tensor(1000, dtype=torch.bfloat16, device=torch.device("cpu"))
    assert t.shape == (1000,) and t.dtype == torch.bfloat16 and ct.is_shareable(t)
    t.fill_(rank + 1)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((1000,), n * (n + 1) / 2, dtype=torch.bfloat16))
    dist.destroy_process_group()


@pytest.mark.parametrize("nranks", [2, 3])
def test_collectives_on_shareable_tensors(nranks, monkeypatch):
    monkeypatch.setenv("CHORUS_TORCH_SHAREABLE", "256K")
    run_ranks(collectives_body, nranks)


def setting_body(rank, n, port, value, installed):
    if value == "lots":
        with pytest.raises(ValueError, match="CHORUS_TORCH_SHAREABLE='lots' is invalid"):
            import chorus.torch  # noqa: F401 - registering the backend reads the setting
        return
    import chorus.torch as ct

    assert ct.is_shareable(torch.empty(MIB)) == installed


@pytest.mark.parametrize("value,installed", [("1M", True), ("0", False), ("lots", None)])
def test_setting(value, installed, monkeypatch):
    monkeypatch.setenv("CHORUS_TORCH_SHAREABLE", value)
    run_ranks(setting_body, 1, value, installed)
