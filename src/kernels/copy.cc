#include "kernels/copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

namespace chorus::kernels {

#if defined(__x86_64__) || defined(__i386__)
namespace {

// Copies up to the destination's next cache-line boundary, then whole lines with `Store` (plain or streaming), then
// the tail: each line is written by one group of four stores.
template <void (*Store)(__m128i*, __m128i)>
void copyByLines(char* d, const char* s, size_t bytes) {
  const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
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
    Store(reinterpret_cast<__m128i*>(d + i), a);
    Store(reinterpret_cast<__m128i*>(d + i + 16), b);
    Store(reinterpret_cast<__m128i*>(d + i + 32), c);
    Store(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  memcpy(d + i, s + i, bytes - i);
}

void cachedStore(__m128i* at, __m128i v) { _mm_store_si128(at, v); }
void streamingStore(__m128i* at, __m128i v) { _mm_stream_si128(at, v); }

}  // namespace
#endif

void copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  const uintptr_t ahead = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) % 4096;
  if (bytes >= 4096 && ahead > 0 && ahead < 64) {
    copyByLines<cachedStore>(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
    return;
  }
#endif
  memcpy(dst, src, bytes);
}

void streamingCopy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  // Streaming stores need 16-byte aligned targets, and a line written by two groups of them leaves the
  // write-combining buffer half full twice, which slows the copy.
  copyByLines<streamingStore>(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
  // Streaming stores are weakly ordered: fence them before anything (a flag) publishes the data.
  _mm_sfence();
#else
  memcpy(dst, src, bytes);
#endif
}

}  // namespace chorus::kernels
