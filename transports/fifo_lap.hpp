// How far into its FIFO a producer goes before it starts over at the front when the FIFO is empty (Fifo::wrapEarly):
// the lap. Two costs pull it opposite ways.
//  - Lines the reader's core still holds. A plain store into a line that another core has in its private cache must
//    take the line back from it first, one cross-core round trip per line. A lap longer than the reader's private
//    cache finds its lines gone from there. Two threads exchanging 16 KiB through a pair of FIFOs each iteration on
//    the 2-core AMD EPYC VM (L2 1 MiB; perf/bench_fifo_lap): 2.6-2.9 µs per exchange with laps of 64-512 KiB, 2.0 at
//    1 MiB, 1.4-1.5 at 2-4 MiB, in launches where the host placed the CPUs close.
//  - The cache the FIFOs share. 4 ranks on 2 cores have 12 FIFOs of 4 MiB, more than the 32 MiB L3: laps of 512 KiB
//    took AlltoAll of 256 KiB-8 MiB to 0.62-0.78x the time of full laps, ReduceScatter of 128 KiB-2 MiB 0.56-0.81x.
//    There the ranks take turns on the cores, so a FIFO's reader often runs on its writer's core.
// So: where ranks outnumber cores, 512 KiB laps. Where each rank has a core, laps of twice the private cache, but
// 512 KiB ones after a bulk piece (256 KiB, the engine's largest): calls that large took 1.14-1.17x their time
// (2-rank AllReduce of 512 KiB-2 MiB) with long laps. Measured: perf/RESULTS.md, "FIFO laps past the reader's
// private cache".
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/cache_size.hpp"
#include "transports/fifo.hpp"
#include "transports/transport.hpp"

namespace chorus::transport {

/// Laps where ranks share cores, and after bulk pieces.
inline constexpr size_t kShortLap = 512 << 10;
inline constexpr size_t kBulkPiece = 256 << 10;
inline constexpr FifoLap kSharedCoreLap{kShortLap, kShortLap, kBulkPiece};
/// The private cache assumed where the machine reports none.
inline constexpr size_t kAssumedPrivateCache = 1 << 20;

/// The lap for a FIFO between two of `ranksOnMachine` ranks of a machine with `cores` cores, each with a private
/// cache of `privateCacheBytes`.
inline FifoLap fifoLap(int ranksOnMachine, int cores, size_t privateCacheBytes) {
  if (ranksOnMachine > cores) return kSharedCoreLap;
  return {std::max(kShortLap, 2 * privateCacheBytes), kShortLap, kBulkPiece};
}

/// The lap for this rank's FIFOs to the peers a transport connects on its machine: the communicator's ranks on the
/// same machine (PeerInfo::machineId), the machine's online cores, and the private cache cpuid reports.
inline FifoLap fifoLap(const ConnectContext& ctx) {
  const std::string& mine = (*ctx.peers)[static_cast<size_t>(ctx.rank)].machineId;
  const int ranksOnMachine = static_cast<int>(std::count_if(
      ctx.peers->begin(), ctx.peers->end(), [&](const PeerInfo& peer) { return peer.machineId == mine; }));
  const int cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const size_t privateCache = sysconfPrivateCacheBytes();
  return fifoLap(ranksOnMachine, cores, privateCache > 0 ? privateCache : kAssumedPrivateCache);
}

}  // namespace chorus::transport
