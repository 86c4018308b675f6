// What went wrong in one communicator, from its ranks' flight records: the first call whose arguments differ
// between ranks, the first call not every rank completed and who is missing from it, and how late each rank
// arrives at the calls (straggler scores).
#pragma once

#include <map>
#include <string>

#include "tools/trace/records.hpp"

namespace chorus::trace {

/// The report on one communicator whose records, by rank, are `ranks` (ranks without a record are absent).
std::string analyze(const std::map<int, Record>& ranks);

}  // namespace chorus::trace
