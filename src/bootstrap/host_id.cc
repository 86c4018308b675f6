#include "bootstrap/host_id.hpp"

#include <unistd.h>

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
  // A random seed, mixed with the pid of the caller: a child forked after the first use is another process with a
  // token of its own (its peers would otherwise take it for its parent and pick the loopback transport of ranks
  // that share memory), while the threads of one process always agree.
  static const uint64_t seed = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  uint64_t pid = static_cast<uint64_t>(getpid());
  pid *= 0x9e3779b97f4a7c15ull;  // spreads the pid over the word
  return seed ^ pid;
}

}  // namespace chorus::bootstrap
