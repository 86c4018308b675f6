// Gradient codecs in data parallelism: the casts round as the hardware does; top-k keeping every entry is plain
// data parallelism, bit for bit; top-k keeping a few equals a one-process emulation of the same selection and
// error feedback, bit for bit; bf16 stays within its precision of fp32 and moves half the bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "chorus/training/data_parallel.hpp"
#include "chorus/training/random.hpp"
#include "chorus/training/zero.hpp"
#include "training/fixtures.hpp"
#include "training/ranks.hpp"

namespace chorus::training::compress {
namespace {

using chorus::testing::Batch;
using chorus::testing::kInitSeed;
using chorus::testing::makeBatch;
using chorus::testing::onRanks;
using chorus::testing::RankKind;

// One rank: the codec's sum is the rounding of the input.
std::vector<float> roundTrip(const std::string& spec, const std::vector<float>& in) {
  std::vector<float> out = in;
  const std::string err = onRanks(1, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    std::unique_ptr<GradientCodec> codec;
    if (Status st = makeCodec(spec, &codec); !st.isOk()) return st.message();
    Request r = codec->start(comm, 0, out.data(), out.size());
    if (Status st = r.wait(); !st.isOk()) return st.message();
    return codec->finish(0, out.data(), out.size()).message();
  });
  EXPECT_EQ(err, "");
  return out;
}

TEST(GradientCodec, CastsRoundToNearestEven) {
  const float inf = INFINITY;
  // bf16 keeps 8 mantissa bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 (odd): to 1; 1 + 3 x 2^-8 to 1 + 2^-6.
  EXPECT_EQ(roundTrip("bf16", {1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.5f, 3.0e38f}),
            (std::vector<float>{1.0f, 1.0f, 1.0f + 0x1p-6f, -2.5f, 0x1.c4p127f}));  // 3e38: 226 x 2^120
  // fp16: 11 significant bits, largest 65504, smallest subnormal 2^-24.
  EXPECT_EQ(roundTrip("fp16", {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65519.0f, 65520.0f, -0x1p-25f, 0x1p-24f,
                               1.5f * 0x1p-24f, 0x1p-14f}),
            (std::vector<float>{1.0f, 1.0f + 0x1p-9f, 65504.0f, 65504.0f, inf, -0.0f, 0x1p-24f, 0x1p-23f, 0x1p-14f}));
  EXPECT_TRUE(std::isnan(roundTrip("bf16", {NAN})[0]));
  EXPECT_TRUE(std::isnan(roundTrip("fp16", {NAN})[0]));
}

TEST(GradientCodec, SpecsAreChecked) {
  std::unique_ptr<GradientCodec> codec;
  EXPECT_NE(makeCodec("gzip", &codec).message().find("unknown gradient codec 'gzip' (known:"), std::string::npos);
  EXPECT_NE(makeCodec("topk:2", &codec).message().find("needs a fraction in (0, 1]"), std::string::npos);
  EXPECT_NE(makeCodec("bf16:3", &codec).message().find("takes no argument"), std::string::npos);
  EXPECT_TRUE(makeCodec("topk:0.01", &codec).isOk());
}

constexpr int kRanks = 3, kSteps = 3;
constexpr size_t kRows = 4;

// Trains kSteps steps of data parallelism with `codec`; returns "" or an error, rank 0's parameters and wire bytes.
std::string train(Communicator& comm, const std::string& codec, std::vector<float>* params, uint64_t* wire) {
  const auto widths = chorus::testing::primeMlpWidths();
  Sequential model = makeMlp(widths);
  DataParallelConfig config;
  config.optimizer = chorus::testing::testOptimizer();
  config.codec = codec;
  config.bucketCapBytes = 200;  // several buckets
  DataParallel dp(comm, model, config);
  if (Status st = dp.init(kInitSeed); !st.isOk()) return st.message();
  const uint64_t before = comm.counters().total().wireBytes;
  for (int s = 0; s < kSteps; ++s) {
    Batch b = makeBatch(s, comm.rank(), kRows, widths.front(), static_cast<int>(widths.back()));
    LossResult r;
    if (Status st = dp.forwardBackward(b.x, b.labels, &r); !st.isOk()) return st.message();
    if (Status st = dp.step(); !st.isOk()) return st.message();
  }
  if (comm.rank() == 0) *params = dp.params(), *wire = comm.counters().total().wireBytes - before;
  return "";
}

std::vector<float> trained(const std::string& codec, uint64_t* wire = nullptr) {
  std::vector<float> params;
  uint64_t bytes = 0;
  EXPECT_EQ(
      onRanks(kRanks, RankKind::kThreads, [&](Communicator& comm) { return train(comm, codec, &params, &bytes); }), "")
      << codec;
  if (wire) *wire = bytes;
  return params;
}

TEST(GradientCodec, TopKOfEverythingIsPlainDataParallelism) {
  const auto want = chorus::testing::referenceDataParallel(chorus::testing::primeMlpWidths(), kRanks, kSteps, 1, kRows);
  EXPECT_EQ(chorus::testing::sameBits(trained("topk:1"), want), "");
}

// One process doing what the ranks do with top-k: per rank and bucket, add the held-back residual, keep the k
// largest magnitudes (ties: lower index), hold back the rest; sum the kept entries in rank order.
std::vector<float> topKReference(double fraction) {
  const auto widths = chorus::testing::primeMlpWidths();
  Sequential model = makeMlp(widths);
  const size_t n = model.paramCount();
  std::vector<float> params(n), grads(n), rankGrads(n);
  model.initParams(params.data(), kInitSeed);
  // The buckets DataParallel plans for this model and cap.
  Sequential probeModel = makeMlp(widths);
  DataParallelConfig probeConfig;
  probeConfig.bucketCapBytes = 200;
  std::vector<DataParallel::Bucket> buckets;
  EXPECT_EQ(onRanks(1, RankKind::kThreads,
                    [&](Communicator& comm) {
                      buckets = DataParallel(comm, probeModel, probeConfig).buckets();
                      return std::string();
                    }),
            "");
  std::vector<std::vector<float>> residual(kRanks, std::vector<float>(n, 0.0f));
  auto optimizer = makeOptimizer(chorus::testing::testOptimizer(), n);
  const float scale = 1.0f / kRanks;
  for (int s = 0; s < kSteps; ++s) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    std::vector<std::vector<std::pair<uint32_t, float>>> kept(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      std::fill(rankGrads.begin(), rankGrads.end(), 0.0f);
      FlatAccess access(model, params.data(), rankGrads.data());
      Batch b = makeBatch(s, r, kRows, widths.front(), static_cast<int>(widths.back()));
      Tensor logits, dlogits;
      (void)model.forward(b.x, access, &logits);
      softmaxCrossEntropy(logits, b.labels, &dlogits);
      (void)model.backward(dlogits, access);
      for (const auto& bucket : buckets) {
        const size_t len = bucket.end - bucket.begin;
        const size_t k = std::max<size_t>(1, static_cast<size_t>(std::ceil(fraction * static_cast<double>(len))));
        std::vector<float> acc(len);
        for (size_t i = 0; i < len; ++i) acc[i] = residual[r][bucket.begin + i] += rankGrads[bucket.begin + i] * scale;
        std::vector<uint32_t> order(len);
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(),
                         [&](uint32_t a, uint32_t c) { return std::fabs(acc[a]) > std::fabs(acc[c]); });
        for (size_t j = 0; j < k; ++j) {
          residual[r][bucket.begin + order[j]] = 0.0f;
        }
        std::sort(order.begin(), order.begin() + static_cast<long>(k));
        for (size_t j = 0; j < k; ++j)
          kept[r].push_back({static_cast<uint32_t>(bucket.begin + order[j]), acc[order[j]]});
      }
    }
    // Summed bucket by bucket, each in rank order: per element, the ranks' entries in rank order.
    for (int r = 0; r < kRanks; ++r)
      for (auto [i, v] : kept[r]) grads[i] += v;
    optimizer->beginStep();
    optimizer->update(params.data(), grads.data(), 0, n);
  }
  return params;
}

TEST(GradientCodec, TopKWithErrorFeedbackIsTheSameSelectionEverywhere) {
  EXPECT_EQ(chorus::testing::sameBits(trained("topk:0.1"), topKReference(0.1)), "");
}

TEST(GradientCodec, Bf16IsCloseAndHalvesTheWire) {
  uint64_t fp32Wire = 0, bf16Wire = 0;
  const auto fp32 = trained("", &fp32Wire), bf16 = trained("bf16", &bf16Wire);
  // Adam's first steps move each parameter by about lr whatever the gradient's size: bf16 rounding (2^-8 relative)
  // of the gradients changes the update direction little.
  EXPECT_EQ(chorus::testing::closeTo(bf16, fp32, 0.0f, 0.01f * 3), "");
  EXPECT_GT(fp32Wire, 0u);
  EXPECT_EQ(bf16Wire * 2, fp32Wire) << "bf16 " << bf16Wire << " fp32 " << fp32Wire;
}

// Mixed precision with fp16: trains `steps` steps, rank `hot`'s first batch scaled by `inputScale`; returns "" or an
// error, and per rank which steps were skipped and the loss scale after each.
std::string trainFp16(Communicator& comm, float initialScale, int hot, float inputScale, int steps,
                      std::vector<std::vector<int>>* skipped, std::vector<std::vector<float>>* scales,
                      std::vector<float>* params, std::vector<float>* initial) {
  const auto widths = chorus::testing::primeMlpWidths();
  Sequential model = makeMlp(widths);
  DataParallelConfig config;
  config.optimizer = chorus::testing::testOptimizer();
  config.computeType = "fp16";
  config.initialLossScale = initialScale;
  DataParallel dp(comm, model, config);
  if (Status st = dp.init(kInitSeed); !st.isOk()) return st.message();
  if (comm.rank() == 0) *initial = dp.params();
  for (int s = 0; s < steps; ++s) {
    Batch b = makeBatch(s, comm.rank(), kRows, widths.front(), static_cast<int>(widths.back()));
    if (s == 0 && comm.rank() == hot)
      for (size_t i = 0; i < b.x.size(); ++i) b.x.data()[i] *= inputScale;
    LossResult r;
    if (Status st = dp.forwardBackward(b.x, b.labels, &r); !st.isOk()) return st.message();
    if (Status st = dp.step(); !st.isOk()) return st.message();
    (*skipped)[comm.rank()].push_back(dp.skippedLastStep());
    (*scales)[comm.rank()].push_back(dp.lossScale());
  }
  if (comm.rank() == 0) *params = dp.params();
  return "";
}

TEST(MixedPrecision, Fp16OverflowSkipsTheStepOnEveryRankAndHalvesTheScale) {
  std::vector<std::vector<int>> skipped(kRanks);
  std::vector<std::vector<float>> scales(kRanks);
  std::vector<float> params, initial;
  ASSERT_EQ(onRanks(kRanks, RankKind::kThreads,
                    [&](Communicator& comm) {
                      return trainFp16(comm, 0x1p40f, -1, 1, 40, &skipped, &scales, &params, &initial);
                    }),
            "");
  // 2^40 times a gradient of order 0.1 is far past fp16's 65504: the first steps are skipped and the scale halves.
  EXPECT_TRUE(skipped[0][0]);
  EXPECT_EQ(scales[0][0], 0x1p39f);
  int firstGood = 0;
  while (firstGood < 40 && skipped[0][firstGood]) ++firstGood;
  ASSERT_LT(firstGood, 40) << "never stopped overflowing";
  EXPECT_EQ(scales[0][firstGood], std::ldexp(1.0f, 40 - firstGood));  // halved once per skipped step
  for (int r = 1; r < kRanks; ++r) {
    EXPECT_EQ(skipped[r], skipped[0]) << "rank " << r;
    EXPECT_EQ(scales[r], scales[0]) << "rank " << r;
  }
  EXPECT_NE(chorus::testing::sameBits(params, initial), "");  // the good steps moved the parameters
}

TEST(MixedPrecision, OneRanksOverflowSkipsEveryRank) {
  std::vector<std::vector<int>> skipped(kRanks);
  std::vector<std::vector<float>> scales(kRanks);
  std::vector<float> params, initial;
  ASSERT_EQ(onRanks(kRanks, RankKind::kThreads,
                    [&](Communicator& comm) {
                      return trainFp16(comm, 1024.0f, 1, 1e6f, 1, &skipped, &scales, &params, &initial);
                    }),
            "");
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(skipped[r], std::vector<int>{1}) << "rank " << r;
    EXPECT_EQ(scales[r], std::vector<float>{512.0f}) << "rank " << r;
  }
  EXPECT_EQ(chorus::testing::sameBits(params, initial), "");  // nothing moved
}

TEST(MixedPrecision, Bf16ComputeStaysCloseToFp32) {
  const auto fp32 = trained("");
  std::vector<float> bf16;
  ASSERT_EQ(onRanks(kRanks, RankKind::kThreads,
                    [&](Communicator& comm) -> std::string {
                      const auto widths = chorus::testing::primeMlpWidths();
                      Sequential model = makeMlp(widths);
                      DataParallelConfig config;
                      config.optimizer = chorus::testing::testOptimizer();
                      config.computeType = "bf16";
                      DataParallel dp(comm, model, config);
                      if (Status st = dp.init(kInitSeed); !st.isOk()) return st.message();
                      for (int s = 0; s < kSteps; ++s) {
                        Batch b = makeBatch(s, comm.rank(), kRows, widths.front(), static_cast<int>(widths.back()));
                        LossResult r;
                        if (Status st = dp.forwardBackward(b.x, b.labels, &r); !st.isOk()) return st.message();
                        if (Status st = dp.step(); !st.isOk()) return st.message();
                      }
                      if (comm.rank() == 0) bf16 = dp.params();
                      return "";
                    }),
            "");
  EXPECT_EQ(chorus::testing::closeTo(bf16, fp32, 0.0f, 0.01f * kSteps), "");
  EXPECT_NE(chorus::testing::sameBits(bf16, fp32), "");  // the rounded copy did make a difference
}

// PowerSGD: each rank's inputs, step after step, through the codec on `ranks` ranks; returns rank 0's outputs.
std::vector<std::vector<float>> powerSgdSums(const std::string& spec,
                                             const std::vector<std::vector<std::vector<float>>>& inputs) {
  const int ranks = static_cast<int>(inputs.size());
  std::vector<std::vector<float>> outputs;
  EXPECT_EQ(onRanks(ranks, RankKind::kThreads,
                    [&](Communicator& comm) -> std::string {
                      std::unique_ptr<GradientCodec> codec;
                      if (Status st = makeCodec(spec, &codec); !st.isOk()) return st.message();
                      for (const std::vector<float>& in : inputs[comm.rank()]) {
                        std::vector<float> g = in;
                        if (Status st = codec->start(comm, 0, g.data(), g.size()).wait(); !st.isOk())
                          return st.message();
                        if (Status st = codec->finish(0, g.data(), g.size()); !st.isOk()) return st.message();
                        if (comm.rank() == 0) outputs.push_back(g);
                      }
                      return "";
                    }),
            "");
  return outputs;
}

// a u v^T + b w z^T as a 12 x 12 bucket (144 entries: PowerSGD reads it as that matrix).
std::vector<float> rankTwo(float a, float b) {
  std::vector<float> m(144);
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 12; ++j)
      m[i * 12 + j] = a * static_cast<float>(i - 5) * static_cast<float>(j % 5 + 1) +
                      b * static_cast<float>(i % 3) * static_cast<float>(7 - j);
  return m;
}

TEST(PowerSgd, RecoversASumOfItsRankWithinRounding) {
  // Three ranks whose sum has rank 1 (r = 1) or 2 (r = 2): one power iteration finds it.
  const auto rank1 = powerSgdSums("powersgd:1", {{rankTwo(1, 0)}, {rankTwo(2, 0)}, {rankTwo(-0.5f, 0)}});
  EXPECT_EQ(chorus::testing::closeTo(rank1.at(0), rankTwo(2.5f, 0), 1e-5f, 1e-5f), "");
  const auto rank2 = powerSgdSums("powersgd:2", {{rankTwo(1, 3)}, {rankTwo(2, -1)}, {rankTwo(0, 0.5f)}});
  EXPECT_EQ(chorus::testing::closeTo(rank2.at(0), rankTwo(3, 2.5f), 1e-5f, 1e-5f), "");
  // Rank 1 cannot hold a rank-2 sum: the measurement can fail.
  const auto short1 = powerSgdSums("powersgd:1", {{rankTwo(1, 3)}, {rankTwo(2, -1)}, {rankTwo(0, 0.5f)}});
  EXPECT_NE(chorus::testing::closeTo(short1.at(0), rankTwo(3, 2.5f), 1e-3f, 1e-3f), "");
}

TEST(PowerSgd, ErrorFeedbackDeliversWhatTheFactorsMissed) {
  // One rank, a full-rank 12 x 12 gradient once, then zeros: what rank 2 misses comes back step after step.
  std::vector<float> g(144);
  Rng rng(5);
  for (float& x : g) x = static_cast<float>(rng.normal());
  std::vector<std::vector<float>> steps(60, std::vector<float>(144, 0.0f));
  steps[0] = g;
  const auto out = powerSgdSums("powersgd:2", {steps});
  ASSERT_EQ(out.size(), steps.size());
  EXPECT_NE(chorus::testing::closeTo(out[0], g, 1e-2f, 1e-2f), "") << "rank 2 sent a full-rank matrix whole";
  std::vector<float> total(144, 0.0f);
  for (const auto& o : out)
    for (size_t i = 0; i < total.size(); ++i) total[i] += o[i];
  EXPECT_EQ(chorus::testing::closeTo(total, g, 1e-3f, 1e-3f), "");
}

TEST(PowerSgd, StartsAfterAWarmUpOfWholeSums) {
  // Rank 1 cannot hold a rank-2 sum, but the first two steps are summed whole.
  const std::vector<std::vector<float>> a(3, rankTwo(1, 3)), b(3, rankTwo(2, -1));
  const auto out = powerSgdSums("powersgd:1:2", {a, b});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], rankTwo(3, 2));
  EXPECT_EQ(out[1], rankTwo(3, 2));
  EXPECT_NE(chorus::testing::closeTo(out[2], rankTwo(3, 2), 1e-3f, 1e-3f), "");
}

TEST(PowerSgd, SmallBucketsAreSummedWhole) {
  // 4 entries read as 2 x 2: rank-2 factors would be larger than the bucket, so it travels as it is.
  const auto out = powerSgdSums("powersgd:2", {{{1, 2, 3, 4}}, {{10, 20, 30, 40}}});
  EXPECT_EQ(out.at(0), (std::vector<float>{11, 22, 33, 44}));
}

TEST(PowerSgd, TrainsOnFewerWireBytes) {
  std::unique_ptr<GradientCodec> codec;
  EXPECT_NE(makeCodec("powersgd:0", &codec).message().find("needs a rank from 1 to 1024"), std::string::npos);
  EXPECT_NE(makeCodec("powersgd", &codec).message().find("needs a rank from 1 to 1024"), std::string::npos);
  EXPECT_NE(makeCodec("powersgd:2:x", &codec).message().find("needs a step count"), std::string::npos);
  uint64_t fp32Wire = 0, powerWire = 0;
  const auto fp32 = trained("", &fp32Wire), power = trained("powersgd:1", &powerWire);
  EXPECT_GT(powerWire, 0u);
  EXPECT_LT(powerWire, fp32Wire);
  // Adam moves each parameter by about lr a step whatever its gradient: close to fp32 after kSteps steps.
  EXPECT_EQ(chorus::testing::closeTo(power, fp32, 0.0f, 0.01f * 2 * kSteps), "");
}

// ZeRO at `stage` with `codec`, kSteps steps on kRanks ranks in deterministic mode: rank 0's gathered parameters and
// the wire bytes of the steps.
std::vector<float> trainedZero(int stage, const std::string& codec, uint64_t* wire = nullptr) {
  std::vector<float> params;
  EXPECT_EQ(onRanks(kRanks, RankKind::kThreads,
                    [&](Communicator& comm) -> std::string {
                      comm.setDeterministic(true);
                      const auto widths = chorus::testing::primeMlpWidths();
                      Sequential model = makeMlp(widths);
                      ZeroConfig config;
                      config.stage = stage;
                      config.optimizer = chorus::testing::testOptimizer();
                      config.codec = codec;
                      Zero zero(comm, model, config);
                      if (Status st = zero.init(kInitSeed); !st.isOk()) return st.message();
                      const uint64_t before = comm.counters().total().wireBytes;
                      for (int s = 0; s < kSteps; ++s) {
                        Batch b = makeBatch(s, comm.rank(), kRows, widths.front(), static_cast<int>(widths.back()));
                        LossResult r;
                        if (Status st = zero.forwardBackward(b.x, b.labels, &r); !st.isOk()) return st.message();
                        if (Status st = zero.step(); !st.isOk()) return st.message();
                      }
                      const uint64_t bytes = comm.counters().total().wireBytes - before;
                      Checkpoint ck;
                      if (Status st = zero.exportCheckpoint(&ck); !st.isOk()) return st.message();
                      if (comm.rank() == 0) {
                        params = ck.params;
                        if (wire) *wire = bytes;
                      }
                      return "";
                    }),
            "")
      << "ZeRO-" << stage << " " << codec;
  return params;
}

TEST(GradientCodecInZero, TopKOfEverythingGivesTheBitsOfDataParallelism) {
  const auto want = chorus::testing::referenceDataParallel(chorus::testing::primeMlpWidths(), kRanks, kSteps, 1, kRows);
  for (int stage : {1, 2, 3}) EXPECT_EQ(chorus::testing::sameBits(trainedZero(stage, "topk:1"), want), "") << stage;
}

TEST(GradientCodecInZero, Bf16ReduceScattersHalfTheBytes) {
  for (int stage : {1, 2}) {
    uint64_t fp32Wire = 0, bf16Wire = 0;
    const auto fp32 = trainedZero(stage, "", &fp32Wire), bf16 = trainedZero(stage, "bf16", &bf16Wire);
    EXPECT_EQ(chorus::testing::closeTo(bf16, fp32, 0.0f, 0.01f * 3), "") << stage;
    // A step is a ReduceScatter and an AllGather of the same shards: bf16 halves the first.
    EXPECT_EQ(bf16Wire * 4, fp32Wire * 3) << "ZeRO-" << stage << ": bf16 " << bf16Wire << ", fp32 " << fp32Wire;
  }
}

TEST(GradientCodecInZero, PowerSgdAndBadCodecs) {
  const auto fp32 = trainedZero(2, ""), power = trainedZero(2, "powersgd:1");
  EXPECT_EQ(chorus::testing::closeTo(power, fp32, 0.0f, 0.01f * 2 * kSteps), "");
  std::string message;
  EXPECT_NE(onRanks(1, RankKind::kThreads,
                    [&](Communicator& comm) {
                      Sequential model = makeMlp(chorus::testing::primeMlpWidths());
                      ZeroConfig config;
                      config.codec = "zip";
                      return Zero(comm, model, config).init(kInitSeed).message();
                    })
                .find("unknown gradient codec 'zip'"),
            std::string::npos);
}

}  // namespace
}  // namespace chorus::training::compress
