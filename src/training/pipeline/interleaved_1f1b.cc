// Interleaved 1F1B (Narayanan et al., SC'21; Megatron-LM's schedule): rank r holds v stages, r, r+p, r+2p, ..., so a
// micro-batch crosses every rank v times and the bubble shrinks to (p-1)/(v m), at v times the pipeline messages.
// Forwards go in rounds of p micro-batches, each round through the rank's stages in order; backwards in the same
// rounds, stages reversed. When m is a multiple of p this is Megatron's order exactly. Otherwise the last round is
// smaller and Megatron's warm-up counts no longer fit; the list scheduler then runs each kind in the same order,
// rank r holding at most Megatron's warm-up plus one activations, one more until it makes progress.
#include <algorithm>

#include "list_scheduler.hpp"

namespace chorus::training::pipeline {
namespace {

// Megatron's order when the rounds are full: 2(p-r-1) + (v-1)p forwards, then one forward and one backward in turn,
// then the remaining backwards.
void megatronOrder(int p, int m, int v, std::vector<std::vector<Action>>* order) {
  order->assign(p, {});
  for (int r = 0; r < p; ++r) {
    std::vector<Action> forwards, backwards;
    for (int first = 0; first < m; first += p) {
      for (int chunk = 0; chunk < v; ++chunk) {
        for (int k = 0; k < p; ++k) {
          forwards.push_back({Op::kForward, first + k, chunk * p + r});
          backwards.push_back({Op::kBackward, first + k, (v - 1 - chunk) * p + r});
        }
      }
    }
    const int total = m * v, warmup = std::min(total, 2 * (p - r - 1) + (v - 1) * p);
    auto& out = (*order)[r];
    out.insert(out.end(), forwards.begin(), forwards.begin() + warmup);
    for (int k = warmup; k < total; ++k) {
      out.push_back(forwards[k]);
      out.push_back(backwards[k - warmup]);
    }
    out.insert(out.end(), backwards.end() - warmup, backwards.end());
  }
}

Status interleaved(int ranks, int microBatches, int stagesPerRank, std::vector<std::vector<Action>>* order) {
  const int p = ranks, v = stagesPerRank, m = microBatches;
  if (m % p == 0) {
    megatronOrder(p, m, v, order);
    return Status::ok();
  }
  ListPolicy policy;
  policy.inOrder = true;
  policy.priority = [=](const Action& a) {
    const int chunk = a.stage / p;
    const bool forward = a.op == Op::kForward;
    const long first = a.microBatch / p * p, round = std::min(p, m - static_cast<int>(first));
    const long key = first * v + (forward ? chunk : v - 1 - chunk) * round + a.microBatch % p;
    return (forward ? 1L << 32 : 0L) + key;
  };
  for (int extra = 0;; ++extra) {
    policy.activationLimit = [=](int rank) { return std::min(m * v, 2 * (p - rank - 1) + (v - 1) * p + 1 + extra); };
    Status st = listSchedule(ranks, microBatches, stagesPerRank, policy, order);
    if (st.isOk() || 2 * (p - 1) + (v - 1) * p + 1 + extra >= m * v) return st;
  }
}

}  // namespace

CHORUS_REGISTER_PIPELINE_SCHEDULE(interleaved_1f1b, "interleaved-1f1b",
                                  "1F1B over v stages per rank (Megatron's interleaving)", false, true, interleaved);

}  // namespace chorus::training::pipeline
