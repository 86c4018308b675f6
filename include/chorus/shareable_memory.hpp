/// @file shareable_memory.hpp
/// Host memory that the other processes of this host map and read in place. A rank whose buffer lives there lets
/// its peers on the host copy a large step straight out of it, where a buffer of plain memory is copied through a
/// FIFO (in and out again). ncclMemAlloc hands out this memory on hosts without a GPU; a program of the C++ API
/// (or an allocator, as chorus.torch's) asks for it here.
#pragma once

#include <cstddef>

#include "chorus/status.hpp"

namespace chorus {

/// `bytes` (rounded up to whole pages) of zeroed shareable memory into `*out`, reserved now, so that running out of
/// memory fails here rather than at first touch. A system error where the system refuses it (no memfd).
Status allocateShareable(size_t bytes, void** out);

/// Releases a block from allocateShareable; peers that mapped it keep their mapping until they drop it. False when
/// `p` is not the start of one (nothing is released).
bool freeShareable(void* p);

}  // namespace chorus
