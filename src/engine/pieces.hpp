// How many bytes of a step a sender copies into the stream before it publishes them (Execution::advanceSend). The
// reader copies a published piece out while the sender copies the next one in; every publication costs the reader
// a look at the stream's head, and where ranks take turns on cores, a hand-over.
//  - Steps up to 256 KiB, ranks with a core each: pieces of 64 KiB. As one piece, such a step's reader started only
//    once all of it was in; in pieces, 2-rank AllGather, ReduceScatter and AllReduce of 512 KiB took less time.
//  - Where ranks outnumber cores: one piece up to 256 KiB. The reader then often runs on its writer's core, so it
//    copies nothing while the writer does, and each piece is another turn: 64 KiB pieces lost on Broadcast and
//    AlltoAll at 4 ranks on 2 cores.
//  - Larger steps: pieces of 256 KiB. Quarter-step pieces (128 KiB for a 512 KiB step) lost on 2-rank AllGather.
// Measured: perf/archive/2026-12-02-mid-size-steps-in-pieces-of-64-kib-where-ranks-have-cores.md.
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
