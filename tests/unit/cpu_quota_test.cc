// chorus-train's --slow-rank quota: the calling thread really runs at the fraction of a core it was given, and
// leaves no cgroup behind.
#include "tools/train/cpu_quota.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <fstream>
#include <string>

namespace {

using chorus::train_demo::ThreadCpuQuota;

double threadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Spins until the thread has used `cpu` seconds of CPU; returns the wall time that took.
double spinFor(double cpu) {
  const auto start = std::chrono::steady_clock::now();
  const double until = threadCpuSeconds() + cpu;
  volatile unsigned long sink = 0;
  while (threadCpuSeconds() < until) sink = sink + 1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string threadCgroups() {
  std::ifstream in("/proc/thread-self/cgroup");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ThreadCpuQuota, AQuarterOfACoreTakesFourTimesTheWallTime) {
  const std::string before = threadCgroups();
  std::string why;
  std::string path;
  double wall = 0;
  {
    std::unique_ptr<ThreadCpuQuota> quota = ThreadCpuQuota::limitCallingThread(0.25, &why);
    if (!quota) GTEST_SKIP() << "no CPU quota here: " << why;
    path = quota->path();
    wall = spinFor(0.2);
  }
  // 0.2 s of CPU at a quarter of a core takes 0.8 s of wall time; a busy machine only makes it longer.
  EXPECT_GE(wall, 0.2 * 3) << "0.2 s of CPU under a quarter-core quota took " << wall << " s";
  struct stat st {};
  EXPECT_NE(stat(path.c_str(), &st), 0) << path << " is left behind";
  // Back in its own group (a timing check of the free run would fail on a busy machine, so the group is compared).
  EXPECT_EQ(threadCgroups(), before);
}

TEST(ThreadCpuQuota, AFractionOutsideZeroToOneIsRefused) {
  std::string why;
  EXPECT_EQ(ThreadCpuQuota::limitCallingThread(0, &why), nullptr);
  EXPECT_NE(why.find("fraction of a core"), std::string::npos) << why;
  EXPECT_EQ(ThreadCpuQuota::limitCallingThread(1.5, &why), nullptr);
}

}  // namespace
