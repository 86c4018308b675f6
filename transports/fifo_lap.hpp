// How far into its FIFO a producer goes before it starts over at the front when the FIFO is empty (Fifo::wrapEarly):
// the lap. Two costs pull it opposite ways.
//  - Lines the reader's core still holds. A plain store into a line that another core has in its private cache must
//    take the line back from it first, one cross-core round trip per line. A lap longer than the reader's private
//    cache finds its lines gone from there, and exchanges through two FIFOs get faster from laps of twice that cache
//    (perf/bench_fifo_lap).
//  - The cache the FIFOs share. Where ranks outnumber cores (4 ranks on 2 cores write 12 FIFOs of 4 MiB, more than a
//    32 MiB L3), the ranks take turns on the cores, so a FIFO's reader often runs on its writer's core, and short laps
//    that keep all the FIFOs of a call in the cache win; laps so short that the FIFOs use a small part of it lose
//    again, and the callers' buffers beside the FIFOs grow with the ranks.
// So: where ranks outnumber cores, the FIFOs the machine's ranks write in a call share a quarter of the last-level
// cache, and from 4 ranks one part in as many as there are ranks, in laps of 64-512 KiB; the engine tells each
// connection how many peers its rank's calls write to (Connection::writesToPeers). Where each rank has a core, laps of
// twice the private cache, but 512 KiB ones after a bulk piece (256 KiB, the engine's largest), which lost with long
// laps. Measured: perf/archive/2026-12-02-fifo-laps-past-the-readers-private-cache.md,
// perf/archive/2026-12-02-fifo-laps-for-the-peers-a-call-writes-where-ranks-share-core.md and
// perf/archive/2026-12-02-fifo-laps-at-8-ranks-an-eighth-of-the-cache.md.
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
/// past its lap into lines of the FIFO no call touched lately, as far as the FIFO lets it, and out of the cache; FIFOs
/// of two laps keep it in. They won on most collectives and sizes at 4 and 8 ranks on 2 cores and lost on mid-size
/// Broadcast at 3 and 4 ranks, where chorus takes a fraction of the peers' time
/// (perf/archive/2026-12-02-fifos-of-1-mib-where-ranks-share-cores.md).
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
