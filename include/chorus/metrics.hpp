/// @file metrics.hpp
/// CallMetrics: what a communicator's calls cost, per collective and algorithm, beside what the cost model
/// predicted for them; and their Prometheus and JSON forms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace chorus {

/// The calls of one collective that one algorithm ran on this rank, since the communicator was created or its
/// counters reset.
struct CallMetrics {
  std::string collective;     ///< "AllReduce", "Send", ...
  std::string algorithm;      ///< the chosen algorithm ("ring", "direct", ...)
  uint64_t calls = 0;         ///< calls made, grouped ones included
  uint64_t payloadBytes = 0;  ///< as TrafficCounters counts them (nccl-tests' algorithm-bandwidth size)
  uint64_t wireBytes = 0;     ///< bytes this rank sent to other ranks
  /// Calls that ran alone, not inside a group: the ones `seconds` and `predictedSeconds` add up (a group's
  /// operations run interleaved, so no one of them has a time of its own).
  uint64_t timedCalls = 0;
  double seconds = 0;           ///< measured on this rank, from the call's start to its completion
  double predictedSeconds = 0;  ///< the cost model's prediction for the same calls (0 for Send/Recv: none)
};

/// The text forms of metrics (Communicator::metricsText).
enum class MetricsFormat {
  kPrometheus,  ///< text exposition format: chorus_calls_total{comm,rank,collective,algorithm} and the others
  kJson,        ///< {"comm": ..., "rank": ..., "metrics": [{...}, ...]}
};

/// `metrics` of rank `rank` of communicator `comm` (any label that names it) in `format`.
std::string formatMetrics(const std::vector<CallMetrics>& metrics, MetricsFormat format, const std::string& comm,
                          int rank);

}  // namespace chorus
