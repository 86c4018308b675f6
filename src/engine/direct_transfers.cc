// Direct transfers on the engine's side: the wire format of their descriptors and region announcements, and the
// steps that send and receive through a connection's DirectTransfers.
#include <algorithm>
#include <cstring>

#include "engine/execution.hpp"
#include "engine/wire.hpp"
#include "kernels/copy.hpp"

namespace chorus::engine {

using algo::StepKind;

// A direct transfer carries descriptors {region, offset, length} of at most kDirectChunk bytes (tuning.hpp); the
// sender posts one as soon as its source bytes are ready (in kDirectMinChunk pieces, so a pipeline keeps moving) and
// completes once the transport acknowledged every byte, because only then may the buffer change. A region is announced
// once per call and stream, before the first descriptor that names it: a descriptor with region kAnnounce whose `bytes`
// peer bytes of the registration follow, padded to 16. Regions are numbered in the order of their announcements.
struct DirectDescriptor {
  uint64_t offset;
  uint32_t bytes;
  uint32_t region;
};
static_assert(sizeof(DirectDescriptor) == kWireAlign);
constexpr uint32_t kAnnounce = 0xffffffffu;
// A step whose source the peer cannot reach (Registration::viaStream) sends this descriptor alone, then its bytes
// through the stream, as a step below the threshold does: only the sender knows where its buffer lives.
constexpr uint32_t kStreamed = 0xfffffffeu;
// Peer bytes of one registration: a UCX packed rkey is the largest, at a few hundred bytes.
constexpr uint32_t kMaxPeerBytes = 4096;

// Registers the step's source buffer with the connection (once per call and buffer: steps of the same buffer share
// it) and queues its announcement when this call has not announced it on this stream yet. A staged send whose
// source the peer cannot reach announces the staging area instead, once its bytes are copied there (stage()); until
// its source is complete it announces nothing.
Status Execution::announceRegion(Work& w, PeerQueues& q) {
  if (w.region && !q.direct->current(*w.region)) w.region = nullptr;
  if (!w.region) {
    for (const auto& r : q.regionsOut) {
      if (r->base == w.regionBase && r->bytes == w.regionBytes && r->type == w.memory) w.region = r;
    }
    if (!w.region) CHORUS_TRY(q.direct->registerMemory(w.regionBase, w.regionBytes, w.memory, &w.region));
  }
  std::shared_ptr<const transport::Registration> announced = w.region;
  if (stagesSource(w)) {
    CHORUS_TRY(stage(w, q));
    if (!w.stagedCopy) return Status::ok();
    announced = q.staging;
  }
  if (announced->viaStream) return Status::ok();  // nothing to announce: the bytes go through the stream
  for (size_t i = 0; i < q.regionsOut.size(); ++i) {
    if (q.regionsOut[i] == announced) {
      w.regionIndex = static_cast<uint32_t>(i);
      return Status::ok();
    }
  }
  const auto& peerBytes = announced->peerBytes;
  if (peerBytes.size() > kMaxPeerBytes) {
    return internalError(std::string(q.connection->transportName()) + " made a region of " +
                         std::to_string(peerBytes.size()) + " peer bytes, more than " + std::to_string(kMaxPeerBytes));
  }
  DirectDescriptor announce{0, static_cast<uint32_t>(peerBytes.size()), kAnnounce};
  q.announceOut.assign(kWireAlign + padded(peerBytes.size()), std::byte{0});
  memcpy(q.announceOut.data(), &announce, sizeof(announce));
  if (!peerBytes.empty()) memcpy(q.announceOut.data() + kWireAlign, peerBytes.data(), peerBytes.size());
  q.announceOutWire = 0;
  w.regionIndex = static_cast<uint32_t>(q.regionsOut.size());
  q.regionsOut.push_back(announced);
  return Status::ok();
}

// Copies a staged send's bytes, once they are all there, into their place in this call's staging area (sends of the
// same bytes, after the same step, to other peers share the place and the copy) and registers the area with the
// peer's connection. Shareable memory: a peer of this host maps it and reads in place, so bytes that several peers
// take are copied in once, not once per peer.
Status Execution::stage(Work& w, PeerQueues& q) {
  if (depLimit(w) < w.bytes) return Status::ok();
  if (!stagingBase_) CHORUS_TRY(staging_.reserve(stagingBytes_, &stagingBase_));
  StagedSource& source = stagedSources_[static_cast<size_t>(w.stagedSource)];
  if (!source.copied) {
    transport::copyWith(storesFor(w), stagingBase_ + source.offset, w.src, w.bytes);
    source.copied = true;
  }
  w.stagedCopy = stagingBase_ + source.offset;
  if (q.staging &&
      (q.staging->base != stagingBase_ || q.staging->bytes < stagingBytes_ || !q.direct->current(*q.staging))) {
    q.staging = nullptr;
  }
  if (!q.staging)
    CHORUS_TRY(q.direct->registerMemory(stagingBase_, stagingBytes_, transport::MemoryType::kHost, &q.staging));
  return Status::ok();
}

namespace {

// Moves bytes of `message` from *done on into the stream; true once all of it is in.
bool writeStream(transport::Connection* c, const std::vector<std::byte>& message, size_t* done) {
  while (*done < message.size()) {
    auto space = c->sendSpace();
    if (space.empty()) return false;
    const size_t n = std::min(space.size(), message.size() - *done);
    memcpy(space.data(), message.data() + *done, n);
    c->commitSend(n);
    *done += n;
  }
  return true;
}

}  // namespace

Status Execution::advanceDirectSend(Work& w, PeerQueues& q, bool* moved) {
  transport::Connection* c = q.connection;
  if (w.regionIndex == kNoRegion && w.wire < w.bytes) {
    CHORUS_TRY(announceRegion(w, q));
    if (stagesSource(w) && !w.stagedCopy) return Status::ok();  // waits for its source to stage it
    if (w.regionIndex == kNoRegion) {
      auto space = c->sendSpace();
      if (space.size() < kWireAlign) return Status::ok();
      const DirectDescriptor streamed{0, 0, kStreamed};
      memcpy(space.data(), &streamed, sizeof(streamed));
      c->commitSend(kWireAlign);
      w.streamed = true;
      *moved = true;
      return advanceSend(w, q, moved);
    }
  }
  if (!writeStream(c, q.announceOut, &q.announceOutWire)) return Status::ok();
  while (w.wire < w.bytes) {
    const size_t ready = depLimit(w) - w.wire;
    if (ready == 0 || (ready < kDirectMinChunk && w.wire + ready < w.bytes)) break;
    auto space = c->sendSpace();
    if (space.size() < kWireAlign) break;
    size_t n = std::min(ready, kDirectChunk);
    if (w.wire + n < w.bytes) n &= ~(kWireAlign - 1);
    const transport::Registration& region = *q.regionsOut[w.regionIndex];
    const std::byte* from = w.stagedCopy ? w.stagedCopy : w.src;
    const size_t offset = static_cast<size_t>(from + w.wire - region.base);
    DirectDescriptor d{offset, static_cast<uint32_t>(n), w.regionIndex};
    memcpy(space.data(), &d, sizeof(d));
    c->commitSend(kWireAlign);
    w.ackTarget = q.direct->post(region, offset, n);
    w.wire += n;
    *moved = true;
  }
  if (w.wire == w.bytes && q.direct->acked() >= w.ackTarget) finish(w);
  return Status::ok();
}

// Takes a region announcement from the stream: its descriptor, then its peer bytes, which may arrive in parts.
// True once the region is known.
Status Execution::takeAnnouncement(PeerQueues& q, const DirectDescriptor& d, bool* done) {
  transport::Connection* c = q.connection;
  if (q.announceIn.empty()) {
    if (d.bytes > kMaxPeerBytes) {
      return internalError("a direct transfer's region announcement carries " + std::to_string(d.bytes) +
                           " bytes, more than " + std::to_string(kMaxPeerBytes) + " (a corrupt stream)");
    }
    c->consumeRecv(kWireAlign);
    q.announceIn.resize(padded(d.bytes));
    q.announceInBytes = d.bytes;
    q.announceInRead = 0;
  }
  while (q.announceInRead < q.announceIn.size()) {
    auto data = c->recvData();
    if (data.empty()) return Status::ok();
    const size_t n = std::min(data.size(), q.announceIn.size() - q.announceInRead);
    memcpy(q.announceIn.data() + q.announceInRead, data.data(), n);
    c->consumeRecv(n);
    q.announceInRead += n;
  }
  q.announceIn.resize(q.announceInBytes);
  q.regionsIn.push_back({std::move(q.announceIn), nullptr});
  q.announceIn.clear();
  *done = true;
  return Status::ok();
}

Status Execution::advanceDirectRecv(Work& w, PeerQueues& q, bool* moved) {
  transport::Connection* c = q.connection;
  // Reductions read the peer's bytes through a cache-sized bounce buffer (one per peer: only the first pending
  // receive of a peer runs), then reduce from it.
  while (w.wire < w.bytes) {
    DirectDescriptor d{0, 0, kAnnounce};
    if (q.announceIn.empty()) {
      auto data = c->recvData();
      if (data.size() < kWireAlign) break;
      memcpy(&d, data.data(), sizeof(d));
    }
    if (d.region == kStreamed) {
      if (w.wire != 0) {
        return internalError("rank " + std::to_string(w.peer) + " switched a direct transfer to the stream after " +
                             std::to_string(w.wire) + " bytes (a corrupt stream)");
      }
      c->consumeRecv(kWireAlign);
      w.streamed = true;
      *moved = true;
      return advanceRecv(w, q, moved);
    }
    if (d.region == kAnnounce) {
      bool known = false;
      CHORUS_TRY(takeAnnouncement(q, d, &known));
      *moved = true;
      if (!known) break;
      continue;
    }
    if (d.region >= q.regionsIn.size()) {
      return internalError("direct transfer from rank " + std::to_string(w.peer) + " names region " +
                           std::to_string(d.region) + " of " + std::to_string(q.regionsIn.size()) +
                           " announced (a corrupt stream)");
    }
    transport::RemoteRegion& region = q.regionsIn[d.region];
    // A reduction into bytes another step still produces waits until that step has finished them.
    if (d.bytes <= w.bytes - w.wire && depLimit(w) < w.wire + d.bytes) break;
    if (d.bytes == 0 || d.bytes > w.bytes - w.wire) {
      return internalError("direct transfer from rank " + std::to_string(w.peer) + " announces " +
                           std::to_string(d.bytes) + " bytes where " + std::to_string(w.bytes - w.wire) +
                           " remain (the two sides run different operations)");
    }
    // A transfer may arrive in parts (tcp): w.directDone counts the bytes of this descriptor already taken.
    if (w.kind == StepKind::kRecv) {
      size_t n = 0;
      CHORUS_TRY(q.direct->read(w.dst + w.wire + w.directDone, region, d.offset + w.directDone, d.bytes - w.directDone,
                                storesFor(w), &n));
      w.directDone += n;
      *moved = *moved || n > 0;
    } else {
      if (!q.bounce) q.bounce.reset(static_cast<std::byte*>(aligned_alloc(4096, kDirectBounce)));
      if (!q.bounce) return systemError("out of memory for a " + std::to_string(kDirectBounce) + "-byte bounce buffer");
      // Folds `bytes` of the peer's at `theirs` into the output at `at` of the descriptor. A large step out of
      // place sums into `sums` (at most kDirectBounce bytes at a time, in cache) and streams the sum out, so the
      // output's lines are not read from memory first
      // (perf/archive/2026-11-27-direct-transfers-paced-an-allreduces-two-phases-at-once.md).
      auto fold = [&](size_t at, const std::byte* theirs, std::byte* sums, size_t bytes) {
        std::byte* out = w.dst + w.wire + at;
        const std::byte* own = w.src + w.wire + at;
        if (out == own || storesFor(w) != transport::Stores::kStreaming) {
          w.reduce(out, own, theirs, bytes / w.elemSize);
          return;
        }
        for (size_t i = 0; i < bytes; i += kDirectBounce) {
          const size_t n = std::min(kDirectBounce, bytes - i);
          w.reduce(sums, own + i, theirs + i, n / w.elemSize);
          kernels::streamingCopy(out + i, sums, n);
        }
      };
      // Where the peer's memory is mapped here, the reduction reads it in place: no pass through the bounce buffer.
      const std::byte* inPlace = nullptr;
      if (w.directDone == 0) CHORUS_TRY(q.direct->view(region, d.offset, d.bytes, &inPlace));
      if (inPlace) {
        fold(0, inPlace, q.bounce.get(), d.bytes);
        q.direct->viewed(d.bytes);
        w.directDone = w.directReduced = d.bytes;
      }
      // tcp delivers a transfer in parts: reduce what arrived in runs of kReduceRun, so the reduction overlaps the
      // rest of the piece's arrival instead of waiting for all of it.
      while (w.directReduced < d.bytes) {
        const size_t pieceStart = w.directReduced - w.directReduced % kDirectBounce;
        const size_t pieceEnd = std::min(pieceStart + kDirectBounce, static_cast<size_t>(d.bytes));
        size_t n = 0;
        if (w.directDone < pieceEnd) {
          CHORUS_TRY(q.direct->read(q.bounce.get() + (w.directDone - pieceStart), region, d.offset + w.directDone,
                                    pieceEnd - w.directDone, transport::Stores::kCached, &n));
          w.directDone += n;
          *moved = *moved || n > 0;
        }
        const bool pieceArrived = w.directDone == pieceEnd;
        size_t run = w.directDone - w.directReduced;
        run -= run % w.elemSize;
        if (run == 0 || (!pieceArrived && run < kReduceRun)) break;
        std::byte* staged = q.bounce.get() + (w.directReduced - pieceStart);
        fold(w.directReduced, staged, staged, run);
        w.directReduced += run;
        if (!pieceArrived) break;  // the socket had no more for now
      }
    }
    if (w.directDone < d.bytes || (w.kind == StepKind::kRecvReduce && w.directReduced < d.bytes)) break;
    c->consumeRecv(kWireAlign);
    w.wire += d.bytes;
    w.directDone = 0;
    w.directReduced = 0;
    *moved = true;
    // One descriptor per round: the steps that forward these bytes (a ring's next send) post them meanwhile.
    break;
  }
  if (w.wire == w.bytes) finish(w);
  return Status::ok();
}

}  // namespace chorus::engine
