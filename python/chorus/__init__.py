"""chorus: collective communication for host buffers.

Communicators run NCCL's collectives on numpy arrays, torch CPU tensors or any object with the buffer protocol or
DLPack, in place and without copies. ``import chorus.torch`` registers chorus as a torch.distributed backend.
"""

from ._chorus import Error, Request, UniqueId, __version__
from ._communicator import Communicator

__all__ = ["Communicator", "Error", "Request", "UniqueId", "__version__"]
