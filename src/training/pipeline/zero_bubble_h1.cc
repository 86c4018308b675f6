// ZB-H1 (Qi et al., ICLR 2024), placed as the paper places it. The backward is split into the input gradient (BI),
// which the previous stage waits for, and the weight gradient (BW), which nobody waits for. Rank i runs 1F1B's
// p-i warm-up forwards, then per micro-batch its BI, a BW and the next forward, but holds back its first i BWs:
// the later a stage, the sooner its BI must reach the stage before, and the held-back BWs fill the tail. A rank
// holds at most p micro-batches' activations (counted until BW), 1F1B's peak on its first rank. With
// F = BI = BW = 1 the step is 3m + p - 1 for m >= p, so the idle time is a third of 1F1B's 3(p-1).
#include <algorithm>

#include "chorus/training/pipeline/schedule.hpp"

namespace chorus::training::pipeline {
namespace {

Status zeroBubbleH1(int ranks, int microBatches, int /*stagesPerRank*/, std::vector<std::vector<Action>>* order) {
  order->assign(ranks, {});
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<Action>& actions = (*order)[rank];
    const int warmUp = std::min(ranks - rank, microBatches), heldBack = rank;
    int nextForward = 0, nextWeight = 0;
    for (; nextForward < warmUp; ++nextForward) actions.push_back({Op::kForward, nextForward, rank});
    for (int mb = 0; mb < microBatches; ++mb) {
      actions.push_back({Op::kBackwardInput, mb, rank});
      if (mb >= heldBack) actions.push_back({Op::kBackwardWeight, nextWeight++, rank});
      if (nextForward < microBatches) actions.push_back({Op::kForward, nextForward++, rank});
    }
    while (nextWeight < microBatches) actions.push_back({Op::kBackwardWeight, nextWeight++, rank});
  }
  return Status::ok();
}

}  // namespace

CHORUS_REGISTER_PIPELINE_SCHEDULE(zero_bubble_h1, "zb-h1",
                                  "backward split in input and weight gradients, the latter filling the bubbles "
                                  "(ZB-H1)",
                                  true, false, zeroBubbleH1);

}  // namespace chorus::training::pipeline
