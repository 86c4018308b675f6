// The call path of a communicator: the operations of a call (one, or a group's) in, a bound engine Execution out.
// It chooses each operation's algorithm (through the selector, once per shape: the plan cache), sizes the scratch,
// scales PreMulSum inputs, judges which receive buffers are out of the cache, signs the call for its peers' check,
// and keeps the last call bound so that the same call again, on any buffers, runs by a rewind. The communicator
// around it keeps the lifecycle (init, failure, split, abort) and what is recorded of each call.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "algorithms/operation.hpp"
#include "algorithms/peer_plan.hpp"
#include "engine/cache_residency.hpp"
#include "engine/execution.hpp"
#include "engine/wait_spins.hpp"
#include "observe/metrics_table.hpp"
#include "tuner/choice.hpp"

namespace chorus {

class Dispatcher {
 public:
  /// What the dispatcher needs of its communicator's system, fixed once that is built (CommImpl::buildSystem).
  struct Setup {
    std::shared_ptr<const std::vector<int>> hostLayout;  // each rank's host, as the plans' shapes carry it
    tuner::Selector selector;                            // the same on every rank
    engine::WaitSpins waitSpins;                         // CHORUS_SPIN, or the rule by oversubscription and call size
    engine::CacheResidency residency;                    // which receive buffers are still in this core's cache
    size_t coldStreamingFrom = 0;                        // CHORUS_COLD_STREAMING (0: every buffer taken as cached)
    size_t cachedStreamingFrom = engine::kStreamingThreshold;  // CHORUS_CACHED_STREAMING
  };
  /// What an operation bound anew was given, for the flight recorder, the metrics and the COLL log line.
  struct Choice {
    const char* algorithm = "";
    float predictedMicros = 0;  // the cost model's time for it
    uint64_t payload = 0;       // its bytes as the traffic counters count them
    uint64_t wire = 0;          // what running it sends to other ranks
    observe::MetricsTable::Cell* metrics = nullptr;
  };
  /// `makeExecution` makes the one Execution this dispatcher binds call after call, on the first call.
  Dispatcher(int rank, int nranks, observe::MetricsTable* metrics,
             std::function<std::unique_ptr<engine::Execution>()> makeExecution);

  void setUp(Setup setup);
  bool deterministic() const { return setup_.selector.deterministic; }
  /// Deterministic mode on or off (tuner::Selector::deterministic): the cached plans and the bound call go.
  void setDeterministic(bool on);

  /// Whether `op` alone is the bound call again, perhaps on other buffers.
  bool repeats(const Operation& op) const { return bound_.size() == 1 && bound_.front().sameCall(op); }
  /// Whether `ops` (a group) are the bound operations again, perhaps on other buffers.
  bool repeats(std::span<const Operation> ops) const;
  /// Binds the call repeats(op) found: the bound steps pointed at its buffers, counted, judged and rewound.
  engine::Execution* rebind(const Operation& op);
  /// The same for a group that repeats(ops).
  engine::Execution* rebind(std::span<const Operation> ops);
  /// Binds a call other than the last one: plans, scratch and steps made for it; `choices` gets one entry per
  /// operation, in order.
  Status bindAnew(std::span<const Operation> ops, std::vector<Choice>* choices, engine::Execution** out);

  /// This rank's plan of `op` (device buffers) over the peer memory of one host, through slots of `slotBytes`: the
  /// algorithm of that memory the selector chooses, as for a call on host memory. Keeps nothing (it may run beside a
  /// bind on the communicator's thread).
  Status planOnPeerMemory(const Operation& op, size_t slotBytes, size_t oneShotBytes, algo::peer::Plan* out) const;

  /// The bytes of the buffers releaseBuffers() frees: the scratch area and the cached plans' steps.
  size_t releasableBytes() const;
  /// Frees the scratch area and the cached plans (the next calls make them again as they need them).
  void releaseBuffers();

  /// The number of the call bound last (each bind counts one; the same on every rank).
  uint64_t sequence() const { return sequence_; }
  /// The algorithm operation `i` of the last call bound (of `operations`) runs, for the COLL log line.
  const char* algorithmOf(size_t i, size_t operations) const {
    return operations == 1 || i >= algorithmOfOp_.size() ? lastAlgorithm_ : algorithmOfOp_[i];
  }
  /// The execution of the last call bound (null before the first).
  engine::Execution* execution() const { return execution_.get(); }
  /// After the engine ran the call: divides the results of its AVG reductions by the number of ranks. Inline: it is
  /// on every repeated call's path, and nearly always finds nothing to do.
  void complete(std::span<const Operation> ops) const {
    for (const Operation& op : ops)
      if (op.op.kind == RedOpKind::kAvg) divideAverage(op);
  }

 private:
  /// The plan of `shape`, generated once and kept (plans depend only on the shape, not on the buffers); null when
  /// no algorithm implements the collective.
  struct CachedPlan {
    algo::Plan plan;
    Choice choice;  // its payload left 0: that depends on the operation
  };
  const CachedPlan* plan(const algo::CollShape& shape, const tuner::CallSelection* selection);
  std::byte* scratch(size_t bytes);
  /// The error of a call whose required selection (Operation::selection) leaves it no algorithm.
  Status unselectable(const Operation& op, const algo::CollShape& shape) const;
  /// Points bound operation `i`'s steps at `op`'s buffers when they changed, their first lines asked for.
  void pointAt(size_t i, const Operation& op);
  /// The step size from which an operation's steps write with streaming stores (each operation of a group judged on
  /// its own), noting its buffers' use.
  size_t streamingFrom(const void* send, const void* recv, const BufferExtents& extents);
  engine::CallSignature signatureOf(std::span<const Operation> ops) const;
  void divideAverage(const Operation& op) const;

  int rank_ = 0;
  int nranks_ = 0;
  observe::MetricsTable* metrics_;
  std::function<std::unique_ptr<engine::Execution>()> makeExecution_;
  Setup setup_;
  uint64_t sequence_ = 0;
  std::unique_ptr<engine::Execution> execution_;  // reused call after call
  std::vector<std::byte> scratch_;
  std::vector<const algo::Plan*> planOfOp_;  // bindAnew()'s working lists, reused
  std::vector<size_t> scratchOffsets_;
  std::vector<engine::BoundPlan> boundPlans_;
  std::vector<const char*> algorithmOfOp_;  // per operation of the last call bound (COLL log of groups)
  const char* lastAlgorithm_ = "";          // the algorithm of the last single call bound (COLL log)
  /// (collective, count, element size, root, the call's selection)
  std::map<std::tuple<int, size_t, size_t, int, const tuner::CallSelection*>, CachedPlan> plans_;
  /// An operation execution_ holds bound: a call (a single one or a group) made of the same operations again runs by
  /// a rewind, on any buffers (its steps pointed at them).
  struct BoundOperation {
    algo::CollType type;
    const void* send;
    void* recv;
    size_t count;
    DataType dtype;
    RedOpKind op;
    int root;
    uint64_t payload, wire;  // what one run of it adds to the counters
    BufferExtents extents;
    const char* algorithm;
    observe::MetricsTable::Cell* metrics;
    const tuner::CallSelection* selection;
    /// The same call but perhaps on other buffers.
    bool sameCall(const Operation& o) const {
      return o.type == type && o.count == count && o.dtype == dtype && o.op.kind == op && o.root == root &&
             o.selection == selection;
    }
  };
  std::vector<BoundOperation> bound_;  // empty: nothing to rewind
};

}  // namespace chorus
