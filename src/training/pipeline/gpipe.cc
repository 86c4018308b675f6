// GPipe (Huang et al., 2019): every micro-batch forward, then every micro-batch backward. Each rank holds all m
// micro-batches' activations; the bubble is (p-1)/(m+p-1) of the step.
#include <climits>

#include "list_scheduler.hpp"

namespace chorus::training::pipeline {
namespace {

Status gpipe(int ranks, int microBatches, int stagesPerRank, std::vector<std::vector<Action>>* order) {
  ListPolicy policy;
  policy.activationLimit = [](int) { return INT_MAX; };
  policy.priority = [](const Action& a) { return (a.op == Op::kForward ? 0L : 1L << 32) + a.microBatch; };
  return listSchedule(ranks, microBatches, stagesPerRank, policy, order);
}

}  // namespace

CHORUS_REGISTER_PIPELINE_SCHEDULE(gpipe, "gpipe", "all forwards, then all backwards (GPipe)", false, false, gpipe);

}  // namespace chorus::training::pipeline
