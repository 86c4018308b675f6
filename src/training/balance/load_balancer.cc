#include "chorus/training/balance/load_balancer.hpp"

#include <algorithm>
#include <numeric>

namespace chorus::training::balance {

std::vector<size_t> proportionalSplit(const std::vector<double>& weights, size_t total, size_t minEach) {
  const size_t n = weights.size();
  std::vector<size_t> out(n, 0);
  if (n == 0) return out;
  // Heaviest first (ties: lower rank first), for the leftovers and for totals too small to give everyone minEach.
  std::vector<size_t> byWeight(n);
  std::iota(byWeight.begin(), byWeight.end(), 0);
  std::stable_sort(byWeight.begin(), byWeight.end(), [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  if (total < minEach * n) {
    for (size_t k = 0; k < total; ++k) ++out[byWeight[k % n]];
    return out;
  }
  const size_t free = total - minEach * n;
  double sum = 0;
  for (double w : weights) sum += std::max(w, 0.0);
  std::vector<double> remainder(n, 0.0);
  size_t given = 0;
  for (size_t r = 0; r < n; ++r) {
    const double exact = sum > 0 ? free * std::max(weights[r], 0.0) / sum : static_cast<double>(free) / n;
    out[r] = minEach + static_cast<size_t>(exact);
    remainder[r] = exact - static_cast<double>(static_cast<size_t>(exact));
    given += static_cast<size_t>(exact);
  }
  std::vector<size_t> byRemainder(n);
  std::iota(byRemainder.begin(), byRemainder.end(), 0);
  std::stable_sort(byRemainder.begin(), byRemainder.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t k = 0; given < free; ++k, ++given) ++out[byRemainder[k % n]];
  return out;
}

LoadBalancer::LoadBalancer(int ranks, size_t batch, const BalancerConfig& config)
    : config_(config), batch_(batch), speed_(ranks, 0.0) {
  split_ = proportionalSplit(std::vector<double>(ranks, 1.0), batch, 0);
}

std::vector<size_t> LoadBalancer::splitOf(size_t rows) const {
  if (rows == batch_) return split_;
  std::vector<double> weights(split_.begin(), split_.end());
  return proportionalSplit(weights, rows, 0);
}

bool LoadBalancer::record(const std::vector<double>& samplesPerSecond) {
  const size_t n = speed_.size();
  for (size_t r = 0; r < n && r < samplesPerSecond.size(); ++r) {
    if (samplesPerSecond[r] <= 0) continue;
    speed_[r] = speed_[r] > 0 ? (1 - config_.smoothing) * speed_[r] + config_.smoothing * samplesPerSecond[r]
                              : samplesPerSecond[r];
  }
  if (std::any_of(speed_.begin(), speed_.end(), [](double s) { return s <= 0; })) return false;
  // The step time a split predicts: its slowest rank's.
  auto stepTime = [&](const std::vector<size_t>& split) {
    double worst = 0;
    for (size_t r = 0; r < n; ++r) worst = std::max(worst, static_cast<double>(split[r]) / speed_[r]);
    return worst;
  };
  std::vector<size_t> candidate = proportionalSplit(speed_, batch_, std::min(config_.minSamples, batch_ / n));
  if (candidate == split_ || stepTime(candidate) > (1 - config_.hysteresis) * stepTime(split_)) return false;
  split_ = std::move(candidate);
  return true;
}

}  // namespace chorus::training::balance
