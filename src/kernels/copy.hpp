// Copies on host memory: large ones that avoid glibc's slow cases, short ones inline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace chorus::kernels {

/// memcpy, but never glibc's `rep movsb` where it crawls: with the destination a few bytes ahead of the source
/// modulo 4 KiB (4K aliasing: the loads wait for the stores just before them), from 4 KiB to the size where glibc
/// turns to non-temporal stores, it copies at a tenth of its speed on AMD Zen
/// (perf/archive/2026-11-27-copies-into-mallocd-buffers-glibcs-rep-movsb-at-3-gbs.md). Large malloc'd buffers start
/// 16 bytes into a page, the FIFOs and staging areas on one: every copy out of them into such a buffer is that case.
/// A vector loop copies those (1-63 bytes ahead) instead.
void copy(void* dst, const void* src, size_t bytes);

/// memcpy with non-temporal (streaming) stores: the destination bypasses the caches, so the memory system does
/// not first read every destination line it is about to overwrite. Worth it only for destinations far larger
/// than the caches, which the program will not read again soon.
void streamingCopy(void* dst, const void* src, size_t bytes);

/// A copy of at most 64 bytes, inline: two fixed-size moves that may overlap, where a call to memcpy costs more
/// than the bytes (a small message's call header and payload, a line of the FIFOs' line channel). The buffers
/// must not overlap.
[[gnu::always_inline]] inline void copyShort(void* dst, const void* src, size_t bytes) {
  auto* to = static_cast<std::byte*>(dst);
  const auto* from = static_cast<const std::byte*>(src);
  if (bytes >= 32) {
    memcpy(to, from, 32);
    memcpy(to + bytes - 32, from + bytes - 32, 32);
  } else if (bytes >= 16) {
    memcpy(to, from, 16);
    memcpy(to + bytes - 16, from + bytes - 16, 16);
  } else if (bytes >= 8) {
    memcpy(to, from, 8);
    memcpy(to + bytes - 8, from + bytes - 8, 8);
  } else if (bytes >= 4) {
    memcpy(to, from, 4);
    memcpy(to + bytes - 4, from + bytes - 4, 4);
  } else if (bytes > 0) {
    to[0] = from[0];
    if (bytes > 1) memcpy(to + bytes - 2, from + bytes - 2, 2);
  }
}

}  // namespace chorus::kernels
