"""torch.distributed with backend="chorus": every collective against Gloo's result, DDP training against Gloo's,
subgroups, coalescing, and a killed rank."""

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from ranks import run_ranks  # noqa: E402

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64]


def init(rank, n, port, timeout=60):
    import datetime

    import chorus.torch  # noqa: F401 - registers the backend

    dist.init_process_group(
        "chorus", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n,
        timeout=datetime.timedelta(seconds=timeout))
    return dist.new_group(backend="gloo")


def small_ints(gen, shape, dtype):
    # Integers small enough that every sum and product is exact in every type (so results compare bitwise).
    return torch.randint(-3, 4, shape, generator=gen).to(dtype)


def collectives_body(rank, n, port):
    gloo = init(rank, n, port)
    gen = torch.Generator().manual_seed(1234 + rank)
    shapes = [(1,), (7,), (3, 5), (64, 33)]

    def both(call):
        """Runs call(group) on chorus (the default group) and on Gloo; returns both results."""
        return call(None), call(gloo)

    for dtype in DTYPES:
        for shape in shapes:
            x = small_ints(gen, shape, dtype)
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT):
                if op == dist.ReduceOp.PRODUCT and dtype in (torch.float16, torch.bfloat16):
                    continue  # Gloo has no half-precision product
                a, b = both(lambda g: (lambda t: (dist.all_reduce(t, op=op, group=g), t)[1])(x.clone()))
                assert torch.equal(a, b), (dtype, shape, op)

            a, b = both(lambda g: (lambda t: (dist.broadcast(t, src=n - 1, group=g), t)[1])(x.clone()))
            assert torch.equal(a, b)

            a, b = both(lambda g: (lambda t: (dist.reduce(t, dst=1 % n, group=g), t)[1])(x.clone()))
            if rank == 1 % n:
                assert torch.equal(a, b)

            def gather_list(g):
                out = [torch.empty_like(x) for _ in range(n)]
                dist.all_gather(out, x, group=g)
                return torch.stack(out)
            a, b = both(gather_list)
            assert torch.equal(a, b)

            def gather_tensor(g):
                out = torch.empty((n * x.shape[0],) + x.shape[1:], dtype=dtype)
                dist.all_gather_into_tensor(out, x, group=g)
                return out
            a, b = both(gather_tensor)
            assert torch.equal(a, b)

            big = small_ints(gen, (n * shape[0],) + shape[1:], dtype)

            # Gloo has no reduce_scatter_tensor on CPU: compare with its all_reduce of the whole, then the block.
            a = torch.empty_like(x)
            dist.reduce_scatter_tensor(a, big)
            whole = big.clone()
            dist.all_reduce(whole, group=gloo)
            assert torch.equal(a, whole.chunk(n)[rank])
            out = torch.empty_like(x)
            dist.reduce_scatter(out, list(big.chunk(n)))
            assert torch.equal(out, whole.chunk(n)[rank])

            def a2a_single(g):
                out = torch.empty_like(big)
                dist.all_to_all_single(out, big, group=g)
                return out
            a, b = both(a2a_single)
            assert torch.equal(a, b)

            gathered = [torch.empty_like(x) for _ in range(n)] if rank == 0 else None
            dist.gather(x, gathered, dst=0)
            ref = [torch.empty_like(x) for _ in range(n)] if rank == 0 else None
            dist.gather(x, ref, dst=0, group=gloo)
            if rank == 0:
                assert all(torch.equal(p, q) for p, q in zip(gathered, ref))
            flat = torch.empty((n * x.numel(),), dtype=dtype) if rank == 0 else None
            dist.gather_single(x, flat, dst=0)
            if rank == 0:
                assert torch.equal(flat, torch.cat([q.reshape(-1) for q in ref]))

            parts = list(big.chunk(n)) if rank == 0 else None
            got, ref = torch.empty_like(x), torch.empty_like(x)
            dist.scatter(got, parts, src=0)
            dist.scatter(ref, parts, src=0, group=gloo)
            assert torch.equal(got, ref)

    # Uneven all_to_all_single: rank r sends r+j+1 rows to rank j.
    send_splits = [rank + j + 1 for j in range(n)]
    recv_splits = [j + rank + 1 for j in range(n)]
    x = small_ints(gen, (sum(send_splits), 3), torch.float32)

    def uneven(g):
        out = torch.empty((sum(recv_splits), 3))
        dist.all_to_all_single(out, x, recv_splits, send_splits, group=g)
        return out
    a, b = both(uneven)
    assert torch.equal(a, b)

    # List all_to_all of different sizes.
    ins = [torch.full((rank + j + 1,), float(rank)) for j in range(n)]
    outs = [torch.empty(j + rank + 1) for j in range(n)]
    dist.all_to_all(outs, ins)
    assert all(torch.equal(o, torch.full_like(o, float(j))) for j, o in enumerate(outs))

    # Async work and its future; the future's value is the result.
    t = torch.ones(1000)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future().then(lambda f: f.value()[0] * 2)
    work.wait()
    assert torch.equal(fut.wait(), torch.full((1000,), 2.0 * n))

    # Coalescing: batch_isend_irecv both ways around the ring, and all_reduce inside _coalescing_manager.
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    from_prev, from_next = torch.empty(1 << 16), torch.empty(1 << 16)
    ops = [dist.P2POp(dist.isend, torch.full((1 << 16,), float(rank)), nxt),
           dist.P2POp(dist.isend, torch.full((1 << 16,), float(rank)), prv),
           dist.P2POp(dist.irecv, from_prev, prv), dist.P2POp(dist.irecv, from_next, nxt)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert from_prev[0] == prv and from_next[-1] == nxt
    tensors = [torch.full((5,), float(rank)), torch.full((9,), 1.0)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for t in tensors:
            dist.all_reduce(t)
    cm.wait()
    assert torch.equal(tensors[0], torch.full((5,), float(n * (n - 1) // 2)))
    assert torch.equal(tensors[1], torch.full((9,), float(n)))

    dist.barrier()
    dist.destroy_process_group()


# Small collectives run in the caller's thread (CHORUS_TORCH_INLINE_BYTES); 0 sends every call to the
# communicator's thread, so both paths are checked.
@pytest.mark.parametrize("nranks,inline_bytes", [(2, "0"), (4, "64K")])
def test_collectives_match_gloo(nranks, inline_bytes, monkeypatch):
    monkeypatch.setenv("CHORUS_TORCH_INLINE_BYTES", inline_bytes)
    run_ranks(collectives_body, nranks, timeout=300)


def test_inline_bytes_setting(monkeypatch):
    import chorus.torch

    monkeypatch.setenv("CHORUS_TORCH_INLINE_BYTES", "2K")
    assert chorus.torch.inline_bytes() == 2048
    monkeypatch.delenv("CHORUS_TORCH_INLINE_BYTES")
    assert chorus.torch.inline_bytes() == 64 << 10
    monkeypatch.setenv("CHORUS_TORCH_INLINE_BYTES", "lots")
    with pytest.raises(ValueError, match="CHORUS_TORCH_INLINE_BYTES='lots' is invalid"):
        chorus.torch.inline_bytes()


def subgroup_body(rank, n, port):
    init(rank, n, port)
    evens = dist.new_group([r for r in range(n) if r % 2 == 0])
    odds = dist.new_group([r for r in range(n) if r % 2 == 1])
    mine = evens if rank % 2 == 0 else odds
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=mine)
    assert t.item() == sum(r for r in range(n) if r % 2 == rank % 2)
    dist.barrier()  # rank 0 hosts the store: it stays until the other group is made too
    dist.destroy_process_group()


def test_subgroups_from_new_group():
    run_ranks(subgroup_body, 4)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


def train(model, group, rank, steps=8):
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(model, process_group=group, bucket_cap_mb=0.01)  # several buckets
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x, y = torch.randn(16, 32, generator=gen), torch.randint(0, 10, (16,), generator=gen)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def ddp_body(rank, n, port):
    gloo = init(rank, n, port)
    with_chorus = train(make_model(), None, rank)
    with_gloo = train(make_model(), gloo, rank)
    # Two ranks: a sum of two numbers is the same in any order, so the parameters are bitwise equal. More ranks may
    # add in another order than Gloo: within a few float32 ulps after 8 steps.
    for a, b in zip(with_chorus, with_gloo):
        if n == 2:
            assert torch.equal(a, b)
        else:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    dist.destroy_process_group()


@pytest.mark.parametrize("nranks", [2, 4])
def test_ddp_trains_as_with_gloo(nranks):
    run_ranks(ddp_body, nranks, timeout=300)


def killed_body(rank, n, port):
    import os
    import time

    init(rank, n, port, timeout=60)
    t = torch.ones(4)
    dist.all_reduce(t)
    if rank == n - 1:
        os._exit(9)  # dies without a word
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match=f"rank {n - 1}"):
        for _ in range(100):
            dist.all_reduce(t)
            time.sleep(0.05)
    assert time.monotonic() - start < 10
    # torch.distributed.shrink_group, on chorus's shrink: the survivors go on in a smaller default group.
    from torch.distributed.distributed_c10d import SHRINK_ABORT

    group = dist.shrink_group([n - 1], shrink_flags=SHRINK_ABORT)
    assert group is dist.distributed_c10d._get_default_group()
    assert (dist.get_rank(), dist.get_world_size()) == (rank, n - 1)
    y = torch.full((1 << 16,), float(rank + 1))  # on the communicator's thread
    dist.all_reduce(y)
    assert torch.equal(y, torch.full((1 << 16,), float(n * (n - 1) / 2)))


def test_a_killed_rank_makes_the_others_raise_within_10_s_and_shrink_group_goes_on():
    run_ranks(killed_body, 3, expect_exit={2})


SENTINEL = -7.0
LIST_FORMS = ("all_gather", "all_to_all", "gather")


def mismatch_cases(n, rank):
    """(name, symmetric, outputs(count), call(outputs, count, group, async_op)): each collective in each form, on
    output tensors filled with SENTINEL. Symmetric calls exchange bytes both ways, so every rank's call itself must
    fail; in the others a rank that only sends may learn of the mismatch at its next call with the peer."""
    def filled(*counts):
        return [torch.full((c,), SENTINEL) for c in counts]

    def ones(c):  # this rank's input: rank + 1, so that a peer's bytes would show
        return torch.full((c,), rank + 1.0)

    return [
        ("all_gather", True, lambda c: filled(*[c] * n),
         lambda o, c, g, a: dist.all_gather(o, ones(c), group=g, async_op=a)),
        ("all_to_all", True, lambda c: filled(*[c] * n),
         lambda o, c, g, a: dist.all_to_all(o, [ones(c)] * n, group=g, async_op=a)),
        ("gather", False, lambda c: filled(*[c] * n) if rank == 0 else [],
         lambda o, c, g, a: dist.gather(ones(c), o if rank == 0 else None, dst=0, group=g, async_op=a)),
        ("all_reduce", True, lambda c: [ones(c)],
         lambda o, c, g, a: dist.all_reduce(o[0], group=g, async_op=a)),
        ("all_gather_into_tensor", True, lambda c: filled(n * c),
         lambda o, c, g, a: dist.all_gather_into_tensor(o[0], ones(c), group=g, async_op=a)),
        ("reduce_scatter_tensor", True, lambda c: filled(c),
         lambda o, c, g, a: dist.reduce_scatter_tensor(o[0], ones(n * c), group=g, async_op=a)),
        ("reduce_scatter", True, lambda c: filled(c),
         lambda o, c, g, a: dist.reduce_scatter(o[0], [ones(c)] * n, group=g, async_op=a)),
        ("all_to_all_single", True, lambda c: filled(n * c),
         lambda o, c, g, a: dist.all_to_all_single(o[0], ones(n * c), group=g, async_op=a)),
        ("broadcast", False, lambda c: filled(c),
         lambda o, c, g, a: dist.broadcast(o[0], src=0, group=g, async_op=a)),
        ("reduce", False, lambda c: [ones(c)],
         lambda o, c, g, a: dist.reduce(o[0], dst=0, group=g, async_op=a)),
        ("scatter", False, lambda c: filled(c),
         lambda o, c, g, a: dist.scatter(o[0], [ones(c)] * n if rank == 0 else None, src=0, group=g, async_op=a)),
    ]


def mismatch_body(rank, n, port):
    init(rank, n, port, timeout=30)
    count = 4 + rank  # the ranks' counts differ: every call below is a mismatch
    for name, symmetric, make_outputs, call in mismatch_cases(n, rank):
        for async_op in (False, True):
            case = f"{name} async_op={async_op} on rank {rank}"
            group = dist.new_group(backend="chorus")  # a fresh communicator: a failed call poisons its own
            outputs = make_outputs(count)
            before = [o.clone() for o in outputs]
            work, failed = None, False
            try:
                work = call(outputs, count, group, async_op)
                if async_op:
                    work.wait()
            except dist.DistBackendError as e:
                assert "chorus" in str(e), case
                failed = True
            if failed and async_op:
                assert work.is_completed(), case
                with pytest.raises(Exception, match="chorus"):
                    work.get_future().wait()
            if failed:
                # The list forms copy out only after a call succeeded: their outputs are untouched. A tensor form
                # may have placed this rank's own block before the peer's header showed the mismatch, never a
                # byte of the peer's.
                for o, b in zip(outputs, before):
                    if name in LIST_FORMS:
                        assert torch.equal(o, b), f"{case}: the failed call wrote {o}"
                    else:
                        assert torch.all((o == b) | (o == rank + 1)), f"{case}: the failed call wrote {o}"
            else:
                assert not symmetric, f"{case}: returned success after a mismatch"
                with pytest.raises(dist.DistBackendError):  # the sending side learns of it at its next call
                    dist.all_reduce(torch.ones(1), group=group)
    dist.destroy_process_group()


def test_every_form_of_every_collective_raises_on_a_mismatch():
    run_ranks(mismatch_body, 2, timeout=300)


def monitored_barrier_body(rank, n, port):
    import datetime
    import time

    init(rank, n, port)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))  # every rank arrives
    if rank == n - 1:
        time.sleep(3)  # misses the next one
    with pytest.raises(dist.DistBackendError) as raised:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=1), wait_all_ranks=True)
    if rank < n - 1:
        assert f"Ranks {n - 1} failed to pass monitoredBarrier in 1000 ms" in str(raised.value), raised.value
    group = dist.new_group(backend="chorus")  # a fresh communicator, which rank 0 leaves alone
    if rank > 0:  # the first rank that did not arrive, in Gloo's words
        with pytest.raises(dist.DistBackendError, match=r"\]: Rank 0 failed to pass monitoredBarrier in 1000 ms"):
            dist.monitored_barrier(group=group, timeout=datetime.timedelta(seconds=1))
    dist.barrier()  # rank 0 hosts the store: it stays until the others are done with it


def test_monitored_barrier_names_the_rank_that_did_not_arrive():
    run_ranks(monitored_barrier_body, 3)


def profiler_body(rank, n, port):
    init(rank, n, port)
    peer = 1 - rank
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        dist.all_reduce(torch.ones(3, 4))  # in the calling thread
        dist.all_reduce(torch.ones(1 << 16))  # on the communicator's thread
        if rank == 0:
            dist.send(torch.ones(5), peer)
        else:
            dist.recv(torch.empty(5), peer)
    events = {}
    for e in prof.function_events:
        if e.name.startswith("chorus:"):
            events.setdefault(e.name, []).append(e.input_shapes)
    assert events.get("chorus:all_reduce") == [[[3, 4]], [[1 << 16]]], events
    assert events.get("chorus:send" if rank == 0 else "chorus:recv") == [[[5]]], events
    # Nothing is recorded outside the profiler.
    with torch.autograd.profiler.profile() as quiet:
        pass
    dist.all_reduce(torch.ones(3))
    assert not [e for e in quiet.function_events if e.name.startswith("chorus:")]


def test_profiler_events_name_the_call_and_its_shapes():
    run_ranks(profiler_body, 2)


def sparse_body(rank, n, port):
    gloo = init(rank, n, port)
    gen = torch.Generator().manual_seed(rank)
    # Rows of an embedding's gradient (sparse_dim 1, a dense dimension of 3), with repeats and a rank with none.
    rows = torch.randint(0, 10, (0 if rank == 1 else 4 + rank,), generator=gen)
    grad = torch.sparse_coo_tensor(rows.unsqueeze(0), small_ints(gen, (rows.numel(), 3), torch.float32), (10, 3))
    ours, theirs = grad.clone(), grad.clone()
    dist.all_reduce(ours)
    dist.all_reduce(theirs, group=gloo)
    assert ours.is_sparse and torch.equal(ours.to_dense(), theirs.to_dense())
    # A sparse matrix (sparse_dim 2) of float64.
    points = torch.randint(0, 6, (2, 3), generator=gen)
    m = torch.sparse_coo_tensor(points, torch.ones(3, dtype=torch.float64), (6, 6))
    expected = m.clone()
    dist.all_reduce(expected, group=gloo)
    dist.all_reduce(m)
    assert torch.equal(m.to_dense(), expected.to_dense())
    with pytest.raises(RuntimeError, match="sparse tensors are summed only"):
        dist.all_reduce(grad.clone(), op=dist.ReduceOp.MAX)


def test_sparse_all_reduce_matches_gloo():
    run_ranks(sparse_body, 3)


def any_source_body(rank, n, port):
    init(rank, n, port)
    if rank == 1:
        with pytest.raises(RuntimeError, match="a source rank is required"):
            dist.recv(torch.empty(2))
    dist.barrier()


def test_recv_from_any_source_is_refused_by_name():
    run_ranks(any_source_body, 2)


def split_group_body(rank, n, port):
    init(rank, n, port)
    # Each group in its own order: in [3, 1], global rank 3 is group rank 0.
    pg = dist.split_group(split_ranks=[[0, 2], [3, 1]])
    members = [0, 2] if rank in (0, 2) else [3, 1]
    assert dist.get_process_group_ranks(pg) == members
    order = [torch.zeros(1, dtype=torch.int64) for _ in members]
    dist.all_gather(order, torch.tensor([rank]), group=pg)
    assert [int(t) for t in order] == members
    total = torch.tensor([float(rank)])
    dist.all_reduce(total, group=pg)
    assert total.item() == sum(members)
    # A rank in no group gets none.
    rest = dist.split_group(split_ranks=[[1, 2, 3]])
    if rank == 0:
        assert rest == dist.GroupMember.NON_GROUP_MEMBER
    else:
        ones = torch.ones(4)
        dist.all_reduce(ones, group=rest)
        assert torch.equal(ones, torch.full((4,), 3.0))
    dist.barrier()


def test_split_group_forms_each_group_in_its_order():
    run_ranks(split_group_body, 4)


def set_timeout_body(rank, n, port):
    import datetime
    import time

    init(rank, n, port, timeout=60)
    timed = torch.ones(1 << 16)  # off the calling thread: its Work is timed too
    work = dist.all_reduce(timed, async_op=True)
    work.wait()
    assert work._get_duration() >= 0
    hooks_ran = []
    dist.group.WORLD.register_abort_hook(7, lambda: hooks_ran.append("abort"))
    dist.set_timeout(datetime.timedelta(seconds=1))
    dist.barrier()
    if rank == 1:
        time.sleep(6)  # sends nothing: rank 0's recv waits for it
        return
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match="timed out after 1 s"):
        dist.recv(torch.empty(3), 1)
    waited = time.monotonic() - start
    assert waited < 10, f"the recv waited {waited:.1f} s, not the 1 s set"
    assert hooks_ran == ["abort"], hooks_ran
    with pytest.raises(dist.DistBackendError):
        dist.all_reduce(torch.ones(1))  # the communicator failed: its next call fails, without running them again
    assert hooks_ran == ["abort"], hooks_ran


def test_set_timeout_shortens_later_calls_and_a_failure_runs_the_abort_hooks():
    run_ranks(set_timeout_body, 2)


def reconfigure_body(proc, nprocs, port):
    """Processes 0-2 make a group in the reconfigure regime; 2 dies, 0 and 1 go on as a group of 2 in the other order,
    then process 3 takes 2's place and the three become a group again (handles as a set: chorus orders them)."""
    import datetime
    import os
    import time

    import chorus.torch  # noqa: F401 - registers the backend

    c10d = dist.distributed_c10d
    timeout = datetime.timedelta(seconds=60)
    store = dist.TCPStore("127.0.0.1", port, is_master=proc == 0, wait_for_workers=False, timeout=timeout)

    def handles(uuid, procs):  # the handles of `procs`, exchanged out of band as c10d asks
        store.set(f"handle/{uuid}/{proc}", c10d._get_reconfigure_handle())
        return [store.get(f"handle/{uuid}/{p}").decode() for p in procs]

    if proc == 3:
        store.wait(["replace"])
    dist.init_process_group("chorus", store=dist.PrefixStore("group", store), rank=min(proc, 2), world_size=3,
                            enable_reconfigure=True, timeout=datetime.timedelta(seconds=5))
    assert c10d._supports_reconfigure()
    if proc < 3:
        with pytest.raises(RuntimeError, match="before reconfigure"):
            dist.all_reduce(torch.ones(1))
        c10d._reconfigure(uuid=1, handles=handles(1, [0, 1, 2])).wait()
        t = torch.tensor([proc + 1.0])
        dist.all_reduce(t)
        assert (t.item(), dist.get_rank(), dist.get_world_size()) == (6.0, proc, 3)
        if proc == 2:
            os._exit(9)
        start = time.monotonic()
        with pytest.raises(dist.DistBackendError, match="rank 2"):
            dist.all_reduce(torch.ones(1))
        assert time.monotonic() - start < 10

        c10d._reconfigure(uuid=2, handles=handles(2, [1, 0])).wait()
        assert (dist.get_rank(), dist.get_world_size()) == (1 - proc, 2)
        out = [torch.empty(1) for _ in range(2)]
        dist.all_gather(out, torch.tensor([float(proc)]))
        assert torch.equal(torch.cat(out), torch.tensor([1.0, 0.0]))
        with pytest.raises(RuntimeError, match="uuid 2 was used before"):
            c10d._reconfigure(uuid=2, handles=handles(2, [1, 0]))
        if proc == 0:
            store.set("replace", "1")

    members = handles(3, [0, 1, 3])
    c10d._reconfigure(uuid=3, handles=set(members)).wait()
    order = [p for _, p in sorted(zip(members, [0, 1, 3]))]  # a set's members are ranked by their sorted handles
    assert (dist.get_rank(), dist.get_world_size()) == (order.index(proc), 3)
    out = [torch.empty(1) for _ in range(3)]
    dist.all_gather(out, torch.tensor([float(proc)]))
    assert torch.equal(torch.cat(out), torch.tensor([float(p) for p in order]))
    dist.destroy_process_group()
    store.set(f"done/{proc}", "1")
    if proc == 0:  # the store's host leaves last
        store.wait([f"done/{p}" for p in (1, 3)])


def test_reconfigure_shrinks_reorders_and_takes_in_a_replacement():
    run_ranks(reconfigure_body, 4, expect_exit={2})


def merge_body(proc, nprocs, port):
    """Each process is a world of its own; merge_remote_group makes them one group, met in a store they share."""
    import datetime

    import chorus.torch  # noqa: F401 - registers the backend

    timeout = datetime.timedelta(seconds=60)
    dist.init_process_group("chorus", store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
    shared = dist.TCPStore("127.0.0.1", port, is_master=proc == 0, wait_for_workers=False, timeout=timeout)
    merged = dist.group.WORLD.merge_remote_group(shared, nprocs, timeout, group_name="merged")
    assert merged.size() == nprocs
    t = torch.full((1 << 16,), float(proc + 1))  # on the communicator's thread
    merged.allreduce(t).wait()
    assert torch.equal(t, torch.full((1 << 16,), nprocs * (nprocs + 1) / 2))
    ranks = torch.empty(nprocs, dtype=torch.int64)
    merged._allgather_base(ranks, torch.tensor([merged.rank()])).wait()
    assert ranks.tolist() == list(range(nprocs))
    shared.set(f"done/{proc}", "1")
    if proc == 0:  # the store's host leaves last
        shared.wait([f"done/{p}" for p in range(nprocs)])


def test_merge_remote_group_makes_separate_worlds_one_group():
    run_ranks(merge_body, 3)
