/// @file layer.hpp
/// Layer: one step of a Sequential model. A layer owns no parameters: whoever runs it (a replica, a ZeRO shard
/// gatherer, a tensor-parallel rank) hands it a pointer to its parameters for forward and to its gradients for
/// backward, which is what lets the same layer run under every parallelism.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "chorus/status.hpp"
#include "chorus/training/random.hpp"
#include "chorus/training/tensor.hpp"

namespace chorus::training {

/// A range of a layer's parameters [offset, offset + count).
struct ParamRange {
  size_t offset = 0, count = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string name() const = 0;
  /// Number of parameters (this rank's share for a tensor-parallel layer).
  virtual size_t paramCount() const { return 0; }
  /// Its parameter tensors, in registration order (e.g. weight then bias); empty for none.
  virtual std::vector<ParamRange> tensors() const { return {}; }
  /// Parameters an expert-parallel layer holds for its own experts only: reduced over the expert-data-parallel
  /// group, never over the ranks holding other experts. Empty for a dense layer.
  virtual ParamRange expertParams() const { return {}; }
  /// Fills `params` (paramCount() floats) from `rng`.
  virtual void initParams(float* params, Rng& rng) const {}
  /// y = layer(x); keeps what backward needs.
  virtual Status forward(const float* params, const Tensor& x, Tensor* y) = 0;
  /// dx from dy, adding this layer's parameter gradients to `grads` (paramCount() floats). dx may be null when the
  /// input needs no gradient.
  virtual Status backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) = 0;
  /// Backward in two halves, for zero-bubble pipelines: the input gradient now, the parameter gradients later
  /// (backwardWeight, once per backwardInput, adding to `grads` what backward would). A layer without parameters
  /// needs nothing more; one with parameters that does not override them cannot be split and says so.
  virtual Status backwardInput(const float* params, const Tensor& dy, Tensor* dx);
  virtual Status backwardWeight(float* grads);
};

/// y = x W + b; W is [in x out] row-major, followed by b [out] in the parameters. Initialised uniformly in
/// ±1/sqrt(in) (PyTorch's default bound).
class Linear : public Layer {
 public:
  Linear(size_t in, size_t out, bool bias = true) : in_(in), out_(out), bias_(bias) {}
  std::string name() const override { return "Linear"; }
  size_t paramCount() const override { return in_ * out_ + (bias_ ? out_ : 0); }
  std::vector<ParamRange> tensors() const override;
  void initParams(float* params, Rng& rng) const override;
  Status forward(const float* params, const Tensor& x, Tensor* y) override;
  Status backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) override;
  Status backwardInput(const float* params, const Tensor& dy, Tensor* dx) override;
  Status backwardWeight(float* grads) override;
  size_t in() const { return in_; }
  size_t out() const { return out_; }

 private:
  size_t in_, out_;
  bool bias_;
  Tensor x_;
  Tensor dy_;  // between backwardInput and backwardWeight
};

class Relu : public Layer {
 public:
  std::string name() const override { return "ReLU"; }
  Status forward(const float*, const Tensor& x, Tensor* y) override;
  Status backward(const float*, const Tensor& dy, float*, Tensor* dx) override;

 private:
  Tensor x_;
};

/// GELU, tanh approximation (as GPT-2 and Megatron use it).
class Gelu : public Layer {
 public:
  std::string name() const override { return "GELU"; }
  Status forward(const float*, const Tensor& x, Tensor* y) override;
  Status backward(const float*, const Tensor& dy, float*, Tensor* dx) override;

 private:
  Tensor x_;
};

/// Elementwise GELU and its derivative, shared with the MoE experts.
float gelu(float x);
float geluGrad(float x);

}  // namespace chorus::training
