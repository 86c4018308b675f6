#include "chorus/training/balance/balanced_data_parallel.hpp"

#include <chrono>

namespace chorus::training::balance {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

BalancedDataParallel::BalancedDataParallel(Communicator& comm, Sequential& model, const BalancedConfig& config)
    : comm_(comm),
      config_(config),
      dp_(comm, model, config.dataParallel),
      balancer_(comm.size(), config.globalBatch, config.balancer) {}

Status BalancedDataParallel::init(uint64_t seed) { return dp_.init(seed); }

Status BalancedDataParallel::trainStep(const Tensor& x, const std::vector<int>& labels, BalancedStep* out) {
  const size_t rows = x.rows();
  if (rows == 0 || rows > config_.globalBatch || labels.size() != rows) {
    return invalidArgument("a balanced step takes 1 to " + std::to_string(config_.globalBatch) +
                           " rows with one label each (got " + std::to_string(rows) + " rows, " +
                           std::to_string(labels.size()) + " labels)");
  }
  const auto start = Clock::now();
  *out = BalancedStep{};
  out->split = balancer_.splitOf(rows);
  const int rank = comm_.rank();
  size_t first = 0;
  for (int r = 0; r < rank; ++r) first += out->split[r];
  const size_t mine = out->split[rank];
  // Weighted by the share of samples: the sum over ranks is the mean over the batch.
  dp_.setGradientScale(static_cast<float>(mine) / static_cast<float>(rows));
  LossResult local;
  if (mine > 0) {
    const std::vector<int> myLabels(labels.begin() + static_cast<long>(first),
                                    labels.begin() + static_cast<long>(first + mine));
    CHORUS_TRY(dp_.forwardBackward(x.rowsSlice(first, first + mine), myLabels, &local));
  } else {
    CHORUS_TRY(dp_.reduceWithoutBatch());
  }
  double compute = since(start);
  if (config_.slowdown > 1) {
    const auto spinUntil = Clock::now() + std::chrono::duration<double>((config_.slowdown - 1) * compute);
    while (Clock::now() < spinUntil) {
    }
    compute = since(start);
  }
  CHORUS_TRY(dp_.step());
  // Every rank's samples, compute time, summed loss and correct count: the same split on every rank next.
  const double mineStats[4] = {static_cast<double>(mine), compute, static_cast<double>(local.loss) * mine,
                               static_cast<double>(local.correct)};
  std::vector<double> all(4 * comm_.size());
  CHORUS_TRY(comm_.allGather(mineStats, all.data(), 4, DataType::kFloat64).withContext("balanced step statistics"));
  std::vector<double> speed(comm_.size(), 0.0);
  double lossSum = 0;
  for (int r = 0; r < comm_.size(); ++r) {
    if (all[4 * r] > 0 && all[4 * r + 1] > 0) speed[r] = all[4 * r] / all[4 * r + 1];
    lossSum += all[4 * r + 2];
    out->correct += static_cast<int>(all[4 * r + 3]);
  }
  out->loss = static_cast<float>(lossSum / static_cast<double>(rows));
  out->rebalanced = balancer_.record(speed);
  out->computeSeconds = compute;
  out->seconds = since(start);
  return Status::ok();
}

}  // namespace chorus::training::balance
