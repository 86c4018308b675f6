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

Status simulateSchedule(const Schedule& schedule, const StageCosts& costs, SimulationResult* result,
                        SendCompletion sends) {
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
  *result = SimulationResult{};
  result->busy.assign(p, 0.0);
  result->peakActivations.assign(p, 0);
  auto finished = [&](int r) { return next[r] >= static_cast<int>(schedule.actions[r].size()); };
  // Rendezvous: each message is a call on its direction's communicator (activations or gradients), a rank's calls
  // on one communicator run in the order posted, and a call runs once the earlier ones on it are done.
  const int channels = 2 * schedule.stagesPerRank;
  auto channel = [&](const Action& a) { return messageChannel(schedule, a); };
  std::vector<std::vector<int>> pending(p, std::vector<int>(channels, 0));  // per rank and channel: calls done so far
  std::vector<std::vector<std::vector<int>>> calls(p, std::vector<std::vector<int>>(channels));
  std::vector<std::vector<double>> channelFree(p, std::vector<double>(channels, 0.0));
  for (int r = 0; r < p; ++r)
    for (int i = 0; i < static_cast<int>(schedule.actions[r].size()); ++i)
      if (isCommunication(schedule.actions[r][i].op)) calls[r][channel(schedule.actions[r][i])].push_back(i);
  auto running = [&](int q, int j) {
    const int c = channel(schedule.actions[q][j]);
    return postedAt[q][j] >= 0 && pending[q][c] < static_cast<int>(calls[q][c].size()) &&
           calls[q][c][pending[q][c]] == j;
  };
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
          const bool send = actions[i].op == Op::kSendActivation || actions[i].op == Op::kSendGradient;
          if (doneAt[r][i] < 0) {
            const auto [q, j] = counterpart[r][i];
            if (sends == SendCompletion::kBuffered && send) {
              doneAt[r][i] = postedAt[r][i];
            } else if (sends == SendCompletion::kBuffered) {
              if (postedAt[q][j] < 0) {
                complete = false;
                continue;
              }
              doneAt[r][i] = std::max(postedAt[r][i], postedAt[q][j] + costs.transfer);
            } else {
              if (!running(r, i) || !running(q, j)) {
                complete = false;
                continue;
              }
              const int c = channel(actions[i]);
              const double start = std::max({postedAt[r][i], channelFree[r][c], postedAt[q][j], channelFree[q][c]});
              doneAt[r][i] = doneAt[q][j] = channelFree[r][c] = channelFree[q][c] = start + costs.transfer;
              ++pending[r][c];
              ++pending[q][c];
            }
          }
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
    stuck += (stuck.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " waits in {";
    for (int i = next[r]; i < groupStop[r]; ++i) stuck += (i == next[r] ? "" : ", ") + describe(schedule.actions[r][i]);
    stuck += "}";
  }
  if (!stuck.empty()) return invalidArgument("deadlock: " + stuck);
  result->makespan = *std::max_element(clock.begin(), clock.end());
  return Status::ok();
}

}  // namespace chorus::training::pipeline
