// The expert-parallel MoE layer equals one process holding every expert (outputs, input and router gradients
// bitwise; expert weight gradients within fp32 tolerance), in capacity and dropless modes; exchanges and drops
// follow the formulas; data parallelism leaves expert gradients out of the DP AllReduce.
#include "chorus/training/moe.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "chorus/training/data_parallel.hpp"
#include "training/fixtures.hpp"
#include "training/ranks.hpp"

namespace chorus::testing {
namespace {

using training::MoeConfig;
using training::MoeLayer;
using training::Tensor;

constexpr size_t kTokens = 12;

MoeConfig config(double capacityFactor) {
  MoeConfig c;
  c.hidden = 6;
  c.ffn = 10;
  c.experts = 4;
  c.topK = 2;
  c.capacityFactor = capacityFactor;
  return c;
}

std::vector<float> values(const Tensor& t) { return {t.data(), t.data() + t.size()}; }

struct LayerRun {
  Tensor y, dx;
  std::vector<float> grads;
  float aux = 0;
  size_t dropped = 0;
};

Status run(MoeLayer& layer, const Tensor& x, const Tensor& dy, LayerRun* out) {
  std::vector<float> params(layer.paramCount());
  training::Rng rng(kInitSeed);
  layer.initParams(params.data(), rng);
  out->grads.assign(layer.paramCount(), 0.0f);
  CHORUS_TRY(layer.forward(params.data(), x, &out->y));
  out->aux = layer.auxLoss();
  out->dropped = layer.dropped();
  return layer.backward(params.data(), dy, out->grads.data(), &out->dx);
}

std::string checkAgainstOneProcess(Communicator& ep, double capacityFactor) {
  const MoeConfig c = config(capacityFactor);
  Batch in = makeBatch(0, ep.rank(), kTokens, c.hidden, 2), grad = makeBatch(1, ep.rank(), kTokens, c.hidden, 2);
  MoeLayer layer(c, ep);
  LayerRun dist, ref;
  ep.resetCounters();
  if (Status st = run(layer, in.x, grad.x, &dist); !st.isOk()) return st.message();
  const TrafficCounters counters = ep.counters();
  // The reference: every expert in one process, on this rank's tokens (the same routing group).
  std::vector<std::unique_ptr<Communicator>> solo;
  if (Status st = Communicator::createLocal(1, &solo); !st.isOk()) return st.message();
  MoeLayer all(c, *solo[0]);
  if (Status st = run(all, in.x, grad.x, &ref); !st.isOk()) return st.message();

  if (std::string e = sameBits(values(dist.y), values(ref.y)); !e.empty()) return "output: " + e;
  if (std::string e = sameBits(values(dist.dx), values(ref.dx)); !e.empty()) return "input gradient: " + e;
  if (dist.aux != ref.aux) return "aux loss " + std::to_string(dist.aux) + " != " + std::to_string(ref.aux);
  if (dist.dropped != ref.dropped) return "dropped " + std::to_string(dist.dropped);
  const size_t router = c.hidden * c.experts;
  std::vector<float> routerDist(dist.grads.begin(), dist.grads.begin() + router);
  if (std::string e = sameBits(routerDist, {ref.grads.begin(), ref.grads.begin() + router}); !e.empty())
    return "router gradient: " + e;
  // Expert gradients: the reference sees only this rank's tokens, so sum the references over the ranks.
  std::vector<float> expertRef(ref.grads.begin() + router, ref.grads.end());
  if (Status st = ep.allReduce(expertRef.data(), expertRef.data(), expertRef.size(), DataType::kFloat32, RedOp::sum());
      !st.isOk())
    return st.message();
  const size_t perRank = layer.expertParams().count;
  std::vector<float> mine(expertRef.begin() + static_cast<long>(perRank * ep.rank()),
                          expertRef.begin() + static_cast<long>(perRank * (ep.rank() + 1)));
  std::vector<float> got(dist.grads.begin() + router, dist.grads.end());
  if (std::string e = closeTo(got, mine, 1e-5f, 1e-6f); !e.empty()) return "expert gradient: " + e;

  // Exchanges: capacity mode, 4 AlltoAll of E x C x h floats; dropless, one count AlltoAll and 4 AlltoAllv.
  if (capacityFactor > 0) {
    const uint64_t capacity = static_cast<uint64_t>(std::ceil(c.topK * capacityFactor * kTokens / c.experts));
    if (counters.alltoAll.calls != 4 || counters.alltoAll.payloadBytes != 4 * c.experts * capacity * c.hidden * 4)
      return "capacity AlltoAll: " + std::to_string(counters.alltoAll.calls) + " calls, " +
             std::to_string(counters.alltoAll.payloadBytes) + " B";
    size_t expectedDrops = 0;
    for (size_t load : layer.expertLoad()) expectedDrops += load > capacity ? load - capacity : 0;
    if (dist.dropped != expectedDrops) return "dropped " + std::to_string(dist.dropped);
  } else {
    // Each rank's send buffers: its T k routed rows (dispatch), the rows its experts received (combine), twice.
    // Summed over the ranks, received rows equal sent ones: 4 N T k h floats.
    double payload = static_cast<double>(counters.alltoAllv.payloadBytes);
    if (Status st = ep.allReduce(&payload, &payload, 1, DataType::kFloat64, RedOp::sum()); !st.isOk())
      return st.message();
    if (counters.alltoAll.calls != 1 || counters.alltoAllv.calls != 4 ||
        payload != 4.0 * ep.size() * kTokens * c.topK * c.hidden * 4)
      return "dropless exchanges: " + std::to_string(counters.alltoAllv.calls) + " AlltoAllv, " +
             std::to_string(payload) + " B in all";
  }
  return "";
}

class MoeRanks : public ::testing::TestWithParam<std::tuple<int, double, RankKind>> {};

TEST_P(MoeRanks, EqualsOneProcessHoldingEveryExpert) {
  const auto [n, capacityFactor, kind] = GetParam();
  EXPECT_EQ(onRanks(n, kind, [cf = capacityFactor](Communicator& ep) { return checkAgainstOneProcess(ep, cf); }), "");
}

INSTANTIATE_TEST_SUITE_P(Modes, MoeRanks,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Values(1.0, 0.0),
                                            ::testing::Values(RankKind::kThreads, RankKind::kProcesses)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) > 0 ? "_capacity_" : "_dropless_") +
                                  rankKindName(std::get<2>(info.param));
                         });

TEST(Moe, DataParallelLeavesExpertGradientsOutOfTheDpAllReduce) {
  EXPECT_EQ(onRanks(4, RankKind::kThreads,
                    [](Communicator& world) -> std::string {
                      training::Sequential model;
                      model.add(std::make_unique<training::Linear>(8, 6));
                      model.add(std::make_unique<MoeLayer>(config(0.0), world));
                      model.add(std::make_unique<training::Linear>(6, 3));
                      training::DataParallelConfig dpc;
                      training::DataParallel dp(world, model, dpc);  // EP = world: no expert-DP group
                      Status st = dp.init(kInitSeed);
                      world.resetCounters();
                      Batch b = makeBatch(0, world.rank(), kTokens, 8, 3);
                      training::LossResult loss;
                      if (st.isOk()) st = dp.forwardBackward(b.x, b.labels, &loss);
                      if (st.isOk()) st = dp.step();
                      if (!st.isOk()) return st.message();
                      const uint64_t dense = (8 * 6 + 6) + 6 * 4 + (6 * 3 + 3);
                      const uint64_t got = world.counters().allReduce.payloadBytes;
                      return got == dense * 4 ? "" : "DP AllReduce payload " + std::to_string(got);
                    }),
            "");
}

TEST(Moe, ExpertsThatDoNotDivideAreRejected) {
  EXPECT_EQ(onRanks(3, RankKind::kThreads,
                    [](Communicator& ep) -> std::string {
                      MoeLayer layer(config(1.0), ep);  // 4 experts on 3 ranks
                      std::vector<float> params(layer.paramCount());
                      Tensor x(2, 6), y;
                      Status st = layer.forward(params.data(), x, &y);
                      if (st.isOk()) return "accepted";
                      return st.message().find("divide") == std::string::npos ? st.message() : "";
                    }),
            "");
}

}  // namespace
}  // namespace chorus::testing
