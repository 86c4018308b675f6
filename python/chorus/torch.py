"""Registers chorus as the torch.distributed backend "chorus" (CPU tensors).

    import chorus.torch
    torch.distributed.init_process_group("chorus")          # under torchrun, or with init_method/rank/world_size
    torch.distributed.init_process_group("cpu:chorus,cuda:nccl")

The process group's store (torchrun's TCPStore, or init_method's) is where the ranks meet, and
init_process_group(timeout=...) is the communicator's timeout: a call that waits longer without progress, for a
missing or dead rank, raises torch.distributed.DistBackendError naming the call and the cause.
"""

import torch.distributed as dist

from . import _torch_backend

BACKEND_NAME = "chorus"


def _create(options, _backend_options):
    # The group's id keeps the communicators of the groups of one process apart (new_group, subgroups).
    return _torch_backend.create_backend(
        options.store, "chorus/" + options.group_id, options.group_rank, options.group_size,
        options.timeout.total_seconds())


if BACKEND_NAME not in dist.Backend.backend_list:
    dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu"])
