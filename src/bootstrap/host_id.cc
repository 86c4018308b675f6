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
  static const uint64_t token = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
  }();
  return token;
}

}  // namespace chorus::bootstrap
