// Pipeline parallelism runs the model the single-process way: for every schedule, 2 to 4 ranks and 1 to 4p
// micro-batches (fewer than the ranks too), the parameters after a few steps hold the bits of the whole model
// trained in one process on the same micro-batches. Uneven micro-batches, the stage partitioner, and the errors of
// a pipeline that cannot run.
#include "chorus/training/pipeline/pipeline_parallel.hpp"

#include <gtest/gtest.h>

#include "chorus/training/pipeline/partition.hpp"
#include "training/fixtures.hpp"
#include "training/ranks.hpp"

namespace chorus::training::pipeline {
namespace {

using chorus::testing::Batch;
using chorus::testing::kInitSeed;
using chorus::testing::makeBatch;
using chorus::testing::onRanks;
using chorus::testing::RankKind;
using chorus::testing::sameBits;

// Nine layers (five Linear), enough for 4 ranks of 2 virtual stages.
const std::vector<size_t> kWidths{8, 6, 6, 6, 6, 5};
constexpr int kSteps = 2;

// A step's batch: the reference's micro-batches of `rows` one after another.
Batch stepBatch(int step, int microBatches, size_t rows) {
  Batch all{Tensor(rows * microBatches, kWidths.front()), {}};
  for (int k = 0; k < microBatches; ++k) {
    Batch b = makeBatch(step * microBatches + k, 0, rows, kWidths.front(), static_cast<int>(kWidths.back()));
    std::copy(b.x.data(), b.x.data() + b.x.size(), all.x.row(k * rows));
    all.labels.insert(all.labels.end(), b.labels.begin(), b.labels.end());
  }
  return all;
}

PipelineConfig config(const std::string& schedule, int p, int m) {
  PipelineConfig c;
  c.schedule = schedule;
  c.microBatches = m;
  c.stagesPerRank = schedule == "interleaved-1f1b" ? 2 : 1;
  c.optimizer = chorus::testing::testOptimizer();
  c.seed = kInitSeed;
  (void)p;
  return c;
}

// Trains `steps` steps on every rank and returns "" or what went wrong; `params` gets rank 0's gathered result.
std::string train(Communicator& comm, const PipelineConfig& c, size_t rows, std::vector<float>* params) {
  std::unique_ptr<PipelineParallel> pipe;
  Status st = PipelineParallel::create(
      comm, [] { return makeMlp(kWidths); }, c, &pipe);
  if (!st.isOk()) return st.message();
  for (int s = 0; s < kSteps; ++s) {
    const Batch b = stepBatch(s, c.microBatches, rows);
    StepResult r;
    st = pipe->trainStep(b.x, b.labels, &r);
    if (!st.isOk()) return st.message();
    if (r.hasLoss != (comm.rank() == pipe->schedule().rankOf(pipe->schedule().stages() - 1)))
      return "loss on the wrong rank";
    if (r.hasLoss && !(r.loss > 0)) return "no loss";
  }
  std::vector<float> gathered;
  st = pipe->gatherParams(&gathered);
  if (!st.isOk()) return st.message();
  if (comm.rank() == 0) *params = gathered;
  return "";
}

TEST(PipelineParallel, EveryScheduleGivesTheSingleProcessBits) {
  constexpr size_t kRows = 3;
  for (const std::string& name : scheduleNames()) {
    for (int p : {2, 3, 4}) {
      for (int m : {1, p - 1, p, 4 * p}) {
        const std::vector<float> want = chorus::testing::referenceDataParallel(kWidths, 1, kSteps, m, kRows);
        std::vector<float> got;
        const std::string err = onRanks(p, RankKind::kThreads, [&](Communicator& comm) {
          std::vector<float> mine;
          std::string e = train(comm, config(name, p, m), kRows, &mine);
          if (comm.rank() == 0) got = mine;
          return e;
        });
        ASSERT_EQ(err, "") << name << " p " << p << " m " << m;
        EXPECT_EQ(sameBits(got, want), "") << name << " p " << p << " m " << m;
      }
    }
  }
}

TEST(PipelineParallel, ProcessesGiveTheSameBits) {
  const std::vector<float> want = chorus::testing::referenceDataParallel(kWidths, 1, kSteps, 4, 2);
  const std::string err = onRanks(3, RankKind::kProcesses, [&](Communicator& comm) {
    for (const char* name : {"1f1b", "interleaved-1f1b", "zb-h1"}) {
      std::vector<float> got;
      std::string e = train(comm, config(name, 3, 4), 2, &got);
      if (!e.empty()) return std::string(name) + ": " + e;
      if (comm.rank() == 0 && !sameBits(got, want).empty()) return std::string(name) + ": " + sameBits(got, want);
    }
    return std::string();
  });
  EXPECT_EQ(err, "");
}

TEST(PipelineParallel, UnevenMicroBatches) {
  // 10 rows in 4 micro-batches: 3, 3, 2, 2; the reference runs the same slices one after another.
  const Batch b = stepBatch(0, 1, 10);
  Sequential model = makeMlp(kWidths);
  std::vector<float> want(model.paramCount()), grads(model.paramCount(), 0.0f);
  model.initParams(want.data(), kInitSeed);
  FlatAccess access(model, want.data(), grads.data());
  for (auto [first, rows] : {std::pair<size_t, size_t>{0, 3}, {3, 3}, {6, 2}, {8, 2}}) {
    Tensor logits, dlogits;
    ASSERT_TRUE(model.forward(b.x.rowsSlice(first, first + rows), access, &logits).isOk());
    softmaxCrossEntropy(logits, {b.labels.begin() + first, b.labels.begin() + first + rows}, &dlogits);
    ASSERT_TRUE(model.backward(dlogits, access).isOk());
  }
  auto optimizer = makeOptimizer(chorus::testing::testOptimizer(), want.size());
  optimizer->beginStep();
  optimizer->update(want.data(), grads.data(), 0, want.size());
  for (const std::string& name : scheduleNames()) {
    std::vector<float> got;
    const std::string err = onRanks(2, RankKind::kThreads, [&](Communicator& comm) {
      std::unique_ptr<PipelineParallel> pipe;
      Status st = PipelineParallel::create(
          comm, [] { return makeMlp(kWidths); }, config(name, 2, 4), &pipe);
      StepResult r;
      if (st.isOk()) st = pipe->trainStep(b.x, b.labels, &r);
      std::vector<float> all;
      if (st.isOk()) st = pipe->gatherParams(&all);
      if (comm.rank() == 0) got = all;
      return st.message();
    });
    ASSERT_EQ(err, "") << name;
    EXPECT_EQ(sameBits(got, want), "") << name;
  }
}

TEST(PipelineParallel, PartitionerBalancesAndFillsEveryStage) {
  std::vector<int> starts;
  ASSERT_TRUE(partitionLayers({1, 1, 1, 1}, 2, &starts).isOk());
  EXPECT_EQ(starts, (std::vector<int>{0, 2}));
  ASSERT_TRUE(partitionLayers({5, 1, 1, 1, 1, 1}, 2, &starts).isOk());
  EXPECT_EQ(starts, (std::vector<int>{0, 1}));
  ASSERT_TRUE(partitionLayers({1, 2, 3, 4, 5, 6}, 3, &starts).isOk());  // {1 2 3} {4 5} {6}: at most 9
  EXPECT_EQ(starts, (std::vector<int>{0, 3, 5}));
  ASSERT_TRUE(partitionLayers({0, 0, 0}, 3, &starts).isOk());  // free layers still one per stage
  EXPECT_EQ(starts, (std::vector<int>{0, 1, 2}));
  ASSERT_TRUE(partitionLayers({9, 0, 0, 0}, 3, &starts).isOk());
  EXPECT_EQ(starts.size(), 3u);
  EXPECT_TRUE(starts[0] == 0 && starts[1] > 0 && starts[2] > starts[1] && starts[2] < 4);
  Status st = partitionLayers({1, 1}, 3, &starts);
  EXPECT_NE(st.message().find("cannot cut 2 layers into 3 pipeline stages"), std::string::npos) << st.message();
  EXPECT_FALSE(partitionLayers({1, -1}, 1, &starts).isOk());
  std::vector<double> costs;
  ASSERT_TRUE(measureLayerCosts([] { return makeMlp(kWidths); }, 16, 3, &costs).isOk());
  EXPECT_EQ(costs.size(), 9u);
}

// A layer with parameters that does not split its backward.
class Unsplittable : public Layer {
 public:
  std::string name() const override { return "Unsplittable"; }
  size_t paramCount() const override { return 1; }
  Status forward(const float*, const Tensor& x, Tensor* y) override {
    *y = x;
    return Status::ok();
  }
  Status backward(const float*, const Tensor& dy, float*, Tensor* dx) override {
    if (dx) *dx = dy;
    return Status::ok();
  }
};

TEST(PipelineParallel, ErrorsNameTheCause) {
  const std::string err = onRanks(2, RankKind::kThreads, [](Communicator& comm) -> std::string {
    std::unique_ptr<PipelineParallel> pipe;
    auto expect = [&](const Status& st, const std::string& want) -> std::string {
      if (st.message().find(want) == std::string::npos) return "wanted '" + want + "', got '" + st.message() + "'";
      return "";
    };
    // One Linear layer cannot make two stages.
    std::string e = expect(PipelineParallel::create(
                               comm,
                               [] {
                                 return makeMlp({8, 5});
                               },
                               config("1f1b", 2, 2), &pipe),
                           "every stage needs a layer");
    if (!e.empty()) return e;
    e = expect(PipelineParallel::create(
                   comm, [] { return makeMlp(kWidths); }, config("2f2b", 2, 2), &pipe),
               "unknown pipeline schedule '2f2b'");
    if (!e.empty()) return e;
    // The ranks disagree on the micro-batch count.
    e = expect(PipelineParallel::create(
                   comm, [] { return makeMlp(kWidths); }, config("1f1b", 2, 2 + comm.rank()), &pipe),
               "configured a different pipeline");
    if (!e.empty()) return e;
    auto unsplittable = [] {
      Sequential s = makeMlp(kWidths);
      s.add(std::make_unique<Unsplittable>());
      return s;
    };
    e = expect(PipelineParallel::create(comm, unsplittable, config("zb-h1", 2, 2), &pipe),
               "Unsplittable has parameters and cannot split its backward");
    if (!e.empty()) return e;
    if (!PipelineParallel::create(
             comm, [] { return makeMlp(kWidths); }, config("1f1b", 2, 4), &pipe)
             .isOk())
      return "no pipeline";
    const Batch b = stepBatch(0, 1, 3);
    StepResult r;
    return expect(pipe->trainStep(b.x, b.labels, &r), "needs at least as many rows");
  });
  EXPECT_EQ(err, "");
}

}  // namespace
}  // namespace chorus::training::pipeline
