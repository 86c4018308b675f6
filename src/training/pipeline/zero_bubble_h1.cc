// ZB-H1 (Qi et al., ICLR 2024): backward split into the input gradient (BI), which the previous stage waits for,
// and the weight gradient (BW), which nobody waits for. Input gradients go first, then forwards, and weight
// gradients fill the time a rank would otherwise wait. Every rank may hold p micro-batches' activations until
// their BW: the most 1F1B holds on any rank (its first), so the peak memory stays 1F1B's. With F = BI = BW the
// idle time is a third of 1F1B's at p = 2 and about half at p = 4 to 8 (the simulator's figures; the paper's
// hand-placed schedule reaches a third).
#include "list_scheduler.hpp"

namespace chorus::training::pipeline {
namespace {

Status zeroBubbleH1(int ranks, int microBatches, int stagesPerRank, std::vector<std::vector<Action>>* order) {
  ListPolicy policy;
  policy.splitBackward = true;
  policy.activationLimit = [ranks](int) { return ranks; };  // counted until BW
  policy.priority = [](const Action& a) {
    const long rank = a.op == Op::kBackwardInput ? 0 : a.op == Op::kForward ? 1 : 2;
    return (rank << 32) + a.microBatch;
  };
  return listSchedule(ranks, microBatches, stagesPerRank, policy, order);
}

}  // namespace

CHORUS_REGISTER_PIPELINE_SCHEDULE(zero_bubble_h1, "zb-h1",
                                  "backward split in input and weight gradients, the latter filling the bubbles "
                                  "(ZB-H1)",
                                  true, false, zeroBubbleH1);

}  // namespace chorus::training::pipeline
