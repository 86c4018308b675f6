// The summary of per-iteration times (-I): nccl-tests' i_min i_max i_p99 i_cv% columns and the statistics of its
// JSON report.
#pragma once

#include <vector>

namespace chorus::perf {

struct IterationStats {
  int skipped = 0;  // leading samples left out (-K)
  double min = 0, max = 0, avg = 0, p50 = 0, p95 = 0, p99 = 0, stdev = 0;
  double cv = 0;  // stdev / avg, in percent
};

/// Summarises `timesUs` without its first `skip` samples. Percentiles are nearest-rank; stdev is the population's.
IterationStats summarize(const std::vector<double>& timesUs, int skip);

}  // namespace chorus::perf
