// Copies for large messages on host memory.
#pragma once

#include <cstddef>

namespace chorus::kernels {

/// memcpy, but never glibc's `rep movsb` where it crawls: with the destination a few bytes ahead of the source
/// modulo 4 KiB (4K aliasing: the loads wait for the stores just before them), from 4 KiB to the size where glibc
/// turns to non-temporal stores, it copies at a tenth of its speed on AMD Zen (2.4-3 against 25-45 GB/s at
/// 4-256 KiB, measured slow from 4 to 28 bytes ahead). Large malloc'd buffers start 16 bytes into a page, the FIFOs
/// and staging areas on one: every copy out of them into such a buffer is that case. A vector loop copies those
/// (1-63 bytes ahead) instead.
void copy(void* dst, const void* src, size_t bytes);

/// memcpy with non-temporal (streaming) stores: the destination bypasses the caches, so the memory system does
/// not first read every destination line it is about to overwrite. Worth it only for destinations far larger
/// than the caches, which the program will not read again soon.
void streamingCopy(void* dst, const void* src, size_t bytes);

}  // namespace chorus::kernels
