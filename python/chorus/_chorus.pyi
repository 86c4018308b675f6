"""
chorus collectives on host arrays (numpy, torch CPU tensors, any buffer-protocol or DLPack object)
"""

from collections.abc import Sequence
import enum

from chorus import Error as Error


class UniqueId:
    """The token every rank of a new communicator receives (128 bytes)."""

    @staticmethod
    def create() -> UniqueId:
        """
        A new id; this process runs the rendezvous root and must live until every rank joined.
        """

    @staticmethod
    def from_bytes(bytes: bytes) -> UniqueId: ...

    def to_bytes(self) -> bytes: ...

    def __repr__(self) -> str: ...

class Request:
    """An async call in flight."""

    def wait(self) -> None:
        """Blocks until the call finished; raises chorus.Error if it failed."""

    def is_completed(self) -> bool:
        """True once the call finished."""

class Communicator:
    """A group of ranks that run collectives together."""

    def __init__(self, unique_id: UniqueId, nranks: int, rank: int, timeout: float = 0.0, algorithm: str = '') -> None:
        """
        Joins communicator `unique_id` as `rank` of `nranks` (collective). timeout: seconds a call may wait without progress (0: CHORUS_TIMEOUT); algorithm: rules in CHORUS_ALGO's syntax.
        """

    @staticmethod
    def from_environment() -> Communicator:
        """
        Rank, size and rendezvous from the launcher: torchrun, mpirun, Slurm, or CHORUS_COMM_ID.
        """

    @staticmethod
    def from_store(store: object, prefix: str, nranks: int, rank: int, timeout: float = 0.0, algorithm: str = '') -> Communicator:
        """
        Ranks meet through `store`: any object with set(key: str, value: bytes), get(key: str) -> bytes that raises KeyError or returns None while the key is absent, and add(key: str, delta: int) -> int; optional compare_set(key, expected, desired) -> bytes, which agree() uses (torch.distributed's TCPStore has them all).
        """

    @property
    def rank(self) -> int: ...

    @property
    def size(self) -> int: ...

    def split(self, color: int, key: int = 0) -> Communicator | None:
        """
        Ranks with the same color form a new communicator ordered by (key, rank); color -1 joins none (None).
        """

    def agree(self, value: int, grace: float = 1.0) -> tuple[int, list[int]]:
        """
        Fault-tolerant agreement (MPI_Comm_agree): returns (AND of the callers' values, their ranks). A rank not calling within `grace` seconds of another is left out; also after a failure or abort().
        """

    def shrink(self, excluded: Sequence[int]) -> Communicator:
        """
        A communicator of the ranks not in `excluded`, renumbered in order; also after a rank died or abort().
        """

    def abort(self) -> None:
        """
        Ends every call of this communicator with an error; safe from any thread.
        """

    def close(self) -> None:
        """Destroys the communicator (waits for its async calls)."""

    def __enter__(self) -> object: ...

    def __exit__(self, *args) -> None: ...

    def submit(self, collective: int, send: object | None, recv: object | None, op: str = 'sum', root: int = 0, async_op: bool = False, send_counts: Sequence[int] | None = None, recv_counts: Sequence[int] | None = None) -> object:
        """
        Checks the arrays of one operation (`collective`: a Collective's value) against each other and runs it (chorus::Communicator::run), or submits it and returns a Request that holds them. The arrays are numpy arrays, torch CPU tensors or any buffer-protocol or DLPack object; recv None makes AllReduce and Reduce in place.
        """

    def barrier(self, async_op: bool = False) -> object:
        """Returns once every rank has called it."""

class Collective(enum.Enum):
    """The operation of a submit (chorus::Collective)."""

    all_reduce = 0

    reduce_scatter = 1

    all_gather = 2

    all_to_all = 3

    all_to_all_v = 4

    broadcast = 5

    reduce = 6

    gather = 7

    scatter = 8

    send = 9

    recv = 10
