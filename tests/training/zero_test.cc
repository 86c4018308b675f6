// ZeRO stages 1-3 equal data parallelism bitwise (deterministic mode) on a model whose parameter count is prime;
// they move the bytes and keep the memory the ZeRO paper's formulas give; a gathered checkpoint restores training
// on another rank count.
#include "chorus/training/zero.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "chorus/training/data_parallel.hpp"
#include "core/settings.hpp"
#include "training/fixtures.hpp"
#include "training/ranks.hpp"

namespace chorus::testing {
namespace {

using training::Checkpoint;
using training::Trainer;

constexpr size_t kRows = 6;
constexpr size_t kParams = 131;

Status train(Trainer& t, int rank, int firstStep, int steps) {
  const auto widths = primeMlpWidths();
  for (int s = firstStep; s < firstStep + steps; ++s) {
    Batch b = makeBatch(s, rank, kRows, widths.front(), static_cast<int>(widths.back()));
    training::LossResult loss;
    CHORUS_TRY(t.forwardBackward(b.x, b.labels, &loss));
    CHORUS_TRY(t.step());
  }
  return Status::ok();
}

// Trains with `stage` (0 = DP) and returns the gathered checkpoint.
std::string trainAndExport(Communicator& comm, int stage, int steps, Checkpoint* out, bool prefetch = true) {
  comm.setDeterministic(true);
  training::Sequential model = training::makeMlp(primeMlpWidths());
  auto trainer = makeTestTrainer(comm, model, stage, prefetch);
  Status st = trainer->init(kInitSeed);
  if (st.isOk()) st = train(*trainer, comm.rank(), 0, steps);
  if (st.isOk()) st = trainer->exportCheckpoint(out);
  return st.isOk() ? "" : st.message();
}

class ZeroRanks : public ::testing::TestWithParam<std::tuple<int, int, RankKind>> {};

TEST_P(ZeroRanks, EqualsDataParallelBitwise) {
  const auto [stage, n, kind] = GetParam();
  std::string failures = onRanks(n, kind, [stage = stage](Communicator& comm) -> std::string {
    Checkpoint dp, zero;
    if (std::string e = trainAndExport(comm, 0, 3, &dp); !e.empty()) return "DP: " + e;
    if (std::string e = trainAndExport(comm, stage, 3, &zero); !e.empty()) return "ZeRO: " + e;
    if (dp.params.size() != kParams) return "DP checkpoint has " + std::to_string(dp.params.size()) + " parameters";
    return sameCheckpoint(zero, dp);
  });
  EXPECT_EQ(failures, "");
}

INSTANTIATE_TEST_SUITE_P(Stages, ZeroRanks,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values(3, 4),
                                            ::testing::Values(RankKind::kThreads, RankKind::kProcesses)),
                         [](const auto& info) {
                           return "stage" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "_" + rankKindName(std::get<2>(info.param));
                         });

TEST(Zero, PaddingGivesEveryRankAnEqualShard) {
  std::string failures = onRanks(4, RankKind::kThreads, [](Communicator& comm) -> std::string {
    training::Sequential model = training::makeMlp(primeMlpWidths());
    training::ZeroConfig c;
    c.stage = 3;
    training::Zero zero(comm, model, c);
    // Units of 54, 42 and 35 parameters: shards of 14, 11 and 9, padded to 56 + 44 + 36 = 136.
    if (zero.paddedCount() != 136) return "padded count " + std::to_string(zero.paddedCount());
    size_t owned = 0;
    for (const auto& u : zero.units()) owned += u.owned;
    size_t total = owned;
    Status st = comm.allReduce(&total, &total, 1, DataType::kUint64, RedOp::sum());
    if (!st.isOk()) return st.message();
    if (total != kParams) return "ranks own " + std::to_string(total) + " parameters in all";
    return "";
  });
  EXPECT_EQ(failures, "");
}

TEST(Zero, PrefetchChangesNeitherResultsNorBytes) {
  std::string failures = onRanks(3, RankKind::kThreads, [](Communicator& comm) -> std::string {
    Checkpoint with, without;
    comm.resetCounters();
    if (std::string e = trainAndExport(comm, 3, 2, &with, true); !e.empty()) return e;
    const uint64_t bytesWith = comm.counters().total().wireBytes;
    comm.resetCounters();
    if (std::string e = trainAndExport(comm, 3, 2, &without, false); !e.empty()) return e;
    if (comm.counters().total().wireBytes != bytesWith) return "prefetch changed the bytes";
    return sameCheckpoint(with, without);
  });
  EXPECT_EQ(failures, "");
}

// Bytes of one training step (after init), summed over the ranks.
struct StepBytes {
  double payload = 0, wire = 0;
};
std::string measureStep(Communicator& comm, int stage, StepBytes* out) {
  comm.setDeterministic(true);
  training::Sequential model = training::makeMlp(primeMlpWidths());
  auto trainer = makeTestTrainer(comm, model, stage);
  Status st = trainer->init(kInitSeed);
  comm.resetCounters();
  if (st.isOk()) st = train(*trainer, comm.rank(), 0, 1);
  if (!st.isOk()) return st.message();
  const CallCounters c = comm.counters().total();
  double sums[2] = {static_cast<double>(c.payloadBytes), static_cast<double>(c.wireBytes)};
  out->payload = sums[0];  // the same on every rank
  st = comm.allReduce(sums, sums, 2, DataType::kFloat64, RedOp::sum());
  out->wire = sums[1];
  return st.isOk() ? "" : st.message();
}

TEST(Zero, BytesFollowTheFormulas) {
  // The bandwidth-optimal algorithms (direct ReduceScatter and AllGather, direct AllReduce) are forced so the
  // formulas of the ZeRO paper hold exactly: DP 2 (N-1) P, ZeRO-1/2 2 (N-1) P', ZeRO-3 3 (N-1) P' (x 4 bytes).
  setenv("CHORUS_ALGO", "allreduce:direct", 1);
  reloadSettings();
  for (int n : {3, 4}) {
    const double padded = n == 3 ? 132 : 136;  // 18+14+12 x 3, 14+11+9 x 4... see PaddingGivesEveryRankAnEqualShard
    std::string failures = onRanks(n, RankKind::kThreads, [&](Communicator& comm) -> std::string {
      StepBytes dp, z1, z2, z3;
      for (auto [stage, bytes] : {std::pair{0, &dp}, {1, &z1}, {2, &z2}, {3, &z3}})
        if (std::string e = measureStep(comm, stage, bytes); !e.empty()) return e;
      const double p = kParams * 4.0, pp = padded * 4.0;
      auto check = [](const char* what, double got, double want) {
        return got == want ? std::string()
                           : std::string(what) + " " + std::to_string(got) + " != " + std::to_string(want) + "; ";
      };
      std::string err =
          check("DP payload", dp.payload, p) + check("DP wire", dp.wire, 2.0 * (n - 1) * p) +
          check("ZeRO-1 payload", z1.payload, 2 * pp) + check("ZeRO-1 wire", z1.wire, 2.0 * (n - 1) * pp) +
          check("ZeRO-2 wire", z2.wire, 2.0 * (n - 1) * pp) + check("ZeRO-3 payload", z3.payload, 3 * pp) +
          check("ZeRO-3 wire", z3.wire, 3.0 * (n - 1) * pp) + check("ZeRO-3 / ZeRO-1", z3.wire / z1.wire, 1.5);
      return err;
    });
    EXPECT_EQ(failures, "") << n << " ranks";
  }
  unsetenv("CHORUS_ALGO");
  reloadSettings();
}

TEST(Zero, MemoryFollowsThePaper) {
  // fp32 Adam, P' padded parameters, N ranks: optimizer state 8 P'/N for every stage, gradients 4 P' (stage 1) or
  // 4 P'/N, parameters 4 P' (stages 1-2) or 4 P'/N; DP keeps 4 P, 4 P and 8 P.
  const int n = 4;
  const size_t pp = 136, shard = pp / n, largestUnit = 56 * 4;
  std::string failures = onRanks(n, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    std::string err;
    for (int stage = 0; stage <= 3; ++stage) {
      training::Sequential model = training::makeMlp(primeMlpWidths());
      auto trainer = makeTestTrainer(comm, model, stage);
      Status st = trainer->init(kInitSeed);
      if (st.isOk()) st = train(*trainer, comm.rank(), 0, 1);
      if (!st.isOk()) return st.message();
      const training::MemoryReport m = trainer->memory();
      const size_t params = stage == 0 ? kParams : stage < 3 ? pp : shard;
      const size_t grads = stage == 0 ? kParams : stage == 1 ? pp : shard;
      const size_t state = stage == 0 ? kParams : shard;
      if (m.paramBytes != 4 * params || m.gradBytes != 4 * grads || m.optimizerBytes != 8 * state)
        err += "stage " + std::to_string(stage) + ": " + std::to_string(m.paramBytes) + "/" +
               std::to_string(m.gradBytes) + "/" + std::to_string(m.optimizerBytes) + "; ";
      // ZeRO-3 holds at most one gathered unit and the one it prefetches.
      if (stage == 3 && (m.peakGatheredBytes == 0 || m.peakGatheredBytes > 2 * largestUnit))
        err += "ZeRO-3 peak gathered " + std::to_string(m.peakGatheredBytes) + "; ";
    }
    return err;
  });
  EXPECT_EQ(failures, "");
}

TEST(Zero, CheckpointRestoresOnAnotherRankCount) {
  // 4 ranks train 2 steps with ZeRO-2 and save; 3 ranks load it into ZeRO-3 and into DP and train on: both give
  // the same bits, and the loaded state is what was saved.
  const std::string path = "/tmp/chorus-zero-ckpt-" + std::to_string(getpid());
  std::string failures = onRanks(4, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    Checkpoint saved;
    if (std::string e = trainAndExport(comm, 2, 2, &saved); !e.empty()) return e;
    if (comm.rank() != 0) return "";
    Status st = training::writeCheckpoint(path, saved);
    return st.isOk() ? "" : st.message();
  });
  ASSERT_EQ(failures, "");
  failures = onRanks(3, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    comm.setDeterministic(true);
    Checkpoint loaded, results[2];
    Status st = training::readCheckpoint(path, &loaded);
    if (!st.isOk()) return st.message();
    if (loaded.step != 2) return "loaded step " + std::to_string(loaded.step);
    for (int i = 0; i < 2; ++i) {
      training::Sequential model = training::makeMlp(primeMlpWidths());
      auto trainer = makeTestTrainer(comm, model, i == 0 ? 3 : 0);
      Checkpoint roundTrip;
      st = trainer->importCheckpoint(loaded);
      if (st.isOk()) st = trainer->exportCheckpoint(&roundTrip);
      if (!st.isOk()) return st.message();
      if (std::string d = sameCheckpoint(roundTrip, loaded); !d.empty()) return "round trip: " + d;
      st = train(*trainer, comm.rank(), 2, 2);
      if (st.isOk()) st = trainer->exportCheckpoint(&results[i]);
      if (!st.isOk()) return st.message();
    }
    return sameCheckpoint(results[0], results[1]);
  });
  unlink(path.c_str());
  EXPECT_EQ(failures, "");
}

TEST(Zero, CorruptCheckpointIsRejected) {
  const std::string path = "/tmp/chorus-zero-bad-" + std::to_string(getpid());
  FILE* f = fopen(path.c_str(), "wb");
  fputs("CHORUSCK but nothing else", f);
  fclose(f);
  Checkpoint c;
  Status st = training::readCheckpoint(path, &c);
  unlink(path.c_str());
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("chorus checkpoint"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace chorus::testing
