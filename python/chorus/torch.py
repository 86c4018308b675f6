"""Registers chorus as the torch.distributed backend "chorus" (CPU tensors).

    import chorus.torch
    torch.distributed.init_process_group("chorus")          # under torchrun, or with init_method/rank/world_size
    torch.distributed.init_process_group("cpu:chorus,cuda:nccl")

A program that never imports chorus gets the backend too where the package is installed: torch finds it by its
entry point when init_process_group is asked for "chorus".

The process group's store (torchrun's TCPStore, or init_method's) is where the ranks meet, and
init_process_group(timeout=...) is the communicator's timeout: a call that waits longer without progress, for a
missing or dead rank, raises torch.distributed.DistBackendError naming the call and the cause.

Collectives of at most CHORUS_TORCH_INLINE_BYTES (default 64K; sizes take K, M, G) run in the calling thread and
return a finished Work, even with async_op=True: for them, handing the call to the communicator's thread costs more
than the call. Larger ones, and every send and recv, run on the communicator's thread while the caller goes on.
0 sends every call there.
"""

import os
import re

import torch.distributed as dist

from . import _torch_backend

BACKEND_NAME = "chorus"
INLINE_BYTES_DEFAULT = 64 << 10


def inline_bytes():
    """CHORUS_TORCH_INLINE_BYTES as bytes; ValueError naming the variable for anything else than a size."""
    text = os.environ.get("CHORUS_TORCH_INLINE_BYTES", "").strip()
    if not text:
        return INLINE_BYTES_DEFAULT
    m = re.fullmatch(r"(\d+)([KMG]?)", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"CHORUS_TORCH_INLINE_BYTES={text!r} is invalid: a size in bytes (e.g. 0, 4096 or 64K)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def _create(options, _backend_options):
    # The group's id keeps the communicators of the groups of one process apart (new_group, subgroups).
    return _torch_backend.create_backend(
        options.store, "chorus/" + options.group_id, options.group_rank, options.group_size,
        options.timeout.total_seconds(), inline_bytes())


def register():
    """Registers the backend "chorus" with torch.distributed, once; importing this module does it. torch calls it
    through the package's entry point (group torch.distributed.backends) when a program asks for "chorus" without
    importing chorus: Ray's and DeepSpeed's workers, torchrun scripts."""
    if BACKEND_NAME not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu"])


register()
