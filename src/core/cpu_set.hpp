// The CPUs a thread may run on, and Linux's list form of a CPU set ("0-3,8"), which ranks publish to each other so
// that each can count the cores its machine's ranks share (transport::machineLoad).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace chorus {

/// The CPUs the calling thread may run on (its affinity: taskset, a launcher's binding, a cpuset cgroup), in
/// increasing order; the online CPUs where the kernel does not say.
std::vector<int> allowedCpus();

/// `cpus` (increasing, no repeats) in list form: runs of three or more as "first-last", "0-3,8,10-11".
std::string formatCpuList(const std::vector<int>& cpus);

/// Reads the list form back: increasing, no repeats, at least one CPU, each below 1<<20. False on anything else.
bool parseCpuList(std::string_view text, std::vector<int>* cpus);

}  // namespace chorus
