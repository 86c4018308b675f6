// Two ranks of one process joined by FIFO connections, for driving engine executions step by step: how each
// connection offers direct transfers is the test's choice.
#pragma once

#include <cstdlib>
#include <memory>

#include "engine/execution.hpp"
#include "transports/fifo_connection.hpp"

namespace chorus::testing {

struct FifoPair {
  static constexpr size_t kFifoBytes = 64 << 10;

  explicit FifoPair(transport::FifoConnection::Direct direct = transport::FifoConnection::Direct::kSameProcess,
                    size_t fifoBytes = kFifoBytes) {
    const size_t one = transport::Fifo::bytesFor(fifoBytes);
    std::shared_ptr<void> memory(aligned_alloc(64, 2 * one), free);
    auto* base = static_cast<std::byte*>(memory.get());
    transport::Fifo ab(base, fifoBytes, true), ba(base + one, fifoBytes, true);
    toOne = std::make_unique<transport::FifoConnection>(memory, ab, ba, 1, 0, "pair", direct);
    toZero = std::make_unique<transport::FifoConnection>(memory, ba, ab, 0, 0, "pair", direct);
  }
  std::unique_ptr<engine::Execution> execution(int rank) {
    transport::Connection* c = rank == 0 ? toOne.get() : toZero.get();
    return std::make_unique<engine::Execution>(
        rank, [c](int) { return c; }, nullptr);
  }
  std::unique_ptr<transport::FifoConnection> toOne, toZero;
};

}  // namespace chorus::testing
