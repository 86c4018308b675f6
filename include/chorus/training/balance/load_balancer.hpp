/// @file load_balancer.hpp
/// How many of a global batch's samples each rank takes when ranks run at different speeds: in proportion to the
/// throughput each one showed, so that all finish together (LB-BSP's idea). Measurements are smoothed, and the split
/// changes only when the new one promises a step shorter by more than a threshold (hysteresis), so noise does not
/// move samples back and forth.
#pragma once

#include <cstddef>
#include <vector>

namespace chorus::training::balance {

struct BalancerConfig {
  double smoothing = 0.5;    // weight of the newest throughput in the running average, in (0, 1]
  double hysteresis = 0.05;  // re-split only when the predicted step is this much shorter
  size_t minSamples = 1;     // per rank and full batch: a rank never drops out of the split
};

/// `total` samples in proportion to `weights` (largest remainders, ties to the lower rank), at least `minEach` each
/// when total allows it (otherwise one each to the heaviest ranks first, the rest none).
std::vector<size_t> proportionalSplit(const std::vector<double>& weights, size_t total, size_t minEach);

class LoadBalancer {
 public:
  /// An equal split of `batch` over `ranks` to start with.
  LoadBalancer(int ranks, size_t batch, const BalancerConfig& config = {});

  /// The split of a full batch.
  const std::vector<size_t>& split() const { return split_; }
  /// The split of a batch of `rows` (a short final one: in proportion to split(), ranks may get none).
  std::vector<size_t> splitOf(size_t rows) const;
  /// Each rank's samples per second in the last step (0 or less: no measurement, kept as it was); returns whether
  /// the split changed.
  bool record(const std::vector<double>& samplesPerSecond);
  /// The smoothed throughputs.
  const std::vector<double>& throughput() const { return speed_; }

 private:
  BalancerConfig config_;
  size_t batch_;
  std::vector<size_t> split_;
  std::vector<double> speed_;
};

}  // namespace chorus::training::balance
