// The call path's tuning constants: the thresholds by which the dispatcher and the engine choose how a call's bytes
// move. Each says why it has its value and where that was measured. Those a user may change are settings too
// (engine/settings.cc and transports/settings.cc declare them). A transport's own sizes (its FIFO's laps and pieces)
// stay with the transport (transports/fifo_lap.hpp); a policy with several figures of its own keeps them in its class
// (FarReaderStores).
#pragma once

#include <cstddef>
#include <cstdint>

#include "transports/transport.hpp"

namespace chorus::engine {

// --- Stores ---

// Received and copied steps at least this large, into buffers judged still in the cache, are written with streaming
// stores (CHORUS_CACHED_STREAMING): they are larger than a core's cache share and read again only by the caller,
// later. 4 MiB won against 2 MiB on buffers holding data, and 8 MiB lost (streaming stores of zeros run faster than
// of data, which made an earlier 2 MiB look best:
// perf/archive/2026-11-29-buffers-full-of-zeros-streaming-stores-measured-too-fast.md). Buffers out of the cache
// stream from CHORUS_COLD_STREAMING, 64 KiB (Dispatcher::streamingFrom).
constexpr size_t kStreamingThreshold = 4 << 20;

// A call on buffers other than the last call's has the lines of buffers up to this size asked for before it runs
// (Dispatcher::pointAt): a larger copy streams through the hardware prefetcher, and asking for every line of a few
// KiB made such calls slower (perf/archive/2026-12-01-calls-on-other-buffers-only-the-buffers-checked-again-their.md).
constexpr size_t kPrefetchedBufferBytes = 1024;

// --- Steps ---

// Local steps (copies, local reductions) of at least this many bytes run after the peers' steps in each round,
// smaller ones before: sends that do not wait for a large copy go out first, while a small copy costs less than the
// round it would wait (ExecutionSettings::largeLocal; b8dacc2).
constexpr size_t kLargeLocalStep = 64 << 10;

// How many bytes of a step a sender copies into the stream before it publishes them (Pieces). The reader copies a
// published piece out while the sender copies the next one in; every publication costs the reader a look at the
// stream's head, and where ranks take turns on cores, a hand-over.
//  - Steps up to kBulkPiece, ranks with a core each: pieces of kMidStepPiece. As one piece, such a step's reader
//    started only once all of it was in; in pieces, 2-rank AllGather, ReduceScatter and AllReduce of 512 KiB took
//    less time.
//  - Where ranks outnumber cores: one piece up to kBulkPiece. The reader then often runs on its writer's core, so it
//    copies nothing while the writer does, and each piece is another turn: 64 KiB pieces lost on Broadcast and
//    AlltoAll at 4 ranks on 2 cores.
//  - Larger steps: pieces of kBulkPiece. Quarter-step pieces (128 KiB for a 512 KiB step) lost on 2-rank AllGather.
// Measured: perf/archive/2026-12-02-mid-size-steps-in-pieces-of-64-kib-where-ranks-have-cores.md.
constexpr size_t kBulkPiece = transport::kLargestPiece;
constexpr size_t kMidStepPiece = 64 << 10;

// A direct transfer carries descriptors of at most kDirectChunk bytes; the sender posts one as soon as its source
// bytes are ready, in kDirectMinChunk pieces, so that a pipeline keeps moving (direct_transfers.cc).
constexpr size_t kDirectChunk = 512 << 10;
constexpr size_t kDirectMinChunk = 64 << 10;
// A direct receive that reduces reads the peer's bytes through a bounce buffer of this size (one per peer), sized to
// stay in the core's cache, and over tcp reduces what arrived in runs of kReduceRun, so that the reduction overlaps
// the rest of the piece's arrival.
constexpr size_t kDirectBounce = 256 << 10;
constexpr size_t kReduceRun = 32 << 10;

// --- Waits ---

// Polls before a waiting rank starts yielding its core, with a core for every rank: its peer is running, so it
// spins long (CHORUS_SPIN).
constexpr int64_t kDefaultSpins = 20000;
// With more ranks than cores, a spinning rank takes the time slice of the rank it waits for: a call below
// kSmallCallBytes yields after kSmallCallSpins polls, a larger one after kOversubscribedSpins. One poll against 16
// won on most calls below 32 KiB at 3, 4 and 8 ranks on 2 cores and lost from 32 KiB
// (perf/archive/2026-11-30-oversubscribed-ranks-one-poll-before-yielding-in-small-calls.md).
constexpr uint64_t kSmallCallBytes = 32 << 10;
constexpr int64_t kSmallCallSpins = 1;
constexpr int64_t kOversubscribedSpins = 16;

// --- Call headers ---

// A rank that owes a peer more headers than kMaxOwedHeaders ends its call only once the peer paid enough of them: it
// runs at most this many calls ahead. The peer confirms every kConfirmEvery calls, well below, so it never waits for
// that. With more ranks than cores a receiver waits for a core, and a sender held back at the limit yields its own:
// 200 won over 64 on small Broadcasts and Reduces at 2, 4 and 8 ranks, and 128 and 1024 (where the 256 lines of a shm
// connection bound the lead) fell between the two
// (perf/archive/2026-12-01-senders-further-ahead-of-their-receivers-confirmations.md).
constexpr size_t kMaxOwedHeaders = 200;
constexpr uint32_t kConfirmEvery = 16;

// --- Plans ---

// The dispatcher keeps at most this many plans (one per shape), so that a sweep over many sizes cannot grow the
// cache without end; a training loop's few shapes stay well below it.
constexpr size_t kMaxCachedPlans = 256;

}  // namespace chorus::engine
