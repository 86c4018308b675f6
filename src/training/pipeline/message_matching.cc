#include "message_matching.hpp"

namespace chorus::training::pipeline {

namespace {
bool isSend(Op op) { return op == Op::kSendActivation || op == Op::kSendGradient; }
}  // namespace

std::string describe(const Action& a) {
  std::string s = std::string(opName(a.op));
  if (a.microBatch >= 0) s += " " + std::to_string(a.microBatch) + "." + std::to_string(a.stage);
  if (isCommunication(a.op)) s += (isSend(a.op) ? " to rank " : " from rank ") + std::to_string(a.peer);
  return s;
}

int messageChannel(const Schedule& schedule, const Action& a) {
  const bool activation = a.op == Op::kSendActivation || a.op == Op::kRecvActivation;
  const int source = a.op == Op::kRecvActivation ? a.stage - 1 : a.op == Op::kRecvGradient ? a.stage + 1 : a.stage;
  return 2 * (source / schedule.ranks) + (activation ? 0 : 1);
}

Status matchMessages(const Schedule& schedule, std::vector<std::vector<std::pair<int, int>>>* counterpart) {
  const int p = schedule.ranks;
  // Per ordered pair (from, to): the indices of the sends on `from` and of the receives on `to`, in order.
  const int channels = 2 * schedule.stagesPerRank;
  auto slot = [&](int from, int to, const Action& a) {
    return (from * p + to) * channels + messageChannel(schedule, a);
  };
  std::vector<std::vector<int>> sends(p * p * channels), recvs(p * p * channels);
  counterpart->assign(p, {});
  for (int r = 0; r < p; ++r) {
    const auto& actions = schedule.actions[r];
    (*counterpart)[r].assign(actions.size(), {-1, -1});
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action& a = actions[i];
      if (!isCommunication(a.op)) continue;
      if (a.peer < 0 || a.peer >= p || a.peer == r) {
        return invalidArgument("rank " + std::to_string(r) + " action " + std::to_string(i) + " (" + describe(a) +
                               ") names no other rank");
      }
      if (isSend(a.op))
        sends[slot(r, a.peer, a)].push_back(i);
      else
        recvs[slot(a.peer, r, a)].push_back(i);
    }
  }
  for (int pair = 0; pair < p * p * channels; ++pair) {
    const int from = pair / channels / p, to = pair / channels % p;
    {
      const auto& s = sends[pair];
      const auto& r = recvs[pair];
      if (s.size() != r.size()) {
        return invalidArgument("rank " + std::to_string(from) + " sends " + std::to_string(s.size()) +
                               " messages to rank " + std::to_string(to) + ", which receives " +
                               std::to_string(r.size()) + " from it");
      }
      for (size_t k = 0; k < s.size(); ++k) {
        (*counterpart)[from][s[k]] = {to, r[k]};
        (*counterpart)[to][r[k]] = {from, s[k]};
      }
    }
  }
  return Status::ok();
}

}  // namespace chorus::training::pipeline
