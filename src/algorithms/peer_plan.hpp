// The plans of calls on device memory that the ranks of one host map into each other (CUDA IPC), as data: one-sided
// steps where plan.hpp's are two-sided. Each rank owns two slots of device memory that every other rank maps, and a
// call is a list of steps, each a list of phases with a barrier of all ranks between two phases. In a phase a rank
// moves bytes between its own buffers and any rank's slot (a put into its own slot, a get from a peer's), and
// reduces the same range of every rank's slot.
//
// Step k of the communicator's life uses slot k % 2 of every rank. All ranks wait at a barrier only for each other,
// so a rank may start step k + 1 (writing its slot) while a peer still reads that rank's slot for step k: the two
// use different slots, and step k + 2, which reuses the slot, starts after step k + 1's barrier, which no rank
// passes before every rank finished step k. Pure arithmetic on offsets: peer_plan_simulator_test runs every peer
// algorithm on host memory, every rank interleaved every way a barrier allows, and checks that no rank writes what
// another reads. The CUDA executor that runs them is gpu/peer_group.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo::peer {

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

/// The reduction of `count` elements at `slotOffset` of every rank's slot (in rank order, so every rank computes the
/// same bits), written to each of `to` (then divided by the number of ranks for avg).
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

struct Plan {
  std::vector<Step> steps;
};

/// Barriers in `plan` (the phases after each step's first).
size_t barrierCount(const Plan& plan);

/// Bytes `step` moves: its moves' bytes, and what its reductions read from the `nranks` slots.
size_t movedBytes(const Step& step, int nranks, size_t elementBytes);

/// The time the cost model gives `plan`: a barrier's latency each, and every byte it moves at peer memory's rate.
double planCost(const Plan& plan, const CollShape& shape, const CostModel& model);

/// The cost of the plans `generate` makes for `shape`, priced on rank 0's (the same on every rank, so every rank
/// makes the same choice).
double costOfRankZero(PeerPlanGenerator generate, const CollShape& shape, const CostModel& model);

/// What every peer plan's steps are built from.
inline Ref sendAt(size_t offset) { return {Place::kSend, 0, offset}; }
inline Ref recvAt(size_t offset) { return {Place::kRecv, 0, offset}; }
inline Ref slotOf(int rank, size_t offset) { return {Place::kSlot, rank, offset}; }

/// Elements of each of `rows` rows that fit a slot, each row a multiple of 16 bytes (aligned vector copies).
size_t rowElements(size_t slotBytes, size_t rows, size_t elementBytes);

/// The start of rank q's share of `count` elements split over n ranks, on 16-byte boundaries where it can.
size_t shareStart(int q, int n, size_t count, size_t elementBytes);

/// The plan of any collective on one rank: a copy (scaled for PreMulSum) from the send to the receive buffer, none
/// in place.
Plan singleRank(const CollShape& shape);

/// One step per `perStep` elements of `count`, each of `phases` phases; `body(step, first, elements)` fills each.
template <typename Body>
Plan chunked(size_t count, size_t perStep, size_t phases, Body body) {
  Plan plan;
  for (size_t first = 0; first < count; first += perStep) {
    Step& s = plan.steps.emplace_back();
    s.phases.resize(phases);
    body(s, first, std::min(perStep, count - first));
  }
  return plan;
}

/// Registers a plan of device memory (Memory::kPeer); they reduce in rank order.
#define CHORUS_REGISTER_PEER_ALGORITHM(ident, name, coll, fn, cost, applies) \
  static const ::chorus::algo::AlgorithmRegistrar ident##_registrar(         \
      {name, coll, nullptr, cost, applies, true, fn, ::chorus::algo::Memory::kPeer})

}  // namespace chorus::algo::peer
