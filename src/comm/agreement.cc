#include "comm/agreement.hpp"

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

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

// The one decision: the first proposal the store kept. A store that cannot keep the first of several (kInvalidUsage)
// gets one proposal, from the first rank here; the others wait for it.
Status decide(bootstrap::Bootstrap& b, double timeoutSeconds, std::string* decision) {
  std::string mine;
  CHORUS_TRY(proposal(b, &mine));
  Status st = b.setIfAbsent("decision", mine, decision);
  if (st.code() != ErrorCode::kInvalidUsage) return st;
  int64_t deciders = 0;
  CHORUS_TRY(b.add("decider", 1, &deciders));
  if (deciders == 1) CHORUS_TRY(b.set("decision", mine));
  TimeoutScope timeout(timeoutSeconds);
  st = b.get("decision", decision);
  return st.isOk() ? st : st.withContext("agreement: waiting for the decision");
}

}  // namespace

Status agree(bootstrap::Bootstrap& b, uint32_t* value, std::vector<int>* members, double graceSeconds,
             double timeoutSeconds) {
  int64_t ignored = 0, arrived = 0;
  CHORUS_TRY(b.add(voteKey(b.rank()), static_cast<int64_t>(*value) + 1, &ignored));
  CHORUS_TRY(b.add("arrived", 1, &arrived));
  const Deadline grace = Deadline::after(graceSeconds);
  // Until every rank voted or the grace ends, with short pauses: one store round trip each.
  while (arrived < b.nranks() && !grace.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHORUS_TRY(b.add("arrived", 0, &arrived));
  }
  std::string decision;
  CHORUS_TRY(decide(b, timeoutSeconds, &decision));
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
