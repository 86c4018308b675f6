#include "perf/iteration_stats.hpp"

#include <algorithm>
#include <cmath>

namespace chorus::perf {

IterationStats summarize(const std::vector<double>& timesUs, int skip) {
  IterationStats s;
  s.skipped = std::clamp(skip, 0, static_cast<int>(timesUs.size()));
  std::vector<double> kept(timesUs.begin() + s.skipped, timesUs.end());
  if (kept.empty()) return s;
  std::sort(kept.begin(), kept.end());
  const double n = static_cast<double>(kept.size());
  // Nearest rank: the smallest sample with at least p% of the samples at or below it.
  auto percentile = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * n));
    return kept[std::clamp<size_t>(rank, 1, kept.size()) - 1];
  };
  s.min = kept.front();
  s.max = kept.back();
  double sum = 0;
  for (double t : kept) sum += t;
  s.avg = sum / n;
  double squares = 0;
  for (double t : kept) squares += (t - s.avg) * (t - s.avg);
  s.stdev = std::sqrt(squares / n);
  s.cv = s.avg > 0 ? 100.0 * s.stdev / s.avg : 0;
  s.p50 = percentile(50);
  s.p95 = percentile(95);
  s.p99 = percentile(99);
  return s;
}

}  // namespace chorus::perf
