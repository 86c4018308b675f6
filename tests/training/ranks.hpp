// Runs a test body on every rank of a fresh communicator, as threads of this process or as forked processes over
// shared memory. The body returns "" or what went wrong; processes compute their own references and report only
// that string.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"

namespace chorus::testing {

enum class RankKind { kThreads, kProcesses };
inline const char* rankKindName(RankKind k) { return k == RankKind::kThreads ? "threads" : "processes"; }

/// Every rank's message, prefixed with its rank; empty when all passed.
std::string onRanks(int nranks, RankKind kind, const std::function<std::string(Communicator&)>& body);

}  // namespace chorus::testing
