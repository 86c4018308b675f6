#include "tuner/choice.hpp"

#include <sstream>
#include <string>

#include "core/settings.hpp"

namespace chorus::tuner {
namespace {

// One-shot AllReduce while the data every rank sends stays small: one round of latency beats the ring's 2(n-1)
// rounds. Measured over shm (CHORUS_ALGO=ring|one_shot all_reduce_perf -n 200, 2026-11-22): 2 ranks, 2 KiB:
// 0.67 vs 0.89 us, 8 KiB: 1.13 vs 1.16; 4 ranks, 512 B: 9.7 vs 12.0 us, 2 KiB (6 KiB sent): 12.6 vs 12.2.
constexpr size_t kOneShotBytes = 4 << 10;

const algo::Algorithm* forced(algo::CollType type) {
  const std::string& names = settings().algorithm;
  if (names.empty()) return nullptr;
  std::istringstream list(names);
  std::string name;
  while (std::getline(list, name, ',')) {
    if (const algo::Algorithm* a = algo::findAlgorithm(type, name)) return a;
  }
  return nullptr;
}

}  // namespace

const algo::Algorithm* choose(const algo::CollShape& shape) {
  if (const algo::Algorithm* a = forced(shape.type)) return a;
  if (shape.type == algo::CollType::kAllReduce) {
    const size_t sent = shape.count * shape.elemSize * static_cast<size_t>(shape.nranks - 1);
    return algo::findAlgorithm(shape.type, sent <= kOneShotBytes ? "one_shot" : "ring");
  }
  return algo::findAlgorithm(shape.type);
}

}  // namespace chorus::tuner
