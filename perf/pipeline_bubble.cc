// Pipeline bubbles, measured against the formulas and the simulator. Ranks are threads of this process over the
// in-process transport. Stage compute is emulated by default: each F, BI and BW sleeps for a set time (a stage's
// device being busy), so up to 8 stages share a few cores honestly, and the model itself is tiny. With --real,
// 2 ranks run a real MLP.
//
//   pipeline_bubble [--ms T] [--steps N]     emulated compute: one row per schedule, p and m
//   pipeline_bubble --real [--steps N]      real compute on 2 ranks, the simulator fed the measured stage times
//
// sim: the simulator's prediction. seen: the simulator fed the compute times the run measured. formula:
// (p-1)/(m v + p-1), v = 2 for interleaved 1F1B; for ZB-H1 the paper's (p-1)(F+B-W) idle per rank, that is
// (p-1)/(3m + p-1) with F = BI = BW (m >= p).
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
  StageCosts costs;  // per stage: the mean F, B (as BI, BW 0) or BI and BW measured
  bool ok = true;
  std::string error;
};

struct Setup {
  std::string schedule;
  int p = 2, v = 1, m = 2;
  std::vector<size_t> widths;  // the MLP, cut by parameter count into p v stages
  size_t rows = 4;             // per micro-batch
  double emulated = 0;         // seconds of sleep per F, BI and BW
};

// The median step of `steps` (after one warm-up), its bubble (1 - compute time / (ranks x step time)) and the
// stage costs seen.
Measured measure(const Setup& setup, int steps) {
  const int p = setup.p, stages = setup.p * setup.v;
  std::vector<std::unique_ptr<Communicator>> comms;
  Measured out;
  if (Status st = Communicator::createLocal(p, &comms); !st.isOk()) return {0, 0, {}, false, st.message()};
  std::vector<std::vector<double>> stepTimes(p), busy(p);
  // Per stage and op: total seconds and count (each rank writes its own stages only).
  std::vector<std::vector<double>> seconds(stages, std::vector<double>(4, 0.0)), count = seconds;
  std::vector<std::string> errors(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&, r] {
      PipelineConfig c;
      c.schedule = setup.schedule;
      c.microBatches = setup.m;
      c.stagesPerRank = setup.v;
      c.emulatedForward = c.emulatedBackwardInput = c.emulatedBackwardWeight = setup.emulated;
      std::unique_ptr<PipelineParallel> pipe;
      Status st = PipelineParallel::create(
          *comms[r], [&] { return makeMlp(setup.widths); }, c, &pipe);
      Tensor x(setup.rows * setup.m, setup.widths.front());
      for (size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i % 7) * 0.1f;
      std::vector<int> labels(x.rows(), 1);
      for (int s = 0; st.isOk() && s <= steps; ++s) {
        StepResult result;
        st = pipe->trainStep(x, labels, &result);
        if (s == 0 || !st.isOk()) continue;
        stepTimes[r].push_back(result.seconds);
        double compute = 0;
        for (const TracedAction& t : pipe->trace()) {
          if (!isCompute(t.action.op)) continue;
          compute += t.end - t.start;
          seconds[t.action.stage][static_cast<int>(t.action.op)] += t.end - t.start;
          count[t.action.stage][static_cast<int>(t.action.op)] += 1;
        }
        busy[r].push_back(compute);
      }
      errors[r] = st.message();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < p; ++r)
    if (!errors[r].empty()) return {0, 0, {}, false, errors[r]};
  std::vector<double> makespans, bubbles;
  for (int s = 0; s < steps; ++s) {
    double makespan = 0, total = 0;
    for (int r = 0; r < p; ++r) makespan = std::max(makespan, stepTimes[r][s]), total += busy[r][s];
    makespans.push_back(makespan);
    bubbles.push_back(1.0 - total / (p * makespan));
  }
  std::sort(makespans.begin(), makespans.end());
  std::sort(bubbles.begin(), bubbles.end());
  out.step = makespans[steps / 2];
  out.bubble = bubbles[steps / 2];
  auto mean = [&](int stage, Op op) {
    const int k = static_cast<int>(op);
    return count[stage][k] > 0 ? seconds[stage][k] / count[stage][k] : 0.0;
  };
  out.costs.forward.clear(), out.costs.backwardInput.clear(), out.costs.backwardWeight.clear();
  for (int stage = 0; stage < stages; ++stage) {
    out.costs.forward.push_back(mean(stage, Op::kForward));
    out.costs.backwardInput.push_back(mean(stage, Op::kBackward) + mean(stage, Op::kBackwardInput));
    out.costs.backwardWeight.push_back(mean(stage, Op::kBackwardWeight));
  }
  return out;
}

const char* kSchedules[] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"};
int stagesPerRank(const std::string& schedule) { return schedule == "interleaved-1f1b" ? 2 : 1; }

// Emulated compute: every F, BI and BW sleeps `t`; the simulator gets exactly that.
int emulated(double t, int steps) {
  printf("# F = BI = BW = %.1f ms emulated per stage; median of %d steps; bubble = idle / (ranks x step)\n", t * 1e3,
         steps);
  printf("%-16s %3s %3s %3s %9s %9s %9s %8s %8s %8s\n", "schedule", "p", "v", "m", "step_ms", "sim_ms", "seen_ms",
         "bubble", "sim", "formula");
  for (const char* name : kSchedules) {
    const int v = stagesPerRank(name);
    for (int p : {2, 4, 8}) {
      for (int m : {p, 4 * p}) {
        Schedule s;
        SimulationResult sim;
        StageCosts costs;
        costs.forward = costs.backwardInput = costs.backwardWeight = {t};
        if (!makeSchedule(name, p, m, v, &s).isOk() || !simulateSchedule(s, costs, &sim).isOk()) return 1;
        // One 16 x 16 Linear per stage and ReLUs between them: 2pv - 1 layers.
        const Measured got = measure({name, p, v, m, std::vector<size_t>(p * v + 1, 16), 4, t}, steps);
        if (!got.ok) return fprintf(stderr, "%s p %d m %d: %s\n", name, p, m, got.error.c_str()), 1;
        // A rank computes m v stage steps of 3t and idles p-1 of them: (p-1)/(m v + p-1) of the step. ZB-H1
        // idles p-1 times t: (p-1)/(3m + p-1).
        const double formula =
            strcmp(name, "zb-h1") ? double(p - 1) / (m * v + p - 1) : double(p - 1) / (3 * m + p - 1);
        // The simulator again, fed the compute times the run saw (a sleep ends late): what is left between this
        // and the measured step is the messages' cost.
        SimulationResult seen;
        if (!simulateSchedule(s, got.costs, &seen).isOk()) return 1;
        printf("%-16s %3d %3d %3d %9.2f %9.2f %9.2f %8.3f %8.3f %8.3f\n", name, p, v, m, got.step * 1e3,
               sim.makespan * 1e3, seen.makespan * 1e3, got.bubble, sim.bubble(), formula);
        fflush(stdout);
      }
    }
  }
  return 0;
}

// Real compute on 2 ranks: the simulator gets the stage times the run measured (mean per stage and op) and predicts
// the step.
int real(int steps) {
  const std::vector<size_t> widths{512, 512, 512, 512, 512, 10};
  const size_t rows = 64;
  printf("# real compute: MLP 512-512-512-512-512-10, %zu rows per micro-batch, 2 ranks; median of %d steps\n", rows,
         steps);
  printf("%-16s %3s %3s %3s %9s %9s %8s %8s\n", "schedule", "p", "v", "m", "step_ms", "sim_ms", "bubble", "sim");
  for (const char* name : kSchedules) {
    const int v = stagesPerRank(name);
    for (int m : {2, 8}) {
      const Measured got = measure({name, 2, v, m, widths, rows, 0}, steps);
      if (!got.ok) return fprintf(stderr, "%s m %d: %s\n", name, m, got.error.c_str()), 1;
      Schedule s;
      SimulationResult sim;
      if (!makeSchedule(name, 2, m, v, &s).isOk() || !simulateSchedule(s, got.costs, &sim).isOk()) return 1;
      printf("%-16s %3d %3d %3d %9.2f %9.2f %8.3f %8.3f\n", name, 2, v, m, got.step * 1e3, sim.makespan * 1e3,
             got.bubble, sim.bubble());
      fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  double ms = 4;
  int steps = 5;
  bool realCompute = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--real")) {
      realCompute = true;
    } else if (i + 1 < argc && !strcmp(argv[i], "--ms")) {
      ms = atof(argv[++i]);
    } else if (i + 1 < argc && !strcmp(argv[i], "--steps")) {
      steps = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--real] [--ms T] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 1 || !(ms > 0)) return fprintf(stderr, "--steps and --ms must be positive\n"), 2;
  return realCompute ? real(steps) : emulated(ms / 1000, steps);
}
