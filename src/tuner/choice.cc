#include "tuner/choice.hpp"

#include <sstream>
#include <string>

#include "core/settings.hpp"

namespace chorus::tuner {
namespace {

// One-shot AllReduce while the data every rank sends stays small: one round of latency beats the ring's 2(n-1)
// rounds. Measured over shm (CHORUS_ALGO=ring|one_shot all_reduce_perf -n 200, 2026-11-22): 2 ranks, 2 KiB:
// 0.67 vs 0.89 us, 8 KiB: 1.13 vs 1.16. With more ranks than cores each round waits for a descheduled peer, so
// the one round pays far longer (-n 1000, 2 cores): 4 ranks, 16 KiB (48 KiB sent): 12.5 vs 17.1 us, 64 KiB:
// 31.7 vs 27.8; 8 ranks, 16 KiB (112 KiB sent): 53 vs 69 us, 64 KiB: 148 vs 90.
constexpr size_t kOneShotBytes = 4 << 10, kOneShotBytesOversubscribed = 128 << 10;

const algo::Algorithm* forced(const algo::CollShape& shape) {
  const std::string& names = settings().algorithm;
  if (names.empty()) return nullptr;
  std::istringstream list(names);
  std::string name;
  while (std::getline(list, name, ',')) {
    const algo::Algorithm* a = algo::findAlgorithm(shape.type, name);
    if (a && a->appliesTo(shape)) return a;
  }
  return nullptr;
}

}  // namespace

const algo::Algorithm* choose(const algo::CollShape& shape, const Placement& placement) {
  if (const algo::Algorithm* a = forced(shape)) return a;
  if (shape.type == algo::CollType::kAllReduce) {
    const size_t sent = shape.count * shape.elemSize * static_cast<size_t>(shape.nranks - 1);
    const size_t limit = placement.oversubscribed ? kOneShotBytesOversubscribed : kOneShotBytes;
    return algo::findAlgorithm(shape.type, sent <= limit ? "one_shot" : "ring");
  }
  // AllGather and ReduceScatter move the same bytes either way; direct saves the ring's n-1 dependent rounds,
  // which matters only when a round may wait for a descheduled rank, and loses the ring's pipelining once the
  // blocks grow (2 cores, -n 300: 8 ranks AllGather 4 KiB 16.0 vs 25.1 us, 256 KiB 80 vs 70).
  if (shape.type == algo::CollType::kAllGather || shape.type == algo::CollType::kReduceScatter) {
    const size_t sent = shape.count * shape.elemSize * static_cast<size_t>(shape.nranks - 1);
    const bool direct = placement.oversubscribed && sent <= kOneShotBytesOversubscribed;
    return algo::findAlgorithm(shape.type, direct ? "direct" : "ring");
  }
  if (shape.type == algo::CollType::kBroadcast || shape.type == algo::CollType::kReduce) {
    return algo::findAlgorithm(shape.type, "ring");
  }
  return algo::findAlgorithm(shape.type);
}

}  // namespace chorus::tuner
