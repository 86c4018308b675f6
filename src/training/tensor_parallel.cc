#include "chorus/training/tensor_parallel.hpp"

#include <algorithm>
#include <vector>

namespace chorus::training {
namespace {

// The dense Linear(in, out)'s initial values, as Linear::initParams draws them.
std::vector<float> denseInit(size_t in, size_t out, Rng& rng) {
  Linear dense(in, out);
  std::vector<float> values(dense.paramCount());
  dense.initParams(values.data(), rng);
  return values;
}

Status divides(size_t what, const Communicator& tp, const std::string& name) {
  if (what % static_cast<size_t>(tp.size()) == 0) return Status::ok();
  return invalidArgument(name + " of " + std::to_string(what) + " does not divide by the tensor-parallel size " +
                         std::to_string(tp.size()));
}

// Rows of all TP ranks' shards, in rank order.
Status gatherRows(Communicator& tp, const Tensor& shard, Tensor* full) {
  full->resize(shard.rows() * static_cast<size_t>(tp.size()), shard.cols());
  return tp.allGather(shard.data(), full->data(), shard.size(), DataType::kFloat32);
}

// This rank's rows of the sum over the TP ranks.
Status reduceScatterRows(Communicator& tp, const Tensor& full, Tensor* shard) {
  CHORUS_TRY(divides(full.rows(), tp, "sequence-parallel rows"));
  shard->resize(full.rows() / static_cast<size_t>(tp.size()), full.cols());
  return tp.reduceScatter(full.data(), shard->data(), shard->size(), DataType::kFloat32, RedOp::sum());
}

}  // namespace

ColumnParallelLinear::ColumnParallelLinear(size_t in, size_t out, Communicator& tp, bool sequenceParallel)
    : in_(in), out_(out), local_(out / static_cast<size_t>(tp.size())), tp_(tp), sequenceParallel_(sequenceParallel) {}

void ColumnParallelLinear::initParams(float* params, Rng& rng) const {
  const std::vector<float> dense = denseInit(in_, out_, rng);
  const size_t first = local_ * static_cast<size_t>(tp_.rank());
  for (size_t i = 0; i < in_; ++i) std::copy_n(&dense[i * out_ + first], local_, params + i * local_);
  std::copy_n(&dense[in_ * out_ + first], local_, params + in_ * local_);
}

Status ColumnParallelLinear::forward(const float* params, const Tensor& x, Tensor* y) {
  CHORUS_TRY(divides(out_, tp_, name() + ": output width"));
  if (sequenceParallel_) {
    CHORUS_TRY(gatherRows(tp_, x, &x_));
  } else {
    x_ = x;
  }
  if (x_.cols() != in_) return invalidArgument(name() + ": input has " + std::to_string(x_.cols()) + " columns");
  matmul(x_, params, params + in_ * local_, local_, y);
  return Status::ok();
}

Status ColumnParallelLinear::backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) {
  accumulateWeightGrad(x_, dy, grads, grads + in_ * local_);
  if (!dx) return Status::ok();  // the input needs no gradient: f's AllReduce is skipped
  Tensor partial;
  matmulTransposedB(dy, params, in_, &partial);
  if (sequenceParallel_) return reduceScatterRows(tp_, partial, dx);
  *dx = std::move(partial);
  return tp_.allReduce(dx->data(), dx->data(), dx->size(), DataType::kFloat32, RedOp::sum());
}

RowParallelLinear::RowParallelLinear(size_t in, size_t out, Communicator& tp, bool sequenceParallel)
    : in_(in), out_(out), local_(in / static_cast<size_t>(tp.size())), tp_(tp), sequenceParallel_(sequenceParallel) {}

void RowParallelLinear::initParams(float* params, Rng& rng) const {
  const std::vector<float> dense = denseInit(in_, out_, rng);
  const size_t first = local_ * static_cast<size_t>(tp_.rank());
  std::copy_n(&dense[first * out_], local_ * out_, params);
  std::copy_n(&dense[in_ * out_], out_, params + local_ * out_);
}

Status RowParallelLinear::forward(const float* params, const Tensor& x, Tensor* y) {
  CHORUS_TRY(divides(in_, tp_, name() + ": input width"));
  if (x.cols() != local_) return invalidArgument(name() + ": input has " + std::to_string(x.cols()) + " columns");
  x_ = x;
  Tensor partial;
  matmul(x, params, nullptr, out_, &partial);
  if (sequenceParallel_) {
    CHORUS_TRY(reduceScatterRows(tp_, partial, y));
  } else {
    *y = std::move(partial);
    CHORUS_TRY(tp_.allReduce(y->data(), y->data(), y->size(), DataType::kFloat32, RedOp::sum()));
  }
  const float* bias = params + local_ * out_;
  for (size_t i = 0; i < y->rows(); ++i)
    for (size_t j = 0; j < out_; ++j) y->at(i, j) += bias[j];
  return Status::ok();
}

Status RowParallelLinear::backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) {
  Tensor full;
  const Tensor* g = &dy;
  if (sequenceParallel_) {  // g's backward: gather the output gradient's rows
    CHORUS_TRY(gatherRows(tp_, dy, &full));
    g = &full;
  }
  // Every rank sees the whole output gradient, so the replicated bias gets the same gradient everywhere.
  accumulateWeightGrad(x_, *g, grads, grads + local_ * out_);
  if (dx) matmulTransposedB(*g, params, local_, dx);
  return Status::ok();
}

}  // namespace chorus::training
