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

Status matchMessages(const Schedule& schedule, std::vector<std::vector<std::pair<int, int>>>* counterpart) {
  const int p = schedule.ranks;
  // Per ordered pair (from, to): the indices of the sends on `from` and of the receives on `to`, in order.
  std::vector<std::vector<int>> sends(p * p), recvs(p * p);
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
        sends[r * p + a.peer].push_back(i);
      else
        recvs[a.peer * p + r].push_back(i);
    }
  }
  for (int pair = 0; pair < p * p; ++pair) {
    const int from = pair / p, to = pair % p;
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
  return Status::ok();
}

}  // namespace chorus::training::pipeline
