// A step of one barrier run as one kernel: the rank's first phase of moves, the barrier with its peers inside the
// kernel (each rank writes its arrival into every peer's flags and spins on its own, the same flags and counts as the
// stream memory operations' barriers of gpu/peer_group.hpp), then its second phase of moves and its reduction, and
// at the end the call's done count written into every peer's flags. It stands for a copy kernel, two batches of
// stream memory operations and a reduction kernel: a small call then costs one launch and the peers' arrival.
//
// The kernel's blocks meet twice through a counter in the rank's own memory (after the first phase, before the
// barrier's arrival is written; after the second, before the done count is): few enough blocks to be resident at
// once, so that no block waits for one that cannot start.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chorus/status.hpp"
#include "chorus/types.hpp"

namespace chorus::gpu {

constexpr int kOneKernelRanks = 8;   // ranks of a group whose steps may run as one kernel
constexpr int kOneKernelMoves = 16;  // moves of a phase
constexpr unsigned kOneKernelBlocks = 32;

struct KernelMove {
  const void* from = nullptr;
  void* to = nullptr;
  size_t bytes = 0;
  bool scaled = false;  // PreMulSum's input: multiplied by the scalar on the way
};

/// Everything one step's kernel does, as addresses on this device (the rank's memory and its peers', mapped).
struct OneKernelStep {
  KernelMove before[kOneKernelMoves];
  int beforeCount = 0;
  // The barrier: `barrier` written to each of arriveAt[0..peers), then awaited in each of waitOn[0..peers).
  uint32_t* arriveAt[kOneKernelRanks] = {};
  const uint32_t* waitOn[kOneKernelRanks] = {};
  int peers = 0;
  uint32_t barrier = 0;
  bool hasBarrier = false;
  KernelMove after[kOneKernelMoves];
  int afterCount = 0;
  // The reduction (when sourceCount > 0): sources[0..sourceCount) combined in order into `to` and `alsoTo`.
  const void* sources[kOneKernelRanks] = {};
  int sourceCount = 0;
  size_t count = 0;
  void* to = nullptr;
  void* alsoTo = nullptr;
  int divideBy = 0;  // avg: the number of ranks
  // `done` written to each of doneAt[0..peers) once every block finished (no peers: nothing).
  uint32_t* doneAt[kOneKernelRanks] = {};
  uint32_t done = 0;
  // The blocks' meeting counter in the rank's own memory, and its value before this launch; the launch adds its
  // number of blocks once for the barrier and once for the end (with peers).
  uint32_t* blocksMet = nullptr;
  uint32_t blocksMetBefore = 0;
};

/// Blocks for a step moving `bytes`: enough to spread them, at most kOneKernelBlocks.
unsigned oneKernelBlocks(size_t bytes);

/// Enqueues `step` on `stream` as `blocks` blocks; `type` and `op` (its scalar, or the address of one on the device)
/// for the scaled moves and the reduction.
Status launchOneKernelStep(const OneKernelStep& step, unsigned blocks, DataType type, RedOpKind op, double scalar,
                           const void* scalarOnDevice, void* stream);

/// Loads the kernels of every type and op (gpu/runtime.hpp's loadKernels()).
Status loadOneKernelSteps();

}  // namespace chorus::gpu
