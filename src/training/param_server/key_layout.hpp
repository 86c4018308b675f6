// Where the parameters live: S contiguous key ranges of sizes differing by at most one element (range r on server
// r, the (W + r)-th rank), each cut into chunks of a fixed element count (the last one shorter).
#pragma once

#include <algorithm>
#include <cstddef>

namespace chorus::training::param_server {

struct KeyLayout {
  int workers = 0, servers = 0;
  size_t params = 0, chunkElements = 1;

  size_t rangeBegin(int r) const {
    const size_t base = params / servers, extra = params % servers;
    return base * r + std::min<size_t>(r, extra);
  }
  size_t rangeEnd(int r) const { return rangeBegin(r + 1); }
  size_t rangeSize(int r) const { return rangeEnd(r) - rangeBegin(r); }
  int chunks(int r) const { return static_cast<int>((rangeSize(r) + chunkElements - 1) / chunkElements); }
  /// Chunk c of range r: its first element relative to the range, and its element count.
  size_t chunkOffset(int c) const { return static_cast<size_t>(c) * chunkElements; }
  size_t chunkSize(int r, int c) const { return std::min(chunkElements, rangeSize(r) - chunkOffset(c)); }
  int serverRank(int server) const { return workers + server; }
  /// The server that keeps the replica of range r (chain replication: the next one).
  int backupOf(int r) const { return (r + 1) % servers; }
};

}  // namespace chorus::training::param_server
