// Loss against wall time of a parameter server under bsp, asp or ssp, on a synthetic task (labels from a random
// linear teacher), one worker made slower by a measured busy-wait (F - 1 times its compute after each step's
// compute). Launched with torchrun-style variables, the last S ranks serving; worker 0 prints its loss (the mean of
// the last 10 steps) against its wall time.
//
//   tests/netns/cluster --hosts W+S --ranks-per-host 1 --rate 1gbit --
//       build/perf/param_server_train --sync asp [--servers S] [--staleness s] [--steps N] [--slow-worker R:F]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/param_server/param_server.hpp"
#include "chorus/training/random.hpp"

using namespace chorus;
using namespace chorus::training;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kInputs = 64, kClasses = 10, kBatch = 32;

// A batch of the task: inputs uniform in [-1, 1), the label the teacher's largest output.
void makeBatch(Rng& rng, const std::vector<float>& teacher, Tensor* x, std::vector<int>* labels) {
  for (size_t i = 0; i < x->size(); ++i) x->data()[i] = static_cast<float>(2 * rng.uniform() - 1);
  for (size_t r = 0; r < kBatch; ++r) {
    int best = 0;
    float bestValue = -1e30f;
    for (size_t c = 0; c < kClasses; ++c) {
      float v = 0;
      for (size_t i = 0; i < kInputs; ++i) v += teacher[c * kInputs + i] * x->row(r)[i];
      if (v > bestValue) bestValue = v, best = static_cast<int>(c);
    }
    (*labels)[r] = best;
  }
}

}  // namespace

int main(int argc, char** argv) {
  param_server::ParamServerConfig config;
  config.staleness = 2;
  int steps = 300, slowWorker = -1;
  double slowFactor = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      printf(
          "usage: param_server_train --sync bsp|asp|ssp [--servers S] [--staleness s] [--steps N]\n"
          "                          [--slow-worker R:F]\n"
          "Worker 0's training loss against its wall time on a synthetic task, the last S ranks serving.\n"
          "example: tests/netns/cluster --hosts 5 --ranks-per-host 1 -- param_server_train --sync ssp\n");
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "param_server_train: unknown argument '%s'\n", a.c_str());
      return 2;
    }
    const char* v = argv[++i];
    Status st;
    if (a == "--sync")
      st = param_server::parseSync(v, &config.sync);
    else if (a == "--servers")
      config.servers = atoi(v);
    else if (a == "--staleness")
      config.staleness = atoi(v);
    else if (a == "--steps")
      steps = atoi(v);
    else if (a == "--slow-worker")
      st = sscanf(v, "%d:%lf", &slowWorker, &slowFactor) == 2 && slowFactor >= 1
               ? Status::ok()
               : invalidArgument("--slow-worker needs WORKER:FACTOR with a factor of at least 1");
    else {
      fprintf(stderr, "param_server_train: bad argument '%s %s'\n", a.c_str(), v);
      return 2;
    }
    if (!st.isOk()) {
      fprintf(stderr, "param_server_train: %s\n", st.message().c_str());
      return 2;
    }
  }
  std::unique_ptr<Communicator> world;
  if (Status st = Communicator::createFromEnvironment(&world); !st.isOk()) {
    fprintf(stderr, "param_server_train: %s\n", st.message().c_str());
    return 1;
  }
  Sequential model = makeMlp({kInputs, 512, 512, kClasses});
  config.optimizer.lr = 1e-3f;
  std::unique_ptr<param_server::Server> server;
  std::unique_ptr<param_server::Worker> worker;
  Status st = param_server::join(*world, model, config, &server, &worker);
  if (st.isOk() && server) st = server->serve();
  if (st.isOk() && worker) {
    Rng teacherRng(99), rng(1000 + static_cast<uint64_t>(worker->index()));
    std::vector<float> teacher(kClasses * kInputs);
    for (float& t : teacher) t = static_cast<float>(teacherRng.normal());
    Tensor x(kBatch, kInputs);
    std::vector<int> labels(kBatch);
    std::vector<float> losses;
    const auto start = Clock::now();
    if (worker->index() == 0)
      printf("# %s%s, %d workers, %d servers, worker %d %.1fx slower; worker 0: step, seconds, loss (mean of 10)\n",
             param_server::syncName(config.sync),
             config.sync == param_server::Sync::kSsp ? (" s=" + std::to_string(config.staleness)).c_str() : "",
             worker->workers(), config.servers, slowWorker, slowFactor);
    for (int s = 0; s < steps && st.isOk(); ++s) {
      makeBatch(rng, teacher, &x, &labels);
      const auto computeStart = Clock::now();
      LossResult r;
      st = worker->forwardBackward(x, labels, &r);
      if (worker->index() == slowWorker) {
        const auto until = Clock::now() + (slowFactor - 1) * (Clock::now() - computeStart);
        while (Clock::now() < until) {
        }
      }
      if (st.isOk()) st = worker->step();
      losses.push_back(r.loss);
      if (worker->index() == 0 && (s + 1) % 10 == 0) {
        double mean = 0;
        for (size_t k = losses.size() - 10; k < losses.size(); ++k) mean += losses[k] / 10;
        printf("%d,%.3f,%.4f\n", s + 1, std::chrono::duration<double>(Clock::now() - start).count(), mean);
      }
    }
    if (st.isOk()) st = worker->finish();
  }
  if (!st.isOk()) {
    fprintf(stderr, "param_server_train: rank %d: %s\n", world->rank(), st.message().c_str());
    return 1;
  }
  return 0;
}
