// CallGate: lets one thread shut an object while others may be calling into it, and wait until they have left,
// without putting a locked instruction on the hot path.
//
// The object's owner thread (one at a time, as NCCL requires of a communicator's calls) marks itself inside with a
// plain store; any other thread uses a counter. close() publishes "closed", then makes every running thread's
// stores visible (membarrier(2), an inter-processor barrier that costs the closer, not the callers) and waits until
// nobody is inside. A caller entering after that sees "closed" and turns back. Without membarrier the owner path
// falls back to a full fence.
#pragma once

#include <atomic>

namespace chorus {

class CallGate {
 public:
  CallGate();

  /// The owner thread's call path. False when the gate is closed (the caller must not touch the object).
  bool enterOwner() {
    owner_.store(true, std::memory_order_relaxed);
    // With membarrier, close() orders this store before the load below for us: only the compiler must keep the order.
    if (asymmetric_) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    if (closed_.load(std::memory_order_relaxed)) {
      owner_.store(false, std::memory_order_release);
      return false;
    }
    return true;
  }
  void leaveOwner() { owner_.store(false, std::memory_order_release); }

  /// Any other thread (status queries, watchdogs).
  bool enterShared() {
    shared_.fetch_add(1, std::memory_order_seq_cst);
    if (closed_.load(std::memory_order_seq_cst)) {
      shared_.fetch_sub(1, std::memory_order_release);
      return false;
    }
    return true;
  }
  void leaveShared() { shared_.fetch_sub(1, std::memory_order_release); }

  /// Turns every later caller back; the threads inside stay until they leave.
  void close();
  /// Waits up to `seconds` for the threads inside a closed gate to leave; false if some are still inside.
  bool waitUntilEmpty(double seconds);
  bool closeAndWait(double seconds) {
    close();
    return waitUntilEmpty(seconds);
  }

 private:
  const bool asymmetric_;  // membarrier is available (read once per process)
  std::atomic<bool> owner_{false};
  std::atomic<int> shared_{0};
  std::atomic<bool> closed_{false};
};

/// Holds a CallGate open for one call: of the owner thread (kOwner) or of any other thread.
template <bool kOwner>
class GateCall {
 public:
  explicit GateCall(CallGate& gate) : gate_(gate), entered_(kOwner ? gate.enterOwner() : gate.enterShared()) {}
  ~GateCall() {
    if (!entered_) return;
    if (kOwner) {
      gate_.leaveOwner();
    } else {
      gate_.leaveShared();
    }
  }
  bool entered() const { return entered_; }
  GateCall(const GateCall&) = delete;
  GateCall& operator=(const GateCall&) = delete;

 private:
  CallGate& gate_;
  bool entered_;
};
using OwnerCall = GateCall<true>;
using SharedCall = GateCall<false>;

}  // namespace chorus
