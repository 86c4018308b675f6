// List scheduling: the way most pipeline schedules can be written down. Every rank runs, whenever it is free, the
// ready compute action it prefers, as long as it holds fewer activations than its limit. Run with unit times
// (F = BI = BW = 1, B = 2), this orders each rank's actions; a schedule is its preference and its memory limit.
#pragma once

#include <functional>
#include <vector>

#include "chorus/training/pipeline/schedule.hpp"

namespace chorus::training::pipeline {

struct ListPolicy {
  bool splitBackward = false;
  /// The most micro-batch stage activations rank `rank` may hold at once (from F to B, or to BW when split).
  std::function<int(int rank)> activationLimit;
  /// Among a rank's ready actions the lowest runs first.
  std::function<long(const Action& action)> priority;
  /// Each kind of action (F, B or BI, BW) runs in priority order: a later one waits for the earlier ones.
  bool inOrder = false;
};

/// Compute-only per-rank orders of p ranks, m micro-batches and v stages per rank; an internal error when the
/// policy stalls (a limit too small to make progress).
Status listSchedule(int ranks, int microBatches, int stagesPerRank, const ListPolicy& policy,
                    std::vector<std::vector<Action>>* order);

}  // namespace chorus::training::pipeline
