// Page-locked host buffers for staging device data, kept for reuse: pinning costs milliseconds, and a stream's copies
// run at full speed only from pinned memory. Buffers come in power-of-two sizes and go back to the pool when the
// last holder lets go (from any thread, CUDA's host functions included: giving back calls no CUDA function).
//
// A stream runs its calls one after the other, so all calls enqueued on one stream share one staging buffer: a call
// is enqueued long before the stream reaches it, and a buffer per call would pin memory for every call in flight.
#pragma once

#include <cstddef>
#include <memory>

#include "chorus/status.hpp"

namespace chorus::gpu {

/// A pinned buffer of at least `bytes`, or the CUDA error that prevented one.
Status takePinned(size_t bytes, std::shared_ptr<std::byte>* out);

/// The staging buffer of the calls on `stream` of `device`: the one the stream's earlier calls used when it is large
/// enough, else a larger one (the earlier calls keep theirs until they are done with it).
Status stagingFor(int device, void* stream, size_t bytes, std::shared_ptr<std::byte>* out);

}  // namespace chorus::gpu
