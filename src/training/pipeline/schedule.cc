#include "chorus/training/pipeline/schedule.hpp"

#include "chorus/training/pipeline/simulator.hpp"

namespace chorus::training::pipeline {

const char* opName(Op op) {
  switch (op) {
    case Op::kForward:
      return "F";
    case Op::kBackward:
      return "B";
    case Op::kBackwardInput:
      return "BI";
    case Op::kBackwardWeight:
      return "BW";
    case Op::kSendActivation:
      return "sA";
    case Op::kRecvActivation:
      return "rA";
    case Op::kSendGradient:
      return "sG";
    case Op::kRecvGradient:
      return "rG";
    case Op::kOptimizerStep:
      return "OPT";
  }
  return "?";
}

bool isCompute(Op op) {
  return op == Op::kForward || op == Op::kBackward || op == Op::kBackwardInput || op == Op::kBackwardWeight;
}

bool isCommunication(Op op) { return !isCompute(op) && op != Op::kOptimizerStep; }

namespace {
std::vector<ScheduleGenerator>& registry() {
  static std::vector<ScheduleGenerator> generators;
  return generators;
}
}  // namespace

ScheduleRegistrar::ScheduleRegistrar(const ScheduleGenerator& generator) { registry().push_back(generator); }

const std::vector<ScheduleGenerator>& scheduleGenerators() { return registry(); }

std::vector<std::string> scheduleNames() {
  std::vector<std::string> names;
  for (const auto& g : registry()) names.push_back(g.name);
  return names;
}

Status makeSchedule(const std::string& name, int ranks, int microBatches, int stagesPerRank, Schedule* out) {
  const ScheduleGenerator* generator = nullptr;
  for (const auto& g : registry())
    if (name == g.name) generator = &g;
  if (!generator) {
    std::string known;
    for (const auto& n : scheduleNames()) known += (known.empty() ? "" : ", ") + n;
    return invalidArgument("unknown pipeline schedule '" + name + "' (known: " + known + ")");
  }
  if (ranks < 1 || microBatches < 1 || stagesPerRank < 1) {
    return invalidArgument("pipeline schedule " + name + ": ranks (" + std::to_string(ranks) + "), micro-batches (" +
                           std::to_string(microBatches) + ") and stages per rank (" + std::to_string(stagesPerRank) +
                           ") must be at least 1");
  }
  if (generator->virtualStages ? stagesPerRank < 2 : stagesPerRank != 1) {
    return invalidArgument("pipeline schedule " + name + (generator->virtualStages ? " needs" : " takes no") +
                           " virtual stages (stages per rank " + std::to_string(stagesPerRank) + ")");
  }
  Schedule s;
  s.name = name;
  s.ranks = ranks;
  s.microBatches = microBatches;
  s.stagesPerRank = stagesPerRank;
  s.splitBackward = generator->splitBackward;
  CHORUS_TRY(generator->generate(ranks, microBatches, stagesPerRank, &s.actions));
  lowerSchedule(&s);
  CHORUS_TRY(validateSchedule(s).withContext("pipeline schedule " + name + " (p " + std::to_string(ranks) + ", m " +
                                             std::to_string(microBatches) + ", v " + std::to_string(stagesPerRank) +
                                             ")"));
  *out = std::move(s);
  return Status::ok();
}

void lowerSchedule(Schedule* schedule) {
  const int p = schedule->ranks, last = schedule->stages() - 1;
  auto isBackward = [](const Action& a) { return a.op == Op::kBackward || a.op == Op::kBackwardInput; };
  // Neighbouring stages on the same rank (one rank, v > 1) hand over in memory.
  auto remote = [&](int rank, int stage) { return stage >= 0 && stage <= last && schedule->rankOf(stage) != rank; };
  // The messages each rank sends, in its order: the output of an F or the input gradient of a backward, right after
  // it. Per ordered pair (from, to): the receiving action and which of `to`'s compute actions needs it.
  struct Message {
    Action recv;
    int consumer;
  };
  std::vector<std::vector<Message>> messages(p * p);
  auto consumerOf = [&](int rank, Op op, int mb, int stage) {
    const auto& order = schedule->actions[rank];
    for (int i = 0; i < static_cast<int>(order.size()); ++i) {
      const Action& a = order[i];
      if (a.microBatch == mb && a.stage == stage && (op == Op::kForward ? a.op == op : isBackward(a))) return i;
    }
    return -1;
  };
  for (int rank = 0; rank < p; ++rank) {
    for (const Action& a : schedule->actions[rank]) {
      if (a.op == Op::kForward && remote(rank, a.stage + 1)) {
        const int to = schedule->rankOf(a.stage + 1);
        messages[rank * p + to].push_back({{Op::kRecvActivation, a.microBatch, a.stage + 1, rank},
                                           consumerOf(to, Op::kForward, a.microBatch, a.stage + 1)});
      } else if (isBackward(a) && remote(rank, a.stage - 1)) {
        const int to = schedule->rankOf(a.stage - 1);
        messages[rank * p + to].push_back({{Op::kRecvGradient, a.microBatch, a.stage - 1, rank},
                                           consumerOf(to, Op::kBackward, a.microBatch, a.stage - 1)});
      }
    }
  }
  // Messages between two ranks meet in the order they were sent, so a rank receives them in that order: each
  // before its consumer and before the consumer of any later message from the same rank (received early, kept
  // until needed). recvBefore[rank][i]: the receives to post before compute action i.
  std::vector<std::vector<std::vector<Action>>> recvBefore(p);
  for (int to = 0; to < p; ++to) {
    recvBefore[to].resize(schedule->actions[to].size());
    for (int from = 0; from < p; ++from) {
      const auto& list = messages[from * p + to];
      std::vector<int> at(list.size());
      int earliest = static_cast<int>(schedule->actions[to].size());
      for (size_t k = list.size(); k-- > 0;) at[k] = earliest = std::min(earliest, list[k].consumer);
      for (size_t k = 0; k < list.size(); ++k) recvBefore[to][at[k]].push_back(list[k].recv);
    }
  }
  for (int rank = 0; rank < p; ++rank) {
    std::vector<Action> lowered;
    const auto& order = schedule->actions[rank];
    for (size_t i = 0; i < order.size(); ++i) {
      const Action& a = order[i];
      lowered.insert(lowered.end(), recvBefore[rank][i].begin(), recvBefore[rank][i].end());
      lowered.push_back(a);
      if (a.op == Op::kForward && remote(rank, a.stage + 1))
        lowered.push_back({Op::kSendActivation, a.microBatch, a.stage, schedule->rankOf(a.stage + 1)});
      if (isBackward(a) && remote(rank, a.stage - 1))
        lowered.push_back({Op::kSendGradient, a.microBatch, a.stage, schedule->rankOf(a.stage - 1)});
    }
    lowered.push_back({Op::kOptimizerStep, -1, -1, -1});
    schedule->actions[rank] = std::move(lowered);
  }
}

std::string toString(const Schedule& schedule) {
  std::string out;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    out += "rank " + std::to_string(rank) + ":";
    for (const Action& a : schedule.actions[rank]) {
      out += std::string(" ") + opName(a.op);
      if (a.microBatch >= 0) out += std::to_string(a.microBatch) + "." + std::to_string(a.stage);
    }
    out += "\n";
  }
  return out;
}

}  // namespace chorus::training::pipeline
