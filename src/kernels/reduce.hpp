// Element-wise reductions on host memory. The functors are shared with the CUDA kernels; the host loops are
// plain so that the compiler vectorizes them (see perf/bench_reduce for the measured throughput).
#pragma once

#include <cstddef>

#include "chorus/types.hpp"
#include "kernels/half.hpp"

namespace chorus::kernels {

struct Sum {
  template <typename T>
  CHORUS_HD T operator()(T a, T b) const {
    return static_cast<T>(a + b);
  }
};
struct Prod {
  template <typename T>
  CHORUS_HD T operator()(T a, T b) const {
    return static_cast<T>(a * b);
  }
};
struct Max {
  template <typename T>
  CHORUS_HD T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct Min {
  template <typename T>
  CHORUS_HD T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};

/// dst[i] = a[i] (op) b[i] for `count` elements. dst may equal a or b.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);

/// The reduction for (type, op). avg and premulsum reduce with sum (their scaling happens around the reduction).
/// Returns nullptr for an invalid type.
ReduceFn reduceFunction(DataType type, RedOpKind op);

/// dst[i] = src[i] * scalar, computed in the element type's arithmetic (float for the 16- and 8-bit floats).
void scale(void* dst, const void* src, size_t count, DataType type, double scalar);

/// buf[i] /= divisor; integer types use integer division, as NCCL's SumPostDiv does.
void divide(void* buf, size_t count, DataType type, int divisor);

}  // namespace chorus::kernels
