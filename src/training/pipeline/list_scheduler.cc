#include "list_scheduler.hpp"

#include <limits>

namespace chorus::training::pipeline {

namespace {
constexpr double kNotRun = std::numeric_limits<double>::infinity();
}

Status listSchedule(int ranks, int microBatches, int stagesPerRank, const ListPolicy& policy,
                    std::vector<std::vector<Action>>* order) {
  const int stages = ranks * stagesPerRank, m = microBatches;
  // Finish time of each stage's F, B (or BI) and BW per micro-batch; kNotRun until the action starts.
  auto table = [&] { return std::vector<std::vector<double>>(stages, std::vector<double>(m, kNotRun)); };
  auto forwardDone = table(), backwardDone = table(), weightDone = table();
  std::vector<double> freeAt(ranks, 0.0);
  std::vector<int> held(ranks, 0);
  order->assign(ranks, {});
  long remaining = static_cast<long>(stages) * m * (policy.splitBackward ? 3 : 2);
  const Op backwardOp = policy.splitBackward ? Op::kBackwardInput : Op::kBackward;
  double now = 0;
  while (remaining > 0) {
    for (int r = 0; r < ranks; ++r) {
      if (freeAt[r] > now) continue;
      // Per kind (F, B or BI, BW): the candidates not run yet, ready or not.
      struct Candidate {
        Action action;
        long priority;
        bool ready;
      };
      std::vector<Candidate> candidates;
      for (int s = r; s < stages; s += ranks) {
        for (int mb = 0; mb < m; ++mb) {
          if (forwardDone[s][mb] == kNotRun) {
            const bool ready = held[r] < policy.activationLimit(r) && (s == 0 || forwardDone[s - 1][mb] <= now);
            candidates.push_back({{Op::kForward, mb, s}, 0, ready});
          } else if (backwardDone[s][mb] == kNotRun) {
            const double after = s == stages - 1 ? forwardDone[s][mb] : backwardDone[s + 1][mb];
            candidates.push_back({{backwardOp, mb, s}, 0, forwardDone[s][mb] <= now && after <= now});
          } else if (policy.splitBackward && weightDone[s][mb] == kNotRun) {
            candidates.push_back({{Op::kBackwardWeight, mb, s}, 0, backwardDone[s][mb] <= now});
          }
        }
      }
      // In order: only the first of each kind may run; otherwise any ready one.
      std::vector<const Candidate*> first(4, nullptr);
      const Candidate* best = nullptr;
      for (Candidate& c : candidates) {
        c.priority = policy.priority(c.action);
        const Candidate*& head = first[static_cast<int>(c.action.op)];
        if (!head || c.priority < head->priority) head = &c;
        if (!policy.inOrder && c.ready && (!best || c.priority < best->priority)) best = &c;
      }
      for (const Candidate* c : first)
        if (policy.inOrder && c && c->ready && (!best || c->priority < best->priority)) best = c;
      if (!best) continue;
      const Action a = best->action;
      const double duration = a.op == Op::kBackward ? 2.0 : 1.0;
      freeAt[r] = now + duration;
      if (a.op == Op::kForward) {
        forwardDone[a.stage][a.microBatch] = freeAt[r];
        ++held[r];
      } else if (a.op == Op::kBackwardWeight) {
        weightDone[a.stage][a.microBatch] = freeAt[r];
        --held[r];
      } else {
        backwardDone[a.stage][a.microBatch] = freeAt[r];
        if (!policy.splitBackward) --held[r];
      }
      (*order)[r].push_back(a);
      --remaining;
    }
    double next = kNotRun;
    for (double t : freeAt)
      if (t > now && t < next) next = t;
    if (next == kNotRun && remaining > 0) {
      return internalError("pipeline list scheduler stalled with " + std::to_string(remaining) +
                           " actions left: an activation limit too small to make progress");
    }
    now = next;
  }
  return Status::ok();
}

}  // namespace chorus::training::pipeline
