// An Execution is one rank's plan (or several plans issued in one group) bound to real buffers and connections,
// plus the progress state of every step. run() drives any number of executions -- of one rank or, in the
// single-threaded simulator and in grouped multi-rank calls, of several ranks -- until all are done.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/plan.hpp"
#include "core/settings.hpp"
#include "core/shareable_memory.hpp"
#include "engine/call_header.hpp"
#include "engine/far_reader_stores.hpp"
#include "engine/header_ring.hpp"
#include "engine/pieces.hpp"
#include "engine/tuning.hpp"
#include "kernels/reduce.hpp"
#include "transports/transport.hpp"

namespace chorus::engine {

/// The real memory behind the three buffer kinds of a plan, and how to reduce elements.
struct Binding {
  const void* send = nullptr;
  void* recv = nullptr;
  void* scratch = nullptr;
  kernels::ReduceFn reduce = nullptr;
  size_t elemSize = 1;
  transport::MemoryType memory = transport::MemoryType::kHost;  // where send, recv and scratch live
  size_t streamingFrom = kStreamingThreshold;  // steps of this plan of at least this many bytes use streaming stores
  bool pointToPoint = false;                   // the plan is a Send's or a Recv's
};

struct DirectDescriptor;

/// How a communicator runs every call it binds: fixed for an Execution's life.
struct ExecutionSettings {
  /// How large steps are cut for the stream (by whether ranks share this machine's cores).
  Pieces pieces;
  /// Seconds a wait without progress lasts before the call fails (0: CHORUS_TIMEOUT): the communicator's, which
  /// Communicator::setTimeout changes for the calls that start after it; it outlives the Execution. Null: 0.
  const std::atomic<double>* timeoutSeconds = nullptr;
  /// Local steps of at least this many bytes run after the peers' steps in each round, smaller ones before
  /// (advanceLocals); 0 runs every local step last, as the plan simulator does. Plans must not depend on either
  /// order.
  size_t largeLocal = kLargeLocalStep;
  /// Called whenever a run goes past its spin and starts to wait (the communicator shows its call as in flight from
  /// then on); it must be cheap to call again. Empty: nothing is called.
  std::function<void()> onWait;
  /// The communicator's settings (CHORUS_SPIN, CHORUS_FAR_STREAMING, CHORUS_DIRECT_THRESHOLD, CHORUS_CHECK_CALLS);
  /// it outlives the Execution. Null: the process's.
  const Settings* values = nullptr;
};

/// One call's facts beside its plans.
struct CallOptions {
  const char* what = "plan";  // the operation named in errors and traces ("AllReduce")
  uint64_t sequence = 0;      // the call's number, the same on every rank
  /// Polls before a waiting rank starts yielding its core (small when ranks outnumber cores); 0: CHORUS_SPIN's.
  int64_t spinIterations = 0;
  /// Each peer stream the call uses starts with a header built from it, checked by the receiver before anything else
  /// (call_header.hpp; off with CHORUS_CHECK_CALLS=0). Null: no headers (the plan simulator).
  const CallSignature* signature = nullptr;
};

/// A plan of a call and the memory it runs on.
struct BoundPlan {
  const algo::Plan* plan;
  Binding binding;
};

class Execution {
 public:
  /// `connection(peer)` returns the connection to a peer (called once per peer and kept).
  Execution(int rank, std::function<transport::Connection*(int)> connection, const std::atomic<bool>* abortFlag,
            ExecutionSettings settings = {});

  /// Binds a call: its plans (one, or a group's in call order; later plans use each peer stream after the earlier
  /// ones) to their memory. The previous call's steps go; the memory and the peers' connections stay.
  void bind(std::span<const BoundPlan> plans, const CallOptions& options);
  /// The same for a call of one plan.
  void bind(const algo::Plan& plan, const Binding& binding, const CallOptions& options) {
    const BoundPlan one{&plan, binding};
    bind(std::span<const BoundPlan>(&one, 1), options);
  }

  /// Runs the same steps on the same buffers again, as operation number `sequence`: only the progress is reset.
  /// A loop that repeats a call on the same buffers skips binding the plan again.
  void rewind(uint64_t sequence);
  /// Points the steps of plan number `plan` (in the order bound) at other send and receive buffers (its scratch
  /// stays), for a rewind: a call repeated on fresh buffers (a training loop's new tensors) skips binding its plans
  /// again.
  void retarget(size_t plan, const void* send, void* recv);
  /// Steps of plan number `plan` of at least this many bytes are written with streaming stores in the runs that
  /// follow (its Binding::streamingFrom, judged again for a rewind).
  void setStreamingFrom(size_t plan, size_t bytes) { bindingOfPlan_[plan].streamingFrom = bytes; }

  bool done() const { return remaining_ == 0 && headersPending_ == 0 && drained_; }
  /// For a wait past the spin: a stream on which this rank only receives and whose peer's header has not come sends
  /// this rank's header after all, as a call that sends does (armHeaders), in case the peer waits on it.
  void sendDeferredHeaders();
  /// Makes whatever progress is possible without waiting. Sets *moved when any byte moved.
  Status advance(bool* moved);
  /// Polls the connections with pending work (tcp moves bytes here; *moved tells) and reports dead peers.
  Status pollConnections(bool livenessCheck, bool* moved);
  /// Adds the sockets of every connection with pending work; false if some pending connection has none.
  bool addPollFds(std::vector<pollfd>* fds);
  /// "rank 3 (recv), rank 1 (send)": who this execution still waits for.
  std::string pendingPeers() const;
  /// Per peer this call exchanges with: bytes of its finished send and receive steps, and of all of them; and
  /// whether the peer's side of the call began here (its call header arrived; true when headers are off).
  struct PeerProgress {
    int peer;
    uint64_t sent, toSend, received, toReceive;
    bool peerStarted;
  };
  std::vector<PeerProgress> peerProgress() const;
  /// "AllReduce #12", for error messages.
  std::string description() const;
  void notifyWait() const {
    if (settings_.onWait) settings_.onWait();
  }
  int64_t spinIterations() const { return spinIterations_; }
  double timeoutSeconds() const { return settings_.timeoutSeconds ? settings_.timeoutSeconds->load() : 0; }
  int rank() const { return rank_; }
  /// The stores step number `step` (counted over the plans in the order appended) writes with.
  transport::Stores storesOf(size_t step) const { return storesFor(work_.at(step)); }
  /// How this rank stores large pieces into the FIFO `peer`'s core reads (timed by such pieces; tests set it).
  FarReaderStores& farReaderStores(int peer) { return queues(peer).farReaderStores; }

 private:
  /// Forgets the previous call's steps (keeping the memory and the peers' connections).
  void reset(const CallOptions& options, size_t operations);
  /// Appends a plan bound to `binding`.
  void append(const algo::Plan& plan, const Binding& binding);
  /// Once every plan of the call is appended: arms the call headers from `signature`.
  void sign(const CallSignature& signature);

  static constexpr uint32_t kNoRegion = 0xffffffffu;
  struct Work {
    algo::StepKind kind;
    int peer;
    const std::byte* src;
    std::byte* dst;
    size_t bytes;
    int dep;
    size_t wire = 0;  // bytes moved through the stream (data plus padding to 16); data bytes when direct
    bool complete = false;
    kernels::ReduceFn reduce;
    size_t elemSize;
    bool direct = false;       // large transfer read straight from the sender's buffer
    bool streamed = false;     // direct, but the peer cannot reach the buffer: through the stream in this call
    bool small = false;        // whole message through the connection's small-message channel
    uint64_t ackTarget = 0;    // direct send: the connection's acknowledged count that completes this step
    size_t directDone = 0;     // direct receive: bytes of the current descriptor already taken
    size_t directReduced = 0;  // direct reducing receive: bytes of the current descriptor already reduced
    int after = -1;            // step that must finish before this one starts (Step::after)
    algo::Slice from{}, to{};  // the plan's src and dst, which retarget() resolves again
    // Direct send: the region to register (the part of the source buffer the plan's sends read), its
    // registration once made, and its number among the regions this call announced to the peer.
    const std::byte* regionBase = nullptr;
    size_t regionBytes = 0;
    transport::MemoryType memory = transport::MemoryType::kHost;
    std::shared_ptr<const transport::Registration> region = nullptr;
    uint32_t regionIndex = kNoRegion;
    bool staged = false;              // Step::staged
    int stagedSource = -1;            // staged direct send: its source among stagedSources_
    std::byte* stagedCopy = nullptr;  // staged send: where this call copied its bytes (stage()), when it did
    // A local copy of the bytes a send takes from the same place (linkRiders): the send writes them to the copy's
    // destination as it puts them on the stream, so they are read once. `rider` on the send names the copy,
    // `carrier` on the copy names the send.
    int rider = -1, carrier = -1;
    uint32_t plan = 0;  // which of the call's appended plans the step is of
  };
  struct PeerQueues {
    transport::Connection* connection = nullptr;
    std::vector<int> sends, recvs;      // step indices in stream order
    size_t nextSend = 0, nextRecv = 0;  // the first send and receive not complete
    // The first send with bytes still to put on the stream (from nextSend on): the sends between the two are direct
    // ones waiting only for the peer to acknowledge that it read them, and the stream does not wait with them.
    size_t nextPost = 0;
    // Direct receives that reduce stage the peer's bytes here. Page-aligned: glibc's memcpy into a buffer 16 bytes
    // off a cache line (where a std::vector's heap block starts) copied several times slower (rep movsb), and made
    // every direct reduction slower than the staged one
    // (perf/archive/2026-11-27-copies-into-mallocd-buffers-glibcs-rep-movsb-at-3-gbs.md).
    std::unique_ptr<std::byte, decltype(&free)> bounce{nullptr, &free};
    // Call headers: the byte counts of this call's steps in each direction, folded into a digest and summed.
    uint32_t sendFlow = 0, recvFlow = 0;
    // Calls whose header went out to / came in from this peer, over the communicator's life.
    uint32_t sendCalls = 0, recvCalls = 0;
    bool headerOutPending = false, headerInPending = false;
    // The header rides in the same small message as the first step when both fit (one line for a small call).
    bool headerPackedOut = false, headerPackedIn = false;
    // This bound call's part in the header exchange (sign()): whether it uses the stream at all, owes the peer's
    // header (only sends to it) or confirms it (only receives from it), and whether its first step in each
    // direction carries the header (only where the header goes out or is awaited in this call).
    bool involved = false, owes = false, confirms = false;
    bool pointToPoint = false;  // a Send or Recv of this call is with the peer
    bool packFirstSend = false, packFirstRecv = false;
    bool headerPeeked = false;                   // a packed header checked before its message was all in
    size_t headerOutWire = 0, headerInRead = 0;  // bytes of the header moved so far (streams move it in parts)
    CallHeader outgoing, expected, incoming;     // this call's header out, the one due in, and its arrival
    // Headers of earlier calls that did not wait for the peer's (armHeaders), in stream order: each is checked
    // when it arrives, and before anything else the peer sent is taken.
    HeaderRing owedHeaders;
    bool owedOverLimit = false;  // this call ends only once the peer has paid enough of the owed headers
    // A call in which this rank only receives from the peer confirms the peer's header in a batch (armHeaders):
    // whether this call does, the calls checked since the last confirmation, and whether one is to go out before
    // anything else this call sends to the peer.
    bool confirming = false, confirmationPending = false;
    uint32_t unconfirmed = 0;
    size_t smallLimit = 0, smallFirstPart = 0;  // the connection's small-message sizes, read once
    transport::SmallMessages* small = nullptr;  // the connection's capabilities, null when absent
    transport::DirectTransfers* direct = nullptr;
    size_t directFrom = 0;  // bytes per step from which steps go direct on this connection; 0: never
    // Direct transfers: the regions this call announced on the stream each way (numbered in order), and the
    // announcement moving out or coming in, in parts.
    std::vector<std::shared_ptr<const transport::Registration>> regionsOut;
    std::shared_ptr<const transport::Registration> staging;  // the staging area's registration, kept across calls
    std::vector<transport::RemoteRegion> regionsIn;
    std::vector<std::byte> announceOut, announceIn;
    size_t announceOutWire = 0, announceInRead = 0, announceInBytes = 0;
    // How large pieces go into this peer's FIFO, judged by this connection's pieces alone: on a host with several
    // core complexes or sockets some peers' cores are close and others far.
    FarReaderStores farReaderStores;
  };

  // Inline: every small step's advance asks it, and a call to it was a tenth of a small receive.
  size_t depLimit(const Work& w) const {
    if (w.after >= 0 && !work_[w.after].complete) return 0;
    if (w.dep < 0) return w.bytes;
    const Work& d = work_[w.dep];
    return d.complete ? w.bytes : std::min(w.bytes, d.wire);
  }
  size_t allowedWire(const Work& w) const;
  Status advanceSend(Work& w, PeerQueues& q, bool* moved);
  /// Copies a piece of a send into the connection's send space, with the stores the peer's FarReaderStores picks.
  void storePiece(PeerQueues& q, std::byte* to, const std::byte* from, size_t bytes);
  Status advanceRecv(Work& w, PeerQueues& q, bool* moved);
  Status advanceSmallSend(Work& w, PeerQueues& q, bool* moved);
  Status advanceSmallRecv(Work& w, PeerQueues& q, bool* moved);
  /// Whether the call header and step `index` travel as one small message.
  bool packsHeader(const PeerQueues& q, int index) const;
  Status announceRegion(Work& w, PeerQueues& q);
  /// Whether a staged send copies its bytes into the staging area first: the peer cannot reach its source.
  static bool stagesSource(const Work& w) {
    return w.staged && w.memory == transport::MemoryType::kHost && w.region && w.region->viaStream;
  }
  Status stage(Work& w, PeerQueues& q);
  Status takeAnnouncement(PeerQueues& q, const DirectDescriptor& d, bool* done);
  Status advanceDirectSend(Work& w, PeerQueues& q, bool* moved);
  Status advanceDirectRecv(Work& w, PeerQueues& q, bool* moved);
  /// Whether a send has put all it will on the stream and waits only for the peer's acknowledgement.
  static bool awaitsAck(const Work& w) { return w.direct && !w.streamed && !w.complete && w.wire == w.bytes; }
  Status advanceSends(PeerQueues& q, bool* moved);
  /// Runs the local steps (copies, local reductions) whose inputs are ready: the small ones before the peers'
  /// steps, every one after them. Notes in localsPending_ whether any is left.
  void advanceLocals(bool afterPeers, bool* moved);
  /// Links each large local copy that nothing waits for to a send of the same bytes (Work::rider) in the steps
  /// appended from `base` on.
  void linkRiders(int base);
  /// Whether a local step's source and destination share bytes (a self-copy does).
  static bool overlaps(const Work& w) { return w.dst < w.src + w.bytes && w.src < w.dst + w.bytes; }
  /// Whether local copy `w` is left to its carrier send: yes while that send moves bytes through the stream or has
  /// not yet chosen between the stream and a direct transfer; no once it goes direct or has finished, or where the
  /// copy is in place.
  bool leftToCarrier(const Work& w) const;
  void finish(Work& w);
  PeerQueues& queues(int peer);
  /// Marks a header due on every stream this call uses (sign() and rewind()).
  void armHeaders();
  void tellWritesToPeers();
  CallHeader headerFor(uint32_t flow, uint32_t backFlow) const;
  bool writeHeader(PeerQueues& q);
  bool readHeader(PeerQueues& q);
  Status sendHeader(PeerQueues& q, bool* moved);
  Status receiveHeader(int peer, PeerQueues& q, bool* moved);
  Status acceptHeader(int peer, PeerQueues& q, const CallHeader& arrived);
  /// Counts the peer's header of this call as checked and matching.
  void headerAccepted(PeerQueues& q);
  bool writeConfirmation(PeerQueues& q);
  Status sendConfirmation(PeerQueues& q, bool* moved);
  /// Takes a confirmation of owed headers (`arrived`, peeked) from the peer.
  Status takeConfirmation(int peer, PeerQueues& q, const CallHeader& arrived);
  Status receiveOwedHeaders(int peer, PeerQueues& q, bool* moved);
  void sendHeadersBeforeFailing();
  Status explain(int peer, PeerQueues& q, const Status& failure);
  /// Whether this call still has work with the peer: steps, headers, or bytes the transport has yet to push.
  static bool busy(PeerQueues& q);

  int rank_;
  const char* what_ = "plan";
  uint64_t sequence_ = 0;
  size_t operations_ = 1;
  std::function<transport::Connection*(int)> connection_;
  const std::atomic<bool>* abortFlag_;
  std::vector<Work> work_;
  std::vector<Binding> bindingOfPlan_;  // each plan's appended since reset(), as retargeted
  std::vector<std::pair<int, PeerQueues>> peers_;
  std::vector<int> locals_;
  bool localsPending_ = false;  // a local step is not finished: advance() runs the passes over locals_
  size_t remaining_ = 0;
  bool traceSteps_ = false;  // CHORUS_DEBUG=TRACE with ENGINE: one line per finished step
  bool drained_ = true;
  ExecutionSettings settings_;
  int64_t defaultSpins_ = 0;  // CHORUS_SPIN's, for a call that names none
  int64_t spinIterations_ = 0;
  bool farStoresOn_ = true;  // CHORUS_FAR_STREAMING
  transport::Stores storesFor(const Work& w) const {
    return w.bytes >= bindingOfPlan_[w.plan].streamingFrom ? transport::Stores::kStreaming : transport::Stores::kCached;
  }
  int64_t directThreshold_ = -1;  // CHORUS_DIRECT_THRESHOLD; -1: each connection's own
  // Staged sends whose peers cannot reach their source copy it here (stage()): each distinct source has its place,
  // laid out when the plan is appended and copied at most once a call.
  struct StagedSource {
    size_t offset;
    bool copied;
  };
  ShareableArea staging_;
  size_t stagingBytes_ = 0;           // the places of this call's staged sources
  std::byte* stagingBase_ = nullptr;  // the area, reserved by this call's first staged copy
  std::vector<StagedSource> stagedSources_;
  bool checkCalls_ = true;     // CHORUS_CHECK_CALLS
  bool signed_ = false;        // this call sends and checks headers
  size_t headersPending_ = 0;  // headers of this call still to send or check
  CallSignature signature_;
};

/// Runs the executions until all are done, an error occurs, `deadline` seconds pass or an abort flag is raised.
/// The error names the operation and the ranks that did not arrive.
Status run(std::span<Execution* const> executions);

}  // namespace chorus::engine
