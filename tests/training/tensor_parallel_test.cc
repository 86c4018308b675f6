// Tensor-parallel MLP blocks equal the dense block (fp32 tolerance), with one AllReduce forward and one backward
// (sequence parallel: AllGather + ReduceScatter each way); bad widths are rejected; the rank grid's groups.
#include "chorus/training/tensor_parallel.hpp"

#include <gtest/gtest.h>

#include "chorus/training/grid.hpp"
#include "training/fixtures.hpp"
#include "training/ranks.hpp"

namespace chorus::testing {
namespace {

using training::Sequential;
using training::Tensor;

constexpr size_t kRows = 8, kHidden = 8, kFfn = 16;

std::vector<float> values(const Tensor& t) { return {t.data(), t.data() + t.size()}; }

struct BlockRun {
  Tensor y, dx;
  std::vector<float> grads;
};

Status runBlock(Sequential& block, const Tensor& x, const Tensor& dy, BlockRun* out) {
  std::vector<float> params(block.paramCount());
  out->grads.assign(block.paramCount(), 0.0f);
  block.initParams(params.data(), kInitSeed);
  training::FlatAccess access(block, params.data(), out->grads.data());
  CHORUS_TRY(block.forward(x, access, &out->y));
  return block.backward(dy, access, &out->dx);
}

std::string checkBlock(Communicator& tp, bool sequenceParallel) {
  const int p = tp.size(), r = tp.rank();
  Batch in = makeBatch(0, 0, kRows, kHidden, 2), grad = makeBatch(1, 0, kRows, kHidden, 2);
  Sequential dense;
  dense.add(std::make_unique<training::Linear>(kHidden, kFfn));
  dense.add(std::make_unique<training::Gelu>());
  dense.add(std::make_unique<training::Linear>(kFfn, kHidden));
  BlockRun ref, run;
  if (Status st = runBlock(dense, in.x, grad.x, &ref); !st.isOk()) return st.message();

  Sequential parallel;
  parallel.add(std::make_unique<training::ColumnParallelLinear>(kHidden, kFfn, tp, sequenceParallel));
  parallel.add(std::make_unique<training::Gelu>());
  parallel.add(std::make_unique<training::RowParallelLinear>(kFfn, kHidden, tp, sequenceParallel));
  const size_t rows = sequenceParallel ? kRows / p : kRows, first = sequenceParallel ? rows * r : 0;
  tp.resetCounters();
  Status st = runBlock(parallel, in.x.rowsSlice(first, first + rows), grad.x.rowsSlice(first, first + rows), &run);
  if (!st.isOk()) return st.message();
  const TrafficCounters c = tp.counters();
  const uint64_t activation = kRows * kHidden * 4;
  if (sequenceParallel) {
    if (c.allGather.calls != 2 || c.reduceScatter.calls != 2 || c.allReduce.calls != 0)
      return "sequence parallel: " + std::to_string(c.allGather.calls) + " AllGather, " +
             std::to_string(c.reduceScatter.calls) + " ReduceScatter";
    if (c.allGather.payloadBytes != 2 * activation || c.reduceScatter.payloadBytes != 2 * activation)
      return "sequence parallel payload";
  } else if (c.allReduce.calls != 2 || c.allReduce.payloadBytes != 2 * activation) {
    return std::to_string(c.allReduce.calls) + " AllReduce of " + std::to_string(c.allReduce.payloadBytes) + " B";
  }
  std::string err = closeTo(values(run.y), values(ref.y.rowsSlice(first, first + rows)), 1e-5f, 1e-6f);
  if (!err.empty()) return "output: " + err;
  err = closeTo(values(run.dx), values(ref.dx.rowsSlice(first, first + rows)), 1e-5f, 1e-6f);
  if (!err.empty()) return "input gradient: " + err;
  // Weight gradients: the column layer's columns and the row layer's rows of the dense ones.
  const size_t local = kFfn / p;
  std::vector<float> expected;
  for (size_t i = 0; i < kHidden; ++i)
    for (size_t j = 0; j < local; ++j) expected.push_back(ref.grads[i * kFfn + r * local + j]);
  for (size_t j = 0; j < local; ++j) expected.push_back(ref.grads[kHidden * kFfn + r * local + j]);
  const size_t rowBase = dense.offset(2);
  for (size_t i = 0; i < local * kHidden; ++i) expected.push_back(ref.grads[rowBase + r * local * kHidden + i]);
  for (size_t j = 0; j < kHidden; ++j) expected.push_back(ref.grads[rowBase + kFfn * kHidden + j]);
  err = closeTo(run.grads, expected, 1e-5f, 1e-6f);
  return err.empty() ? "" : "weight gradients: " + err;
}

class TensorParallelRanks : public ::testing::TestWithParam<std::tuple<int, RankKind>> {};

TEST_P(TensorParallelRanks, MlpBlockEqualsDense) {
  const auto [n, kind] = GetParam();
  EXPECT_EQ(onRanks(n, kind, [](Communicator& tp) { return checkBlock(tp, false); }), "");
}

TEST_P(TensorParallelRanks, SequenceParallelBlockEqualsDense) {
  const auto [n, kind] = GetParam();
  EXPECT_EQ(onRanks(n, kind, [](Communicator& tp) { return checkBlock(tp, true); }), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, TensorParallelRanks,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values(RankKind::kThreads, RankKind::kProcesses)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "_" + rankKindName(std::get<1>(info.param));
                         });

TEST(TensorParallel, WidthThatDoesNotDivideIsRejected) {
  EXPECT_EQ(onRanks(3, RankKind::kThreads,
                    [](Communicator& tp) -> std::string {
                      training::ColumnParallelLinear layer(kHidden, kFfn, tp);  // 16 columns on 3 ranks
                      std::vector<float> params(layer.paramCount());
                      Tensor x(2, kHidden), y;
                      Status st = layer.forward(params.data(), x, &y);
                      if (st.isOk()) return "accepted";
                      return st.message().find("does not divide") == std::string::npos ? st.message() : "";
                    }),
            "");
}

TEST(RankGrid, GroupsPartitionTheWorldInCoordinateOrder) {
  // 8 ranks, TP 2, EP 2 (so DP 4, EDP 2): TP [0,1] [2,3]..., DP [0,2,4,6] [1,3,5,7], EP [0,2] [4,6] [1,3] [5,7],
  // expert-DP [0,4] [2,6] [1,5] [3,7].
  EXPECT_EQ(onRanks(8, RankKind::kThreads,
                    [](Communicator& world) -> std::string {
                      training::RankGrid g;
                      Status st = training::RankGrid::create(world, 2, 2, &g);
                      if (!st.isOk()) return st.message();
                      auto members = [&](Communicator& c) {
                        std::vector<int> all(c.size());
                        int me = world.rank();
                        (void)c.allGather(&me, all.data(), 1, DataType::kInt32);
                        return all;
                      };
                      const int r = world.rank(), tp = r % 2, dp = r / 2;
                      const std::vector<int> wantTp{dp * 2, dp * 2 + 1}, wantDp{tp, tp + 2, tp + 4, tp + 6},
                          wantEp{tp + 4 * (dp / 2), tp + 4 * (dp / 2) + 2},
                          wantEdp{tp + 2 * (dp % 2), tp + 2 * (dp % 2) + 4};
                      if (members(*g.tpComm) != wantTp) return "TP group";
                      if (members(*g.dpComm) != wantDp) return "DP group";
                      if (members(*g.epComm) != wantEp) return "EP group";
                      if (members(*g.expertDpComm) != wantEdp) return "expert-DP group";
                      return "";
                    }),
            "");
}

}  // namespace
}  // namespace chorus::testing
