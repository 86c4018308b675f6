"""
chorus collectives on host arrays (numpy, torch CPU tensors, any buffer-protocol or DLPack object)
"""

from collections.abc import Sequence
from typing import Annotated

from numpy.typing import NDArray

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
        Ranks meet through `store`: any object with set(key: str, value: bytes), get(key: str) -> bytes that raises KeyError or returns None while the key is absent, and add(key: str, delta: int) -> int (torch.distributed's TCPStore has them).
        """

    @property
    def rank(self) -> int: ...

    @property
    def size(self) -> int: ...

    def split(self, color: int, key: int = 0) -> Communicator | None:
        """
        Ranks with the same color form a new communicator ordered by (key, rank); color -1 joins none (None).
        """

    def abort(self) -> None:
        """
        Ends every call of this communicator with an error; safe from any thread.
        """

    def close(self) -> None:
        """Destroys the communicator (waits for its async calls)."""

    def __enter__(self) -> object: ...

    def __exit__(self, *args) -> None: ...

    def all_reduce(self, send: Annotated[NDArray, dict(device='cpu', writable=False)], recv: Annotated[NDArray, dict(device='cpu')] | None = None, op: str = 'sum', async_op: bool = False) -> object:
        """
        Reduces `send` over all ranks into `recv` (in place when recv is None).
        """

    def reduce_scatter(self, send: Annotated[NDArray, dict(device='cpu', writable=False)], recv: Annotated[NDArray, dict(device='cpu')], op: str = 'sum', async_op: bool = False) -> object:
        """
        Reduces `send` over all ranks; rank i receives block i (recv's size) of the result.
        """

    def all_gather(self, send: Annotated[NDArray, dict(device='cpu', writable=False)], recv: Annotated[NDArray, dict(device='cpu')], async_op: bool = False) -> object:
        """Every rank receives every rank's `send`, in rank order."""

    def all_to_all(self, send: Annotated[NDArray, dict(device='cpu', writable=False)], recv: Annotated[NDArray, dict(device='cpu')], async_op: bool = False) -> object:
        """Block j of `send` goes to rank j; block i of `recv` comes from rank i."""

    def all_to_all_v(self, send: Annotated[NDArray, dict(device='cpu', writable=False)], send_counts: Sequence[int], recv: Annotated[NDArray, dict(device='cpu')], recv_counts: Sequence[int], async_op: bool = False) -> object:
        """
        All-to-all with a count per peer: send_counts[j] elements to rank j, recv_counts[i] from rank i, packed.
        """

    def broadcast(self, buffer: Annotated[NDArray, dict(device='cpu')], root: int, async_op: bool = False) -> object:
        """Copies root's `buffer` into every rank's, in place."""

    def reduce(self, send: Annotated[NDArray, dict(device='cpu', writable=False)], recv: Annotated[NDArray, dict(device='cpu')] | None = None, root: int = 0, op: str = 'sum', async_op: bool = False) -> object:
        """
        Reduces `send` over all ranks into root's `recv` (in place when None); other ranks' recv is untouched.
        """

    def gather(self, send: Annotated[NDArray, dict(device='cpu', writable=False)], recv: Annotated[NDArray, dict(device='cpu')] | None = None, root: int = 0, async_op: bool = False) -> object:
        """
        Root receives every rank's `send`, in rank order (recv is needed on the root only).
        """

    def scatter(self, send: Annotated[NDArray, dict(device='cpu', writable=False)] | None, recv: Annotated[NDArray, dict(device='cpu')], root: int = 0, async_op: bool = False) -> object:
        """
        Rank i receives block i of root's `send` (send is needed on the root only).
        """

    def send(self, buffer: Annotated[NDArray, dict(device='cpu', writable=False)], peer: int, async_op: bool = False) -> object:
        """Sends `buffer` to rank `peer`, which calls recv."""

    def recv(self, buffer: Annotated[NDArray, dict(device='cpu')], peer: int, async_op: bool = False) -> object:
        """Receives into `buffer` what rank `peer` sends."""

    def barrier(self, async_op: bool = False) -> object:
        """Returns once every rank has called it."""
