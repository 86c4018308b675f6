// Pipeline schedules as data: every generator gives a valid, deadlock-free schedule for every rank count,
// micro-batch count (fewer than the ranks too) and virtual-stage count; the validator finds what is wrong with a
// broken one; the simulator gives each schedule's known bubble and activation memory.
#include <gtest/gtest.h>

#include <algorithm>

#include "chorus/training/pipeline/schedule.hpp"
#include "chorus/training/pipeline/simulator.hpp"

namespace chorus::training::pipeline {
namespace {

Schedule make(const std::string& name, int p, int m, int v = 1) {
  Schedule s;
  Status st = makeSchedule(name, p, m, v, &s);
  EXPECT_TRUE(st.isOk()) << st.message();
  return s;
}

SimulationResult simulate(const Schedule& s, const StageCosts& costs = {}) {
  SimulationResult r;
  Status st = simulateSchedule(s, costs, &r);
  EXPECT_TRUE(st.isOk()) << st.message();
  return r;
}

TEST(PipelineSchedule, EveryScheduleIsValidForEveryShape) {
  for (const auto& g : scheduleGenerators()) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 4 * p + 1; ++m) {
        for (int v : g.virtualStages ? std::vector<int>{2, 3} : std::vector<int>{1}) {
          Schedule s;
          Status st = makeSchedule(g.name, p, m, v, &s);  // makeSchedule validates
          EXPECT_TRUE(st.isOk()) << st.message();
          if (!st.isOk()) break;
          EXPECT_EQ(s.stages(), p * v);
        }
      }
    }
  }
}

TEST(PipelineSchedule, NamesAndArgumentsAreChecked) {
  const auto names = scheduleNames();
  for (const char* want : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  Schedule s;
  Status st = makeSchedule("2f2b", 2, 2, 1, &s);
  EXPECT_NE(st.message().find("unknown pipeline schedule '2f2b'"), std::string::npos) << st.message();
  EXPECT_NE(makeSchedule("1f1b", 2, 0, 1, &s).message().find("at least 1"), std::string::npos);
  EXPECT_NE(makeSchedule("1f1b", 2, 2, 2, &s).message().find("takes no virtual stages"), std::string::npos);
  EXPECT_NE(makeSchedule("interleaved-1f1b", 2, 2, 1, &s).message().find("needs virtual stages"), std::string::npos);
}

TEST(PipelineSchedule, ValidatorNamesWhatIsBroken) {
  const Schedule good = make("1f1b", 3, 4);
  auto expectError = [](const Schedule& s, const std::string& want) {
    Status st = validateSchedule(s);
    EXPECT_FALSE(st.isOk()) << "accepted:\n" << toString(s);
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  };
  auto erase = [&](int rank, Op op, int mb, int stage) {
    Schedule s = good;
    auto& a = s.actions[rank];
    a.erase(std::find_if(a.begin(), a.end(),
                         [&](const Action& x) { return x.op == op && x.microBatch == mb && x.stage == stage; }));
    return s;
  };
  expectError(erase(1, Op::kForward, 2, 1), "no F 2.1");
  expectError(erase(1, Op::kRecvActivation, 0, 1), "F 0.1 before its input arrives");
  expectError(erase(0, Op::kSendActivation, 3, 0), "F 3.0's output is not sent once");
  Schedule noStep = erase(2, Op::kOptimizerStep, -1, -1);
  expectError(noStep, "no optimizer step");
  // Two sends to the same rank in swapped order meet the wrong receives.
  Schedule crossed = make("gpipe", 2, 2);
  crossed.actions[0] = {{Op::kForward, 0, 0},           {Op::kForward, 1, 0},
                        {Op::kSendActivation, 1, 0, 1}, {Op::kSendActivation, 0, 0, 1},
                        {Op::kRecvGradient, 0, 0, 1},   {Op::kBackward, 0, 0},
                        {Op::kSendGradient, 0, 0, 1},   {Op::kRecvGradient, 1, 0, 1},
                        {Op::kBackward, 1, 0},          {Op::kOptimizerStep}};
  crossed.actions[0].erase(crossed.actions[0].begin() + 6);  // stage 0 sends no gradient
  expectError(crossed, "rank 0's sA 1.0 to rank 1 meets rank 1's rA 0.1 from rank 0, not rA 1.1 from rank 0");
}

TEST(PipelineSchedule, ValidatorFindsADeadlock) {
  // 1F1B on two ranks with rank 1 receiving micro-batch 1's input before it runs micro-batch 0's backward: rank 0
  // sends micro-batch 1 only after micro-batch 0's gradient comes back, so both wait for ever.
  Schedule dead = make("1f1b", 2, 2);
  dead.actions[0] = {{Op::kForward, 0, 0},         {Op::kSendActivation, 0, 0, 1}, {Op::kRecvGradient, 0, 0, 1},
                     {Op::kBackward, 0, 0},        {Op::kForward, 1, 0},           {Op::kSendActivation, 1, 0, 1},
                     {Op::kRecvGradient, 1, 0, 1}, {Op::kBackward, 1, 0},          {Op::kOptimizerStep}};
  dead.actions[1] = {{Op::kRecvActivation, 0, 1, 0}, {Op::kForward, 0, 1},         {Op::kRecvActivation, 1, 1, 0},
                     {Op::kForward, 1, 1},           {Op::kBackward, 0, 1},        {Op::kSendGradient, 0, 1, 0},
                     {Op::kBackward, 1, 1},          {Op::kSendGradient, 1, 1, 0}, {Op::kOptimizerStep}};
  Status st = validateSchedule(dead);
  EXPECT_NE(st.message().find("deadlock: rank 0 waits for rG 0.0 from rank 1; rank 1 waits for rA 1.1 from rank 0"),
            std::string::npos)
      << st.message();
  // A receive and a send side by side form one group and complete together, in either order.
  Schedule split = make("1f1b", 2, 1);
  split.actions[0] = {{Op::kForward, 0, 0},
                      {Op::kRecvGradient, 0, 0, 1},
                      {Op::kSendActivation, 0, 0, 1},
                      {Op::kBackward, 0, 0},
                      {Op::kOptimizerStep}};
  EXPECT_TRUE(validateSchedule(split).isOk()) << validateSchedule(split).message();
}

TEST(PipelineSchedule, BubblesMatchTheirFormulas) {
  // Equal stages, F = BI = BW = 1 (B = 2), free transfers: 1F1B and GPipe idle (p-1)/(m+p-1) of the step, i.e.
  // (p-1)/m of the ideal time; interleaving divides the idle time by v.
  for (int p : {2, 3, 4, 8}) {
    for (int m : {1, p - 1, p, 4 * p}) {
      if (m < 1) continue;
      for (const char* name : {"gpipe", "1f1b"}) {
        const SimulationResult r = simulate(make(name, p, m));
        EXPECT_NEAR(r.makespan, 3.0 * (m + p - 1), 1e-9) << name << " p " << p << " m " << m;
        EXPECT_NEAR(r.bubble(), double(p - 1) / (m + p - 1), 1e-9) << name << " p " << p << " m " << m;
      }
      for (int v : {2, 4}) {
        if (m % p) continue;  // Megatron's order; otherwise the last round is short
        StageCosts chunk;     // each virtual stage does 1/v of a rank's work
        chunk.forward = chunk.backwardInput = chunk.backwardWeight = {1.0 / v};
        const SimulationResult r = simulate(make("interleaved-1f1b", p, m, v), chunk);
        const double ideal = 3.0 * m, idle = 3.0 * (p - 1) / v;
        EXPECT_NEAR(r.makespan, ideal + idle, 1e-9) << "p " << p << " m " << m << " v " << v;
      }
      // Zero bubble H1: weight gradients fill two thirds of the 1F1B bubble once m >= p (the paper's
      // (p-1)(F+B-W)), and some of it below.
      const SimulationResult zb = simulate(make("zb-h1", p, m)), ofob = simulate(make("1f1b", p, m));
      if (m >= p) {
        EXPECT_NEAR(zb.makespan, 3.0 * m + (p - 1), 1e-9) << "p " << p << " m " << m;
      }
      if (p > 1) {
        EXPECT_LT(zb.makespan, ofob.makespan) << "p " << p << " m " << m;
      }
    }
  }
}

TEST(PipelineSchedule, ActivationMemory) {
  for (int p : {2, 4}) {
    for (int m : {1, p, 4 * p}) {
      const SimulationResult gpipe = simulate(make("gpipe", p, m)), ofob = simulate(make("1f1b", p, m)),
                             zb = simulate(make("zb-h1", p, m));
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(gpipe.peakActivations[r], m);
        EXPECT_EQ(ofob.peakActivations[r], std::min(m, p - r)) << "p " << p << " m " << m << " rank " << r;
        // ZB-H1 keeps activations until the weight gradient: up to 1F1B's largest (rank 0's) on every rank.
        EXPECT_EQ(zb.peakActivations[r], std::min(m, p)) << "p " << p << " m " << m << " rank " << r;
      }
    }
  }
}

TEST(PipelineSchedule, TransfersAddToTheCriticalPath) {
  StageCosts costs;
  costs.transfer = 0.5;
  // One micro-batch crosses p-1 boundaries forward and p-1 backward.
  for (int p : {2, 4}) EXPECT_NEAR(simulate(make("1f1b", p, 1), costs).makespan, 3.0 * p + 2 * (p - 1) * 0.5, 1e-9);
}

}  // namespace
}  // namespace chorus::training::pipeline
