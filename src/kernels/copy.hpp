// Copies for large messages on host memory.
#pragma once

#include <cstddef>

namespace chorus::kernels {

/// memcpy with non-temporal (streaming) stores: the destination bypasses the caches, so the memory system does
/// not first read every destination line it is about to overwrite. Worth it only for destinations far larger
/// than the caches, which the program will not read again soon.
void streamingCopy(void* dst, const void* src, size_t bytes);

}  // namespace chorus::kernels
