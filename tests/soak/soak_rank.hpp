// One rank of the soak: runs the seed's calls through the NCCL C API on its communicator and checks every byte it can
// see after each one: results, send buffers of out-of-place calls, receive buffers a call must not write, and guard
// bytes on both sides of every buffer.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "soak/soak_calls.hpp"

namespace soak {

/// What a rank shows the launcher while it runs (in memory the launcher can read after a crash).
struct Progress {
  std::atomic<int64_t> call{-1};  // the call under way
  int64_t rssKibAtQuarter = 0, rssKibAtEnd = 0;
  int64_t fdsAtQuarter = 0, fdsAtEnd = 0;
  // Set after the figures above are written, so that a watching thread reads them only once they are final.
  std::atomic<bool> finished{false};
};

/// Runs `calls` (those `only` lists, as "3,10-12,40-", where it is not empty) as rank `rank` of `comm`; returns ""
/// or what went wrong, naming the call.
std::string runRank(ncclComm_t comm, int rank, int nranks, uint64_t seed, const std::vector<Call>& calls,
                    const std::string& only, Progress* progress);

/// Whether `only` ("3,10-12,40-"; empty: every call) lists call `k`.
bool listed(const std::string& only, size_t k);

}  // namespace soak
