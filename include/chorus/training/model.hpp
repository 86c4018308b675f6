/// @file model.hpp
/// Sequential: a list of layers run one after another, and ParamAccess: how a runner lends each layer its
/// parameters and gradients. A replica lends slices of its flat buffers; ZeRO-3 gathers a layer's shards just
/// before it runs and frees them after; data parallelism starts a bucket's AllReduce when backward releases the
/// last layer of the bucket.
#pragma once

#include <memory>
#include <vector>

#include "chorus/training/layer.hpp"

namespace chorus::training {

class ParamAccess {
 public:
  virtual ~ParamAccess() = default;
  /// Before layer `layer` runs forward (grads == nullptr) or backward: the pointers it should use.
  virtual Status acquire(int layer, bool backward, const float** params, float** grads) = 0;
  /// After it ran (for backward: its gradients for this micro-batch are final).
  virtual Status release(int layer, bool backward) = 0;
};

class Sequential {
 public:
  Sequential& add(std::unique_ptr<Layer> layer);
  int layers() const { return static_cast<int>(layers_.size()); }
  Layer& layer(int i) { return *layers_[i]; }
  const Layer& layer(int i) const { return *layers_[i]; }
  /// Offset of layer i's parameters in the flat parameter vector (layers in order, tensors in order).
  size_t offset(int i) const { return offsets_[i]; }
  size_t paramCount() const { return offsets_.back(); }

  /// Initialises the flat parameters layer by layer from one Rng seeded with `seed`.
  void initParams(float* params, uint64_t seed) const;
  Status forward(const Tensor& x, ParamAccess& access, Tensor* out);
  /// Backward from the gradient of the output; `dx` (may be null) gets the input's gradient.
  Status backward(const Tensor& dout, ParamAccess& access, Tensor* dx = nullptr);

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<size_t> offsets_{0};
  std::vector<Tensor> activations_;
};

/// Lends slices of two flat buffers: a whole replica's parameters and gradients (null for inference).
class FlatAccess : public ParamAccess {
 public:
  FlatAccess(const Sequential& model, float* params, float* grads) : model_(model), params_(params), grads_(grads) {}
  Status acquire(int layer, bool backward, const float** params, float** grads) override {
    *params = params_ + model_.offset(layer);
    if (grads) *grads = backward ? grads_ + model_.offset(layer) : nullptr;
    return Status::ok();
  }
  Status release(int, bool) override { return Status::ok(); }

 protected:
  const Sequential& model_;
  float* params_;
  float* grads_;
};

/// The classifier of the demo and the tests: in -> hidden... -> classes with ReLU between the Linear layers.
Sequential makeMlp(const std::vector<size_t>& widths);

}  // namespace chorus::training
