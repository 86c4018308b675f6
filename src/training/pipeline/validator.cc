#include <map>
#include <tuple>

#include "chorus/training/pipeline/simulator.hpp"
#include "message_matching.hpp"

namespace chorus::training::pipeline {

namespace {

using Key = std::tuple<Op, int, int>;  // op, micro-batch, stage

Status problem(int rank, const std::string& what) {
  return invalidArgument("rank " + std::to_string(rank) + ": " + what);
}

// The checks of one rank's list: every compute action of its stages once, each after what it depends on, each
// communication action where its data exists or is needed, the optimizer step once and last.
Status checkRank(const Schedule& s, int rank) {
  const auto& actions = s.actions[rank];
  const int last = s.stages() - 1;
  std::map<Key, int> at;
  for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
    const Action& a = actions[i];
    if (a.op == Op::kOptimizerStep) {
      if (i + 1 != static_cast<int>(actions.size())) return problem(rank, "the optimizer step is not the last action");
      continue;
    }
    if (a.microBatch < 0 || a.microBatch >= s.microBatches || a.stage < 0 || a.stage > last)
      return problem(rank, "action " + std::to_string(i) + " (" + describe(a) + ") is out of range");
    if (s.rankOf(a.stage) != rank)
      return problem(rank, describe(a) + " belongs to rank " + std::to_string(s.rankOf(a.stage)));
    if (s.splitBackward ? a.op == Op::kBackward : (a.op == Op::kBackwardInput || a.op == Op::kBackwardWeight))
      return problem(rank, describe(a) + (s.splitBackward ? " in a split-backward schedule" : " in a fused one"));
    if (!at.emplace(Key{a.op, a.microBatch, a.stage}, i).second) return problem(rank, describe(a) + " twice");
  }
  if (actions.empty() || actions.back().op != Op::kOptimizerStep) return problem(rank, "no optimizer step at the end");
  auto position = [&](Op op, int mb, int stage) {
    auto it = at.find(Key{op, mb, stage});
    return it == at.end() ? -1 : it->second;
  };
  const Op backward = s.splitBackward ? Op::kBackwardInput : Op::kBackward;
  // The actions that belong: per micro-batch, the compute and a send and a receive across each remote boundary.
  const size_t perMicroBatch = s.splitBackward ? 3 : 2;
  size_t expected = 0;
  for (int stage = rank; stage <= last; stage += s.ranks) {
    const bool prevRemote = stage > 0 && s.rankOf(stage - 1) != rank;
    const bool nextRemote = stage < last && s.rankOf(stage + 1) != rank;
    expected += s.microBatches * (perMicroBatch + 2 * prevRemote + 2 * nextRemote);
    for (int mb = 0; mb < s.microBatches; ++mb) {
      const std::string id = std::to_string(mb) + "." + std::to_string(stage);
      const int f = position(Op::kForward, mb, stage), b = position(backward, mb, stage);
      if (f < 0) return problem(rank, std::string("no F ") + id);
      if (b < 0) return problem(rank, std::string("no ") + opName(backward) + " " + id);
      if (b < f) return problem(rank, std::string(opName(backward)) + " " + id + " before its F");
      if (s.splitBackward) {
        const int w = position(Op::kBackwardWeight, mb, stage);
        if (w < 0 || w < b) return problem(rank, "BW " + id + (w < 0 ? " missing" : " before its BI"));
      }
      // Inputs: received, or (stages side by side on this rank) produced here before.
      const int input = stage == 0   ? -2
                        : prevRemote ? position(Op::kRecvActivation, mb, stage)
                                     : position(Op::kForward, mb, stage - 1);
      if (input == -1 || input > f) return problem(rank, "F " + id + " before its input arrives");
      const int outputGrad = stage == last ? -2
                             : nextRemote  ? position(Op::kRecvGradient, mb, stage)
                                           : position(backward, mb, stage + 1);
      if (outputGrad == -1 || outputGrad > b)
        return problem(rank, std::string(opName(backward)) + " " + id + " before its output gradient arrives");
      const int sendA = position(Op::kSendActivation, mb, stage), sendG = position(Op::kSendGradient, mb, stage);
      if (nextRemote ? sendA < f : sendA >= 0) return problem(rank, "F " + id + "'s output is not sent once, after it");
      if (prevRemote ? sendG < b : sendG >= 0)
        return problem(rank, std::string(opName(backward)) + " " + id + "'s input gradient is not sent once, after it");
      if (!prevRemote && position(Op::kRecvActivation, mb, stage) >= 0)
        return problem(rank, "a needless receive of F " + id + "'s input");
      if (!nextRemote && position(Op::kRecvGradient, mb, stage) >= 0)
        return problem(rank, "a needless receive of " + id + "'s output gradient");
    }
  }
  // Nothing else: every action in `at` was accounted for by the loop above.
  if (at.size() != expected)
    return problem(rank, std::to_string(at.size()) + " actions where " + std::to_string(expected) + " belong");
  return Status::ok();
}

}  // namespace

Status validateSchedule(const Schedule& s) {
  if (s.ranks < 1 || static_cast<int>(s.actions.size()) != s.ranks)
    return invalidArgument("a schedule of " + std::to_string(s.ranks) + " ranks with " +
                           std::to_string(s.actions.size()) + " action lists");
  for (int r = 0; r < s.ranks; ++r) CHORUS_TRY(checkRank(s, r));
  std::vector<std::vector<std::pair<int, int>>> counterpart;
  CHORUS_TRY(matchMessages(s, &counterpart));
  // Each send meets the receive of the same micro-batch's data: the next stage's input, the previous one's gradient.
  for (int r = 0; r < s.ranks; ++r) {
    for (size_t i = 0; i < s.actions[r].size(); ++i) {
      const Action& send = s.actions[r][i];
      if (send.op != Op::kSendActivation && send.op != Op::kSendGradient) continue;
      const auto [q, j] = counterpart[r][i];
      const Action& recv = s.actions[q][j];
      const bool activation = send.op == Op::kSendActivation;
      const Action want{activation ? Op::kRecvActivation : Op::kRecvGradient, send.microBatch,
                        send.stage + (activation ? 1 : -1), r};
      if (!(recv == want)) {
        return invalidArgument("rank " + std::to_string(r) + "'s " + describe(send) + " meets rank " +
                               std::to_string(q) + "'s " + describe(recv) + ", not " + describe(want));
      }
    }
  }
  SimulationResult unused;
  return simulateSchedule(s, StageCosts{}, &unused);
}

}  // namespace chorus::training::pipeline
