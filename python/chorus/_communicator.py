"""chorus.Communicator: each collective's arrays checked against each other, then one submit to the library.

The extension (_chorus) turns an object into an Array once (contiguous, of one of chorus's types, writable where the
call writes it) and runs or submits an operation; what each collective needs of its arrays is said here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from . import _chorus
from ._chorus import Collective, Error, Request, UniqueId


def _invalid(message: str) -> Error:
    error = Error(message)
    error.code = "invalid_argument"
    return error


def _same_type(send: _chorus.Array, recv: _chorus.Array, call: str) -> None:
    if send.dtype != recv.dtype:
        raise _invalid(f"{call}: send and recv have different element types ({send.dtype} and {recv.dtype})")


def _count_is(actual: int, expected: int, call: str, what: str) -> None:
    if actual != expected:
        raise _invalid(f"{call}: {what} holds {actual} elements, expected {expected}")


def _reduced_pair(send: object, recv: object | None, call: str) -> tuple[_chorus.Array, _chorus.Array]:
    """The arrays of a reduction whose recv has send's size; in place (recv None) send receives the result."""
    if recv is None:
        s = _chorus.array_written(send, f"{call} send (in place: it receives the result)")
        return s, s
    s, r = _chorus.array_read(send, f"{call} send"), _chorus.array_written(recv, f"{call} recv")
    _same_type(s, r, call)
    _count_is(r.count, s.count, call, "recv")
    return s, r


class Communicator:
    """A group of ranks that run collectives together.

    Arrays are numpy arrays, torch CPU tensors, or any buffer-protocol or DLPack object, contiguous and of one of
    chorus's types; calls work in place, without copies. With async_op=True a call returns a Request (its arrays
    stay alive with it); otherwise it returns None once done. A failed call raises chorus.Error.
    """

    __slots__ = ("_comm",)

    def __init__(self, unique_id: UniqueId, nranks: int, rank: int, timeout: float = 0.0, algorithm: str = "") -> None:
        """Joins communicator `unique_id` as `rank` of `nranks` (collective). timeout: seconds a call may wait
        without progress (0: CHORUS_TIMEOUT); algorithm: rules in CHORUS_ALGO's syntax."""
        self._comm = _chorus.Communicator(unique_id, nranks, rank, timeout, algorithm)

    @classmethod
    def _of(cls, comm: _chorus.Communicator | None) -> Communicator | None:
        if comm is None:
            return None
        out = cls.__new__(cls)
        out._comm = comm
        return out

    @classmethod
    def from_environment(cls) -> Communicator:
        """Rank, size and rendezvous from the launcher: torchrun, mpirun, Slurm, or CHORUS_COMM_ID."""
        return cls._of(_chorus.Communicator.from_environment())

    @classmethod
    def from_store(cls, store: object, prefix: str, nranks: int, rank: int, timeout: float = 0.0,
                   algorithm: str = "") -> Communicator:
        """Ranks meet through `store`: any object with set(key: str, value: bytes), get(key: str) -> bytes that
        raises KeyError or returns None while the key is absent, and add(key: str, delta: int) -> int; optional
        compare_set(key, expected, desired) -> bytes, which agree() uses (torch.distributed's TCPStore has them
        all)."""
        return cls._of(_chorus.Communicator.from_store(store, prefix, nranks, rank, timeout, algorithm))

    @property
    def rank(self) -> int:
        return self._comm.rank

    @property
    def size(self) -> int:
        return self._comm.size

    def split(self, color: int, key: int = 0) -> Communicator | None:
        """Ranks with the same color form a new communicator ordered by (key, rank); color -1 joins none (None)."""
        return self._of(self._comm.split(color, key))

    def agree(self, value: int, grace: float = 1.0) -> tuple[int, list[int]]:
        """Fault-tolerant agreement (MPI_Comm_agree): returns (AND of the callers' values, their ranks). A rank not
        calling within `grace` seconds of another is left out; also after a failure or abort()."""
        return self._comm.agree(value, grace)

    def shrink(self, excluded: Sequence[int]) -> Communicator:
        """A communicator of the ranks not in `excluded`, renumbered in order; also after a rank died or abort()."""
        return self._of(self._comm.shrink(list(excluded)))

    def abort(self) -> None:
        """Ends every call of this communicator with an error; safe from any thread."""
        self._comm.abort()

    def close(self) -> None:
        """Destroys the communicator (waits for its async calls)."""
        self._comm.close()

    def __enter__(self) -> Communicator:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    def all_reduce(self, send: object, recv: object | None = None, op: str = "sum",
                   async_op: bool = False) -> Request | None:
        """Reduces `send` over all ranks into `recv` (in place when recv is None)."""
        s, r = _reduced_pair(send, recv, "all_reduce")
        return self._comm.submit(Collective.all_reduce, s, r, s.count, op=op, async_op=async_op)

    def reduce_scatter(self, send: object, recv: object, op: str = "sum", async_op: bool = False) -> Request | None:
        """Reduces `send` over all ranks; rank i receives block i (recv's size) of the result."""
        s = _chorus.array_read(send, "reduce_scatter send")
        r = _chorus.array_written(recv, "reduce_scatter recv")
        _same_type(s, r, "reduce_scatter")
        _count_is(s.count, r.count * self.size, "reduce_scatter", "send (recv's count times the ranks)")
        return self._comm.submit(Collective.reduce_scatter, s, r, r.count, op=op, async_op=async_op)

    def all_gather(self, send: object, recv: object, async_op: bool = False) -> Request | None:
        """Every rank receives every rank's `send`, in rank order."""
        s, r = _chorus.array_read(send, "all_gather send"), _chorus.array_written(recv, "all_gather recv")
        _same_type(s, r, "all_gather")
        _count_is(r.count, s.count * self.size, "all_gather", "recv (send's count times the ranks)")
        return self._comm.submit(Collective.all_gather, s, r, s.count, async_op=async_op)

    def all_to_all(self, send: object, recv: object, async_op: bool = False) -> Request | None:
        """Block j of `send` goes to rank j; block i of `recv` comes from rank i."""
        s, r = _chorus.array_read(send, "all_to_all send"), _chorus.array_written(recv, "all_to_all recv")
        _same_type(s, r, "all_to_all")
        _count_is(r.count, s.count, "all_to_all", "recv")
        if s.count % self.size != 0:
            raise _invalid(f"all_to_all: {s.count} elements do not split evenly over {self.size} ranks")
        return self._comm.submit(Collective.all_to_all, s, r, s.count // self.size, async_op=async_op)

    def all_to_all_v(self, send: object, send_counts: Sequence[int], recv: object, recv_counts: Sequence[int],
                     async_op: bool = False) -> Request | None:
        """All-to-all with a count per peer: send_counts[j] elements to rank j, recv_counts[i] from rank i, packed."""
        s, r = _chorus.array_read(send, "all_to_all_v send"), _chorus.array_written(recv, "all_to_all_v recv")
        _same_type(s, r, "all_to_all_v")
        send_counts, recv_counts = list(send_counts), list(recv_counts)
        if len(send_counts) != self.size or len(recv_counts) != self.size:
            raise _invalid(f"all_to_all_v: the counts must have one entry per rank ({self.size})")
        if sum(send_counts) > s.count or sum(recv_counts) > r.count:
            raise _invalid("all_to_all_v: the counts add up to more than the arrays hold")
        send_displs = [0, *accumulate(send_counts)][:-1]
        recv_displs = [0, *accumulate(recv_counts)][:-1]
        return self._comm.submit(Collective.all_to_all_v, s, r, 0, send_counts=send_counts, send_displs=send_displs,
                                 recv_counts=recv_counts, recv_displs=recv_displs, async_op=async_op)

    def broadcast(self, buffer: object, root: int, async_op: bool = False) -> Request | None:
        """Copies root's `buffer` into every rank's, in place."""
        b = _chorus.array_written(buffer, "broadcast buffer")
        return self._comm.submit(Collective.broadcast, b, b, b.count, root=root, async_op=async_op)

    def reduce(self, send: object, recv: object | None = None, root: int = 0, op: str = "sum",
               async_op: bool = False) -> Request | None:
        """Reduces `send` over all ranks into root's `recv` (in place when None); other ranks' recv is untouched."""
        s, r = _reduced_pair(send, recv, "reduce")
        return self._comm.submit(Collective.reduce, s, r, s.count, op=op, root=root, async_op=async_op)

    def gather(self, send: object, recv: object | None = None, root: int = 0, async_op: bool = False) -> Request | None:
        """Root receives every rank's `send`, in rank order (recv is needed on the root only)."""
        s, r = _chorus.array_read(send, "gather send"), None
        if self.rank == root:
            if recv is None:
                raise _invalid("gather: the root needs a recv array")
            r = _chorus.array_written(recv, "gather recv")
            _same_type(s, r, "gather")
            _count_is(r.count, s.count * self.size, "gather", "recv (send's count times the ranks)")
        return self._comm.submit(Collective.gather, s, r, s.count, root=root, async_op=async_op)

    def scatter(self, send: object | None, recv: object, root: int = 0, async_op: bool = False) -> Request | None:
        """Rank i receives block i of root's `send` (send is needed on the root only)."""
        r, s = _chorus.array_written(recv, "scatter recv"), None
        if self.rank == root:
            if send is None:
                raise _invalid("scatter: the root needs a send array")
            s = _chorus.array_read(send, "scatter send")
            _same_type(s, r, "scatter")
            _count_is(s.count, r.count * self.size, "scatter", "send (recv's count times the ranks)")
        return self._comm.submit(Collective.scatter, s, r, r.count, root=root, async_op=async_op)

    def send(self, buffer: object, peer: int, async_op: bool = False) -> Request | None:
        """Sends `buffer` to rank `peer`, which calls recv."""
        b = _chorus.array_read(buffer, "send buffer")
        return self._comm.submit(Collective.send, b, None, b.count, root=peer, async_op=async_op)

    def recv(self, buffer: object, peer: int, async_op: bool = False) -> Request | None:
        """Receives into `buffer` what rank `peer` sends."""
        b = _chorus.array_written(buffer, "recv buffer")
        return self._comm.submit(Collective.recv, None, b, b.count, root=peer, async_op=async_op)

    def barrier(self, async_op: bool = False) -> Request | None:
        """Returns once every rank has called it."""
        return self._comm.barrier(async_op)
