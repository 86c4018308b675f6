// Which plans over peer memory the one-kernel step (gpu/one_kernel_step.hpp) can run. Host code apart from the
// kernel's header, which nvcc compiles as C++17: the tests ask it on machines without a GPU.
#pragma once

#include <cstddef>

#include "algorithms/peer_plan.hpp"

namespace chorus::gpu {

/// Whether `plan` runs as one kernel: one step of at most one barrier, no reduction before it and, after it, moves
/// or one reduction into at most two places; few enough ranks and moves for the kernel's parameters; at most
/// `oneKernelBytes` moved (CHORUS_GPU_ONE_KERNEL, 0: never).
bool runsAsOneKernel(const algo::peer::Plan& plan, int nranks, size_t elementBytes, size_t oneKernelBytes);

}  // namespace chorus::gpu
