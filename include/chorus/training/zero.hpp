/// @file zero.hpp
/// Zero: ZeRO data parallelism, stages 1, 2 and 3 (Rajbhandari et al., SC 2020).
///
/// Layout: each layer with parameters is a unit; its U parameters are padded with zeros to U' = N ceil(U/N) and
/// rank r owns elements [r U'/N, (r+1) U'/N) of it. Padding is never given to the optimizer and is stripped from
/// checkpoints. Every stage keeps only its shard of the optimizer state.
///  - stage 1: full parameters and gradients; at step() each unit's gradients are reduce-scattered (pre-divided by
///    N), the shard updated, and the unit's parameters all-gathered.
///  - stage 2: + only the gradient shard is kept: a unit's gradients are reduce-scattered, asynchronously, as soon
///    as backward released it, and its full gradient buffer freed.
///  - stage 3: + only the parameter shard is kept: a unit is all-gathered before its forward and again before its
///    backward and freed after each; with prefetch the next unit's gather is started while this one computes.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/compress/codec.hpp"
#include "chorus/training/optimizer.hpp"
#include "chorus/training/trainer.hpp"

namespace chorus::training {

struct ZeroConfig {
  int stage = 1;
  OptimizerConfig optimizer;
  bool prefetch = true;  // stage 3
  /// How a unit's gradients reach their shards (compress/codec.hpp): "" for an fp32 ReduceScatter; "bf16" and
  /// "fp16" reduce-scatter in that type; the others ("topk:f", "powersgd:r") sum the whole unit as in data
  /// parallelism, each rank keeping its shard, and hold back a whole unit's error per rank.
  std::string codec;
};

class Zero : public Trainer {
 public:
  Zero(Communicator& comm, Sequential& model, const ZeroConfig& config);
  ~Zero() override;

  Status init(uint64_t seed) override;
  Status forwardBackward(const Tensor& x, const std::vector<int>& labels, LossResult* result) override;
  Status step() override;
  Status predict(const Tensor& x, Tensor* logits) override;
  Status exportCheckpoint(Checkpoint* out) override;
  Status exportShard(CheckpointShard* out) override;
  Status importCheckpoint(const Checkpoint& in) override;
  MemoryReport memory() const override;

  /// A layer's place in the padded layout.
  struct Unit {
    int layer = 0;
    size_t count = 0;      // U: the layer's parameters
    size_t shard = 0;      // U'/N
    size_t padded = 0;     // offset in the padded full buffers (stages 1 and 2)
    size_t shardBase = 0;  // offset in this rank's shard buffers
    size_t first = 0;      // this rank's first element in the unit (rank x shard)
    size_t owned = 0;      // of this rank's shard, the elements that are parameters, not padding
  };
  const std::vector<Unit>& units() const { return units_; }
  /// Sum of U' over the units.
  size_t paddedCount() const { return paddedTotal_; }

 private:
  class Access;
  Status gather(int unit, bool wait);
  Status waitGathered(int unit);
  void releaseGathered(int unit);
  Status finishReductions();
  Status gatherUnitVector(const std::vector<float>& shardVector, std::vector<float>* full);

  Communicator& comm_;
  Sequential& model_;
  ZeroConfig config_;
  std::vector<Unit> units_;
  std::vector<int> unitOfLayer_;  // -1 for layers without parameters
  size_t paddedTotal_ = 0, shardTotal_ = 0;
  std::vector<float> fullParams_, fullGrads_;  // stages 1-2 / stage 1
  std::vector<float> shardParams_, shardGrads_, incoming_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<compress::GradientCodec> codec_;
  Status codecStatus_;
  int microBatches_ = 0;  // since the last step
  // Stage 2 and 3: reductions in flight, with the gradient buffers they read.
  struct PendingReduce {
    Request request;
    std::vector<float> buffer;
    int unit;
    bool addIncoming;
    float* dest;  // where the shard of the sum goes
  };
  std::vector<std::unique_ptr<PendingReduce>> reductions_;
  // Stage 3: gathered units and their gathers in flight.
  struct Gathered {
    std::vector<float> params;
    Request request;
  };
  std::map<int, Gathered> gathered_;
  std::map<int, std::vector<float>> unitGrads_;  // stage 2-3: the full gradients of units in backward
  size_t liveGatheredBytes_ = 0, peakGatheredBytes_ = 0;
};

}  // namespace chorus::training
