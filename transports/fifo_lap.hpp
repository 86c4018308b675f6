// How far into its FIFO a producer goes before it starts over at the front when the FIFO is empty (Fifo::wrapEarly):
// the lap. Two costs pull it opposite ways.
//  - Lines the reader's core still holds. A plain store into a line that another core has in its private cache must
//    take the line back from it first, one cross-core round trip per line. A lap longer than the reader's private
//    cache finds its lines gone from there. Two threads exchanging 16 KiB through a pair of FIFOs each iteration on
//    the 2-core AMD EPYC VM (L2 1 MiB; perf/bench_fifo_lap): 2.6-2.9 µs per exchange with laps of 64-512 KiB, 2.0 at
//    1 MiB, 1.4-1.5 at 2-4 MiB, in launches where the host placed the CPUs close.
//  - The cache the FIFOs share. 4 ranks on 2 cores have 12 FIFOs of 4 MiB, more than the 32 MiB L3: laps of 512 KiB
//    took AlltoAll of 256 KiB-8 MiB to 0.62-0.78x the time of full laps, ReduceScatter of 128 KiB-2 MiB 0.56-0.81x.
//    There the ranks take turns on the cores, so a FIFO's reader often runs on its writer's core. An 8-rank
//    AlltoAll writes 56 FIFOs, 28 MiB in laps of 512 KiB; in laps sized for the peers it writes (144 KiB, 8 MiB in
//    all) it took 0.74-0.85x its time at 64 KiB-1 MiB, AllReduce and ReduceScatter of 64-128 KiB 0.85-0.91x, the
//    rest 0.90-1.12x (16 rotated launches); in laps of half that (72 KiB, 4 MiB in all; one build switched at run
//    time, 12-16 launches, three runs) AlltoAll of 512 KiB-1 MiB took 0.75-0.82x the time of 144 KiB laps, AllReduce
//    and ReduceScatter of 256 KiB-1 MiB 0.74-0.94x. At 4 ranks laps of 128-256 KiB took AlltoAll to 1.1-1.3x the
//    time of 512 KiB ones, and 340 KiB laps (4 MiB in all) 1.04-1.13x at 128 KiB-1 MiB: 12 FIFOs of 512 KiB fit.
//    The callers' buffers beside the FIFOs grow with the ranks.
// So: where ranks outnumber cores, the FIFOs the machine's ranks write in a call share a quarter of the last-level
// cache, and from 4 ranks one part in as many as there are ranks, in laps of 64-512 KiB; the engine tells each
// connection how many peers its rank's calls write to (Connection::writesToPeers). Where each rank has a core, laps of
// twice the private cache, but 512 KiB ones after a bulk piece (256 KiB, the engine's largest): calls that large
// took 1.14-1.17x their time (2-rank AllReduce of 512 KiB-2 MiB) with long laps. Measured:
// perf/archive/2026-12-02-fifo-laps-past-the-readers-private-cache.md, "FIFO laps past the reader's private cache" and
// "FIFO laps for the peers a call writes, where ranks share cores".
#pragma once

#include <algorithm>
#include <cstddef>

#include "core/cache_size.hpp"
#include "transports/fifo.hpp"
#include "transports/machine_load.hpp"
#include "transports/transport.hpp"

namespace chorus::transport {

/// Laps after bulk pieces, and the longest where ranks share cores.
inline constexpr size_t kShortLap = 512 << 10;
inline constexpr size_t kBulkPiece = kLargestPiece;
inline constexpr FifoLap kSharedCoreLap{kShortLap, kShortLap, kBulkPiece};
/// The shortest lap where ranks share cores: a lap is checked for every 64 KiB produced (Fifo::wrapEarly).
inline constexpr size_t kShortestLap = 64 << 10;
/// Where ranks share cores, the FIFOs of a machine's ranks together fill at most this part of the last-level cache,
/// or one part in as many as there are ranks where that is less (the rest holds the callers' buffers).
inline constexpr int kFifoShareOfCache = 4;  // a quarter
/// A FIFO's bytes per direction where the setting leaves them to chorus (CHORUS_SHM_BUFFER=auto): 4 MiB where each
/// rank has a core; where ranks share cores, two of the longest laps. A producer whose reader waits for a core runs on
/// past its lap into lines of the FIFO no call touched lately, as far as the FIFO lets it: 4 ranks on 2 cores wrote 12
/// FIFOs of 4 MiB, beside 16 MiB of callers' buffers at 2 MiB a call, in a 32 MiB cache. FIFOs of 1 MiB took AllReduce
/// of 1-4 MiB to 0.43-0.89x the time of 4 MiB ones, ReduceScatter of 1-8 MiB 0.59-0.78x, AlltoAll of 64 KiB-16 MiB
/// 0.49-1.06x, at 8 ranks ReduceScatter and Broadcast of 8-16 MiB 0.74-0.79x. Broadcast of 128 KiB-1 MiB lost at 3 and
/// 4 ranks (1.09-1.47x), where it takes a fraction of the peers' time
/// (perf/archive/2026-12-02-fifos-of-1-mib-where-ranks-share-cores.md, "FIFOs of 1 MiB where ranks share cores").
inline constexpr size_t kFifoBytes = 4 << 20;
inline constexpr size_t kSharedCoreFifoBytes = 2 * kShortLap;
/// The caches assumed where the machine reports none.
inline constexpr size_t kAssumedPrivateCache = 1 << 20;
inline constexpr size_t kAssumedSharedCache = kAssumedLastLevelCacheBytes;

/// The laps of one rank's FIFOs to the peers on its machine.
struct FifoLaps {
  FifoLap fixed = kSharedCoreLap;  // where each rank has a core, and where no budget is given
  /// Where ranks share cores: this rank's part of the cache for the FIFOs it writes in a call; 0: the fixed lap.
  size_t sharedBudget = 0;
  int peersOnMachine = 1;

  /// The lap while this rank's calls write to `peers` peers.
  FifoLap forPeers(int peers) const {
    if (sharedBudget == 0) return fixed;
    const size_t share = sharedBudget / static_cast<size_t>(std::max(1, peers));
    const size_t lap = std::clamp(share, kShortestLap, kShortLap) & ~size_t{4095};
    return {lap, lap, kBulkPiece};
  }
  /// Before the first call: as if it wrote to every peer on the machine.
  FifoLap initial() const { return forPeers(peersOnMachine); }
  /// A FIFO's bytes per direction where the setting is auto (0), else the setting's.
  int64_t fifoBytes(int64_t configured) const {
    if (configured > 0) return configured;
    return static_cast<int64_t>(sharedBudget == 0 ? kFifoBytes : kSharedCoreFifoBytes);
  }
};

/// The laps for FIFOs among `ranksOnMachine` ranks of a machine with `cores` cores, each with a private cache of
/// `privateCacheBytes`, sharing a last-level cache of `sharedCacheBytes`.
inline FifoLaps fifoLaps(int ranksOnMachine, int cores, size_t privateCacheBytes, size_t sharedCacheBytes) {
  const int peers = std::max(1, ranksOnMachine - 1);
  if (MachineLoad{ranksOnMachine, cores}.ranksShareCores()) {
    const size_t fifosShare = sharedCacheBytes / static_cast<size_t>(std::max(kFifoShareOfCache, ranksOnMachine));
    return {kSharedCoreLap, fifosShare / static_cast<size_t>(ranksOnMachine), peers};
  }
  return {{std::max(kShortLap, 2 * privateCacheBytes), kShortLap, kBulkPiece}, 0, peers};
}

/// The laps for this rank's FIFOs to the peers a transport connects on its machine: the communicator's ranks there
/// and the cores they may run on (machineLoad), and the machine's caches as it reports them.
inline FifoLaps fifoLaps(const ConnectContext& ctx) {
  const MachineLoad load = machineLoad(*ctx.peers, ctx.rank);
  const size_t privateCache = sysconfPrivateCacheBytes();
  const size_t sharedCache = lastLevelCacheBytes();
  return fifoLaps(load.ranks, load.cores, privateCache > 0 ? privateCache : kAssumedPrivateCache,
                  sharedCache > 0 ? sharedCache : kAssumedSharedCache);
}

}  // namespace chorus::transport
