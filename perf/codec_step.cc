// Gradient codecs against each other on a link of a given rate: the data-parallel step time (forward, backward and
// the bucket exchange) of the demo MLP with each codec, and the wire bytes the communicator counted. Launched with
// torchrun-style variables, one rank per simulated host; codecs alternate within each repeat.
//
//   tests/netns/cluster --hosts 4 --ranks-per-host 1 --rate 100mbit --
//       build/perf/codec_step [--codecs ,bf16,topk:0.01,powersgd:4] [--batch B] [--steps N] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/data_parallel.hpp"
#include "chorus/training/random.hpp"

using namespace chorus;
using namespace chorus::training;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string codecList = ",bf16,topk:0.01,powersgd:4";
  size_t batch = 32;
  int steps = 5, repeats = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      printf(
          "usage: codec_step [--codecs LIST] [--batch B] [--steps N] [--repeats R]\n"
          "Data-parallel step time of the MLP 784-256-256-10 with each gradient codec of LIST (comma-separated;\n"
          "an empty entry is plain fp32), B samples per rank. Launch it with torchrun-style variables, e.g.\n"
          "example: tests/netns/cluster --hosts 4 --ranks-per-host 1 --rate 100mbit -- codec_step\n");
      return 0;
    }
    if (i + 1 >= argc || (a != "--codecs" && a != "--batch" && a != "--steps" && a != "--repeats")) {
      fprintf(stderr, "codec_step: unknown argument '%s'\n", a.c_str());
      return 2;
    }
    const char* v = argv[++i];
    if (a == "--codecs")
      codecList = v;
    else if (a == "--batch")
      batch = strtoull(v, nullptr, 10);
    else if (a == "--steps")
      steps = atoi(v);
    else
      repeats = atoi(v);
  }
  std::vector<std::string> codecs;
  std::stringstream list(codecList);
  for (std::string c; std::getline(list, c, ',');) codecs.push_back(c);
  if (!codecList.empty() && codecList.back() == ',') codecs.push_back("");
  if (codecs.empty() || batch < 1 || steps < 1 || repeats < 1) {
    fprintf(stderr, "codec_step: needs codecs, and positive batch, steps and repeats\n");
    return 2;
  }
  std::unique_ptr<Communicator> comm;
  if (Status st = Communicator::createFromEnvironment(&comm); !st.isOk()) {
    fprintf(stderr, "codec_step: %s\n", st.message().c_str());
    return 1;
  }
  Tensor x(batch, 784);
  std::vector<int> labels(batch);
  Rng rng(static_cast<uint64_t>(comm->rank()) + 1);
  for (size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(rng.uniform());
  for (int& l : labels) l = static_cast<int>(rng.below(10));
  std::vector<std::vector<double>> times(codecs.size());
  std::vector<uint64_t> wire(codecs.size());
  for (int rep = 0; rep < repeats; ++rep) {
    for (size_t c = 0; c < codecs.size(); ++c) {
      Sequential model = makeMlp({784, 256, 256, 10});
      DataParallelConfig config;
      config.codec = codecs[c];
      DataParallel dp(*comm, model, config);
      Status st = dp.init(1);
      for (int s = 0; s <= steps && st.isOk(); ++s) {  // step 0 warms up (buffers, codec state)
        st = comm->barrier();
        const CallCounters before = comm->counters().total();
        const auto start = Clock::now();
        LossResult r;
        if (st.isOk()) st = dp.forwardBackward(x, labels, &r);
        if (st.isOk()) st = dp.step();
        if (s > 0) times[c].push_back(std::chrono::duration<double>(Clock::now() - start).count());
        wire[c] = comm->counters().total().wireBytes - before.wireBytes;
      }
      if (!st.isOk()) {
        fprintf(stderr, "codec_step: %s: %s\n", codecs[c].empty() ? "fp32" : codecs[c].c_str(), st.message().c_str());
        return 1;
      }
    }
  }
  if (comm->rank() == 0) {
    printf("# %d ranks, MLP 784-256-256-10, %zu samples per rank, %d steps x %d repeats (medians)\n", comm->size(),
           batch, steps, repeats);
    printf("%-16s %12s %16s\n", "codec", "step (ms)", "wire B/step");
    for (size_t c = 0; c < codecs.size(); ++c)
      printf("%-16s %12.1f %16llu\n", codecs[c].empty() ? "fp32" : codecs[c].c_str(), 1e3 * median(times[c]),
             static_cast<unsigned long long>(wire[c]));
  }
  return 0;
}
