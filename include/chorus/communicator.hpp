/// @file communicator.hpp
/// Communicator: a group of ranks that run collectives together. Blocking calls run in the calling thread and
/// return when this rank's part is complete; the *Async variants return a Request and run on a per-communicator
/// thread, one after another in call order (a later blocking call waits for them). Calls between groupStart() and
/// groupEnd() run together at groupEnd(); *Async calls cannot be made inside a group.
/// As with NCCL, a communicator is used by one thread at a time (abort() excepted); different communicators may be
/// driven by different threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chorus/coll_args.hpp"
#include "chorus/counters.hpp"
#include "chorus/metrics.hpp"
#include "chorus/request.hpp"
#include "chorus/status.hpp"
#include "chorus/store.hpp"
#include "chorus/types.hpp"
#include "chorus/unique_id.hpp"

namespace chorus {

class CommImpl;
namespace bootstrap {
class Bootstrap;
}

/// How a communicator runs its calls. Communicators split from it inherit all of it.
struct CommConfig {
  /// false: create() and every call check their arguments, queue the work and return ErrorCode::kInProgress at once;
  /// the communicator's own thread runs the work in call order, and asyncError() reports kInProgress until all of it
  /// finished, then ok or the first error. Calls inside a group still run at groupEnd() (NCCL's ncclConfig_t.blocking).
  bool blocking = true;
  /// Seconds a call, or the init, may wait without progress before it fails with ErrorCode::kTimeout (a framework's
  /// own timeout, as PyTorch's init_process_group(timeout=...)); 0: CHORUS_TIMEOUT.
  double timeoutSeconds = 0;
  /// Seconds between heartbeats of the failure detector (0: CHORUS_HEARTBEAT_PERIOD, whose default 0 is off). A rank
  /// without a heartbeat for heartbeatTimeoutSeconds (0: CHORUS_HEARTBEAT_TIMEOUT, else 4 periods) is reported
  /// dead, stopped or cut off: the communicator is aborted on every rank that sees it, with that cause, so a call
  /// waiting for a stopped rank ends then rather than at the timeout.
  double heartbeatSeconds = 0;
  /// Seconds without a heartbeat before a rank is reported (0: CHORUS_HEARTBEAT_TIMEOUT, else 4 periods).
  double heartbeatTimeoutSeconds = 0;
  /// Algorithm rules, in CHORUS_ALGO's syntax ("allreduce:ring;allgather:direct"); empty: CHORUS_ALGO or NCCL_ALGO.
  std::string algorithm;
  /// Settings of this communicator in place of the environment's: a setting's name (or its NCCL alias) to a value in
  /// its syntax, as {"CHORUS_TCP_BUFFER", "1M"}. Any setting a communicator reads may be given (chorus-info and the
  /// environment-variable page mark them); create() fails naming an unknown setting, a process-wide one or an
  /// invalid value. Splits and shrinks inherit them.
  std::map<std::string, std::string> settings;
  /// Contexts of one-sided puts and signals (NCCL's ncclConfig_t.numRmaCtx): above 0, init connects a second set of
  /// connections and starts a thread that carries the puts over them (the C API's ncclPutSignal, ncclSignal and
  /// ncclWaitSignal); 0: none, and one-sided calls are refused.
  int oneSidedContexts = 0;
};

/// One rank's handle on a group of ranks that run collectives together: made collectively (create(),
/// createFromEnvironment(), createLocal(), split(), shrink()), driven by one thread at a time, ended by destroying it.
/// Every call returns a Status; blocking calls complete before they return, the *Async ones return a Request.
class Communicator {
 public:
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// The most ranks a communicator may have. Init sizes per-rank tables before the others arrive, so a mistyped
  /// rank count must fail at once rather than reserve gigabytes.
  static constexpr int kMaxRanks = 1 << 22;

  /// Joins communicator `id` as `rank` of `nranks`. Collective: every rank calls it. Inside a group the work
  /// happens at groupEnd(), so one thread can create several ranks.
  static Status create(const UniqueId& id, int nranks, int rank, std::unique_ptr<Communicator>* out);
  /// As create(id, nranks, rank, out), with per-communicator options instead of the environment's.
  static Status create(const UniqueId& id, int nranks, int rank, std::unique_ptr<Communicator>* out,
                       const CommConfig& config);
  /// Joins the communicator whose ranks meet under `prefix` in a framework's `store` (PyTorch's c10d::Store, say),
  /// as `rank` of `nranks`. The prefix keeps communicators of one store apart; each rank must create its
  /// communicators of one prefix in the same order.
  static Status create(std::shared_ptr<Store> store, const std::string& prefix, int nranks, int rank,
                       std::unique_ptr<Communicator>* out, const CommConfig& config = {});
  /// Rank, size and rendezvous from the launcher: torchrun, Open MPI, Slurm, PMI, or CHORUS_COMM_ID.
  static Status createFromEnvironment(std::unique_ptr<Communicator>* out);
  /// N ranks in this process, one communicator each (they must then be driven by N threads or in a group).
  static Status createLocal(int nranks, std::vector<std::unique_ptr<Communicator>>* out);

  /// split()'s color for a rank that takes part but joins no new communicator (NCCL_SPLIT_NOCOLOR).
  static constexpr int kNoColor = -1;
  /// Collective over this communicator: ranks with the same color form a new one, ordered by (key, old rank).
  /// kNoColor takes part but yields a null communicator; other negative colors are invalid arguments.
  /// An abort of this communicator from another thread ends a split that waits. Inside a group the split runs at
  /// groupEnd, together with the group's other splits and inits (one thread may split several ranks).
  Status split(int color, int key, std::unique_ptr<Communicator>* out);
  /// A communicator of the ranks not in `excluded`, renumbered in their order (NCCL's ncclCommShrink). Every
  /// remaining rank calls it with the same list; the excluded ranks do not. Works on an aborted communicator too,
  /// whose operations have all ended: that is how the survivors go on after abort().
  Status shrink(const std::vector<int>& excluded, std::unique_ptr<Communicator>* out);

  /// Fault-tolerant agreement, as MPI_Comm_agree: the ranks that call it agree on the AND of their `*value`s and on
  /// who took part (`*members`, their ranks in this communicator), also when others are dead or stopped or die
  /// during it. A rank that has not called it within `graceSeconds` of another is left out, and gets an error if it
  /// calls later; every rank counted in gets the same value and list. Every rank calls it the same number of times.
  /// It goes through the rendezvous store, not the connections, so it works after a failure or an abort (then
  /// shrink() away the ranks not in `*members`); the store must outlive the ranks: a framework's store, or the
  /// UniqueId root's process (rank 0's for ncclGetUniqueId).
  Status agree(uint32_t* value, std::vector<int>* members, double graceSeconds = 1.0);
  /// Changes this rank's timeout (CommConfig::timeoutSeconds; 0: CHORUS_TIMEOUT) for the calls that start after it,
  /// and for the communicators split or shrunk from it later; calls already waiting keep the one they started with.
  /// A finite value >= 0, else kInvalidArgument. Safe from any thread (as PyTorch's ProcessGroup.set_timeout).
  Status setTimeout(double seconds);
  /// This rank's number, 0 to size() - 1.
  int rank() const;
  /// The number of ranks.
  int size() const;
  /// Ends every operation of this communicator with an error, waits (a few milliseconds) until the threads inside
  /// it have left, and closes the connections so the peers learn it at once. Safe from any thread at any time; the
  /// object stays valid until destroyed, and every later call fails.
  void abort();
  /// ULFM's revoke (MPIX_Comm_revoke): ends this rank's pending calls and every other rank's, and makes every later
  /// call on any rank fail at once, each error naming "rank R revoked the communicator". Local and non-blocking:
  /// the cause goes to the rendezvous store and this rank's connections close, which ends the peers' waits and
  /// their next calls. The communicator can then still agree() and shrink(). Safe from any thread.
  void revoke();
  /// The communicator's error state: the first failure of any call (a dead or closed peer, a timeout, an abort,
  /// a failed init), kInProgress while queued work of a nonblocking communicator runs, ok otherwise.
  Status asyncError() const;
  /// False for a nonblocking communicator (CommConfig::blocking), whose calls queue their work and return
  /// kInProgress; asyncError() then tells when it finished.
  bool blocking() const;

  /// Deterministic mode (default: CHORUS_DETERMINISTIC): AllReduce, ReduceScatter and Reduce fold every element in
  /// rank order, ((x0 + x1) + x2) + ..., so their results are bitwise the same whatever the message size and the
  /// same between the three collectives; they use one-round "direct" or "one_shot" algorithms, which send as many
  /// bytes as the ring. Every rank must set the same mode before its next call; communicators split from this one
  /// inherit it. Waits for this communicator's async work first.
  void setDeterministic(bool on);
  /// Calls, payload and wire bytes per collective since creation or resetCounters() (counters.hpp).
  TrafficCounters counters() const;
  /// Calls, bytes and time per collective and algorithm, beside the cost model's prediction, since creation or
  /// resetCounters() (metrics.hpp).
  std::vector<CallMetrics> metrics() const;
  /// metrics() as Prometheus text or JSON, labelled with this communicator's name and this rank.
  std::string metricsText(MetricsFormat format) const;
  /// Resets counters() and metrics().
  void resetCounters();
  /// Writes this rank's flight record -- its last CHORUS_TRACE_ENTRIES operations with their arguments, algorithm,
  /// predicted time, state and timestamps -- to `dir` (created if missing), one file per communicator and rank
  /// that `chorus-trace dir` reads with the other ranks' files. The path goes to *path when given. Safe from any
  /// thread at any time. Records are also written to CHORUS_TRACE_DIR, when set, on a timeout, a failure, an
  /// abort and SIGUSR1.
  Status dumpFlightRecord(const std::string& dir, std::string* path = nullptr) const;

  /// @name Any call, as data
  ///@{
  /// Runs `args` as the typed method of its kind below does (each of them is this call), blocking.
  Status run(const CollArgs& args);
  /// `args` asynchronously, as the *Async methods (each of them is this call).
  Request submit(const CollArgs& args);
  ///@}

  /// @name Collectives and Send/Recv, blocking
  /// Each completes on this rank before it returns (a call on device memory is enqueued on the thread's stream, see
  /// StreamScope). Counts are elements of `type`; `send` may equal `recv` (in place). Every rank makes the same
  /// calls in the same order with matching arguments; a mismatch is an error on both sides (CHORUS_CHECK_CALLS).
  /// Inside groupStart()/groupEnd() they are queued and run at groupEnd().
  ///@{
  /// recv = op over every rank's send, on every rank.
  Status allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op) {
    return run(CollArgs(Collective::kAllReduce, send, recv, count, type, op));
  }
  /// Rank r's recv = block r (recvCount elements) of op over every rank's send (size() * recvCount elements).
  Status reduceScatter(const void* send, void* recv, size_t recvCount, DataType type, RedOp op) {
    return run(CollArgs(Collective::kReduceScatter, send, recv, recvCount, type, op));
  }
  /// recv = every rank's send (sendCount elements each) in rank order, on every rank.
  Status allGather(const void* send, void* recv, size_t sendCount, DataType type) {
    return run(CollArgs(Collective::kAllGather, send, recv, sendCount, type));
  }
  /// Block p (count elements) of send goes to rank p, which keeps it as its block r of recv.
  Status alltoAll(const void* send, void* recv, size_t count, DataType type) {
    return run(CollArgs(Collective::kAlltoAll, send, recv, count, type));
  }
  /// Element counts and displacements per peer, as MPI_Alltoallv.
  Status alltoAllv(const void* send, const size_t* sendCounts, const size_t* sendDispls, void* recv,
                   const size_t* recvCounts, const size_t* recvDispls, DataType type) {
    return run(CollArgs::alltoAllv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type));
  }
  /// recv = root's send, on every rank (send is read on root only).
  Status broadcast(const void* send, void* recv, size_t count, DataType type, int root) {
    return run(CollArgs(Collective::kBroadcast, send, recv, count, type, {}, root));
  }
  /// root's recv = op over every rank's send (recv is written on root only).
  Status reduce(const void* send, void* recv, size_t count, DataType type, RedOp op, int root) {
    return run(CollArgs(Collective::kReduce, send, recv, count, type, op, root));
  }
  /// root's recv = every rank's send (count elements each) in rank order.
  Status gather(const void* send, void* recv, size_t count, DataType type, int root) {
    return run(CollArgs(Collective::kGather, send, recv, count, type, {}, root));
  }
  /// Rank r's recv = block r (count elements) of root's send.
  Status scatter(const void* send, void* recv, size_t count, DataType type, int root) {
    return run(CollArgs(Collective::kScatter, send, recv, count, type, {}, root));
  }
  /// Sends count elements to `peer`, whose matching recv() takes them; messages between two ranks match in order.
  Status send(const void* buf, size_t count, DataType type, int peer) {
    return run(CollArgs(Collective::kSend, buf, nullptr, count, type, {}, peer));
  }
  /// Receives count elements from `peer`'s matching send().
  Status recv(void* buf, size_t count, DataType type, int peer) {
    return run(CollArgs(Collective::kRecv, nullptr, buf, count, type, {}, peer));
  }
  /// Returns once every rank has called it.
  Status barrier();
  ///@}

  /// @name Collectives and Send/Recv, asynchronous
  /// The blocking calls' work, queued on the communicator's thread; the Request says when it finished and how.
  /// The buffers must stay valid until then.
  ///@{
  /// allReduce(), asynchronously.
  Request allReduceAsync(const void* send, void* recv, size_t count, DataType type, RedOp op) {
    return submit(CollArgs(Collective::kAllReduce, send, recv, count, type, op));
  }
  /// reduceScatter(), asynchronously.
  Request reduceScatterAsync(const void* send, void* recv, size_t recvCount, DataType type, RedOp op) {
    return submit(CollArgs(Collective::kReduceScatter, send, recv, recvCount, type, op));
  }
  /// allGather(), asynchronously.
  Request allGatherAsync(const void* send, void* recv, size_t sendCount, DataType type) {
    return submit(CollArgs(Collective::kAllGather, send, recv, sendCount, type));
  }
  /// alltoAll(), asynchronously.
  Request alltoAllAsync(const void* send, void* recv, size_t count, DataType type) {
    return submit(CollArgs(Collective::kAlltoAll, send, recv, count, type));
  }
  /// alltoAllv(), asynchronously.
  Request alltoAllvAsync(const void* send, const size_t* sendCounts, const size_t* sendDispls, void* recv,
                         const size_t* recvCounts, const size_t* recvDispls, DataType type) {
    return submit(CollArgs::alltoAllv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type));
  }
  /// broadcast(), asynchronously.
  Request broadcastAsync(const void* send, void* recv, size_t count, DataType type, int root) {
    return submit(CollArgs(Collective::kBroadcast, send, recv, count, type, {}, root));
  }
  /// reduce(), asynchronously.
  Request reduceAsync(const void* send, void* recv, size_t count, DataType type, RedOp op, int root) {
    return submit(CollArgs(Collective::kReduce, send, recv, count, type, op, root));
  }
  /// gather(), asynchronously.
  Request gatherAsync(const void* send, void* recv, size_t count, DataType type, int root) {
    return submit(CollArgs(Collective::kGather, send, recv, count, type, {}, root));
  }
  /// scatter(), asynchronously.
  Request scatterAsync(const void* send, void* recv, size_t count, DataType type, int root) {
    return submit(CollArgs(Collective::kScatter, send, recv, count, type, {}, root));
  }
  /// As the blocking ones, these run one at a time: two ranks that each send to the other before receiving put
  /// their Send and Recv in one group (blocking calls), as with NCCL.
  Request sendAsync(const void* buf, size_t count, DataType type, int peer) {
    return submit(CollArgs(Collective::kSend, buf, nullptr, count, type, {}, peer));
  }
  /// recv(), asynchronously.
  Request recvAsync(void* buf, size_t count, DataType type, int peer) {
    return submit(CollArgs(Collective::kRecv, nullptr, buf, count, type, {}, peer));
  }
  /// barrier(), asynchronously.
  Request barrierAsync();
  ///@}

 private:
  explicit Communicator(std::shared_ptr<CommImpl> impl);
  /// create() with the rendezvous `join` makes (a UniqueId's or a store's).
  static Status createJoining(std::function<Status(std::unique_ptr<bootstrap::Bootstrap>*)> join, int nranks, int rank,
                              std::unique_ptr<Communicator>* out, const CommConfig& config);
  Status splitInGroup(int color, int key, std::unique_ptr<Communicator>* out);
  std::shared_ptr<CommImpl> impl_;  // shared with groups that queued work on it
  friend struct CommAccess;         // chorus's own layers (the C API, the tools): src/comm/comm_access.hpp
};

/// Starts a group on this thread (groups nest; only the outermost groupEnd runs the work).
Status groupStart();
/// Runs everything queued since the outermost groupStart: communicator inits first, then all operations of all
/// communicators together, so matching Send/Recv pairs inside one group never deadlock.
Status groupEnd();
/// Ends the outermost group as groupEnd() does, but its operations, all of one communicator, run on that
/// communicator's thread after its other async work, and the returned Request completes when all of them did: a
/// framework's coalesced calls (PyTorch's batch_isend_irecv) without blocking the caller. Inside a nested group, or
/// for a group that holds inits, splits or several communicators, the Request fails with kInvalidUsage and nothing
/// runs.
Request groupEndAsync();

}  // namespace chorus
