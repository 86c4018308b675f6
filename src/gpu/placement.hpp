// Where a call runs: every call classifies its buffers here. Host buffers run on the calling thread as they always
// did; device and managed buffers are enqueued on the caller's CUDA stream (stream_calls.hpp, chorus/stream.hpp).
#pragma once

#include "algorithms/operation.hpp"
#include "chorus/status.hpp"

namespace chorus::gpu {

/// Sets op->onDevice from where the buffers `rank` uses live, and op->stream to the thread's current stream for a
/// device call. A call whose buffers are partly host and partly device memory is an invalid argument.
Status placeOperation(Operation* op, int rank, int nranks);

}  // namespace chorus::gpu
