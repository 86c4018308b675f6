"""chorus's own Python API on numpy arrays: every collective, async requests, stores, and errors."""

import mmap
import tempfile

import numpy as np
import pytest

import chorus
from ranks import run_ranks

DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.int8]


def collectives_body(rank, n, port, uid_bytes):
    comm = chorus.Communicator(chorus.UniqueId.from_bytes(uid_bytes), n, rank)
    assert (comm.rank, comm.size) == (rank, n)
    for dtype in DTYPES:
        x = np.arange(12, dtype=dtype) % 7 + rank
        out = np.empty_like(x)
        comm.all_reduce(x, out)
        expect = sum(np.arange(12, dtype=dtype) % 7 + r for r in range(n)).astype(dtype)
        np.testing.assert_array_equal(out, expect)
        comm.all_reduce(x, op="max")  # in place
        np.testing.assert_array_equal(x, np.arange(12, dtype=dtype) % 7 + (n - 1))

    gathered = np.empty(3 * n, np.int64)
    comm.all_gather(np.full(3, rank, np.int64), gathered)
    np.testing.assert_array_equal(gathered, np.repeat(np.arange(n), 3))

    block = np.empty(2, np.float32)
    comm.reduce_scatter(np.arange(2 * n, dtype=np.float32), block)
    np.testing.assert_array_equal(block, n * np.arange(2 * rank, 2 * rank + 2, dtype=np.float32))

    recv = np.empty(n, np.int32)
    comm.all_to_all(np.arange(n, dtype=np.int32) + 10 * rank, recv)
    np.testing.assert_array_equal(recv, 10 * np.arange(n) + rank)

    # Uneven: rank r sends r+1 elements to each peer.
    send = np.full((rank + 1) * n, rank, np.int32)
    recv = np.empty(sum(r + 1 for r in range(n)), np.int32)
    comm.all_to_all_v(send, [rank + 1] * n, recv, [r + 1 for r in range(n)])
    np.testing.assert_array_equal(recv, np.concatenate([np.full(r + 1, r) for r in range(n)]))

    b = np.arange(5, dtype=np.float64) if rank == 1 else np.zeros(5)
    comm.broadcast(b, root=1)
    np.testing.assert_array_equal(b, np.arange(5))

    r = np.zeros(4, np.int64)
    comm.reduce(np.ones(4, np.int64), r, root=0)
    np.testing.assert_array_equal(r, np.full(4, n if rank == 0 else 0))

    g = np.empty(2 * n, np.float32) if rank == 0 else None
    comm.gather(np.full(2, rank, np.float32), g, root=0)
    if rank == 0:
        np.testing.assert_array_equal(g, np.repeat(np.arange(n, dtype=np.float32), 2))

    s = np.empty(2, np.int32)
    comm.scatter(np.arange(2 * n, dtype=np.int32) if rank == n - 1 else None, s, root=n - 1)
    np.testing.assert_array_equal(s, [2 * rank, 2 * rank + 1])

    # Async calls: requests complete in call order; the arrays stay alive with them.
    a = np.full(1 << 16, rank + 1.0, np.float32)
    req = comm.all_reduce(a, async_op=True)
    breq = comm.barrier(async_op=True)
    req.wait()
    breq.wait()
    assert req.is_completed()
    np.testing.assert_array_equal(a, np.full(1 << 16, n * (n + 1) / 2, np.float32))

    # Send/recv around a ring: even ranks send first.
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    got = np.empty(8, np.uint8)
    if rank % 2 == 0:
        comm.send(np.full(8, rank, np.uint8), nxt)
        comm.recv(got, prv)
    else:
        comm.recv(got, prv)
        comm.send(np.full(8, rank, np.uint8), nxt)
    np.testing.assert_array_equal(got, np.full(8, prv))

    sub = comm.split(color=rank % 2, key=-rank)
    assert sub.size == (n + 1 - rank % 2) // 2 and sub.rank == (sub.size - 1 - rank // 2)
    sub.close()
    comm.close()


@pytest.mark.parametrize("nranks", [2, 4])
def test_every_collective_on_numpy_arrays(nranks):
    uid = chorus.UniqueId.create()
    run_ranks(collectives_body, nranks, uid.to_bytes())


def bad_arguments_body(rank, n, port, uid_bytes):
    comm = chorus.Communicator(chorus.UniqueId.from_bytes(uid_bytes), n, rank)
    with pytest.raises(chorus.Error, match="not contiguous") as e:
        comm.all_reduce(np.zeros((4, 4), np.float32)[:, 1])
    assert e.value.code == "invalid_argument"
    with pytest.raises(chorus.Error, match="element type"):
        comm.all_reduce(np.zeros(4, np.complex64))
    with pytest.raises(chorus.Error, match="expected 8"):
        comm.all_gather(np.zeros(4, np.float32), np.zeros(7, np.float32))
    with pytest.raises(chorus.Error, match="different element types"):
        comm.all_reduce(np.zeros(4, np.float32), np.zeros(4, np.float64))
    with pytest.raises(chorus.Error, match="reduction 'mean'"):
        comm.all_reduce(np.zeros(4, np.float32), op="mean")
    with pytest.raises(chorus.Error, match="root"):
        comm.broadcast(np.zeros(4, np.float32), root=5)
    # A read-only array cannot receive, and is left as it was: numpy's flag, arrays over bytes and read-only maps,
    # and the send array of an in-place call.
    ro = np.ones(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(chorus.Error, match="broadcast buffer: read-only") as e:
        comm.broadcast(ro, root=0)
    assert e.value.code == "invalid_argument"
    with pytest.raises(chorus.Error, match=r"all_reduce send \(in place.*read-only"):
        comm.all_reduce(ro)
    with pytest.raises(chorus.Error, match="all_reduce recv: read-only"):
        comm.all_reduce(np.ones(4, np.float32), ro)
    with pytest.raises(chorus.Error, match=r"reduce send \(in place.*read-only"):
        comm.reduce(ro, root=0)
    np.testing.assert_array_equal(ro, [1] * 4)
    immutable = bytes(np.ones(4, np.float32).tobytes())
    with pytest.raises(chorus.Error, match="read-only"):
        comm.all_reduce(np.frombuffer(immutable, np.float32))
    assert immutable == np.ones(4, np.float32).tobytes()
    with tempfile.TemporaryFile() as f:
        f.write(bytes(4096))
        f.flush()
        mapped = mmap.mmap(f.fileno(), 4096, access=mmap.ACCESS_READ)
        with pytest.raises(chorus.Error, match="recv buffer: read-only"):
            comm.recv(np.frombuffer(mapped, np.uint8), peer=(rank + 1) % n)
        with pytest.raises(chorus.Error, match="read-only"):
            comm.all_reduce(np.frombuffer(mapped, np.uint8))
        mapped.close()
    with pytest.raises(chorus.Error, match="all_gather recv: not an array"):
        comm.all_gather(np.zeros(4, np.float32), [0.0] * 8)
    # Empty arrays are valid (numpy gives them strides of 0).
    comm.all_reduce(np.zeros(0, np.float32))
    comm.all_gather(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    # After all those, the communicator still works.
    x = np.ones(3, np.float32)
    comm.all_reduce(x)
    np.testing.assert_array_equal(x, [n] * 3)
    comm.close()
    with pytest.raises(chorus.Error, match="closed"):
        comm.barrier()


def test_bad_arguments_raise_and_lose_nothing():
    run_ranks(bad_arguments_body, 2, chorus.UniqueId.create().to_bytes())


def store_body(rank, n, port):
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", port, n, rank == 0)
    with chorus.Communicator.from_store(store, "numpy", n, rank, timeout=20) as comm:
        x = np.full(4, rank, np.int64)
        comm.all_reduce(x)
        np.testing.assert_array_equal(x, [n * (n - 1) // 2] * 4)


def test_ranks_meet_through_a_python_store():
    run_ranks(store_body, 2)


def survivors_body(rank, n, port):
    import os

    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", port, n, rank == 0)  # rank 0 hosts it and survives
    comm = chorus.Communicator.from_store(store, "survivors", n, rank, timeout=20)
    if rank == 2:
        os._exit(0)  # dies without a word
    value, members = comm.agree(0b110 | rank, grace=0.5)
    assert (value, members) == (0b110, [0, 1]), (value, members)
    with comm.shrink([r for r in range(n) if r not in members]) as survivors:
        assert (survivors.rank, survivors.size) == (rank, 2)
        x = np.full(4, rank + 1, np.int64)
        survivors.all_reduce(x)
        np.testing.assert_array_equal(x, [3] * 4)


def test_survivors_agree_and_shrink_through_a_python_store():
    run_ranks(survivors_body, 3, expect_exit={2})


def timeout_body(rank, n, port, uid_bytes):
    import time

    comm = chorus.Communicator(chorus.UniqueId.from_bytes(uid_bytes), n, rank, timeout=2)
    if rank == 1:
        time.sleep(6)  # never calls the all-reduce within rank 0's timeout
        return
    start = time.monotonic()
    with pytest.raises(chorus.Error) as e:
        comm.all_reduce(np.zeros(4, np.float32))
    assert e.value.code in ("timeout", "remote_error"), e.value
    assert time.monotonic() - start < 5


def test_a_missing_peer_ends_in_the_communicators_timeout():
    run_ranks(timeout_body, 2, chorus.UniqueId.create().to_bytes())
