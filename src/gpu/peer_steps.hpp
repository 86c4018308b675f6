// How a collective on device buffers runs over peer memory, as data: the ranks of one host each own two slots of
// device memory that every other rank maps (CUDA IPC, gpu/peer_group.hpp), and a call is a list of steps, each a
// list of phases with a barrier of all ranks between two phases. In a phase a rank moves bytes between its own
// buffers and any rank's slot, and reduces the same range of every rank's slot.
//
// Step k of the communicator's life uses slot k % 2 of every rank. All ranks wait at a barrier only for each other,
// so a rank may start step k + 1 (writing its slot) while a peer still reads that rank's slot for step k: the two
// use different slots, and step k + 2, which reuses the slot, starts after step k + 1's barrier, which no rank
// passes before every rank finished step k. Pure arithmetic on offsets: peer_steps_test runs the plans on host
// memory, every rank interleaved every way a barrier allows, and checks that no rank writes what another reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/operation.hpp"

namespace chorus::gpu {

enum class Place : uint8_t { kSend, kRecv, kSlot };

/// A byte offset into the call's send or receive buffer, or into `rank`'s slot of the step.
struct Ref {
  Place place = Place::kSend;
  int rank = 0;  // whose slot (kSlot only)
  size_t offset = 0;
};

/// A copy of `bytes`; `scaled`: a PreMulSum input, multiplied by the rank's scalar on the way.
struct Move {
  Ref from;
  Ref to;
  size_t bytes = 0;
  bool scaled = false;
};

/// The reduction of `count` elements at `slotOffset` of every rank's slot (in rank order), written to each of `to`
/// (then divided by the number of ranks for avg).
struct Combine {
  size_t slotOffset = 0;
  size_t count = 0;
  std::vector<Ref> to;
};

/// One rank's work between two barriers: its moves, then its reductions.
struct Phase {
  std::vector<Move> moves;
  std::vector<Combine> combines;
};

/// Phases separated by barriers; the last phase of a step and the first of the next run without one between.
struct Step {
  std::vector<Phase> phases;
};

struct PeerStepLimits {
  size_t slotBytes = 64 << 20;      // each of a rank's two slots
  size_t oneShotBytes = 1 << 20;    // AllReduce up to this size: every rank reduces the whole buffer (one barrier)
  size_t oneKernelBytes = 4 << 20;  // a call of one step moving at most this much runs as one kernel
};

/// Whether `type` runs over peer memory (the rest, Send/Recv and AlltoAllv, are staged through host memory).
bool runsOnPeerMemory(algo::CollType type);

/// The steps of `op` (validated, count > 0) for `rank` of `nranks`. Every rank's plan of one call has the same
/// steps and phases. `slotBytes` must hold at least 64 bytes per rank.
std::vector<Step> planPeerSteps(const Operation& op, int rank, int nranks, const PeerStepLimits& limits);

/// Barriers in `steps` (the phases after a step's first).
size_t barrierCount(const std::vector<Step>& steps);

/// Bytes `step` moves: its moves' bytes, and what its reductions read from the `nranks` slots.
size_t movedBytes(const Step& step, int nranks, size_t elementBytes);

/// Whether a call of these steps runs as one kernel (gpu/one_kernel_step.hpp): one step of at most one barrier, no
/// reduction before it and, after it, moves or one reduction into at most two places; few enough ranks and moves
/// for the kernel's parameters; at most `limits.oneKernelBytes` moved.
bool runsAsOneKernel(const std::vector<Step>& steps, int nranks, size_t elementBytes, const PeerStepLimits& limits);

}  // namespace chorus::gpu
