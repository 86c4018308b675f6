// A communicator's CallMetrics cells, one per (collective, algorithm). The thread that runs the calls adds to them
// without a lock (cells never move); any thread may read them.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "chorus/metrics.hpp"

namespace chorus::observe {

class MetricsTable {
 public:
  struct Cell {
    uint8_t collective = 0;  // algo::CollType
    const char* algorithm = "";
    std::atomic<uint64_t> calls{0}, payload{0}, wire{0}, timedCalls{0}, ticks{0}, predictedNanoseconds{0};
  };
  /// The cell of `collective` run by `algorithm` (a registered algorithm's name), added on first use.
  Cell* cell(uint8_t collective, const char* algorithm);
  /// Writer side (one thread at a time).
  static void addCall(Cell* c, uint64_t payload, uint64_t wire) {
    bump(c->calls, 1);
    bump(c->payload, payload);
    bump(c->wire, wire);
  }
  static void addTime(Cell* c, uint64_t ticks, double predictedMicros) {
    bump(c->timedCalls, 1);
    bump(c->ticks, ticks);
    // Algorithms without a cost function (Send/Recv) predict infinity: they add nothing.
    if (std::isfinite(predictedMicros)) bump(c->predictedNanoseconds, static_cast<uint64_t>(predictedMicros * 1000));
  }
  std::vector<CallMetrics> read() const;
  void reset();

 private:
  // One writer: a load and a store, no locked read-modify-write on the call path.
  static void bump(std::atomic<uint64_t>& a, uint64_t v) {
    a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
  mutable std::mutex mutex_;  // guards the deque's shape, not the cells' values
  std::deque<Cell> cells_;
};

}  // namespace chorus::observe
