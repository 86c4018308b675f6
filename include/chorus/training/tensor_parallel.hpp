/// @file tensor_parallel.hpp
/// Megatron-style tensor parallelism over a TP communicator of p ranks (Shoeybi et al., 2019).
///
/// ColumnParallelLinear holds columns [r out/p, (r+1) out/p) of W and b: from a replicated input it computes its
/// slice of the output. Its backward all-reduces the input gradient (the "f" operator: identity forward,
/// AllReduce backward). RowParallelLinear holds rows [r in/p, (r+1) in/p) of W and the whole bias: from its slice
/// of the input it computes a partial product, all-reduced before the bias is added (the "g" operator: AllReduce
/// forward, identity backward). Column -> elementwise activation -> Row is an MLP block with one AllReduce forward
/// and one backward.
///
/// Sequence parallel (Korthikanti et al., 2022): outside the block each rank holds only rows [r n/p, (r+1) n/p) of
/// the activations; f becomes AllGather forward / ReduceScatter backward and g ReduceScatter forward / AllGather
/// backward: the same bytes, 1/p of the activation memory.
///
/// Both initialise their shard with the values the dense Linear of the same shape draws from the same Rng, so a
/// tensor-parallel model starts equal to its dense counterpart.
#pragma once

#include "chorus/communicator.hpp"
#include "chorus/training/layer.hpp"

namespace chorus::training {

class ColumnParallelLinear : public Layer {
 public:
  /// `out` must divide by the TP size (else forward fails with a message naming the shapes).
  ColumnParallelLinear(size_t in, size_t out, Communicator& tp, bool sequenceParallel = false);
  std::string name() const override { return "ColumnParallelLinear"; }
  size_t paramCount() const override { return in_ * local_ + local_; }
  std::vector<ParamRange> tensors() const override { return {{0, in_ * local_}, {in_ * local_, local_}}; }
  void initParams(float* params, Rng& rng) const override;
  Status forward(const float* params, const Tensor& x, Tensor* y) override;
  Status backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) override;

 private:
  size_t in_, out_, local_;
  Communicator& tp_;
  bool sequenceParallel_;
  Tensor x_;  // the full (gathered) input
};

class RowParallelLinear : public Layer {
 public:
  /// `in` must divide by the TP size; under sequence parallelism so must the rows of the batch.
  RowParallelLinear(size_t in, size_t out, Communicator& tp, bool sequenceParallel = false);
  std::string name() const override { return "RowParallelLinear"; }
  size_t paramCount() const override { return local_ * out_ + out_; }
  std::vector<ParamRange> tensors() const override { return {{0, local_ * out_}, {local_ * out_, out_}}; }
  void initParams(float* params, Rng& rng) const override;
  Status forward(const float* params, const Tensor& x, Tensor* y) override;
  Status backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) override;

 private:
  size_t in_, out_, local_;
  Communicator& tp_;
  bool sequenceParallel_;
  Tensor x_;
};

}  // namespace chorus::training
