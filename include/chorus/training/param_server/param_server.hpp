/// @file param_server.hpp
/// A parameter server beside AllReduce: the last S ranks of a communicator are servers, each owning one contiguous,
/// size-balanced key range of the flat parameters with its optimizer state; the other W ranks are workers that
/// compute gradients, push them to the servers and pull the updated parameters back, chunk by chunk (a chunk is the
/// unit of the server's update, so pushing, updating and pulling overlap). Each worker and server talk on links of
/// their own (a communicator per direction), so no exchange waits behind another and a dead server fails only the
/// exchanges with it.
///
/// Synchronisation (Li et al., OSDI'14):
///   bsp  a chunk is updated once per step, with the mean of every worker's gradient, folded in worker order: the
///        bits DataParallel gives in deterministic mode (and one process taking the same batches);
///   asp  a server applies each push as it arrives (the worker's gradient times 1/W, so W pushes move as far as one
///        synchronous step) and answers with what it holds at once;
///   ssp  as asp, but a worker's answer after its k-th push waits until every worker pushed at least k - s times
///        (bounded staleness s; s = 0 is lock-step with asp's per-push updates).
/// Workers that finished count as never behind.
///
/// Replication (chain replication of each key range): with `replicate`, server i forwards every update of its range
/// to server (i + 1) mod S and answers a worker only once that backup applied it. When a server dies, its workers'
/// exchanges with it fail at once; they push their unanswered step again to the backup, which skips what it already
/// applied, so no update is lost or applied twice, and training goes on. A range survives one failure: the backup
/// does not forward what it serves in the dead server's place. Without replication a dead server ends every worker's
/// step in an error naming it. A dead worker ends the job: the servers report it to the other workers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/loss.hpp"
#include "chorus/training/model.hpp"
#include "chorus/training/optimizer.hpp"

namespace chorus::training::param_server {

enum class Sync { kBsp, kAsp, kSsp };
/// "bsp", "asp" or "ssp"; an invalid argument naming them otherwise.
Status parseSync(const std::string& name, Sync* out);
const char* syncName(Sync sync);

struct ParamServerConfig {
  int servers = 1;  // S: the last S ranks serve, the others work
  Sync sync = Sync::kBsp;
  int staleness = 0;             // ssp's bound s
  bool replicate = false;        // chain replication to the next server (needs S >= 2)
  size_t chunkBytes = 1u << 20;  // the unit of push, update and pull
  OptimizerConfig optimizer;     // the servers' optimizer
  uint64_t seed = 1;             // every rank initialises the whole model from it
  double timeoutSeconds = 300;   // the most a server waits for the workers of a step
};

/// The cumulative counters of a server (readable from another thread while it serves).
struct ServerStats {
  long pushesApplied = 0;  // updates of its own range: chunk pushes (bsp: chunk rounds)
  long replicated = 0;     // updates of the replica it keeps: forwarded, or pushed once its primary died
  long duplicates = 0;     // pushes and forwards it had already applied (pushed again after a failover)
  long forwarded = 0;      // updates of its own range the backup applied
  int promotedRange = -1;  // the dead server's range it serves in its place, or -1
};

struct WorkerStats {
  long steps = 0;
  /// staleness[d]: steps whose parameters came back while the slowest worker was d pushes behind this one (the
  /// largest d over the chunks; always 0 under bsp).
  std::vector<long> staleness;
  int failovers = 0;
  double failoverSeconds = 0;  // the steps that failed over, from their start to the backup's last answer, summed
};

class Server {
 public:
  virtual ~Server() = default;
  /// Serves until every worker said it finished. An error when a worker died or the job timed out.
  virtual Status serve() = 0;
  virtual ServerStats stats() const = 0;
};

class Worker {
 public:
  virtual ~Worker() = default;
  /// Forward and backward of one micro-batch on the parameters pulled last; gradients add up until step().
  virtual Status forwardBackward(const Tensor& x, const std::vector<int>& labels, LossResult* result) = 0;
  /// Pushes the gradients (times 1/W) to every server, pulls the parameters back and clears the gradients.
  virtual Status step() = 0;
  /// Tells the servers this worker is done; they stop once every worker is. Call it once, after the last step.
  virtual Status finish() = 0;
  virtual const std::vector<float>& params() const = 0;
  virtual WorkerStats stats() const = 0;
  /// The worker's index among the W workers (its rank in the communicator).
  virtual int index() const = 0;
  virtual int workers() const = 0;
};

/// Collective over `comm` (which must outlive both): checks that every rank passes the same configuration and opens
/// the links. Exactly one of *server and *worker is set. `model` must outlive the worker.
Status join(Communicator& comm, Sequential& model, const ParamServerConfig& config, std::unique_ptr<Server>* server,
            std::unique_ptr<Worker>* worker);

}  // namespace chorus::training::param_server
