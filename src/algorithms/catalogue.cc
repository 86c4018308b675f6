#include <algorithm>

#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {
std::vector<Algorithm>& registry() {
  static std::vector<Algorithm> all;
  return all;
}
}  // namespace

AlgorithmRegistrar::AlgorithmRegistrar(const Algorithm& algorithm) { registry().push_back(algorithm); }

const std::vector<Algorithm>& algorithms() { return registry(); }

const Algorithm* findAlgorithm(CollType coll, const std::string& name, Memory memory) {
  for (const Algorithm& a : registry()) {
    if (a.coll == coll && a.memory == memory && (name.empty() || name == a.name)) return &a;
  }
  return nullptr;
}

const char* collName(CollType type) {
  switch (type) {
    case CollType::kAllReduce:
      return "AllReduce";
    case CollType::kReduceScatter:
      return "ReduceScatter";
    case CollType::kAllGather:
      return "AllGather";
    case CollType::kAlltoAll:
      return "AlltoAll";
    case CollType::kAlltoAllv:
      return "AlltoAllv";
    case CollType::kBroadcast:
      return "Broadcast";
    case CollType::kReduce:
      return "Reduce";
    case CollType::kGather:
      return "Gather";
    case CollType::kScatter:
      return "Scatter";
    case CollType::kSend:
      return "Send";
    case CollType::kRecv:
      return "Recv";
  }
  return "?";
}

}  // namespace chorus::algo
