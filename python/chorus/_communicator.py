"""chorus.Communicator: the Python face of the C++ Communicator, each collective one submit to the extension.

The extension (_chorus) turns each object into an array once (contiguous, of one of chorus's types, writable where
the call writes it), checks a collective's arrays against each other (one rule per collective, python/src/module.cc)
and runs or submits the operation: submit(collective, send, recv, op, root, async_op, send_counts, recv_counts).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import _chorus
from ._chorus import Collective, Request, UniqueId

# The operations, as submit takes them (a plain int is the cheapest argument to pass).
_ALL_REDUCE = Collective.all_reduce.value
_REDUCE_SCATTER = Collective.reduce_scatter.value
_ALL_GATHER = Collective.all_gather.value
_ALL_TO_ALL = Collective.all_to_all.value
_ALL_TO_ALL_V = Collective.all_to_all_v.value
_BROADCAST = Collective.broadcast.value
_REDUCE = Collective.reduce.value
_GATHER = Collective.gather.value
_SCATTER = Collective.scatter.value
_SEND = Collective.send.value
_RECV = Collective.recv.value


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
        return self._comm.submit(_ALL_REDUCE, send, recv, op, 0, async_op)

    def reduce_scatter(self, send: object, recv: object, op: str = "sum", async_op: bool = False) -> Request | None:
        """Reduces `send` over all ranks; rank i receives block i (recv's size) of the result."""
        return self._comm.submit(_REDUCE_SCATTER, send, recv, op, 0, async_op)

    def all_gather(self, send: object, recv: object, async_op: bool = False) -> Request | None:
        """Every rank receives every rank's `send`, in rank order."""
        return self._comm.submit(_ALL_GATHER, send, recv, "sum", 0, async_op)

    def all_to_all(self, send: object, recv: object, async_op: bool = False) -> Request | None:
        """Block j of `send` goes to rank j; block i of `recv` comes from rank i."""
        return self._comm.submit(_ALL_TO_ALL, send, recv, "sum", 0, async_op)

    def all_to_all_v(self, send: object, send_counts: Sequence[int], recv: object, recv_counts: Sequence[int],
                     async_op: bool = False) -> Request | None:
        """All-to-all with a count per peer: send_counts[j] elements to rank j, recv_counts[i] from rank i, packed."""
        return self._comm.submit(_ALL_TO_ALL_V, send, recv, "sum", 0, async_op, send_counts, recv_counts)

    def broadcast(self, buffer: object, root: int, async_op: bool = False) -> Request | None:
        """Copies root's `buffer` into every rank's, in place."""
        return self._comm.submit(_BROADCAST, None, buffer, "sum", root, async_op)

    def reduce(self, send: object, recv: object | None = None, root: int = 0, op: str = "sum",
               async_op: bool = False) -> Request | None:
        """Reduces `send` over all ranks into root's `recv` (in place when None); other ranks' recv is untouched."""
        return self._comm.submit(_REDUCE, send, recv, op, root, async_op)

    def gather(self, send: object, recv: object | None = None, root: int = 0, async_op: bool = False) -> Request | None:
        """Root receives every rank's `send`, in rank order (recv is needed on the root only)."""
        return self._comm.submit(_GATHER, send, recv, "sum", root, async_op)

    def scatter(self, send: object | None, recv: object, root: int = 0, async_op: bool = False) -> Request | None:
        """Rank i receives block i of root's `send` (send is needed on the root only)."""
        return self._comm.submit(_SCATTER, send, recv, "sum", root, async_op)

    def send(self, buffer: object, peer: int, async_op: bool = False) -> Request | None:
        """Sends `buffer` to rank `peer`, which calls recv."""
        return self._comm.submit(_SEND, buffer, None, "sum", peer, async_op)

    def recv(self, buffer: object, peer: int, async_op: bool = False) -> Request | None:
        """Receives into `buffer` what rank `peer` sends."""
        return self._comm.submit(_RECV, None, buffer, "sum", peer, async_op)

    def barrier(self, async_op: bool = False) -> Request | None:
        """Returns once every rank has called it."""
        return self._comm.barrier(async_op)
