// How far apart the machine's cores are right now: the round trip of one cache line between two threads pinned to
// two CPUs (each waits for the other's write, then writes back). On a virtual machine the host may move the
// virtual CPUs between host cores at any moment; on the 2-CPU VM the perf results come from, the round trip read
// ~145 ns most of the time, ~65 ns while the two shared a core and ~550 ns while they sat far apart, and a
// shared-memory collective's launch took up to 4x its time in the far state. perf/compare runs this around every
// run to redo the runs it catches in another state.
//
//   core_round_trip [--ms N]   prints "round_trip_ns <worst pair's median>" over every pair of the first 8 CPUs
//                              this process may use; exits 2 when it may use only one.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/cpu_set.hpp"

namespace {

bool pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

struct alignas(64) Line {
  std::atomic<long> value{0};
};

// Median of batches of round trips between `a` and `b` over about `ms` milliseconds, in nanoseconds.
double roundTripNs(int a, int b, int ms) {
  Line ping, pong;
  constexpr long kBatch = 2000;
  std::atomic<bool> stop{false};
  std::thread responder([&] {
    pinTo(b);
    for (long expected = 1;; ++expected) {
      long seen;
      while ((seen = ping.value.load(std::memory_order_acquire)) < expected) {
        if (stop.load(std::memory_order_relaxed)) return;
      }
      pong.value.store(seen, std::memory_order_release);
    }
  });
  pinTo(a);
  std::vector<double> batches;
  long sent = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end || batches.size() < 3) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < kBatch; ++i) {
      ping.value.store(++sent, std::memory_order_release);
      while (pong.value.load(std::memory_order_acquire) != sent) {
      }
    }
    batches.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
                      kBatch);
  }
  stop.store(true, std::memory_order_relaxed);
  ping.value.store(sent + 1, std::memory_order_release);
  responder.join();
  std::nth_element(batches.begin(), batches.begin() + batches.size() / 2, batches.end());
  return batches[batches.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int ms = 20;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
      ms = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--ms N]\n", argv[0]);
      return 1;
    }
  }
  std::vector<int> cpus = chorus::allowedCpus();
  if (cpus.size() > 8) cpus.resize(8);
  if (cpus.size() < 2) {
    fprintf(stderr, "core_round_trip: this process may use one CPU only\n");
    return 2;
  }
  double worst = 0;
  for (size_t i = 0; i < cpus.size(); ++i) {
    for (size_t j = i + 1; j < cpus.size(); ++j) worst = std::max(worst, roundTripNs(cpus[i], cpus[j], ms));
  }
  printf("round_trip_ns %.0f\n", worst);
  return 0;
}
