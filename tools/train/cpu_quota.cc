#include "cpu_quota.hpp"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace chorus::train_demo {
namespace {

bool hasWord(const std::string& commaList, const std::string& word) {
  std::stringstream in(commaList);
  for (std::string item; std::getline(in, item, ',');)
    if (item == word) return true;
  return false;
}

// Where the v1 `cpu` controller is mounted ("" when it is not): /proc/self/mountinfo's fifth field, for a cgroup
// filesystem whose super options name cpu.
std::string cpuMount() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(line.substr(dash + 3)), before(line.substr(0, dash));
    std::string type, source, options, field, mountPoint;
    after >> type >> source >> options;
    for (int i = 0; i < 5 && before >> field; ++i)
      if (i == 4) mountPoint = field;
    if (type == "cgroup" && hasWord(options, "cpu")) return mountPoint;
  }
  return "";
}

// The thread's cgroup in the cpu hierarchy, from /proc/thread-self/cgroup ("N:cpu,cpuacct:/path").
std::string threadCgroup() {
  std::ifstream in("/proc/thread-self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    if (hasWord(line.substr(first + 1, second - first - 1), "cpu")) return line.substr(second + 1);
  }
  return "";
}

bool writeFile(const std::string& path, const std::string& value, std::string* why) {
  std::ofstream out(path);
  out << value << std::flush;
  if (out) return true;
  *why = "cannot write " + value + " to " + path + ": " + std::strerror(errno);
  return false;
}

}  // namespace

std::unique_ptr<ThreadCpuQuota> ThreadCpuQuota::limitCallingThread(double fraction, std::string* why) {
  if (!(fraction > 0 && fraction <= 1)) {
    *why = "a CPU quota is a fraction of a core in (0, 1], not " + std::to_string(fraction);
    return nullptr;
  }
  const std::string mount = cpuMount();
  if (mount.empty()) {
    *why = "no cgroup v1 cpu controller is mounted";
    return nullptr;
  }
  std::string current = threadCgroup();
  if (current == "/") current.clear();
  const long tid = syscall(SYS_gettid);
  const std::string parent = mount + current;
  const std::string path = parent + "/chorus-slow-" + std::to_string(getpid()) + "-" + std::to_string(tid);
  if (mkdir(path.c_str(), 0755) != 0) {
    *why = "cannot make " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  constexpr long kPeriodMicroseconds = 10000;  // short, so a throttled thread stalls for at most a few ms
  const long quota = std::max(1000L, static_cast<long>(kPeriodMicroseconds * fraction));
  if (!writeFile(path + "/cpu.cfs_period_us", std::to_string(kPeriodMicroseconds), why) ||
      !writeFile(path + "/cpu.cfs_quota_us", std::to_string(quota), why) ||
      !writeFile(path + "/tasks", std::to_string(tid), why)) {
    rmdir(path.c_str());
    return nullptr;
  }
  return std::unique_ptr<ThreadCpuQuota>(new ThreadCpuQuota(parent, path, tid));
}

ThreadCpuQuota::~ThreadCpuQuota() {
  // Threads the rank started are in the group too, and a thread that was just joined may still be listed for a
  // moment (the kernel leaves its cgroup after waking the joiner): move whatever is there, then retry.
  std::string ignored;
  writeFile(parent_ + "/tasks", std::to_string(tid_), &ignored);
  for (int attempt = 0; attempt < 100 && rmdir(path_.c_str()) != 0 && errno == EBUSY; ++attempt) {
    std::ifstream tasks(path_ + "/tasks");
    for (std::string tid; std::getline(tasks, tid);) writeFile(parent_ + "/tasks", tid, &ignored);
    usleep(2000);
  }
}

}  // namespace chorus::train_demo
