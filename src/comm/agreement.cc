#include "comm/agreement.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include "core/deadline.hpp"

namespace chorus {
namespace {

// Votes are stored as value + 1 through add(), so that add(key, 0) reads a vote at once and 0 means "none yet".
std::string voteKey(int rank) { return "vote/" + std::to_string(rank); }

// The decision from the votes in the store now: "<AND of the votes> <rank> <rank> ...".
Status proposal(bootstrap::Bootstrap& b, std::string* decision) {
  uint32_t all = ~uint32_t{0};
  std::string members;
  for (int r = 0; r < b.nranks(); ++r) {
    int64_t vote = 0;
    CHORUS_TRY(b.add(voteKey(r), 0, &vote));
    if (vote == 0) continue;
    all &= static_cast<uint32_t>(vote - 1);
    members += " " + std::to_string(r);
  }
  *decision = std::to_string(all) + members;
  return Status::ok();
}

// Waits up to `seconds` for the decision, in slices of at most 50 ms: the store client serves one request at a
// time, and the communicator's heartbeat beats through the same client, so one long wait would silence this rank.
Status waitForDecision(bootstrap::Bootstrap& b, double seconds, std::string* decision) {
  const Deadline end = Deadline::after(seconds);
  for (;;) {
    TimeoutScope slice(std::max(0.001, std::min(0.05, end.remainingMs() / 1000.0)));
    Status st = b.get("decision", decision);
    if (st.code() != ErrorCode::kTimeout || end.expired()) return st;
  }
}

// This caller's proposal goes in: the first proposal the store kept (setIfAbsent) is the decision, whoever proposed
// it and whoever died since. A store that cannot keep the first of several (kInvalidUsage) takes the first
// proposer's alone, and the others wait for it until the timeout.
Status propose(bootstrap::Bootstrap& b, double timeoutSeconds, std::string* decision) {
  std::string mine;
  CHORUS_TRY(proposal(b, &mine));
  Status st = b.setIfAbsent("decision", mine, decision);
  if (st.code() != ErrorCode::kInvalidUsage) return st;
  int64_t proposers = 0;
  CHORUS_TRY(b.add("proposers", 1, &proposers));
  if (proposers == 1) CHORUS_TRY(b.set("decision", mine));
  st = waitForDecision(b, timeoutSeconds > 0 ? timeoutSeconds : TimeoutScope::seconds(), decision);
  return st.isOk() ? st : st.withContext("agreement: waiting for the decision");
}

}  // namespace

Status agree(bootstrap::Bootstrap& b, uint32_t* value, std::vector<int>* members, double graceSeconds,
             double timeoutSeconds) {
  int64_t ignored = 0, arrived = 0;
  CHORUS_TRY(b.add(voteKey(b.rank()), static_cast<int64_t>(*value) + 1, &ignored));
  CHORUS_TRY(b.add("arrived", 1, &arrived));
  // The last to vote proposes at once. The others wait for the decision, and propose themselves (the votes in by
  // then) when their grace ends without one: the last voter died before proposing, or some rank never voted.
  std::string decision;
  Status st = Status::ok();
  if (arrived < b.nranks()) st = waitForDecision(b, graceSeconds, &decision);
  if (arrived == b.nranks() || st.code() == ErrorCode::kTimeout) {
    st = propose(b, timeoutSeconds, &decision);
  }
  CHORUS_TRY(st);
  std::istringstream in(decision);
  int64_t all = 0;
  in >> all;
  members->clear();
  bool counted = false;
  for (int r; in >> r;) {
    members->push_back(r);
    counted |= r == b.rank();
  }
  if (!counted)
    return remoteError("agreement: rank " + std::to_string(b.rank()) +
                       " voted after the others had decided without it (more than " + std::to_string(graceSeconds) +
                       " s after a rank arrived); they go on without it");
  *value = static_cast<uint32_t>(all);
  return Status::ok();
}

}  // namespace chorus
