// Recursive halving (reduce-scatter) and recursive doubling (all-gather) among a power-of-two core of ranks.
// With n ranks and p the largest power of two <= n, ranks 0..p-1 take part; rank p+q (q < n-p) hands its data to
// rank q first and gets its result from rank q at the end. The data is cut into p groups (each one or more byte
// ranges); every range moves as its own step, so each step depends on exactly the step that produced its bytes.
#pragma once

#include <vector>

#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/ring_steps.hpp"

namespace chorus::algo {

struct PowerOfTwoCore {
  int p = 1;         // participants: ranks 0..p-1
  int me = 0;        // this rank's participant index, or -1 for a rank folded onto another
  int partner = -1;  // participant: the rank folded onto it (or -1); folded rank: its participant
};
PowerOfTwoCore powerOfTwoCore(int nranks, int rank);

/// Where the current bytes of one range live and which step made them (-1: in place from the start).
struct RangeState {
  BufferKind where = BufferKind::kSend;
  int producer = -1;
};

/// The data as groups of ranges, and the state of every range.
struct GroupedData {
  std::vector<std::vector<ByteRange>> groups;   // p groups
  std::vector<std::vector<RangeState>> states;  // same shape
};

/// Recursive halving: afterwards participant `me` holds group `me` reduced over all participants in `dst`.
void addRecursiveHalving(Plan& p, const PowerOfTwoCore& core, BufferKind dst, GroupedData* data);

/// Recursive doubling: participant j's group j is where data->states says; afterwards every participant holds every
/// group in `buf`.
void addRecursiveDoubling(Plan& p, const PowerOfTwoCore& core, BufferKind buf, GroupedData* data);

/// The cost of the ranks outside the core handing `in` bytes to their participant and taking `out` bytes back
/// (0 when n is a power of two), and of the participant reducing what came in when `reduces`.
double foldCost(const CostModel& m, const PowerOfTwoCore& core, size_t in, size_t out, bool reduces);

}  // namespace chorus::algo
