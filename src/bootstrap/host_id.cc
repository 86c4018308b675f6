#include "bootstrap/host_id.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>

#include "bootstrap/settings.hpp"

namespace chorus::bootstrap {

std::string hostId() {
  if (!settings()[kHostId].empty()) return settings()[kHostId];
  return machineId();
}

std::string machineId() {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  std::string id = name;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (boot >> bootId) id += "/" + bootId;
  return id;
}

uint64_t processToken() {
  // Made anew in a child forked after the first use: the child is another process, and its peers must not take
  // it for its parent (they would pick the loopback transport of ranks that share memory).
  static std::atomic<pid_t> owner{0};
  static std::atomic<uint64_t> token{0};
  const pid_t self = getpid();
  if (owner.load(std::memory_order_acquire) != self) {
    std::random_device rd;
    token.store((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(self), std::memory_order_relaxed);
    owner.store(self, std::memory_order_release);
  }
  return token.load(std::memory_order_relaxed);
}

}  // namespace chorus::bootstrap
