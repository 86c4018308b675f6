#include "kernels/copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

namespace chorus::kernels {

void copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  const uintptr_t ahead = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) % 4096;
  if (bytes < 4096 || ahead == 0 || ahead >= 64) {
    memcpy(dst, src, bytes);
    return;
  }
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  // Stores on whole cache lines: copy up to the destination's next line boundary first.
  const size_t head = (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64;
  memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  memcpy(d + i, s + i, bytes - i);
#else
  memcpy(dst, src, bytes);
#endif
}

void streamingCopy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  // Head: plain copy up to the destination's first cache-line boundary. Streaming stores need 16-byte aligned
  // targets, and each group of four must fill one whole line: a line written in two parts leaves the write-combining
  // buffer half full, and each such flush costs several bus transactions (a 16-byte offset made them 4-5x slower).
  const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  // Streaming stores are weakly ordered: fence them before anything (a flag) publishes the data.
  _mm_sfence();
  memcpy(d + i, s + i, bytes - i);
#else
  memcpy(dst, src, bytes);
#endif
}

}  // namespace chorus::kernels
