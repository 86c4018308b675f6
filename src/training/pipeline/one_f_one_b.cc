// 1F1B with flush (PipeDream-Flush, Megatron-LM): rank r runs p-r forwards, then alternates one backward and one
// forward, so it never holds more than p-r micro-batches' activations. The bubble stays (p-1)/m of the ideal step.
#include "list_scheduler.hpp"

namespace chorus::training::pipeline {
namespace {

Status oneForwardOneBackward(int ranks, int microBatches, int stagesPerRank, std::vector<std::vector<Action>>* order) {
  ListPolicy policy;
  policy.activationLimit = [ranks](int rank) { return ranks - rank; };
  policy.priority = [](const Action& a) { return (a.op == Op::kBackward ? 0L : 1L << 32) + a.microBatch; };
  return listSchedule(ranks, microBatches, stagesPerRank, policy, order);
}

}  // namespace

CHORUS_REGISTER_PIPELINE_SCHEDULE(one_f_one_b, "1f1b", "one forward, one backward, rank r holding p-r (Megatron)",
                                  false, false, oneForwardOneBackward);

}  // namespace chorus::training::pipeline
