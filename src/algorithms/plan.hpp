// Plans are data. An algorithm turns the shape of a collective into a Plan: this rank's ordered Steps, each naming
// a peer and byte slices of the send, recv or scratch buffer. The engine runs plans; the simulator checks them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus/coll_args.hpp"
#include "chorus/status.hpp"

namespace chorus::algo {

/// The kinds of call, as the public API names them (chorus/coll_args.hpp).
using CollType = ::chorus::Collective;
const char* collName(CollType type);

enum class BufferKind : uint8_t { kSend, kRecv, kScratch };

/// A byte offset into one of the three buffers of an operation.
struct Slice {
  BufferKind buffer = BufferKind::kSend;
  size_t offset = 0;
};

enum class StepKind : uint8_t {
  kSend,         // send `bytes` from src to peer
  kRecv,         // receive `bytes` from peer into dst
  kRecvReduce,   // receive `bytes` from peer, dst = src (op) incoming
  kCopy,         // local copy src -> dst
  kReduceLocal,  // local dst = dst (op) src
  kSendSize,     // tell peer the byte count `bytes` (point-to-point matching check)
  kRecvSize,     // expect peer's byte count to equal `bytes`
};

struct Step {
  StepKind kind = StepKind::kSend;
  int peer = -1;
  Slice src;
  Slice dst;
  size_t bytes = 0;
  /// Index of an earlier step of this plan whose output this step reads. The engine lets this step process only
  /// as many bytes as the dependency has finished, which is what pipelines chunks through a ring or chain.
  int dep = -1;
  /// Index of an earlier step that still reads bytes this step overwrites: this step starts only once that one has
  /// finished entirely (for a transfer read straight from this rank's buffer, once the peer has read it all).
  int after = -1;
  /// A transfer whose source bytes several peers take (set on the send and on the matching receive alike): it goes
  /// direct from kStagedDirectFrom bytes, and where the peer cannot read the source in place (a plain buffer of
  /// another process) the engine stages it, copying it once per call into shareable memory that every peer of the
  /// host reads in place: one copy in and one out per peer, where the FIFOs copy in and out per peer.
  bool staged = false;
};

/// Per-step size from which a staged transfer goes direct (the engine's threshold when that is lower): a staged
/// AllGather was level with the same plan through the FIFOs at 16 KiB steps and ahead from 64 KiB
/// (perf/archive/2026-11-27-staged-transfers-a-block-copied-once-for-all-its-readers.md).
constexpr size_t kStagedDirectFrom = 32 << 10;

struct Plan {
  std::vector<Step> steps;
  size_t scratchBytes = 0;

  int add(const Step& s) {
    steps.push_back(s);
    return static_cast<int>(steps.size()) - 1;
  }
};

/// Bytes a rank running `plan` sends to other ranks (sends to itself left out).
inline uint64_t wireBytes(const Plan& plan, int rank) {
  uint64_t total = 0;
  for (const Step& s : plan.steps)
    if (s.kind == StepKind::kSend && s.peer != rank) total += s.bytes;
  return total;
}

/// AlltoAllv's element counts and displacements, one entry per peer.
struct VariableLayout {
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
};

/// Where a call's buffers are and how its ranks reach each other's: host memory through the transports (the plans
/// above), or device memory the ranks of one host map into each other (the one-sided plans of peer_plan.hpp).
enum class Memory : uint8_t { kHost, kPeer };

/// What a plan over peer memory depends on beyond the shape.
struct PeerCall {
  size_t slotBytes = 0;     // each of a rank's two slots: a step moves at most this much through one
  size_t oneShotBytes = 0;  // the largest AllReduce one-shot may run (CHORUS_GPU_ONE_SHOT)
  bool inPlace = false;     // the call's buffers overlap as NCCL's in-place calls lay them out
  bool scaled = false;      // a PreMulSum: the inputs are multiplied by the rank's scalar on the way
};

/// Everything an algorithm may look at. Counts are in elements; byte offsets use elemSize.
struct CollShape {
  CollType type = CollType::kAllReduce;
  int nranks = 1;
  int rank = 0;
  size_t count = 0;  // per-rank element count as the NCCL call takes it
  size_t elemSize = 1;
  int root = 0;                                      // root for rooted collectives, peer for send/recv
  std::shared_ptr<const VariableLayout> variable{};  // AlltoAllv only
  /// The host of each rank, numbered 0.. in order of first appearance; null when all ranks share one host.
  std::shared_ptr<const std::vector<int>> hostOfRank{};
  Memory memory = Memory::kHost;
  PeerCall peer{};  // Memory::kPeer only
};

using PlanGenerator = Plan (*)(const CollShape& shape);
namespace peer {
struct Plan;
}
using PeerPlanGenerator = peer::Plan (*)(const CollShape& shape);
using Applicability = bool (*)(const CollShape& shape);
class CostModel;
/// Predicted time in µs (algorithms/cost.hpp).
using CostFunction = double (*)(const CollShape& shape, const CostModel& model);

struct Algorithm {
  const char* name;
  CollType coll;
  PlanGenerator generate;  // Memory::kHost
  /// Predicted time of a shape; null for a collective's only algorithm (nothing to choose between).
  CostFunction cost = nullptr;
  /// Whether the algorithm can run `shape` (null: any shape); the tuner only considers those that can.
  Applicability applies = nullptr;
  /// Every element of the result is folded in rank order (rank 0's value first), the same on every rank, whatever
  /// the arrival order: the only algorithms deterministic mode lets reduce.
  bool rankOrder = false;
  PeerPlanGenerator generatePeer = nullptr;  // Memory::kPeer
  /// The memory the plans are for: the tuner chooses among the algorithms of the call's memory only.
  Memory memory = Memory::kHost;
  bool appliesTo(const CollShape& shape) const { return !applies || applies(shape); }
};

/// Registers an algorithm at static-initialisation time (one file per algorithm, no central list to edit).
struct AlgorithmRegistrar {
  explicit AlgorithmRegistrar(const Algorithm& algorithm);
};
#define CHORUS_REGISTER_ALGORITHM(ident, name, coll, fn, cost) \
  static const ::chorus::algo::AlgorithmRegistrar ident##_registrar({name, coll, fn, cost})
/// An algorithm that only some shapes can run (e.g. hierarchical ones need the same rank count on every host).
#define CHORUS_REGISTER_ALGORITHM_IF(ident, name, coll, fn, cost, applies) \
  static const ::chorus::algo::AlgorithmRegistrar ident##_registrar({name, coll, fn, cost, applies})
/// An algorithm that reduces every element in rank order (see Algorithm::rankOrder).
#define CHORUS_REGISTER_RANK_ORDER_ALGORITHM(ident, name, coll, fn, cost) \
  static const ::chorus::algo::AlgorithmRegistrar ident##_registrar({name, coll, fn, cost, nullptr, true})

const std::vector<Algorithm>& algorithms();
/// The algorithm of `memory` for `coll`: by name when `name` is non-empty, else the default. Null when none matches.
const Algorithm* findAlgorithm(CollType coll, const std::string& name = "", Memory memory = Memory::kHost);

/// Element range [begin, end) of slice i when `count` elements are cut into n nearly equal slices.
inline size_t sliceBegin(size_t count, int n, int i) { return count * static_cast<size_t>(i) / static_cast<size_t>(n); }

/// Byte offset and length of slice i when the shape's buffer is cut into its nranks nearly equal slices.
struct RankSlices {
  explicit RankSlices(const CollShape& s) : count(s.count), elemSize(s.elemSize), n(s.nranks) {}
  size_t offset(int i) const { return sliceBegin(count, n, i) * elemSize; }
  size_t bytes(int i) const { return offset(i + 1) - offset(i); }
  size_t count, elemSize;
  int n;
};

inline int mod(int a, int n) { return ((a % n) + n) % n; }

/// Appends the copy of this rank's whole input (`bytes` of send) to its output (recv): a collective on one rank,
/// or a root's own share. Returns the step.
inline int addInputCopy(Plan& p, size_t bytes) {
  return p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kRecv, 0}, bytes});
}

/// Appends the steps that fold the n ranks' contributions into `result` in rank order (rank 0's first), so every
/// rank computes the same bits whatever order they arrive in. This rank's own contribution is `mine`, ready after
/// step `own`; every other rank's arrives from that rank. Returns the last step. In place, `result` may be where
/// `own` copied `mine` from: the first write into it waits until that copy has finished.
inline int addRankOrderFold(Plan& p, int n, int r, Slice mine, Slice result, size_t bytes, int own) {
  Step first{StepKind::kRecv, 0, {}, result, bytes};
  if (r == 0) first = {StepKind::kCopy, -1, mine, result, bytes, own};
  first.after = own;
  int last = p.add(first);
  for (int k = 1; k < n; ++k) {
    if (k == r)
      last = p.add({StepKind::kReduceLocal, -1, mine, result, bytes, last});
    else
      last = p.add({StepKind::kRecvReduce, k, result, result, bytes, last});
  }
  return last;
}

}  // namespace chorus::algo
