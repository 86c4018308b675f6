/// @file trainer.hpp
/// Trainer: one rank's side of data-parallel-style training (DataParallel, Zero), the interface the demo and the
/// tests drive. Every rank calls the same methods in the same order: most of them are collective.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chorus/status.hpp"
#include "chorus/training/loss.hpp"
#include "chorus/training/model.hpp"

namespace chorus::training {

/// Bytes this rank keeps between steps, and the most it held gathered at once (ZeRO-3).
struct MemoryReport {
  size_t paramBytes = 0, gradBytes = 0, optimizerBytes = 0;
  size_t peakGatheredBytes = 0;
};

/// Everything a run needs to go on: the unpadded parameters, the optimizer's per-element state vectors (same
/// length) and its step count. Independent of the rank count and of the parallelism that wrote it.
struct Checkpoint {
  std::vector<float> params;
  std::vector<std::vector<float>> state;
  long step = 0;
};
/// The part of a Checkpoint one rank owns: the elements at `ranges` ({offset, count} into the unpadded parameter
/// vector, ascending), packed in that order, of the parameters and of each state vector. The shards of all ranks
/// cover every element once.
struct CheckpointShard {
  std::vector<std::pair<size_t, size_t>> ranges;
  std::vector<float> params;
  std::vector<std::vector<float>> state;
  long step = 0;
};
Status writeCheckpoint(const std::string& path, const Checkpoint& checkpoint);
Status readCheckpoint(const std::string& path, Checkpoint* checkpoint);
/// An error naming both shapes unless `checkpoint` holds `params` parameters and `stateVectors` state vectors.
Status checkCheckpointShape(const Checkpoint& checkpoint, size_t params, size_t stateVectors);

class Trainer {
 public:
  virtual ~Trainer() = default;
  /// Rank 0 initialises the parameters from `seed` and broadcasts them: every rank starts from the same model.
  virtual Status init(uint64_t seed) = 0;
  /// Forward and backward of one micro-batch; gradients add up until step(). Rows of x are samples.
  virtual Status forwardBackward(const Tensor& x, const std::vector<int>& labels, LossResult* result) = 0;
  /// Reduces what is still to reduce, updates the parameters and clears the gradients.
  virtual Status step() = 0;
  /// Logits of x with the current parameters (collective for ZeRO-3, which gathers them).
  virtual Status predict(const Tensor& x, Tensor* logits) = 0;
  /// The whole state, gathered on every rank (collective).
  virtual Status exportCheckpoint(Checkpoint* out) = 0;
  /// This rank's shard of the state, without communication (ZeRO: the shard it updates; data parallelism: an
  /// equal part of the replicated state).
  virtual Status exportShard(CheckpointShard* out) = 0;
  /// Takes this rank's part of `in` (written with any rank count).
  virtual Status importCheckpoint(const Checkpoint& in) = 0;
  virtual MemoryReport memory() const = 0;
};

}  // namespace chorus::training
