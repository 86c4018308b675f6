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

A torch CPU tensor is plain memory, which chorus's peers in other processes cannot read, so each byte of a large
collective is copied into a FIFO and out again. use_shareable_memory() (or CHORUS_TORCH_SHAREABLE=<min size>, read
when the backend is registered) makes torch allocate tensors from that size in shareable memory, which the peers on
the host read in place, as they read ncclMemAlloc's buffers.
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
    return _size("CHORUS_TORCH_INLINE_BYTES", text) if text else INLINE_BYTES_DEFAULT


def _size(name, text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip(), re.IGNORECASE)
    if not m:
        raise ValueError(f"{name}={text!r} is invalid: a size in bytes (e.g. 0, 4096 or 64K)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


SHAREABLE_CACHE_DEFAULT = 256 << 20


def use_shareable_memory(min_bytes=1 << 20, cache_bytes=SHAREABLE_CACHE_DEFAULT):
    """Makes torch allocate CPU tensors of at least `min_bytes` in shareable memory (a memfd per tensor, mapped
    shared), whose bytes chorus's peers on this host read in place; smaller tensors keep torch's allocator. Up to
    `cache_bytes` of freed tensors' memory is kept for the next tensors of about their size. Tensors that exist
    already keep their memory. Called again, it changes the sizes.

    A process forked after this shares these tensors with its parent instead of getting copies of them: a write
    in either is seen by both (torch's DataLoader workers read their parent's tensors, which is unaffected)."""
    if min_bytes < 0 or cache_bytes < 0:
        raise ValueError(f"use_shareable_memory: sizes must be >= 0 (min_bytes={min_bytes}, cache_bytes={cache_bytes})")
    _torch_backend.use_shareable_memory(int(min_bytes), int(cache_bytes))


def use_default_memory():
    """Gives torch back the CPU allocator use_shareable_memory replaced and releases the cached memory; tensors
    allocated meanwhile stay valid."""
    _torch_backend.use_default_memory()


def shareable_memory_stats():
    """{"live_bytes", "cached_bytes", "allocations", "created"} of the shareable blocks tensors got (from
    use_shareable_memory's allocator or the backend's allocate_tensor): bytes held by tensors, bytes kept for reuse,
    tensors given shareable memory, and of those the ones that needed a new block."""
    return _torch_backend.shareable_memory_stats()


def is_shareable(tensor):
    """Whether the tensor's storage is in one of those shareable blocks."""
    return _torch_backend.is_shareable(tensor)


def _create(options, _backend_options):
    # The group's id keeps the communicators of the groups of one process apart (new_group, subgroups). A group made
    # with enable_reconfigure=True has no communicator until torch.distributed._reconfigure.
    return _torch_backend.create_backend(
        options.store, "chorus/" + options.group_id, options.group_rank, options.group_size,
        options.timeout.total_seconds(), inline_bytes(), getattr(options, "enable_reconfigure", False))


def register():
    """Registers the backend "chorus" with torch.distributed, once; importing this module does it. torch calls it
    through the package's entry point (group torch.distributed.backends) when a program asks for "chorus" without
    importing chorus: Ray's and DeepSpeed's workers, torchrun scripts."""
    if BACKEND_NAME not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu"])
        shareable = os.environ.get("CHORUS_TORCH_SHAREABLE", "").strip()
        min_bytes = _size("CHORUS_TORCH_SHAREABLE", shareable) if shareable else 0
        if min_bytes:  # unset or 0: torch's allocator
            use_shareable_memory(min_bytes)


register()
