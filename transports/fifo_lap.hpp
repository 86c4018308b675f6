// How far into its FIFO a producer goes before it starts over at the front when the FIFO is empty (Fifo::wrapEarly):
// the lap. Two costs pull it opposite ways.
//  - Lines the reader's core still holds. A plain store into a line that another core has in its private cache must
//    take the line back from it first, one cross-core round trip per line. A lap longer than the reader's private
//    cache finds its lines gone from there (still in the shared cache). Two threads exchanging 16 KiB through a
//    shared buffer each iteration on the 2-core AMD EPYC VM (L2 1 MiB; perf/bench_transport, fifoLap): 2.6-2.9 µs
//    per exchange at laps of 16-512 KiB, 2.0 at 1 MiB, 1.3-1.5 at 2-8 MiB; streaming stores 2.8-3.4 at every lap.
//  - The cache the FIFOs share. 4 ranks on 2 cores have 12 FIFOs of 4 MiB, more than the 32 MiB L3: laps of 512 KiB
//    took AlltoAll of 256 KiB-8 MiB to 0.62-0.78x the time of full laps, ReduceScatter of 128 KiB-2 MiB 0.56-0.81x.
//    There the ranks take turns on the cores, so a FIFO's reader often runs on its writer's core.
// So: where each of a machine's ranks has a core of its own, laps of twice the private cache; where ranks outnumber
// cores, 512 KiB. Measured (perf/RESULTS.md, "FIFO laps past the reader's cache"): 2 ranks on 2 cores, 2 MiB laps
// against 512 KiB, AllGather, ReduceScatter, AlltoAll, Broadcast and AllReduce of 16-512 KiB 0.4-0.9x the time; 3
// and 4 ranks on 2 cores, 2 MiB laps 1.1-1.6x the time of 512 KiB ones for AlltoAll and AllReduce of 128 KiB-1 MiB.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/cache_size.hpp"
#include "transports/transport.hpp"

namespace chorus::transport {

/// The lap where ranks share cores, and the floor of every lap.
inline constexpr size_t kSharedCoreLap = 512 << 10;
/// The private cache assumed where the machine reports none.
inline constexpr size_t kAssumedPrivateCache = 1 << 20;

/// The lap for a FIFO between two of `ranksOnMachine` ranks of a machine with `cores` cores, each with a private
/// cache of `privateCacheBytes`.
inline size_t fifoLap(int ranksOnMachine, int cores, size_t privateCacheBytes) {
  if (ranksOnMachine > cores) return kSharedCoreLap;
  return std::max(kSharedCoreLap, 2 * privateCacheBytes);
}

/// The lap for this rank's FIFOs to the peers a transport connects on its machine: the communicator's ranks on the
/// same machine (PeerInfo::machineId), the machine's online cores, and the private cache cpuid reports.
inline size_t fifoLap(const ConnectContext& ctx) {
  const std::string& mine = (*ctx.peers)[static_cast<size_t>(ctx.rank)].machineId;
  const int ranksOnMachine = static_cast<int>(std::count_if(
      ctx.peers->begin(), ctx.peers->end(), [&](const PeerInfo& peer) { return peer.machineId == mine; }));
  const int cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const size_t privateCache = sysconfPrivateCacheBytes();
  return fifoLap(ranksOnMachine, cores, privateCache > 0 ? privateCache : kAssumedPrivateCache);
}

}  // namespace chorus::transport
