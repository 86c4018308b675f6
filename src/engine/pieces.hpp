// How many bytes of a step a sender copies into the stream before it publishes them (Execution::advanceSend). The
// reader copies a published piece out while the sender copies the next one in; every publication costs the reader
// a look at the stream's head, and where ranks take turns on cores, a hand-over.
//  - Steps up to 256 KiB, ranks with a core each: pieces of 64 KiB. As one piece, such a step's reader started only
//    once all of it was in. 2-rank calls on the 2-core AMD EPYC VM, one build switched between the two at run time
//    (`<coll>_perf --nprocs 2 -b 32K -e 1M -f 2 -n 1000 -w 100 -c 0 -d float`, 12-24 rotated launches of each,
//    2026-12-02), median time in 64 KiB pieces over one piece, two runs: AllGather of 512 KiB 0.86-0.89x,
//    ReduceScatter 0.80-0.83x, AllReduce 0.85-0.91x; the other sizes of 128 KiB-1 MiB 0.83-1.09x, as much as 1 MiB
//    calls, whose steps go in 256 KiB pieces either way, moved.
//  - Where ranks outnumber cores: one piece up to 256 KiB. The reader then often runs on its writer's core, so it
//    copies nothing while the writer does, and each piece is another turn: 4 ranks on the 2 cores, 10 rotated
//    launches, Broadcast of 64-512 KiB took 1.38-1.47x the time in 64 KiB pieces, AlltoAll 1.08-1.36x.
//  - Larger steps: pieces of 256 KiB. Quarter-step pieces (128 KiB for a 512 KiB step) took 2-rank AllGather of 1-2 MiB
//    1.09-1.16x the time.
// Measured: perf/archive/2026-12-02-mid-size-steps-in-pieces-of-64-kib-where-ranks-have-cores.md, "Mid-size steps in
// pieces of 64 KiB, where ranks have cores".
#pragma once

#include <cstddef>

#include "transports/transport.hpp"

namespace chorus::engine {

struct Pieces {
  static constexpr size_t kBulk = transport::kLargestPiece;
  static constexpr size_t kMidStep = 64 << 10;

  bool ranksShareCores = false;  // this machine runs more ranks of the communicator than it has cores

  /// The bytes published at once of a step of `stepBytes`.
  size_t forStep(size_t stepBytes) const { return stepBytes <= kBulk && !ranksShareCores ? kMidStep : kBulk; }
};

}  // namespace chorus::engine
