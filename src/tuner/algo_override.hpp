// CHORUS_ALGO: which algorithms the selector may pick, per collective and size range. The grammar, entries
// separated by ',' or ';':
//
//   entry  := ['^'] [collective ':'] name ['@' lo '-' hi]
//
// collective is allreduce, reducescatter, allgather, alltoall, broadcast or reduce (case and '_' ignored; absent:
// any collective that has the name); lo and hi are byte counts with an optional K, M or G suffix, hi may be empty
// for no limit; the range [lo, hi) applies to the size of the operation as the perf tools print it (count x
// element size, times the rank count for AllGather, ReduceScatter and AlltoAll). An entry forces its algorithm for
// the calls it matches (the first matching entry that applies to the shape wins); '^' instead removes the
// algorithm from the selector's choice. Examples: "ring", "allreduce:rec_doubling@0-64K,allreduce:ring",
// "^one_shot". NCCL_ALGO is read too when CHORUS_ALGO is unset (Ring -> ring, Tree -> the double binary tree
// AllReduce and the other log-depth algorithms).
#pragma once

#include <string>
#include <vector>

#include "algorithms/plan.hpp"
#include "chorus/status.hpp"

namespace chorus::tuner {

struct AlgoRule {
  bool exclude = false;
  bool anyCollective = true;
  algo::CollType coll = algo::CollType::kAllReduce;
  std::string name;
  size_t lo = 0, hi = SIZE_MAX;

  bool matches(const algo::CollShape& shape, const algo::Algorithm& a) const;
};

/// The size of an operation as nccl-tests counts it: the whole gathered or scattered buffer for AllGather,
/// ReduceScatter and AlltoAll, the buffer for the others.
size_t operationBytes(const algo::CollShape& shape);
/// The shape of `type` whose operation is `bytes` so counted, over `nranks` ranks, of `elemSize`-byte elements.
algo::CollShape shapeOfOperation(algo::CollType type, size_t bytes, int nranks, size_t elemSize);

/// Parses CHORUS_ALGO's grammar; the error names the entry that is wrong.
Status parseAlgoRules(const std::string& text, std::vector<AlgoRule>* rules);

/// The algorithm chorus runs where NCCL would run its tree (the log-depth one of the collective).
const char* ncclTreeAlgorithm(algo::CollType type);

/// NCCL_ALGO's values in CHORUS_ALGO's grammar ("Ring,Tree", "^Ring", "allreduce:tree;broadcast:ring").
std::string fromNcclAlgo(const std::string& ncclAlgo);

}  // namespace chorus::tuner
