// The call headers a rank owes a peer's check (Execution::armHeaders), oldest first: a ring that doubles when full
// and never shrinks, so that a loop of one-way calls (a Broadcast's root) adds and takes headers without allocating;
// a std::deque took a block from the heap every ten of them, and more instructions for each.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "engine/call_header.hpp"

namespace chorus::engine {

class HeaderRing {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  const CallHeader& front() const { return slots_[head_]; }
  /// Appends a copy of `header` and returns it, to be completed in place.
  CallHeader& push(const CallHeader& header) {
    if (count_ == slots_.size()) grow();
    CallHeader& slot = slots_[(head_ + count_) & (slots_.size() - 1)];
    slot = header;
    ++count_;
    return slot;
  }
  /// Drops the `n` oldest headers (at most size()).
  void pop(size_t n = 1) {
    head_ = (head_ + n) & (slots_.size() - 1);
    count_ -= n;
  }

 private:
  void grow() {
    std::vector<CallHeader> bigger(slots_.empty() ? 16 : 2 * slots_.size());  // a power of two: the index is a mask
    for (size_t i = 0; i < count_; ++i) bigger[i] = slots_[(head_ + i) & (slots_.size() - 1)];
    slots_ = std::move(bigger);
    head_ = 0;
  }
  std::vector<CallHeader> slots_;
  size_t head_ = 0, count_ = 0;
};

}  // namespace chorus::engine
