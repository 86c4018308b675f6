// A rank made slower for real: its thread gets a fraction of one core through a CPU quota (the cgroup v1 `cpu`
// controller's cfs_quota_us), as a slower machine would give it. Where the controller is missing or not writable
// (no root, cgroup v2 only), callers fall back to a measured busy-wait and say so. Threads the limited thread
// starts inherit its group, so they share its quota, as they would share a slow machine.
#pragma once

#include <memory>
#include <string>

namespace chorus::train_demo {

class ThreadCpuQuota {
 public:
  /// Moves the calling thread into a cgroup of its own limited to `fraction` (0 < fraction <= 1) of one core.
  /// Null and *why set when it cannot; nothing is changed then.
  static std::unique_ptr<ThreadCpuQuota> limitCallingThread(double fraction, std::string* why);
  /// Moves the thread back to the cgroup it came from and removes the one made for it.
  ~ThreadCpuQuota();

  ThreadCpuQuota(const ThreadCpuQuota&) = delete;
  ThreadCpuQuota& operator=(const ThreadCpuQuota&) = delete;

  /// The cgroup made for the thread, for the message saying how the rank is slowed.
  const std::string& path() const { return path_; }

 private:
  ThreadCpuQuota(std::string parent, std::string path, long tid) : parent_(parent), path_(path), tid_(tid) {}
  std::string parent_, path_;
  long tid_;
};

}  // namespace chorus::train_demo
