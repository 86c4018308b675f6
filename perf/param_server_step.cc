// Parameter server against ring AllReduce: the step time of moving M bytes of gradients, W workers and S servers
// each on a host of its own, beside the bandwidth model (a worker sends and receives M with the servers, a server
// W M / S; the ring sends and receives 2 (W - 1) / W M per worker). Launched by a launcher (torchrun variables), the
// last S ranks serving; the workers' ring runs on a communicator of the workers alone. Repeats alternate the two.
//
//   tests/netns/cluster --hosts W+S --ranks-per-host 1 --rate 1gbit --
//       build/perf/param_server_step --servers S [--bytes M] [--chunk-bytes C] [--steps N] [--repeats R]
//                                    [--rate-mbit B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/param_server/param_server.hpp"

using namespace chorus;
using namespace chorus::training;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int servers = 1, steps = 5, repeats = 3;
  size_t bytes = 16u << 20, chunkBytes = 1u << 20;
  double rateMbit = 1000;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

int fail(const char* what, const Status& st) {
  fprintf(stderr, "param_server_step: %s: %s\n", what, st.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      printf(
          "usage: param_server_step --servers S [--bytes M] [--chunk-bytes C] [--steps N] [--repeats R]\n"
          "                         [--rate-mbit B]\n"
          "Step time of a parameter server (the last S ranks serve) against ring AllReduce among the workers,\n"
          "beside the bandwidth model for links of B Mbit/s. Launch it with torchrun-style variables, e.g.\n"
          "example: tests/netns/cluster --hosts 6 --ranks-per-host 1 -- param_server_step --servers 2\n");
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "param_server_step: unknown argument '%s'\n", a.c_str());
      return 2;
    }
    const char* v = argv[++i];
    if (a == "--servers")
      o.servers = atoi(v);
    else if (a == "--bytes")
      o.bytes = strtoull(v, nullptr, 10);
    else if (a == "--chunk-bytes")
      o.chunkBytes = strtoull(v, nullptr, 10);
    else if (a == "--steps")
      o.steps = atoi(v);
    else if (a == "--repeats")
      o.repeats = atoi(v);
    else if (a == "--rate-mbit")
      o.rateMbit = atof(v);
    else {
      fprintf(stderr, "param_server_step: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  std::unique_ptr<Communicator> world;
  if (Status st = Communicator::createFromEnvironment(&world); !st.isOk()) return fail("init", st);
  const int workers = world->size() - o.servers;
  if (o.servers < 1 || workers < 1 || o.steps < 1 || o.repeats < 1 || o.bytes < 4) {
    fprintf(stderr, "param_server_step: needs 1 to %d servers, and positive steps, repeats and bytes\n",
            world->size() - 1);
    return 2;
  }
  const bool isWorker = world->rank() < workers;
  std::unique_ptr<Communicator> ring;
  if (Status st = world->split(isWorker ? 0 : Communicator::kNoColor, world->rank(), &ring); !st.isOk())
    return fail("split", st);
  // One Linear layer of about M bytes of parameters (its gradients stay zero: only the traffic is measured).
  const size_t width = 1024, rows = std::max<size_t>(1, o.bytes / sizeof(float) / (width + 1));
  Sequential model = makeMlp({rows, width});
  const size_t count = model.paramCount();
  std::vector<float> gradients(count, 1.0f);
  param_server::ParamServerConfig config;
  config.servers = o.servers;
  config.chunkBytes = o.chunkBytes;
  config.optimizer.kind = "sgd";
  config.optimizer.lr = 0;  // the servers' update costs a pass over the chunk, not the optimizer's arithmetic
  std::vector<double> ringTimes, psTimes;
  for (int rep = 0; rep < o.repeats; ++rep) {
    if (isWorker) {
      for (int s = 0; s < o.steps; ++s) {
        const auto start = Clock::now();
        Status st = ring->allReduce(gradients.data(), gradients.data(), count, DataType::kFloat32, RedOp::sum());
        if (!st.isOk()) return fail("ring AllReduce", st);
        ringTimes.push_back(seconds(start));
      }
    }
    std::unique_ptr<param_server::Server> server;
    std::unique_ptr<param_server::Worker> worker;
    if (Status st = param_server::join(*world, model, config, &server, &worker); !st.isOk()) return fail("join", st);
    if (server) {
      if (Status st = server->serve(); !st.isOk()) return fail("serve", st);
      continue;
    }
    for (int s = 0; s < o.steps; ++s) {
      const auto start = Clock::now();
      if (Status st = worker->step(); !st.isOk()) return fail("step", st);
      psTimes.push_back(seconds(start));
    }
    if (Status st = worker->finish(); !st.isOk()) return fail("finish", st);
  }
  if (world->rank() == 0) {
    const double m = static_cast<double>(count * sizeof(float)), bytesPerSecond = o.rateMbit * 1e6 / 8;
    const double ringModel = 2.0 * (workers - 1) / workers * m / bytesPerSecond;
    const double psModel = std::max(m, workers * m / o.servers) / bytesPerSecond;
    printf(
        "# W=%d workers, S=%d servers, M=%zu B in %zu-byte chunks, links %.0f Mbit/s, %d steps x %d repeats "
        "(medians)\n",
        workers, o.servers, count * sizeof(float), o.chunkBytes, o.rateMbit, o.steps, o.repeats);
    printf("%-22s %10s %10s %8s\n", "", "measured", "model", "ratio");
    printf("%-22s %9.1fms %9.1fms %8.2f\n", "ring AllReduce", 1e3 * median(ringTimes), 1e3 * ringModel,
           median(ringTimes) / ringModel);
    printf("%-22s %9.1fms %9.1fms %8.2f\n", "parameter server (bsp)", 1e3 * median(psTimes), 1e3 * psModel,
           median(psTimes) / psModel);
  }
  return 0;
}
