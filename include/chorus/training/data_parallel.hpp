/// @file data_parallel.hpp
/// DataParallel: every rank holds the whole model and its optimizer, runs its own micro-batches, and the gradients
/// are averaged with AllReduce, bucket by bucket, while backward is still running (PyTorch DDP's scheme).
///
/// Buckets: the parameter tensors in reverse registration order (the order backward finishes them), a bucket
/// closed once it holds at least `bucketCapBytes`; each is a contiguous range of the flat gradient buffer, reduced
/// in place. A bucket's AllReduce starts, asynchronously, as soon as backward released every layer it covers, and
/// buckets start in index order on every rank. Gradients are pre-divided by the rank count before the sum.
/// Expert parameters (Layer::expertParams) are left out of the buckets and averaged over `expertComm` at step(),
/// when one is given. With one rank this is plain single-process training.
#pragma once

#include <memory>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/compress/codec.hpp"
#include "chorus/training/optimizer.hpp"
#include "chorus/training/trainer.hpp"

namespace chorus::training {

struct DataParallelConfig {
  size_t bucketCapBytes = 25u << 20;  // PyTorch's default
  OptimizerConfig optimizer;
  /// How buckets cross the wire (compress/codec.hpp): "" for fp32 AllReduce, "bf16", "fp16", "topk:0.01", "powersgd:4"
  std::string codec;
  /// Mixed precision: "" (fp32), "bf16" or "fp16". Forward and backward use a copy of the parameters rounded to that
  /// type (the arithmetic stays fp32 on the CPU); the fp32 parameters are the master copy the optimizer updates.
  /// fp16 also sends the gradients as fp16, scaled by a dynamic loss scale: a step whose summed gradients
  /// overflowed is skipped on every rank (the overflow reaches every rank through the sum) and the scale halves;
  /// after `scaleGrowthInterval` good steps it doubles.
  std::string computeType;
  float initialLossScale = 65536.0f;
  int scaleGrowthInterval = 2000;
};

class DataParallel : public Trainer {
 public:
  /// `expertComm`: the expert-data-parallel group of expert-parallel layers (null: their gradients stay local).
  DataParallel(Communicator& comm, Sequential& model, const DataParallelConfig& config,
               Communicator* expertComm = nullptr);
  ~DataParallel() override;

  Status init(uint64_t seed) override;
  Status forwardBackward(const Tensor& x, const std::vector<int>& labels, LossResult* result) override;
  Status step() override;
  Status predict(const Tensor& x, Tensor* logits) override;
  Status exportCheckpoint(Checkpoint* out) override;
  Status exportShard(CheckpointShard* out) override;
  Status importCheckpoint(const Checkpoint& in) override;
  MemoryReport memory() const override;

  /// no_sync: while off, backward only accumulates gradients; the backward that runs with it on reduces the sum.
  void setSync(bool on) { sync_ = on; }
  /// What this rank's gradient is multiplied by before the sum: 1/ranks by default (the mean of the ranks'
  /// gradients). A rank that trained on n of the step's N samples sets n/N: the sum is then the mean over samples.
  void setGradientScale(float scale) { gradientScale_ = scale; }
  /// Joins the step's gradient reduction without a batch of its own (a rank left without samples), adding the
  /// gradients it holds (zeros since the last step) times the scale.
  Status reduceWithoutBatch();

  struct Bucket {
    size_t begin = 0, end = 0;    // element range of the flat gradient buffer
    int lowestLayer = 0;          // ready once backward released this layer (the bucket's first in forward order)
    int launchedAfterLayer = -1;  // the layer whose release started its AllReduce in the last backward
  };
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<float>& params() const { return params_; }
  float lossScale() const { return lossScale_; }
  /// Whether the last step() skipped its update (fp16 overflow).
  bool skippedLastStep() const { return skipped_; }
  const std::vector<float>& grads() const { return grads_; }

 private:
  class Access;
  void planBuckets();
  Status launchReadyBuckets(int releasedLayer);
  Status waitBuckets();

  Communicator& comm_;
  Communicator* expertComm_;
  Sequential& model_;
  DataParallelConfig config_;
  std::vector<float> params_, grads_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<Bucket> buckets_;
  std::vector<ParamRange> expertRanges_;  // absolute ranges of the flat buffers
  std::vector<Request> pending_;
  std::vector<size_t> pendingBuckets_;  // the bucket of each pending request
  std::unique_ptr<compress::GradientCodec> codec_;
  Status codecStatus_;
  size_t nextBucket_ = 0;
  bool sync_ = true;
  float gradientScale_ = 1.0f;
  std::vector<float> computeParams_;  // mixed precision: the rounded copy forward and backward use
  bool computeStale_ = true;
  float lossScale_ = 1.0f;
  int goodSteps_ = 0;
  bool skipped_ = false;
  bool reducing_ = false;  // this backward reduces
};

}  // namespace chorus::training
