#include "tools/trace/analysis.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

namespace chorus::trace {
namespace {

using Key = std::pair<uint64_t, int>;  // (sequence, place in its group)

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

bool pointToPoint(const Entry& e) { return e.collective == "Send" || e.collective == "Recv"; }

// The arguments every rank must pass alike (a Send's peer and AlltoAllv's counts differ by design).
std::string signature(const Entry& e) {
  std::ostringstream s;
  s << e.collective;
  if (pointToPoint(e)) return s.str() + " (point-to-point)";
  s << "(count " << (e.collective == "AlltoAllv" ? std::string("per peer") : std::to_string(e.count)) << ", "
    << e.dtype;
  if (e.collective.find("Reduce") != std::string::npos) s << ", " << e.op;
  if (e.collective == "Broadcast" || e.collective == "Reduce" || e.collective == "Gather" || e.collective == "Scatter")
    s << ", root " << e.root;
  return s.str() + ")";
}

std::string describe(const Entry& e) {
  return "seq " + std::to_string(e.seq) +
         (e.groupSize > 1
              ? " (group op " + std::to_string(e.groupIndex + 1) + " of " + std::to_string(e.groupSize) + ")"
              : "") +
         " " + signature(e) + (e.algorithm.empty() ? "" : " [" + e.algorithm + "]");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

std::string analyze(const std::map<int, Record>& ranks) {
  std::ostringstream out;
  const Record& any = ranks.begin()->second;
  const int size = any.size;
  std::vector<int> present, absent;
  for (int r = 0; r < size; ++r) (ranks.count(r) ? present : absent).push_back(r);
  out << "communicator " << any.comm << ": " << size << " ranks, records from " << rankList(present);
  if (!absent.empty())
    out << "; no record from " << rankList(absent) << " (killed, stopped or hung before writing one)";
  out << "\n";
  for (const auto& [rank, rec] : ranks) {
    out << "  rank " << rank << " (" << rec.host << ", pid " << rec.pid << ", written on " << rec.reason << ")";
    if (!rec.error.empty()) out << ": " << rec.error;
    out << "\n";
  }

  // Entries by (sequence, group place), and the window every rank's ring still holds.
  std::map<int, std::map<Key, const Entry*>> byRank;
  uint64_t windowStart = 0, lastSeq = 0;
  for (const auto& [rank, rec] : ranks) {
    for (const Entry& e : rec.entries) byRank[rank][{e.seq, e.groupIndex}] = &e;
    if (!rec.entries.empty()) {
      windowStart = std::max(windowStart, rec.entries.front().seq);
      lastSeq = std::max(lastSeq, rec.entries.back().seq);
    }
  }
  std::set<Key> keys;
  for (const auto& [rank, entries] : byRank)
    for (const auto& [key, e] : entries)
      if (key.first >= windowStart) keys.insert(key);

  std::vector<std::string> verdicts;

  // 1. The first call whose arguments differ between ranks.
  for (const Key& key : keys) {
    std::map<std::string, std::vector<int>> bySignature;
    for (const auto& [rank, entries] : byRank)
      if (auto it = entries.find(key); it != entries.end()) bySignature[signature(*it->second)].push_back(rank);
    if (bySignature.size() < 2) continue;
    auto majority = std::max_element(bySignature.begin(), bySignature.end(),
                                     [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    out << "first mismatched call: seq " << key.first << ":";
    for (const auto& [sig, who] : bySignature) out << " " << rankList(who) << " called " << sig << ";";
    out << "\n";
    std::vector<int> odd;
    for (const auto& [sig, who] : bySignature)
      if (&sig != &majority->first) odd.insert(odd.end(), who.begin(), who.end());
    if (bySignature.size() == 2 && majority->second.size() > odd.size()) {
      std::sort(odd.begin(), odd.end());
      verdicts.push_back(rankList(odd) + " called seq " + std::to_string(key.first) + " with other arguments (" +
                         bySignature.begin()->first +
                         (bySignature.size() > 1 ? " vs " + std::next(bySignature.begin())->first : "") + ")");
    } else {
      verdicts.push_back("the ranks disagree on the arguments of seq " + std::to_string(key.first));
    }
    break;
  }

  // 2. The first call some rank did not complete, and where each rank was.
  bool allCompleted = true;
  for (const Key& key : keys) {
    std::vector<int> completed, failed, started, neverReached;
    const Entry* example = nullptr;
    for (int r : present) {
      const auto& entries = byRank[r];
      auto it = entries.find(key);
      if (it == entries.end()) {
        neverReached.push_back(r);
        continue;
      }
      example = it->second;
      (it->second->state == "completed" ? completed : it->second->state == "failed" ? failed : started).push_back(r);
    }
    if (completed.size() == present.size()) continue;  // the ranks without a record are named apart
    allCompleted = false;
    out << "first call not completed by every rank: "
        << (example ? describe(*example) : "seq " + std::to_string(key.first)) << "\n";
    if (!completed.empty()) out << "  completed it: " << rankList(completed) << "\n";
    if (!failed.empty()) out << "  failed in it: " << rankList(failed) << "\n";
    if (!started.empty()) out << "  still inside it: " << rankList(started) << "\n";
    for (int r : neverReached) {
      const auto& entries = byRank[r];
      out << "  never reached it: rank " << r
          << (entries.empty() ? std::string(" (no calls recorded)")
                              : " (its last call: " + describe(*entries.rbegin()->second) + ")")
          << "\n";
    }
    if (!absent.empty()) out << "  no record: " << rankList(absent) << "\n";
    // Whom the ranks inside it were waiting for: a peer whose side of the call never began there comes first (the
    // others may only be waiting in turn).
    std::map<int, std::vector<int>> neverBegan, bytesMissing;
    for (const auto& [rank, rec] : ranks) {
      if (rec.inFlightSeq != key.first) continue;
      for (const PeerBytes& p : rec.inFlight) {
        if (!p.peerStarted)
          neverBegan[p.peer].push_back(rank);
        else if (p.received < p.toReceive)
          bytesMissing[p.peer].push_back(rank);
      }
    }
    for (const auto& [peer, waiters] : neverBegan)
      out << "  rank " << peer << "'s side of it never began at " << rankList(waiters) << "\n";
    for (const auto& [peer, waiters] : bytesMissing)
      out << "  rank " << peer << " began it but its bytes never all arrived at " << rankList(waiters) << "\n";
    const std::string seq = "seq " + std::to_string(key.first);
    if (!neverReached.empty())
      verdicts.push_back(rankList(neverReached) + " did not reach " + seq +
                         (absent.empty() ? "" : "; no record from " + rankList(absent)));
    else if (!absent.empty())
      verdicts.push_back(rankList(absent) + " left no record (killed or stopped) while the others were in " + seq);
    else
      verdicts.push_back("every rank reached " + seq + " but it did not complete (see the errors)");
    break;
  }
  if (allCompleted && !keys.empty()) {
    out << (absent.empty() ? "every rank" : "every rank with a record") << " completed every recorded call (seq "
        << windowStart << " to " << lastSeq << ")\n";
    if (!absent.empty()) verdicts.push_back(rankList(absent) + " left no record (killed or stopped)");
  }

  // 3. Straggler scores: how long after the first rank each rank arrived at a call (its scheduled time).
  std::map<int, std::vector<double>> lateness;
  std::map<int, int> lastToArrive;
  for (const Key& key : keys) {
    if (key.second != 0) continue;
    std::vector<std::pair<int64_t, int>> arrivals;
    for (const auto& [rank, entries] : byRank)
      if (auto it = entries.find(key); it != entries.end() && it->second->scheduledNs)
        arrivals.push_back({it->second->scheduledNs, rank});
    if (arrivals.size() < 2) continue;
    std::sort(arrivals.begin(), arrivals.end());
    for (const auto& [t, rank] : arrivals) lateness[rank].push_back((t - arrivals.front().first) / 1e3);
    ++lastToArrive[arrivals.back().second];
  }
  if (!lateness.empty()) {
    std::vector<std::pair<double, int>> order;
    for (const auto& [rank, l] : lateness) order.push_back({median(l), rank});
    std::sort(order.rbegin(), order.rend());
    out << "straggler scores (arrival after the first rank, over " << keys.size() << " calls):\n";
    out << "  rank   calls   median late (us)   max late (us)   last to arrive\n";
    for (const auto& [m, rank] : order) {
      const auto& l = lateness[rank];
      char row[128];
      snprintf(row, sizeof(row), "  %4d %7zu %18.1f %15.1f %16d\n", rank, l.size(), m,
               *std::max_element(l.begin(), l.end()), lastToArrive[rank]);
      out << row;
    }
  }
  if (verdicts.empty()) verdicts.push_back("nothing wrong found");
  std::string head;
  for (const std::string& v : verdicts) head += "verdict: " + v + "\n";
  return head + out.str();
}

}  // namespace chorus::trace
