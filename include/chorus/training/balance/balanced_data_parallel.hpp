/// @file balanced_data_parallel.hpp
/// Data parallelism for ranks of different speeds. Every rank sees the same global batch; the load balancer says
/// how many of its samples each rank takes, measured throughputs move samples to the faster ranks between steps,
/// and each rank's gradient is weighted by its share of the samples, so the sum is the mean over the whole batch:
/// the step the homogeneous run takes, whatever the split. A rank left without samples (a short last batch) still
/// joins the reduction, with zeros, so nobody waits for it.
#pragma once

#include <memory>
#include <vector>

#include "chorus/training/balance/load_balancer.hpp"
#include "chorus/training/data_parallel.hpp"

namespace chorus::training::balance {

struct BalancedConfig {
  DataParallelConfig dataParallel;
  BalancerConfig balancer;
  size_t globalBatch = 64;
  /// Makes this rank that many times slower for real, to show the balancing where ranks are alike: after its
  /// compute it spins for (slowdown - 1) x the compute time. 1 in training.
  double slowdown = 1.0;
};

struct BalancedStep {
  std::vector<size_t> split;  // samples per rank in this step
  float loss = 0;             // mean over the step's samples, all ranks
  int correct = 0;            // all ranks
  double computeSeconds = 0;  // this rank's forward and backward (with the emulated slowdown)
  double seconds = 0;         // the whole step on this rank
  bool rebalanced = false;    // the next full batch splits differently
};

class BalancedDataParallel {
 public:
  BalancedDataParallel(Communicator& comm, Sequential& model, const BalancedConfig& config);

  /// Rank 0's initial parameters from `seed`, broadcast.
  Status init(uint64_t seed);
  /// One step on a global batch: every rank passes the same rows (fewer than the global batch for a short last
  /// one). Collective.
  Status trainStep(const Tensor& x, const std::vector<int>& labels, BalancedStep* out);

  const LoadBalancer& balancer() const { return balancer_; }
  DataParallel& dataParallel() { return dp_; }

 private:
  Communicator& comm_;
  BalancedConfig config_;
  DataParallel dp_;
  LoadBalancer balancer_;
};

}  // namespace chorus::training::balance
