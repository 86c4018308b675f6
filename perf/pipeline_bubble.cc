// Pipeline bubbles, measured against the formulas and the simulator. Stage compute is emulated: each F, BI and BW
// sleeps for a set time (a stage's device being busy), so up to 8 stages share a few cores honestly; the model
// itself is tiny. Ranks are threads of this process over the in-process transport.
//
//   pipeline_bubble [--ms T] [--steps N]     prints one row per schedule, p and m
//
// sim: the simulator's prediction; formula: (p-1)/(m v + p-1), v = 2 for interleaved 1F1B, a third of it for ZB-H1
// (the paper's, with F = BI = BW).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/pipeline/pipeline_parallel.hpp"
#include "chorus/training/pipeline/simulator.hpp"

using namespace chorus;
using namespace chorus::training;
using namespace chorus::training::pipeline;

namespace {

struct Measured {
  double step = 0, bubble = 0;
  bool ok = true;
  std::string error;
};

// The median step of `steps` (after one warm-up) and its bubble: 1 - compute time / (ranks x step time).
Measured measure(const std::string& schedule, int p, int v, int m, double seconds, int steps) {
  std::vector<std::unique_ptr<Communicator>> comms;
  Measured out;
  if (Status st = Communicator::createLocal(p, &comms); !st.isOk()) return {0, 0, false, st.message()};
  std::vector<std::vector<double>> stepTimes(p), busy(p);
  std::vector<std::string> errors(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&, r] {
      PipelineConfig c;
      c.schedule = schedule;
      c.microBatches = m;
      c.stagesPerRank = v;
      c.emulatedForward = c.emulatedBackwardInput = c.emulatedBackwardWeight = seconds;
      std::unique_ptr<PipelineParallel> pipe;
      // One Linear per stage and ReLUs between them: 2pv - 1 layers, cut by parameter count into pv stages.
      std::vector<size_t> widths(p * v + 1, 16);
      Status st = PipelineParallel::create(
          *comms[r], [&] { return makeMlp(widths); }, c, &pipe);
      Tensor x(4 * m, 16);
      std::vector<int> labels(4 * m, 1);
      for (int s = 0; st.isOk() && s <= steps; ++s) {
        StepResult result;
        st = pipe->trainStep(x, labels, &result);
        if (s == 0 || !st.isOk()) continue;
        stepTimes[r].push_back(result.seconds);
        double compute = 0;
        for (const TracedAction& t : pipe->trace())
          if (isCompute(t.action.op)) compute += t.end - t.start;
        busy[r].push_back(compute);
      }
      errors[r] = st.message();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < p; ++r)
    if (!errors[r].empty()) return {0, 0, false, errors[r]};
  std::vector<double> steps_, bubbles;
  for (int s = 0; s < steps; ++s) {
    double makespan = 0, total = 0;
    for (int r = 0; r < p; ++r) makespan = std::max(makespan, stepTimes[r][s]), total += busy[r][s];
    steps_.push_back(makespan);
    bubbles.push_back(1.0 - total / (p * makespan));
  }
  std::sort(steps_.begin(), steps_.end());
  std::sort(bubbles.begin(), bubbles.end());
  out.step = steps_[steps / 2];
  out.bubble = bubbles[steps / 2];
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double ms = 4;
  int steps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--ms"))
      ms = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps"))
      steps = atoi(argv[i + 1]);
    else
      return fprintf(stderr, "usage: %s [--ms T] [--steps N]\n", argv[0]), 2;
  }
  const double t = ms / 1000;
  printf("# F = BI = BW = %.1f ms emulated per stage; median of %d steps; bubble = idle / (ranks x step)\n", ms, steps);
  printf("%-16s %3s %3s %3s %9s %9s %8s %8s %8s\n", "schedule", "p", "v", "m", "step_ms", "sim_ms", "bubble", "sim",
         "formula");
  for (const char* name : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"}) {
    const int v = strcmp(name, "interleaved-1f1b") ? 1 : 2;
    for (int p : {2, 4, 8}) {
      for (int m : {p, 4 * p}) {
        Schedule s;
        SimulationResult sim;
        StageCosts costs;
        costs.forward = costs.backwardInput = costs.backwardWeight = {t};
        if (!makeSchedule(name, p, m, v, &s).isOk() || !simulateSchedule(s, costs, &sim).isOk()) return 1;
        const Measured got = measure(name, p, v, m, t, steps);
        if (!got.ok) return fprintf(stderr, "%s p %d m %d: %s\n", name, p, m, got.error.c_str()), 1;
        // A rank computes m v stage steps of 3t and idles p-1 of them: (p-1)/(m v + p-1) of the step. ZB-H1's
        // paper brings that to a third (F = BI = BW).
        const double formula = double(p - 1) / (m * v + p - 1);
        printf("%-16s %3d %3d %3d %9.2f %9.2f %8.3f %8.3f %8.3f\n", name, p, v, m, got.step * 1e3, sim.makespan * 1e3,
               got.bubble, sim.bubble(), strcmp(name, "zb-h1") ? formula : formula / 3);
        fflush(stdout);
      }
    }
  }
  return 0;
}
