// The call-header exchange of an Execution: each stream a call uses starts with a header of the call's arguments
// and byte flows, which the receiver checks before it takes anything else (call_header.hpp), so that ranks making
// different calls fail naming both instead of exchanging the wrong bytes.
#include <algorithm>
#include <cstring>

#include "engine/execution.hpp"
#include "engine/wire.hpp"

namespace chorus::engine {

void Execution::sign(const CallSignature& signature) {
  signature_ = signature;
  signed_ = checkCalls_;
  // The headers and each stream's part in their exchange are set here, once per bound call; a repeated call
  // (rewind) changes two fields of the headers and the flags that follow the calls before it.
  // A pair's bytes flow one way in a call of one collective in which the pair has no Send or Recv. Judged per pair:
  // the operation counts of a group differ between ranks (each rank's Send/Recv are its own), while the call's
  // collectives and a pair's Send/Recv are known alike to both of its sides.
  for (auto& [peer, q] : peers_) {
    const bool oneWay = signature_.collectives == 1 && !q.pointToPoint;
    q.outgoing = headerFor(q.sendFlow, q.recvFlow);
    q.expected = headerFor(q.recvFlow, q.sendFlow);
    q.involved = !q.sends.empty() || !q.recvs.empty();
    // Both sides decide alike: from the call, which they agree on once the headers match, and the connection.
    const bool lines = q.small && q.smallLimit >= sizeof(CallHeader) && q.smallFirstPart >= sizeof(CallHeader);
    q.owes = q.involved && oneWay && lines && q.recvs.empty();
    q.confirms = q.involved && oneWay && lines && q.sends.empty();
    q.packFirstSend = !q.confirms && !q.sends.empty() && packsHeader(q, q.sends.front());
    q.packFirstRecv = !q.owes && !q.recvs.empty() && packsHeader(q, q.recvs.front());
  }
  tellWritesToPeers();
  armHeaders();
}

// Every pair that exchanges anything swaps headers both ways (call_header.hpp), but neither side of a pair whose
// bytes flow one way waits for the other's. A collective that only sends to a peer (a Broadcast's root, a Reduce's
// leaf) owes that peer's header: it checks it when it arrives, at the latest before the next bytes this rank takes
// from that peer. A loop of Broadcasts then pipelines, as MPI's eager sends do, instead of costing a round trip per
// call (perf/archive/2026-11-28-small-calls-at-2-ranks-receivers-confirm-headers-in-batches.md). The peer,
// which only receives, sends its header only when it waited past its spin for the sender's (a peer that believes
// it only receives too would wait on it): a header that came first is checked and paid with one confirmation
// every kConfirmEvery calls, and before anything else this rank sends on that stream: a header line back per call
// took a good part of a small Broadcast's time. A mismatch still fails the receiving side before it takes a
// byte (it sends its own header then), and the sending side at its next call with that peer.
void Execution::armHeaders() {
  headersPending_ = 0;
  if (!signed_) return;  // reset() cleared every header flag; a repeated unsigned call needs nothing more
  const auto sequence = static_cast<uint32_t>(sequence_);
  for (auto& [peer, q] : peers_) {
    if (!q.involved) continue;  // its flags stay as reset() left them: clear
    q.confirming = q.confirms;
    q.headerOutPending = !q.confirms;
    q.headerInPending = !q.owes;
    q.confirmationPending = !q.confirms && q.unconfirmed > 0;  // the confirmed calls come first
    const size_t owedCalls = q.owedHeaders.size();
    q.owedOverLimit = q.owes && owedCalls >= kMaxOwedHeaders;
    headersPending_ +=
        static_cast<size_t>(q.headerOutPending) + q.headerInPending + q.confirmationPending + q.owedOverLimit;
    drained_ = false;
    q.headerOutWire = q.headerInRead = 0;
    q.headerPeeked = false;
    q.headerPackedOut = q.packFirstSend;
    q.headerPackedIn = q.packFirstRecv;
    // Field by field: rebuilding the whole header here costs store-forwarding stalls on every call. The owed copy
    // is taken before the fields change, for the same reason: loading them right after storing them stalls.
    const uint32_t expectedCall = q.recvCalls + static_cast<uint32_t>(owedCalls) + 1;
    if (q.owes) {
      CallHeader& owed = q.owedHeaders.push(q.expected);
      owed.streamCall = expectedCall;
      owed.sequence = sequence;
    }
    q.outgoing.streamCall = q.sendCalls + 1;
    q.outgoing.sequence = sequence;
    q.expected.streamCall = expectedCall;
    q.expected.sequence = sequence;
  }
}

CallHeader Execution::headerFor(uint32_t flow, uint32_t backFlow) const {
  CallHeader h;
  h.digest = signature_.digest;
  h.flow = flow;
  h.backFlow = backFlow;
  h.count = signature_.count;
  h.root = signature_.root;
  h.sequence = signature_.sequence;
  h.type = signature_.type;
  h.dtype = signature_.dtype;
  h.op = signature_.op;
  h.operations = signature_.operations;
  return h;
}

// The header travels on the small-message channel where the connection has one, else at the head of the stream.
// Both sides pick the same way: it depends on the connection only. On the channel it shares the first step's
// message when both fit: a small call then costs the receiver one line, as without headers.
bool Execution::packsHeader(const PeerQueues& q, int index) const {
  const Work& w = work_[index];
  return w.small && sizeof(CallHeader) + w.bytes <= std::min(kSmallBuffer, q.smallLimit);
}

// Writes this call's header alone (not packed with a step); true once all of it is out.
bool Execution::writeHeader(PeerQueues& q) {
  transport::Connection* c = q.connection;
  if (q.smallLimit >= sizeof(CallHeader)) return q.small->send(nullptr, 0, &q.outgoing, sizeof(CallHeader));
  const auto* bytes = reinterpret_cast<const std::byte*>(&q.outgoing);
  while (q.headerOutWire < sizeof(CallHeader)) {
    auto space = c->sendSpace();
    if (space.empty()) return false;
    const size_t n = std::min(space.size(), sizeof(CallHeader) - q.headerOutWire);
    memcpy(space.data(), bytes + q.headerOutWire, n);
    c->commitSend(n);
    q.headerOutWire += n;
  }
  return true;
}

// Reads the peer's header sent alone into q.incoming; true once all of it is in. On the small channel it is one
// line: if the peer sent more (another call), the header at its start tells.
bool Execution::readHeader(PeerQueues& q) {
  transport::Connection* c = q.connection;
  if (q.smallLimit >= sizeof(CallHeader)) return q.small->recv(&q.incoming, sizeof(CallHeader));
  auto* bytes = reinterpret_cast<std::byte*>(&q.incoming);
  while (q.headerInRead < sizeof(CallHeader)) {
    auto data = c->recvData();
    if (data.empty()) return false;
    const size_t n = std::min(data.size(), sizeof(CallHeader) - q.headerInRead);
    memcpy(bytes + q.headerInRead, data.data(), n);
    c->consumeRecv(n);
    q.headerInRead += n;
  }
  return true;
}

// The calls this rank checked since its last confirmation: "every call up to q.sendCalls agrees".
bool Execution::writeConfirmation(PeerQueues& q) {
  CallHeader confirmation;
  confirmation.magic = CallHeader::kConfirmMagic;
  confirmation.streamCall = q.sendCalls;
  if (!q.small->send(nullptr, 0, &confirmation, sizeof(confirmation))) return false;
  q.unconfirmed = 0;
  return true;
}

Status Execution::sendConfirmation(PeerQueues& q, bool* moved) {
  if (!writeConfirmation(q)) return Status::ok();
  q.confirmationPending = false;
  --headersPending_;
  *moved = true;
  return Status::ok();
}

Status Execution::sendHeader(PeerQueues& q, bool* moved) {
  // A packed header goes with the first step (advanceSmallSend).
  if (!q.headerPackedOut && !writeHeader(q)) return Status::ok();
  ++q.sendCalls;
  q.headerOutPending = false;
  --headersPending_;
  *moved = true;
  return Status::ok();
}

Status Execution::acceptHeader(int peer, PeerQueues& q, const CallHeader& arrived) {
  if (!sameCall(q.expected, arrived)) {
    sendHeadersBeforeFailing();
    return checkCallHeader(q.expected, arrived, rank_, peer);
  }
  headerAccepted(q);
  return Status::ok();
}

// A confirming stream counts this call as confirmed from here on, and confirms the batch once it is full. It
// writes the confirmation at once where it can: a sender that has finished may close its connection, and one owed
// to it must not be left for a later round to find the peer gone.
void Execution::headerAccepted(PeerQueues& q) {
  ++q.recvCalls;
  --headersPending_;
  if (!q.confirming) return;
  q.confirming = false;
  ++q.sendCalls;
  if (++q.unconfirmed >= kConfirmEvery && !writeConfirmation(q)) {
    q.confirmationPending = true;
    ++headersPending_;
  }
}

void Execution::sendDeferredHeaders() {
  for (auto& [peer, q] : peers_) {
    if (!q.confirming) continue;
    q.confirming = false;
    q.headerOutPending = true;
    q.confirmationPending = q.unconfirmed > 0;  // the confirmed calls come first
    headersPending_ += 1 + static_cast<size_t>(q.confirmationPending);
  }
}

// Every peer still owed this rank's header gets it now, header alone (after the calls this rank confirms to it): it
// is about to see the connections close, and the header tells it why.
void Execution::sendHeadersBeforeFailing() {
  for (auto& [other, p] : peers_) {
    const bool confirmed = p.unconfirmed == 0 || writeConfirmation(p);
    if (!p.headerOutPending && !p.headerPackedOut && !p.confirming) continue;
    if (confirmed && p.headerOutWire == 0 && writeHeader(p)) {
      bool ignored = false;
      (void)p.connection->progress(&ignored);  // tcp: push it out before the connections close
    }
    p.headerOutPending = p.headerPackedOut = p.confirming = false;
  }
}

// What the peer paid of the owed headers (armHeaders), in order: confirmations of several calls, or a header alone
// (one line: a peer that agreed sent no bytes with it). Each is peeked first, so a mismatch leaves the peer's
// message in place.
Status Execution::receiveOwedHeaders(int peer, PeerQueues& q, bool* moved) {
  while (!q.owedHeaders.empty()) {
    CallHeader arrived;
    if (!q.small->peek(&arrived, sizeof(arrived))) break;
    *moved = true;
    if (arrived.magic == CallHeader::kConfirmMagic) {
      CHORUS_TRY(takeConfirmation(peer, q, arrived));
      continue;
    }
    const CallHeader expected = q.owedHeaders.front();
    q.owedHeaders.pop();
    ++q.recvCalls;
    if (!sameCall(expected, arrived)) {
      sendHeadersBeforeFailing();
      return checkCallHeader(expected, arrived, rank_, peer);
    }
    if (!q.small->recv(&arrived, sizeof(arrived))) return internalError("a peeked call header vanished");
  }
  if (q.owedOverLimit && q.owedHeaders.size() <= kMaxOwedHeaders) {
    q.owedOverLimit = false;
    --headersPending_;
  }
  return Status::ok();
}

Status Execution::takeConfirmation(int peer, PeerQueues& q, const CallHeader& arrived) {
  const uint32_t calls = arrived.streamCall - q.recvCalls;  // unsigned: right across the counter's wrap
  if (calls == 0 || calls > q.owedHeaders.size()) {
    return invalidUsage("the stream from rank " + std::to_string(peer) + " is out of step: it confirms its calls " +
                        "with this rank up to " + std::to_string(arrived.streamCall) + ", this rank made " +
                        std::to_string(q.recvCalls + q.owedHeaders.size()) + " (an earlier call differed)");
  }
  q.owedHeaders.pop(calls);
  q.recvCalls = arrived.streamCall;
  CallHeader taken;
  if (!q.small->recv(&taken, sizeof(taken))) return internalError("a peeked confirmation vanished");
  return Status::ok();
}

// A connection failed while the peer's header was still due: if the header has arrived after all, a mismatch it
// shows is the real cause (the peer closed the connection because of it).
Status Execution::explain(int peer, PeerQueues& q, const Status& failure) {
  if (!q.owedHeaders.empty()) {  // the owed headers come first on the stream
    bool ignored = false;
    CHORUS_TRY(receiveOwedHeaders(peer, q, &ignored));
    if (!q.owedHeaders.empty()) return failure;
  }
  if (!q.headerInPending && !q.headerPackedIn) return failure;
  // The small channel is peeked: the header is the start of the peer's message whether it packed it or not.
  const bool got = q.smallLimit >= sizeof(CallHeader) ? q.small->peek(&q.incoming, sizeof(CallHeader)) : readHeader(q);
  if (!got || sameCall(q.expected, q.incoming)) return failure;
  return checkCallHeader(q.expected, q.incoming, rank_, peer);
}

Status Execution::receiveHeader(int peer, PeerQueues& q, bool* moved) {
  if (q.headerPackedIn) {
    // advanceSmallRecv takes it with the first step (and counts it then).
    q.headerInPending = false;
    return Status::ok();
  }
  if (!readHeader(q)) return Status::ok();
  q.headerInPending = false;
  *moved = true;
  return acceptHeader(peer, q, q.incoming);
}

}  // namespace chorus::engine
