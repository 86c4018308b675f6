// A communicator's CallMetrics cells, one per (collective, algorithm). The thread that runs the calls adds to them
// without a lock (cells never move); any thread may read them.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
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
  static void addTime(Cell* c, uint64_t ticks, uint64_t predictedNanoseconds) {
    bump(c->timedCalls, 1);
    bump(c->ticks, ticks);
    bump(c->predictedNanoseconds, predictedNanoseconds);
  }
  /// A prediction in addTime()'s unit, worked out once per bound call: algorithms without a cost function
  /// (Send/Recv) predict infinity, and add nothing.
  static uint64_t predictedNanoseconds(float predictedMicros) {
    return std::isfinite(predictedMicros) ? static_cast<uint64_t>(static_cast<double>(predictedMicros) * 1000) : 0;
  }
  std::vector<CallMetrics> read() const;
  /// The calls, payload and wire bytes of the cells, summed per collective into `byCollective` (indexed by
  /// algo::CollType; a communicator's traffic counters), in one pass.
  struct Totals {
    uint64_t calls = 0, payload = 0, wire = 0;
  };
  void totals(std::span<Totals> byCollective) const;
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
