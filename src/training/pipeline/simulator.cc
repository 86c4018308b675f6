#include "chorus/training/pipeline/simulator.hpp"

#include <algorithm>
#include <initializer_list>

#include "message_matching.hpp"

namespace chorus::training::pipeline {

double SimulationResult::bubble() const {
  if (makespan <= 0 || busy.empty()) return 0;
  double total = 0;
  for (double b : busy) total += b;
  return 1.0 - total / (static_cast<double>(busy.size()) * makespan);
}

namespace {

double perStage(const std::vector<double>& costs, int stage) {
  if (costs.empty()) return 0;
  return costs.size() == 1 ? costs[0] : costs[std::min<size_t>(stage, costs.size() - 1)];
}

double duration(const StageCosts& costs, const Action& a) {
  switch (a.op) {
    case Op::kForward:
      return perStage(costs.forward, a.stage);
    case Op::kBackward:
      return perStage(costs.backwardInput, a.stage) + perStage(costs.backwardWeight, a.stage);
    case Op::kBackwardInput:
      return perStage(costs.backwardInput, a.stage);
    case Op::kBackwardWeight:
      return perStage(costs.backwardWeight, a.stage);
    default:
      return 0;
  }
}

// The group of consecutive communication actions that starts at `i`: [i, end).
int groupEnd(const std::vector<Action>& actions, int i) {
  while (i < static_cast<int>(actions.size()) && isCommunication(actions[i].op)) ++i;
  return i;
}

}  // namespace

Status simulateSchedule(const Schedule& schedule, const StageCosts& costs, SimulationResult* result) {
  const int p = schedule.ranks;
  std::vector<std::vector<std::pair<int, int>>> counterpart;
  CHORUS_TRY(matchMessages(schedule, &counterpart));
  std::vector<int> next(p, 0), groupStop(p, -1), held(p, 0);
  std::vector<double> clock(p, 0.0);
  // Per communication action: when its group was posted and when it finished; < 0 until then.
  std::vector<std::vector<double>> postedAt(p), doneAt(p);
  for (int r = 0; r < p; ++r) {
    postedAt[r].assign(schedule.actions[r].size(), -1.0);
    doneAt[r].assign(schedule.actions[r].size(), -1.0);
  }
  // Per ordered pair: when its queue finished its last message (one message at a time, once both sides posted it).
  std::vector<double> pairFree(p * p, 0.0);
  *result = SimulationResult{};
  result->busy.assign(p, 0.0);
  result->peakActivations.assign(p, 0);
  auto finished = [&](int r) { return next[r] >= static_cast<int>(schedule.actions[r].size()); };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      while (!finished(r)) {
        const auto& actions = schedule.actions[r];
        const Action& a = actions[next[r]];
        if (!isCommunication(a.op)) {
          const double d = duration(costs, a);
          clock[r] += d;
          if (isCompute(a.op)) result->busy[r] += d;
          if (a.op == Op::kForward) result->peakActivations[r] = std::max(result->peakActivations[r], ++held[r]);
          if (a.op == Op::kBackward || a.op == Op::kBackwardWeight) --held[r];
          ++next[r];
          progress = true;
          continue;
        }
        if (groupStop[r] < 0) {
          groupStop[r] = groupEnd(actions, next[r]);
          for (int i = next[r]; i < groupStop[r]; ++i) postedAt[r][i] = clock[r];
        }
        bool complete = true;
        double end = clock[r];
        for (int i = next[r]; i < groupStop[r]; ++i) {
          if (doneAt[r][i] >= 0) continue;
          const auto [q, j] = counterpart[r][i];
          if (actions[i].op == Op::kSendActivation || actions[i].op == Op::kSendGradient) {
            doneAt[r][i] = postedAt[r][i];  // queued
            continue;
          }
          if (postedAt[q][j] < 0) {  // not sent yet
            complete = false;
            continue;
          }
          double& queue = pairFree[q * p + r];
          doneAt[r][i] = queue = std::max({postedAt[r][i], postedAt[q][j], queue}) + costs.transfer;
          end = std::max(end, doneAt[r][i]);
        }
        if (!complete) break;
        clock[r] = end;
        next[r] = groupStop[r];
        groupStop[r] = -1;
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int r = 0; r < p; ++r) {
    if (finished(r)) continue;
    std::string waits;
    for (int i = next[r]; i < groupStop[r]; ++i)
      if (doneAt[r][i] < 0) waits += (waits.empty() ? "" : ", ") + describe(schedule.actions[r][i]);
    stuck += (stuck.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " waits for " + waits;
  }
  if (!stuck.empty()) return invalidArgument("deadlock: " + stuck);
  result->makespan = *std::max_element(clock.begin(), clock.end());
  return Status::ok();
}

}  // namespace chorus::training::pipeline
