#include "torch_reconfigure.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <variant>
#include <vector>

namespace chorus::torch_backend {

std::string newReconfigureHandle() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::random_device entropy;
  const unsigned long long nonce = (static_cast<unsigned long long>(entropy()) << 32) | entropy();
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ":%ld:%016llx", static_cast<long>(getpid()), nonce);
  return std::string("chorus:") + host + suffix;
}

Membership membershipOf(const c10d::ReconfigureOptions& options, const std::string& mine) {
  std::vector<std::string> members;
  if (const auto* list = std::get_if<std::vector<c10d::ReconfigureHandle>>(&options.handles)) {
    members = *list;
  } else {
    const auto& set = std::get<std::unordered_set<c10d::ReconfigureHandle>>(options.handles);
    members.assign(set.begin(), set.end());
    std::sort(members.begin(), members.end());
  }
  TORCH_CHECK(!members.empty(), "chorus reconfigure: no handles");
  std::vector<std::string> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  const auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
  TORCH_CHECK(repeated == sorted.end(), "chorus reconfigure: handle ", *repeated, " is given twice");
  const auto at = std::find(members.begin(), members.end(), mine);
  TORCH_CHECK(at != members.end(), "chorus reconfigure: this process's handle (", mine, ") is not among the ",
              members.size(), " handles given");
  return {static_cast<int>(at - members.begin()), static_cast<int>(members.size())};
}

}  // namespace chorus::torch_backend
