// The state behind a Communicator: identity, peers, one connection per peer, its lifecycle (init, failure, split,
// shrink, agree, abort) and what is recorded of its calls. The calls themselves go through its Dispatcher
// (comm/dispatcher.hpp), which turns Operations into a bound engine Execution.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "algorithms/operation.hpp"
#include "bootstrap/bootstrap.hpp"
#include "chorus/communicator.hpp"
#include "chorus/counters.hpp"
#include "comm/async_worker.hpp"
#include "comm/dispatcher.hpp"
#include "comm/heartbeat.hpp"
#include "comm/one_sided.hpp"
#include "core/call_gate.hpp"
#include "core/settings.hpp"
#include "engine/execution.hpp"
#include "gpu/host_comm.hpp"
#include "observe/flight_dump.hpp"
#include "observe/flight_recorder.hpp"
#include "observe/metrics_table.hpp"
#include "topology/graph.hpp"
#include "transports/machine_load.hpp"
#include "transports/transport.hpp"

namespace chorus {

class CommImpl final : public std::enable_shared_from_this<CommImpl>, public gpu::HostComm {
 public:
  CommImpl(int rank, int nranks, const CommConfig& config);
  ~CommImpl();

  /// Connects this rank to every peer of the communicator described by `bootstrap`. An abort() ends its waits.
  Status init(std::unique_ptr<bootstrap::Bootstrap> bootstrap);
  /// Runs init() on this communicator's thread (nonblocking communicators); asyncError() reports its outcome.
  void initAsync(std::function<Status()> init);
  bool initialized() const { return initialized_.load(std::memory_order_acquire); }
  bool blocking() const { return blocking_; }
  const CommConfig& config() const { return config_; }
  /// The timeout of this communicator's waits (0: CHORUS_TIMEOUT): CommConfig::timeoutSeconds until setTimeout().
  double timeoutSeconds() const { return timeoutSeconds_.load(); }
  void setTimeout(double seconds) { timeoutSeconds_.store(seconds); }
  /// What a split or a shrink of this communicator is created with: its config, with the timeout now in force.
  CommConfig childConfig() const;
  /// The process's settings with this communicator's overrides (CommConfig::settings).
  const Settings& settings() const { return settings_; }
  /// The byte a barrier reduces in place (Communicator::barrier); calls of one communicator run one at a time.
  void* barrierCell() { return &barrierCell_; }
  /// The owner thread's gate: held by every call, closed by abort().
  CallGate& gate() { return gate_; }
  /// The argument checks of the owner thread's calls (it alone uses them, inside gate()).
  CallValidator& validator() { return validator_; }

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }

  /// Binds `ops` (validated already) to this communicator's Execution, ready for engine::run. The caller owns the
  /// execution (see runOwned) from here until complete() returns.
  Status prepare(std::span<const Operation> ops, engine::Execution** out);
  /// A call that failed part-way: the communicator takes no more calls (each fails with this cause) and its peers
  /// learn it at once (its connections are closed). The cause is also written to the rendezvous store, where the
  /// first one is kept: when this failure is the echo of another rank's (a peer that closed its connections
  /// after its own error), the returned status adds that first cause. The caller owns the execution.
  Status failCall(const Status& st);
  /// Post-processing after the engine finished (avg division).
  void complete(std::span<const Operation> ops);
  /// Logs one line per operation of the last prepare() (subsystem COLL, level INFO): operation, sequence, count,
  /// type, op, root, algorithm, bytes, and the call's (or the whole group's) time.
  void logCalls(std::span<const Operation> ops, double microseconds, const Status& st) const;

  /// Runs one operation in the calling thread, after any queued async work.
  Status execute(const Operation& op) override;
  Request submit(Operation op);
  /// Queues `ops` to run together, as one group, on the communicator's thread.
  Request submit(std::vector<Operation> ops);
  /// Queues `ops` (on host buffers) behind the communicator's other work, to run once `ready` returned ok (it may
  /// still complete the operations, with what only then is known): the
  /// stream half of a call on device buffers (gpu/stream_calls.hpp). Unlike submit(), such work does not make a
  /// nonblocking communicator's asyncError() report kInProgress: the call was complete once enqueued.
  Request submitOnStream(std::vector<Operation> ops, std::function<Status(std::vector<Operation>*)> ready) override;
  /// The dispatcher's plan of a call on device memory (gpu/host_comm.hpp).
  Status planOnPeerMemory(const Operation& op, size_t slotBytes, size_t oneShotBytes, algo::peer::Plan* plan) override {
    return dispatcher_.planOnPeerMemory(op, slotBytes, oneShotBytes, plan);
  }

  /// Deterministic mode on or off (tuner::Selector::deterministic); the same on every rank.
  void setDeterministic(bool on);
  /// The bytes of this rank's own buffers: those releaseBuffers() frees (scratch, cached plans) and those the
  /// communicator keeps while it lives (its connections' FIFOs).
  struct MemoryUse {
    uint64_t releasable = 0;
    uint64_t persistent = 0;
  };
  MemoryUse memoryUse();
  /// Frees the releasable buffers once the calls in flight finished; calls made later make them again.
  void releaseBuffers();
  TrafficCounters counters() const;
  /// The transports of this rank's connections to other ranks, sorted and joined by '+' ("shm", "loopback+tcp").
  std::string transportNames() const;
  /// True when another rank of this communicator lives in this process (threads, or a thread driving several ranks).
  bool sharesProcess() const override;
  void resetCounters();
  std::vector<CallMetrics> metrics() const { return metrics_.read(); }
  /// The name of this communicator in flight records and metrics: its hash, in hex (the same on every rank).
  std::string commName() const;
  /// Writes this rank's flight record to `dir` (observe/flight_dump.hpp); `inFlight`: the failed call's progress.
  Status dumpFlightRecord(const std::string& dir, const std::string& reason, std::string* path,
                          std::vector<observe::PeerBytes> inFlight = {}) const;

  /// Collective split over this communicator (see Communicator::split).
  Status split(int color, int key, std::unique_ptr<CommImpl>* out);
  /// `excluded`: sorted, distinct ranks other than this one (checked by Communicator::shrink).
  Status shrink(const std::vector<int>& excluded, std::unique_ptr<CommImpl>* out);
  /// Communicator::agree, through the store (comm/agreement.hpp).
  Status agree(uint32_t* value, std::vector<int>* members, double graceSeconds);

  void abort();
  /// Aborts with `cause` (a silent rank, seen by the heartbeat), which the peers find in the store and every
  /// failing call names.
  void abortFor(const Status& cause);
  bool aborted() const override { return aborted_.load(); }
  const std::atomic<bool>* abortFlag() const override { return &aborted_; }
  /// The first failure of any call, kInProgress while a nonblocking communicator has queued work, else ok.
  Status asyncError() const override;
  /// Keeps the first failure that leaves this communicator unusable (peer death, timeout, abort), for asyncError();
  /// returns `st`.
  Status recordFailure(Status st) override;

  /// Held while an execution of this communicator runs (connections are single-threaded).
  std::mutex& executionMutex() { return executionMutex_; }
  void waitForAsyncWork() { worker_.drain(); }
  /// The one-sided channel (CommConfig::oneSidedContexts > 0), else null.
  OneSided* oneSided() { return oneSided_.get(); }
  /// The GPU path's state of this communicator (gpu/peer_group.hpp), set up by the first call that uses it.
  std::shared_ptr<void>& peerMemory() override { return peerMemory_; }

 private:
  Status connectPeers();
  /// Exchanges the hosts' topologies and joins them into system_ (the same graph on every rank).
  Status buildSystem();
  transport::Connection* connection(int peer) { return connections_[peer].get(); }
  /// The execution the dispatcher binds calls to, made on the first call.
  std::unique_ptr<engine::Execution> makeExecution();
  /// Ok when the communicator takes calls: not aborted, not failed, initialized.
  Status usable() const;
  /// prepare() less the flight recorder: binds `ops` through the dispatcher, their entries renumbered or made anew.
  Status bind(std::span<const Operation> ops, engine::Execution** out);
  /// runOwned() for a call that repeats the bound one (Dispatcher::repeats), on the calling thread, without the COLL
  /// log line.
  Status runRepeated(const Operation& op);
  /// Marks calls_ as started at `started` (ticks). They reach the flight recorder when they end, or as started
  /// once the call waits past its spin (publishStarted): a call that ends within its spin writes one entry.
  void startRecording(std::span<const Operation> ops, uint64_t started);
  /// Writes the running calls_ not yet in the flight recorder as started: where a dump finds a call that waits.
  void publishStarted();
  /// Records the running calls_ as completed or failed now (and the time of a single completed one in the
  /// metrics); false when none was running.
  bool finishRecording(observe::OpState state);
  /// startRecording() and finishRecording(kCompleted) of the single bound call repeated (runRepeated), without
  /// their loops over a group's calls.
  void startRepeatedRecording(uint64_t started);
  void finishRepeatedRecording();
  struct RecordedCall;
  /// Marks call `c`'s entry as started (not yet in the recorder).
  void startEntry(RecordedCall& c, uint64_t scheduled, uint64_t started);
  /// Writes call `c`'s entry as ended in `state` at `ended`: its first write, or the update of its started one.
  void finishEntry(RecordedCall& c, observe::OpState state, uint64_t ended);
  /// Appends the flight-recorder entry and metrics cell of `op`, bound anew as `choice`, to calls_.
  void noteCall(const Operation& op, const Dispatcher::Choice& choice);
  Status poisonedError() const;
  /// Runs `ops`. The caller owns the execution: the async worker and groups hold executionMutex_; a blocking call
  /// runs on the thread that uses the communicator, after draining the worker.
  Status runOwned(std::span<const Operation> ops);
  /// runOwned, timed and followed by the COLL log lines when they are enabled.
  Status runLogged(std::span<const Operation> ops);

  int rank_ = 0;
  int nranks_ = 0;
  bool blocking_ = true;
  CommConfig config_;
  std::atomic<double> timeoutSeconds_;  // read by the Executions (ExecutionSettings::timeoutSeconds)
  std::string settingsError_;           // the first invalid override of config_.settings: init fails with it
  Settings settings_;                   // before recorder_, which is sized from it
  uint8_t barrierCell_ = 0;
  std::atomic<bool> initialized_{false};
  CallGate gate_;
  mutable std::mutex failureMutex_;
  std::atomic<bool> failed_{false};
  Status failure_;
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::vector<transport::PeerInfo> peers_;
  std::vector<std::unique_ptr<transport::Connection>> connections_;  // by rank; [rank_] loops back to itself
  std::atomic<bool> aborted_{false};
  int splits_ = 0;
  int shrinks_ = 0;  // apart from splits_: the excluded ranks do not call shrink, so one count would drift
  int agreements_ = 0;
  std::unique_ptr<Heartbeat> heartbeat_;  // when the failure detector is on
  std::unique_ptr<OneSided> oneSided_;    // when CommConfig::oneSidedContexts > 0
  std::mutex splitMutex_;
  CommImpl* splitChild_ = nullptr;  // the child a split is initialising, under splitMutex_ (abort() aborts it too)
  topology::SystemGraph system_;
  std::vector<int> hostOfRank_;         // index of each rank's host among system_'s host nodes
  transport::MachineLoad machineLoad_;  // this communicator's ranks on this machine and the cores they may run on
  std::mutex executionMutex_;
  CallValidator validator_;
  AsyncWorker worker_;
  observe::MetricsTable metrics_;
  Dispatcher dispatcher_;
  std::vector<Dispatcher::Choice> choices_;  // of the last call bound anew, reused
  observe::FlightRecorder recorder_;
  /// The operations of the call being run: their flight-recorder entries (and numbers) and metrics cells.
  struct RecordedCall {
    uint64_t index = 0;      // its number in the recorder, once published
    bool published = false;  // in the recorder (as started) before it ended
    observe::FlightEntry entry;
    observe::MetricsTable::Cell* metrics = nullptr;
    uint64_t predictedNanoseconds = 0;  // entry.predictedMicros as the metrics add it
  };
  std::vector<RecordedCall> calls_;
  bool recording_ = false;  // calls_ started and not yet finished
  uint64_t commHash_ = 0;
  std::shared_ptr<void> peerMemory_;
};

}  // namespace chorus
