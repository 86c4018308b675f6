#include "tuner/algo_override.hpp"

#include <cctype>
#include <cstdlib>

#include "core/settings.hpp"

namespace chorus::tuner {
namespace {

std::string normalized(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != '_' && c != ' ') out += static_cast<char>(tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool collectiveByName(const std::string& text, algo::CollType* out) {
  static const std::pair<const char*, algo::CollType> kNames[] = {
      {"allreduce", algo::CollType::kAllReduce}, {"reducescatter", algo::CollType::kReduceScatter},
      {"allgather", algo::CollType::kAllGather}, {"alltoall", algo::CollType::kAlltoAll},
      {"broadcast", algo::CollType::kBroadcast}, {"reduce", algo::CollType::kReduce}};
  for (const auto& [name, type] : kNames) {
    if (normalized(text) == name) {
      *out = type;
      return true;
    }
  }
  return false;
}

bool parseBytes(const std::string& text, size_t* out) {
  int64_t value = 0;
  if (text.empty() || !parseByteSize(text.c_str(), &value)) return false;
  *out = static_cast<size_t>(value);
  return true;
}

// AllGather, ReduceScatter and AlltoAll count the whole gathered or scattered buffer, n times a rank's count.
bool countsPerPeer(algo::CollType type) {
  return type == algo::CollType::kAllGather || type == algo::CollType::kReduceScatter ||
         type == algo::CollType::kAlltoAll;
}

}  // namespace

size_t operationBytes(const algo::CollShape& shape) {
  const size_t bytes = shape.count * shape.elemSize;
  return countsPerPeer(shape.type) ? bytes * static_cast<size_t>(shape.nranks) : bytes;
}

algo::CollShape shapeOfOperation(algo::CollType type, size_t bytes, int nranks, size_t elemSize) {
  algo::CollShape shape;
  shape.type = type;
  shape.nranks = nranks;
  shape.elemSize = elemSize;
  shape.count = bytes / elemSize / (countsPerPeer(type) ? static_cast<size_t>(nranks) : 1);
  return shape;
}

bool AlgoRule::matches(const algo::CollShape& shape, const algo::Algorithm& a) const {
  if (!anyCollective && coll != shape.type) return false;
  if (name != a.name) return false;
  const size_t bytes = operationBytes(shape);
  return bytes >= lo && bytes < hi;
}

Status parseAlgoRules(const std::string& text, std::vector<AlgoRule>* rules) {
  rules->clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",;", start);
    if (end == std::string::npos) end = text.size();
    std::string entry = text.substr(start, end - start);
    start = end + 1;
    while (!entry.empty() && isspace(static_cast<unsigned char>(entry.back()))) entry.pop_back();
    while (!entry.empty() && isspace(static_cast<unsigned char>(entry.front()))) entry.erase(0, 1);
    if (entry.empty()) continue;
    const std::string original = entry;
    AlgoRule rule;
    if (entry[0] == '^') {
      rule.exclude = true;
      entry.erase(0, 1);
    }
    if (const size_t at = entry.find('@'); at != std::string::npos) {
      const std::string range = entry.substr(at + 1);
      entry.resize(at);
      const size_t dash = range.find('-');
      if (dash == std::string::npos || !parseBytes(range.substr(0, dash), &rule.lo) ||
          (dash + 1 < range.size() && !parseBytes(range.substr(dash + 1), &rule.hi)) || rule.hi <= rule.lo) {
        return invalidArgument("CHORUS_ALGO entry '" + original + "': the size range must read lo-hi, e.g. @0-64K");
      }
    }
    if (const size_t colon = entry.find(':'); colon != std::string::npos) {
      if (!collectiveByName(entry.substr(0, colon), &rule.coll)) {
        return invalidArgument("CHORUS_ALGO entry '" + original + "': unknown collective '" + entry.substr(0, colon) +
                               "' (allreduce, reducescatter, allgather, alltoall, broadcast, reduce)");
      }
      rule.anyCollective = false;
      entry = entry.substr(colon + 1);
    }
    rule.name = entry;
    bool known = false;
    for (const algo::Algorithm& a : algo::algorithms()) {
      known = known || (a.name == rule.name && (rule.anyCollective || a.coll == rule.coll));
    }
    if (!known) {
      return invalidArgument("CHORUS_ALGO entry '" + original + "': no algorithm '" + rule.name + "'" +
                             (rule.anyCollective ? "" : std::string(" for ") + algo::collName(rule.coll)) +
                             " (chorus-info lists them)");
    }
    rules->push_back(rule);
  }
  return Status::ok();
}

const char* ncclTreeAlgorithm(algo::CollType type) {
  switch (type) {
    case algo::CollType::kAllReduce:
      return "tree";
    case algo::CollType::kReduceScatter:
      return "rec_halving";
    case algo::CollType::kAllGather:
      return "rec_doubling";
    default:
      return "binomial";
  }
}

std::string fromNcclAlgo(const std::string& ncclAlgo) {
  // NCCL's names for what chorus has: the ring family, and trees (the log-depth algorithms here).
  auto translate = [](const std::string& name, const std::string& coll) {
    const std::string n = normalized(name);
    const std::string prefix = coll.empty() ? "" : coll + ":";
    if (n == "ring") return prefix + "ring";
    if (n == "tree") {
      algo::CollType type;
      if (!coll.empty() && collectiveByName(coll, &type)) return prefix + ncclTreeAlgorithm(type);
      return std::string("tree,rec_doubling,rec_halving,binomial");
    }
    return std::string();  // CollNet, NVLS, PAT: nothing here runs them
  };
  std::string out;
  auto append = [&](const std::string& entry, bool exclude) {
    if (entry.empty()) return;
    size_t start = 0;
    while (start <= entry.size()) {
      size_t comma = entry.find(',', start);
      if (comma == std::string::npos) comma = entry.size();
      const std::string one = entry.substr(start, comma - start);
      if (!one.empty()) {
        if (!out.empty()) out += ',';
        if (exclude) out += '^';
        out += one;
      }
      start = comma + 1;
    }
  };
  size_t start = 0;
  while (start <= ncclAlgo.size()) {
    size_t end = ncclAlgo.find(';', start);
    if (end == std::string::npos) end = ncclAlgo.size();
    std::string part = ncclAlgo.substr(start, end - start);
    start = end + 1;
    std::string coll;
    if (const size_t colon = part.find(':'); colon != std::string::npos) {
      coll = part.substr(0, colon);
      part = part.substr(colon + 1);
    }
    bool exclude = !part.empty() && part[0] == '^';
    if (exclude) part.erase(0, 1);
    size_t s = 0;
    while (s <= part.size()) {
      size_t comma = part.find(',', s);
      if (comma == std::string::npos) comma = part.size();
      append(translate(part.substr(s, comma - s), coll), exclude);
      s = comma + 1;
    }
  }
  return out;
}

}  // namespace chorus::tuner
