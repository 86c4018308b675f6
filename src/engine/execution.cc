#include "engine/execution.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "core/log.hpp"
#include "core/settings.hpp"
#include "engine/settings.hpp"
#include "engine/wire.hpp"
#include "kernels/copy.hpp"
#include "transports/settings.hpp"

namespace chorus::engine {

using algo::BufferKind;
using algo::StepKind;

namespace {

const std::byte* resolve(const Binding& b, const algo::Slice& s) {
  switch (s.buffer) {
    case BufferKind::kSend:
      return static_cast<const std::byte*>(b.send) + s.offset;
    case BufferKind::kRecv:
      return static_cast<const std::byte*>(b.recv) + s.offset;
    case BufferKind::kScratch:
      return static_cast<const std::byte*>(b.scratch) + s.offset;
  }
  return nullptr;
}

bool isSend(StepKind k) { return k == StepKind::kSend || k == StepKind::kSendSize; }
bool isRecv(StepKind k) { return k == StepKind::kRecv || k == StepKind::kRecvReduce || k == StepKind::kRecvSize; }

}  // namespace

Execution::Execution(int rank, std::function<transport::Connection*(int)> connection,
                     const std::atomic<bool>* abortFlag, ExecutionSettings settings)
    : rank_(rank), connection_(std::move(connection)), abortFlag_(abortFlag), settings_(std::move(settings)) {
  const Settings& values = settings_.values ? *settings_.values : chorus::settings();
  defaultSpins_ = values[kSpin] > 0 ? values[kSpin] : kDefaultSpins;
  spinIterations_ = defaultSpins_;
  farStoresOn_ = values[kFarStreaming];
  directThreshold_ = values[transport::kDirectThreshold];
  checkCalls_ = values[kCheckCalls];
}

void Execution::bind(std::span<const BoundPlan> plans, const CallOptions& options) {
  reset(options, plans.size());
  for (const BoundPlan& p : plans) append(*p.plan, p.binding);
  if (options.signature) sign(*options.signature);
}

void Execution::reset(const CallOptions& options, size_t operations) {
  traceSteps_ = log::enabled(log::Level::kTrace, log::kEngine);
  what_ = options.what;
  sequence_ = options.sequence;
  operations_ = operations;
  spinIterations_ = options.spinIterations > 0 ? options.spinIterations : defaultSpins_;
  work_.clear();
  locals_.clear();
  localsPending_ = false;
  bindingOfPlan_.clear();
  stagingBytes_ = 0;
  stagingBase_ = nullptr;
  stagedSources_.clear();
  for (auto& [peer, q] : peers_) {
    q.sends.clear();
    q.recvs.clear();
    q.regionsOut.clear();
    q.regionsIn.clear();
    q.announceOut.clear();
    q.announceIn.clear();
    q.announceOutWire = 0;
    q.nextSend = q.nextPost = q.nextRecv = 0;
    q.sendFlow = q.recvFlow = 0;
    q.headerOutPending = q.headerInPending = q.headerPackedOut = q.headerPackedIn = false;
    q.confirming = q.confirmationPending = q.owedOverLimit = false;
    q.involved = q.owes = q.confirms = q.pointToPoint = false;  // until sign()
  }
  signed_ = false;
  remaining_ = 0;
  drained_ = true;
}

void Execution::rewind(uint64_t sequence) {
  traceSteps_ = log::enabled(log::Level::kTrace, log::kEngine);
  sequence_ = sequence;
  for (Work& w : work_) {
    w.wire = 0;
    w.directDone = 0;
    w.directReduced = 0;
    w.ackTarget = 0;
    w.complete = false;
    w.streamed = false;
    w.regionIndex = kNoRegion;  // announced again: the peer forgets its regions after each call
    w.stagedCopy = nullptr;
  }
  stagingBase_ = nullptr;
  for (StagedSource& source : stagedSources_) source.copied = false;
  drained_ = true;
  for (auto& [peer, q] : peers_) {
    q.nextSend = q.nextPost = q.nextRecv = 0;
    q.regionsOut.clear();  // the registrations stay with the steps (w.region)
    q.regionsIn.clear();
    q.announceOut.clear();
    q.announceIn.clear();
    q.announceOutWire = 0;
    drained_ = drained_ && q.sends.empty();
  }
  armHeaders();
  remaining_ = work_.size();
  localsPending_ = !locals_.empty();
}

void Execution::retarget(size_t plan, const void* send, void* recv) {
  Binding& binding = bindingOfPlan_.at(plan);
  binding.send = send;
  binding.recv = recv;
  for (Work& w : work_) {
    if (w.plan != plan) continue;
    w.src = resolve(binding, w.from);
    w.dst = const_cast<std::byte*>(resolve(binding, w.to));
    if (w.direct && isSend(w.kind)) {
      w.regionBase = resolve(binding, {w.from.buffer, 0});
      w.region = nullptr;  // registered again, for the new buffer, when the step starts
    }
  }
}

std::string Execution::description() const {
  std::string text = what_;
  if (operations_ > 1) text = "group of " + std::to_string(operations_) + " operations starting with " + text;
  return text + " #" + std::to_string(sequence_);
}

Execution::PeerQueues& Execution::queues(int peer) {
  for (auto& [p, q] : peers_)
    if (p == peer) return q;
  peers_.emplace_back(peer, PeerQueues{});
  PeerQueues& q = peers_.back().second;
  q.connection = connection_(peer);
  q.small = q.connection->smallMessages();
  q.direct = q.connection->directTransfers();
  if (q.direct) q.directFrom = directThreshold_ >= 0 ? static_cast<size_t>(directThreshold_) : q.direct->threshold();
  q.smallLimit = q.small ? q.small->limit() : 0;
  q.smallFirstPart = q.small ? q.small->firstPart() : 0;
  return peers_.back().second;
}

void Execution::append(const algo::Plan& plan, const Binding& binding) {
  const int base = static_cast<int>(work_.size());
  const auto planIndex = static_cast<uint32_t>(bindingOfPlan_.size());
  bindingOfPlan_.push_back(binding);
  // A direct send registers the part of its buffer that the plan's sends read: one region per buffer, so the steps
  // of a call share a registration and a repeated call finds it in the transport's cache.
  size_t sentExtent[3] = {0, 0, 0};
  for (const algo::Step& s : plan.steps) {
    size_t& extent = sentExtent[static_cast<size_t>(s.src.buffer)];
    if (isSend(s.kind)) extent = std::max(extent, s.src.offset + s.bytes);
  }
  // Staged sends may need their sources copied, each distinct one once (the same bytes go to several peers): the
  // sources of this plan, in the order of stagedSources_ from `firstSource` on.
  std::vector<std::tuple<algo::BufferKind, size_t, size_t, int>> sources;
  const size_t firstSource = stagedSources_.size();
  for (const algo::Step& s : plan.steps) {
    Work w{s.kind,
           s.peer,
           resolve(binding, s.src),
           const_cast<std::byte*>(resolve(binding, s.dst)),
           s.bytes,
           s.dep < 0 ? -1 : s.dep + base,
           0,
           false,
           binding.reduce,
           binding.elemSize};
    const bool transfer = s.kind == StepKind::kSend || s.kind == StepKind::kRecv || s.kind == StepKind::kRecvReduce;
    // Both sides take this decision from the same facts (size, threshold, the pair's capability), so they agree.
    size_t directFrom = transfer ? queues(s.peer).directFrom : 0;
    if (s.staged && directFrom > 0) directFrom = std::min(directFrom, algo::kStagedDirectFrom);
    w.direct = directFrom > 0 && s.bytes >= directFrom;
    if (w.direct && isSend(s.kind)) {
      w.regionBase = resolve(binding, {s.src.buffer, 0});
      w.regionBytes = sentExtent[static_cast<size_t>(s.src.buffer)];
      w.memory = binding.memory;
    }
    w.staged = s.staged;
    if (w.direct && w.staged && isSend(s.kind)) {
      const auto source = std::make_tuple(s.src.buffer, s.src.offset, s.bytes, s.dep);
      const auto index = static_cast<size_t>(std::find(sources.begin(), sources.end(), source) - sources.begin());
      if (index == sources.size()) {
        sources.push_back(source);
        stagedSources_.push_back({stagingBytes_, false});
        stagingBytes_ += (s.bytes + 63) & ~size_t{63};
      }
      w.stagedSource = static_cast<int>(firstSource + index);
    }
    w.small = transfer && s.bytes > 0 && s.bytes <= std::min(kSmallBuffer, queues(s.peer).smallLimit);
    if (transfer && binding.pointToPoint) queues(s.peer).pointToPoint = true;
    w.after = s.after < 0 ? -1 : s.after + base;
    w.from = s.src;
    w.to = s.dst;
    w.plan = planIndex;
    const int index = static_cast<int>(work_.size());
    work_.push_back(w);
    ++remaining_;
    if (isSend(s.kind)) {
      PeerQueues& q = queues(s.peer);
      q.sends.push_back(index);
      q.sendFlow = mix(q.sendFlow, s.bytes);
      drained_ = false;
    } else if (isRecv(s.kind)) {
      PeerQueues& q = queues(s.peer);
      q.recvs.push_back(index);
      q.recvFlow = mix(q.recvFlow, s.bytes);
    } else {
      locals_.push_back(index);
      localsPending_ = true;
    }
  }
  linkRiders(base);
}

// A Broadcast root's own copy and an AllGather's own block read the same input as the send beside them: copied in
// the same pass, piece by piece while each is in the core's cache, the input is read from memory once instead of
// twice. Only copies that no step waits for ride: the copy then ends with its send, which waits for nothing of it.
void Execution::linkRiders(int base) {
  const auto end = static_cast<int>(work_.size());
  for (int c = base; c < end; ++c) {
    Work& copy = work_[c];
    if (copy.kind != StepKind::kCopy || copy.bytes < settings_.largeLocal || copy.dep >= 0 || copy.after >= 0) continue;
    const bool awaited =
        std::any_of(work_.begin() + base, work_.end(), [c](const Work& w) { return w.dep == c || w.after == c; });
    if (awaited) continue;
    for (int s = base; s < end; ++s) {
      Work& send = work_[s];
      if (send.kind == StepKind::kSend && send.rider < 0 && !send.small && !send.staged && send.dep < 0 &&
          send.after < 0 && send.peer != rank_ && send.from.buffer == copy.from.buffer &&
          send.from.offset == copy.from.offset && send.bytes == copy.bytes) {
        send.rider = c;
        copy.carrier = s;
        break;
      }
    }
  }
}

bool Execution::leftToCarrier(const Work& w) const {
  if (w.carrier < 0 || overlaps(w)) return false;  // in place (skipped) or overlapping (memmove of its own)
  const Work& send = work_[w.carrier];
  // A send that finished otherwise than through the stream leaves the copy to itself, whatever way it went.
  return !send.complete && !(send.direct && !send.streamed && send.regionIndex != kNoRegion);
}

size_t Execution::allowedWire(const Work& w) const {
  const size_t limit = depLimit(w);
  // Padding moves only with the last data bytes; partial progress stays on 16-byte boundaries.
  return limit == w.bytes ? padded(w.bytes) : (limit & ~(kWireAlign - 1));
}

void Execution::finish(Work& w) {
  w.complete = true;
  --remaining_;
  if (traceSteps_) {
    static constexpr const char* kKinds[] = {"send",         "recv",      "recv-reduce", "copy",
                                             "reduce-local", "send-size", "recv-size"};
    const auto kind = static_cast<size_t>(w.kind);
    CHORUS_TRACE(kEngine, "%s seq %llu: step %s peer %d, %zu bytes%s%s done, %zu left", what_,
                 static_cast<unsigned long long>(sequence_), kind < 7 ? kKinds[kind] : "?", w.peer, w.bytes,
                 w.direct ? " direct" : "", w.small ? " small" : "", remaining_);
  }
}

Status Execution::advanceSmallSend(Work& w, PeerQueues& q, bool* moved) {
  if (depLimit(w) < w.bytes) return Status::ok();
  if (q.headerPackedOut) {
    if (!q.small->send(&q.outgoing, sizeof(CallHeader), w.src, w.bytes)) return Status::ok();
    q.headerPackedOut = false;
  } else if (!q.small->send(nullptr, 0, w.src, w.bytes)) {
    return Status::ok();
  }
  *moved = true;
  finish(w);
  return Status::ok();
}

Status Execution::advanceSmallRecv(Work& w, PeerQueues& q, bool* moved) {
  if (depLimit(w) < w.bytes) return Status::ok();
  alignas(64) std::byte incoming[kSmallBuffer];
  const bool packed = q.headerPackedIn;
  const size_t skip = packed ? sizeof(CallHeader) : 0;
  if (packed && skip + w.bytes > q.smallFirstPart && !q.headerPeeked) {
    // A message of several parts: its header is checked as soon as the first part is in, so that a peer that sent
    // a shorter message (another call) is an error now rather than a wait for parts that never come.
    CallHeader arrived;
    if (!q.small->peek(&arrived, sizeof(arrived))) return Status::ok();
    q.headerPeeked = true;
    CHORUS_TRY(acceptHeader(w.peer, q, arrived));
  }
  if (w.kind == StepKind::kRecv && !packed) {
    if (!q.small->recv(w.dst, w.bytes)) return Status::ok();
  } else {
    if (!q.small->recv(incoming, skip + w.bytes)) return Status::ok();
    if (packed && !q.headerPeeked) {
      q.headerPackedIn = false;
      if (sameCallAt(q.expected, incoming)) {
        headerAccepted(q);
      } else {
        CallHeader arrived;
        memcpy(&arrived, incoming, sizeof(arrived));
        CHORUS_TRY(acceptHeader(w.peer, q, arrived));
      }
    }
    if (w.kind == StepKind::kRecv) {
      if (w.bytes <= 64) {
        kernels::copyShort(w.dst, incoming + skip, w.bytes);
      } else {
        memcpy(w.dst, incoming + skip, w.bytes);
      }
    } else {
      w.reduce(w.dst, w.src, incoming + skip, w.bytes / w.elemSize);
    }
  }
  q.headerPackedIn = false;
  *moved = true;
  finish(w);
  return Status::ok();
}

Status Execution::advanceSend(Work& w, PeerQueues& q, bool* moved) {
  transport::Connection* c = q.connection;
  if (w.small) return advanceSmallSend(w, q, moved);
  if (w.direct && !w.streamed) return advanceDirectSend(w, q, moved);
  if (w.kind == StepKind::kSendSize) {
    auto space = c->sendSpace();
    if (space.size() < kWireAlign) return Status::ok();
    uint64_t header[2] = {w.bytes, 0};
    memcpy(space.data(), header, sizeof(header));
    c->commitSend(kWireAlign);
    *moved = true;
    finish(w);
    return Status::ok();
  }
  const size_t total = padded(w.bytes);
  while (w.wire < total) {
    const size_t allowed = allowedWire(w);
    if (w.wire >= allowed) break;
    auto space = c->sendSpace();
    if (space.empty()) break;
    const size_t n = std::min({space.size(), allowed - w.wire, settings_.pieces.forStep(w.bytes)});
    if (w.wire < w.bytes) {
      const size_t data = std::min(n, w.bytes - w.wire);
      storePiece(q, space.data(), w.src + w.wire, data);
      // The rider's copy of the piece while it is in this core's cache. Before the commit: after it, large
      // Broadcasts lost the gain (perf/archive/2026-11-27-a-roots-own-copy-rides-along-with-its-send.md).
      if (w.rider >= 0 && leftToCarrier(work_[w.rider])) {
        const Work& copy = work_[w.rider];
        transport::copyWith(storesFor(copy), copy.dst + w.wire, w.src + w.wire, data);
      }
    }
    c->commitSend(n);
    w.wire += n;
    *moved = true;
  }
  if (w.wire == total) {
    if (w.rider >= 0 && !work_[w.rider].complete && leftToCarrier(work_[w.rider])) finish(work_[w.rider]);
    finish(w);
    *moved = true;  // an empty step finishes without moving a byte, but it is progress
  }
  return Status::ok();
}

// Where a transport's buffers share the cache with the other ranks' (shm FIFOs of ranks that share cores), how many
// of them a call fills decides how long each may be (transports/fifo_lap.hpp). Set here, once per bound call.
void Execution::tellWritesToPeers() {
  int writing = 0;
  for (auto& [peer, q] : peers_) writing += q.sends.empty() ? 0 : 1;
  for (auto& [peer, q] : peers_)
    if (!q.sends.empty() && q.connection) q.connection->writesToPeers(writing);
}

void Execution::storePiece(PeerQueues& q, std::byte* to, const std::byte* from, size_t bytes) {
  if (!farStoresOn_ || bytes < FarReaderStores::kSampledFrom || !q.connection->peerReadsSendSpace()) {
    kernels::copy(to, from, bytes);
    return;
  }
  // An untimed piece takes the stores of the last timed one.
  FarReaderStores& stores = q.farReaderStores;
  const bool timed = stores.timed(bytes);
  const auto start = timed ? FarReaderStores::Clock::now() : FarReaderStores::Clock::time_point{};
  const bool streaming = timed ? stores.streaming(start) : stores.lastStreaming();
  transport::copyWith(streaming ? transport::Stores::kStreaming : transport::Stores::kCached, to, from, bytes);
  if (timed && !streaming) {
    const auto end = FarReaderStores::Clock::now();
    stores.plainPieceTook(bytes, end - start, end);
  }
}

Status Execution::advanceRecv(Work& w, PeerQueues& q, bool* moved) {
  transport::Connection* c = q.connection;
  if (w.small) return advanceSmallRecv(w, q, moved);
  if (w.direct && !w.streamed) return advanceDirectRecv(w, q, moved);
  if (w.kind == StepKind::kRecvSize) {
    auto data = c->recvData();
    if (data.size() < kWireAlign) return Status::ok();
    uint64_t header[2];
    memcpy(header, data.data(), sizeof(header));
    c->consumeRecv(kWireAlign);
    *moved = true;
    finish(w);
    if (header[0] != w.bytes) {
      return invalidUsage("Send/Recv mismatch: rank " + std::to_string(w.peer) + " sends " + std::to_string(header[0]) +
                          " bytes, rank " + std::to_string(rank_) + " expects " + std::to_string(w.bytes));
    }
    return Status::ok();
  }
  const size_t total = padded(w.bytes);
  while (w.wire < total) {
    const size_t limit = allowedWire(w);
    if (w.wire >= limit) break;
    auto data = c->recvData();
    // Streams may deliver any number of bytes (tcp does); take whole 16-byte units so no element is split.
    const size_t n = std::min(data.size() & ~(kWireAlign - 1), limit - w.wire);
    if (n == 0) break;
    if (w.wire < w.bytes) {
      const size_t useful = std::min(n, w.bytes - w.wire);
      if (w.kind == StepKind::kRecv) {
        transport::copyWith(storesFor(w), w.dst + w.wire, data.data(), useful);
      } else {
        w.reduce(w.dst + w.wire, w.src + w.wire, data.data(), useful / w.elemSize);
      }
    }
    c->consumeRecv(n);
    w.wire += n;
    *moved = true;
  }
  if (w.wire == total) {
    finish(w);
    *moved = true;  // an empty step finishes without moving a byte, but it is progress
  }
  return Status::ok();
}

// Small local steps run before the peers' (a small call's reduction often waits for its local copy), large ones
// after: a send that does not wait for them (a Broadcast root's, an AllGather's own block) is then on the stream
// before this rank spends its time on the copy, and the peers copy meanwhile instead of waiting for the root's own
// copy to end (perf/archive/2026-11-27-direct-transfers-paced-an-allreduces-two-phases-at-once.md). After the
// peers' steps a small one that became ready meanwhile runs too: a small Broadcast root's own copy, which waits for
// its send, then ends the call in its first round instead of taking a second.
void Execution::advanceLocals(bool afterPeers, bool* moved) {
  bool pending = false;
  for (int index : locals_) {
    Work& w = work_[index];
    if (w.complete) continue;
    if ((!afterPeers && w.bytes >= settings_.largeLocal) || (w.dep >= 0 && !work_[w.dep].complete) ||
        (w.after >= 0 && !work_[w.after].complete) || leftToCarrier(w)) {
      pending = true;
      continue;
    }
    if (w.kind == StepKind::kReduceLocal) {
      w.reduce(w.dst, w.dst, w.src, w.bytes / w.elemSize);
    } else if (w.dst != w.src && w.bytes > 0) {
      if (overlaps(w)) {
        memmove(w.dst, w.src, w.bytes);
      } else {
        transport::copyWith(storesFor(w), w.dst, w.src, w.bytes);
      }
    }
    finish(w);
    *moved = true;
  }
  localsPending_ = pending;
}

Status Execution::advance(bool* moved) {
  if (abortFlag_ && abortFlag_->load(std::memory_order_relaxed)) {
    return remoteError("the communicator was aborted");  // as NCCL and the README say: ncclRemoteError
  }
  if (localsPending_) advanceLocals(/*afterPeers=*/false, moved);
  for (auto& [peer, q] : peers_) {
    // The peer's headers first: when the calls differ, that is the error to report, not what sending would meet.
    // Owed headers come as small messages: none waiting, nothing to take (a Broadcast root looks every round).
    if (!q.owedHeaders.empty() && (q.owedOverLimit || q.small->waiting())) {
      CHORUS_TRY(receiveOwedHeaders(peer, q, moved));
    }
    const bool owing = !q.owedHeaders.empty();  // nothing of this call comes in before the owed headers
    if (q.headerInPending && !owing) CHORUS_TRY(receiveHeader(peer, q, moved));
    if (q.confirmationPending) CHORUS_TRY(sendConfirmation(q, moved));  // before anything else to the peer
    if (q.headerOutPending && !q.confirmationPending) CHORUS_TRY(sendHeader(q, moved));
    // A stream this rank only receives on skips the call: its frame was a tenth of a small receive's round.
    if (!q.headerOutPending && !q.confirmationPending && q.nextSend < q.sends.size()) {
      CHORUS_TRY(advanceSends(q, moved));
    }
    while (!owing && !q.headerInPending && q.nextRecv < q.recvs.size()) {
      Work& w = work_[q.recvs[q.nextRecv]];
      CHORUS_TRY(advanceRecv(w, q, moved));
      if (!w.complete) break;
      ++q.nextRecv;
    }
  }
  if (localsPending_) advanceLocals(/*afterPeers=*/true, moved);
  if (remaining_ == 0 && headersPending_ == 0 && !drained_) {
    drained_ = true;
    for (auto& [peer, q] : peers_) drained_ = drained_ && q.connection->sendDrained();
  }
  return Status::ok();
}

// Sends complete in stream order, but a direct send that posted all its descriptors only waits for the peer to
// read them: the sends behind it go on meanwhile. Otherwise a ring's next step, which forwards what this rank is
// still reducing, would reach the peer only once the peer finished reading this step, and the two ranks' copies of
// a 2-rank AllReduce's all-gather ran one after the other instead of at once.
Status Execution::advanceSends(PeerQueues& q, bool* moved) {
  while (q.nextPost < q.sends.size()) {
    Work& w = work_[q.sends[q.nextPost]];
    CHORUS_TRY(advanceSend(w, q, moved));
    if (!w.complete && !awaitsAck(w)) break;
    ++q.nextPost;
  }
  for (; q.nextSend < q.nextPost; ++q.nextSend) {
    Work& w = work_[q.sends[q.nextSend]];
    if (w.complete) continue;
    if (q.direct->acked() < w.ackTarget) break;
    finish(w);
    *moved = true;
  }
  return Status::ok();
}

bool Execution::busy(PeerQueues& q) {
  return q.nextSend < q.sends.size() || q.nextRecv < q.recvs.size() || q.headerInPending || q.headerOutPending ||
         q.confirmationPending || q.owedOverLimit || !q.connection->sendDrained();
}

Status Execution::pollConnections(bool livenessCheck, bool* moved) {
  for (auto& [peer, q] : peers_) {
    if (!busy(q)) continue;
    // A peer that finished and closed is fine unless this side still needs to exchange bytes with it. Judged on
    // what the last advance() saw, before this round moves bytes: a send whose last bytes leave in this round is
    // marked complete by the next advance(), while its peer, which has them all, may already be gone.
    if (q.connection->peerClosed()) {
      const bool waitsForData = (q.nextRecv < q.recvs.size() || q.headerInPending || q.owedOverLimit) &&
                                q.connection->recvData().empty() && !(q.small && q.small->waiting());
      const bool mustSend =
          q.nextSend < q.sends.size() || q.headerOutPending || q.confirmationPending || !q.connection->sendDrained();
      if (waitsForData || mustSend) {
        return explain(peer, q,
                       remoteError("rank " + std::to_string(peer) + " closed its " + q.connection->transportName() +
                                   " connection"));
      }
    }
    Status st = livenessCheck ? q.connection->checkPeer() : q.connection->progress(moved);
    if (!st.isOk()) return explain(peer, q, st);
  }
  return Status::ok();
}

bool Execution::addPollFds(std::vector<pollfd>* fds) {
  for (auto& [peer, q] : peers_) {
    if (busy(q) && !q.connection->addPollFds(fds)) return false;
  }
  return true;
}

std::string Execution::pendingPeers() const {
  std::string out;
  for (const auto& [peer, q] : peers_) {
    const char* what = q.headerInPending                                      ? "the start of its call"
                       : q.owedOverLimit                                      ? "its earlier calls"
                       : q.nextRecv < q.recvs.size()                          ? "recv"
                       : q.nextSend < q.sends.size() || q.confirmationPending ? "send"
                                                                              : nullptr;
    if (!what) continue;
    if (!out.empty()) out += ", ";
    out += "rank " + std::to_string(peer) + " (" + what + ")";
  }
  return out.empty() ? "none" : out;
}

std::vector<Execution::PeerProgress> Execution::peerProgress() const {
  std::vector<PeerProgress> out;
  for (const auto& [peer, q] : peers_) {
    PeerProgress p{peer, 0, 0, 0, 0, !q.headerInPending};
    for (int i : q.sends) {
      p.toSend += work_[i].bytes;
      if (work_[i].complete) p.sent += work_[i].bytes;
    }
    for (int i : q.recvs) {
      p.toReceive += work_[i].bytes;
      if (work_[i].complete) p.received += work_[i].bytes;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace chorus::engine
