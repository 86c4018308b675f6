// Heterogeneous ranks: 2 ranks (threads) train an MLP on the same global batches, rank 1 made `--slow` times slower
// for real (it spins after its compute for (slow - 1) x the compute time: a measured busy-wait, not a CPU quota).
// Samples per second with the split following measured throughput, against the equal split, interleaved.
//
//   hetero_balance [--slow F] [--batch B] [--steps N] [--repeats R]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/balance/balanced_data_parallel.hpp"

using namespace chorus;
using namespace chorus::training;
using namespace chorus::training::balance;

namespace {

struct Run {
  double samplesPerSecond = 0;
  std::vector<size_t> finalSplit;
};

// Trains `steps` steps and returns samples per second over the second half (the split settled by then).
Run run(bool balance, double slow, size_t batch, int steps) {
  std::vector<std::unique_ptr<Communicator>> comms;
  if (!Communicator::createLocal(2, &comms).isOk()) return {};
  std::vector<double> seconds(2, 0.0);
  Run out;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      Sequential model = makeMlp({784, 256, 256, 10});
      BalancedConfig config;
      config.globalBatch = batch;
      config.balancer.hysteresis = balance ? 0.05 : 1.0;  // 1: never re-split
      if (r == 1) config.slowdown = slow;
      BalancedDataParallel trainer(*comms[r], model, config);
      if (!trainer.init(1).isOk()) return;
      Tensor x(batch, 784);
      for (size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i % 13) * 0.05f;
      std::vector<int> labels(batch);
      for (size_t i = 0; i < batch; ++i) labels[i] = static_cast<int>(i % 10);
      for (int s = 0; s < steps; ++s) {
        BalancedStep step;
        if (!trainer.trainStep(x, labels, &step).isOk()) return;
        if (s >= steps / 2) seconds[r] += step.seconds;
        if (r == 0 && s == steps - 1) out.finalSplit = step.split;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double slowest = std::max(seconds[0], seconds[1]);
  out.samplesPerSecond = slowest > 0 ? static_cast<double>(batch) * (steps - steps / 2) / slowest : 0;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double slow = 2;
  size_t batch = 256;
  int steps = 40, repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--slow")) {
      slow = atof(argv[i + 1]);
    } else if (!strcmp(argv[i], "--batch")) {
      batch = strtoul(argv[i + 1], nullptr, 10);
    } else if (!strcmp(argv[i], "--steps")) {
      steps = atoi(argv[i + 1]);
    } else if (!strcmp(argv[i], "--repeats")) {
      repeats = atoi(argv[i + 1]);
    } else {
      fprintf(stderr, "usage: %s [--slow F] [--batch B] [--steps N] [--repeats R]\n", argv[0]);
      return 2;
    }
  }
  if (!(slow >= 1) || batch < 2 || steps < 2 || repeats < 1) return fprintf(stderr, "bad arguments\n"), 2;
  printf(
      "# 2 ranks, rank 1 %.2fx slower (busy-wait), MLP 784-256-256-10, global batch %zu, %d steps, samples/s "
      "over the last %d\n",
      slow, batch, steps, steps - steps / 2);
  std::vector<double> balanced, equal;
  std::vector<size_t> split;
  for (int k = 0; k < repeats; ++k) {
    const Run b = run(true, slow, batch, steps), e = run(false, slow, batch, steps);
    balanced.push_back(b.samplesPerSecond);
    equal.push_back(e.samplesPerSecond);
    split = b.finalSplit;
    printf("repeat %d: balanced %.0f samples/s (split %zu/%zu), equal split %.0f samples/s\n", k + 1,
           b.samplesPerSecond, split.size() > 1 ? split[0] : 0, split.size() > 1 ? split[1] : 0, e.samplesPerSecond);
    fflush(stdout);
  }
  std::sort(balanced.begin(), balanced.end());
  std::sort(equal.begin(), equal.end());
  const double b = balanced[repeats / 2], e = equal[repeats / 2];
  printf("median: balanced %.0f samples/s, equal split %.0f samples/s: %.2fx (ideal %.2fx)\n", b, e, b / e,
         (1 + slow) / 2);
  return 0;
}
