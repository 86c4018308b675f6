#include "core/call_gate.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace chorus {
namespace {

int membarrier(int cmd) { return static_cast<int>(syscall(__NR_membarrier, cmd, 0, 0)); }

// Registered once per process: the expedited private barrier interrupts only this process's running threads
// (microseconds). Where the kernel or a seccomp filter refuses it, the owner path pays a full fence instead.
bool registerBarrier() {
  const int supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

bool barrierAvailable() {
  static const bool available = registerBarrier();
  return available;
}

}  // namespace

CallGate::CallGate() : asymmetric_(barrierAvailable()) {}

void CallGate::close() {
  closed_.store(true, std::memory_order_seq_cst);
  if (asymmetric_) {
    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

bool CallGate::waitUntilEmpty(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (owner_.load(std::memory_order_acquire) || shared_.load(std::memory_order_acquire) > 0) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace chorus
