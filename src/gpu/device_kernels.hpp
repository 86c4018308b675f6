// The CUDA kernels of the GPU path, behind plain C++ launchers: copies, PreMulSum's scaled copies and the reduction
// of every rank's slot. The arithmetic is the host path's own (kernels/reduce.hpp's functors, kernels/half.hpp's
// and kernels/fp8.hpp's conversions, compiled for the device): narrow floats reduce in float and round to their
// type after each rank's element, integers divide as integers for avg, as on the host.
#pragma once

#include <cstddef>

#include "chorus/status.hpp"
#include "chorus/types.hpp"

namespace chorus::gpu {

/// One copy between two device addresses (this device's memory, or a peer's mapped into it).
struct DeviceCopy {
  const void* from = nullptr;
  void* to = nullptr;
  size_t bytes = 0;
};

/// Enqueues `copies` on `stream` (a cudaStream_t) as one kernel per 64 copies.
Status launchCopies(const DeviceCopy* copies, int n, void* stream);

/// Enqueues `copies` of `type` elements, each element multiplied by the scalar on the way: `scalarOnDevice` (a value
/// of `type`, read when the kernel runs) when not null, else `scalar`.
Status launchScaledCopies(const DeviceCopy* copies, int n, DataType type, double scalar, const void* scalarOnDevice,
                          void* stream);

/// Enqueues to[i] = from[0][i] (op) from[1][i] ... (op) from[n-1][i] for `count` elements, written to `to` and, when
/// not null, `alsoTo`; divided by `n` for avg. At most 64 sources.
Status launchReduce(const void* const* from, int n, void* to, void* alsoTo, size_t count, DataType type, RedOpKind op,
                    void* stream);

}  // namespace chorus::gpu
