// The engine's stream layout: every step occupies a multiple of 16 bytes of its stream, so each step starts
// 16-aligned and any contiguous region the engine sees holds whole elements of any type.
#pragma once

#include <cstddef>

namespace chorus::engine {

constexpr size_t kWireAlign = 16;
inline size_t padded(size_t bytes) { return (bytes + kWireAlign - 1) & ~(kWireAlign - 1); }

// Largest step that goes through a connection's small-message channel (a reduction stages it on the stack).
constexpr size_t kSmallBuffer = 4096;

}  // namespace chorus::engine
