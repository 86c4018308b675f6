/// @file optimizer.hpp
/// SGD (with momentum) and Adam over a flat range of parameters. Both are elementwise: updating a shard of the
/// parameters with its shard of the state gives the same bits as updating the whole vector, which is what makes
/// ZeRO's partitioned optimizer equal to data parallelism's replicated one.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace chorus::training {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// Starts an optimizer step (Adam counts them for its bias correction).
  virtual void beginStep() {}
  /// params[i] -= update(grads[i]) for i in [0, n), using state elements [stateOffset, stateOffset + n).
  virtual void update(float* params, const float* grads, size_t stateOffset, size_t n) = 0;
  /// Its state: per-element vectors (momentum; Adam's m and v) and the step count.
  virtual std::vector<std::vector<float>*> stateVectors() = 0;
  virtual long& stepCount() = 0;
  size_t stateBytes() {
    size_t b = 0;
    for (auto* v : stateVectors()) b += v->size() * sizeof(float);
    return b;
  }
};

struct OptimizerConfig {
  std::string kind = "adam";  // "adam" or "sgd"
  float lr = 1e-3f;
  float momentum = 0.9f;                            // sgd
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // adam
};

/// An optimizer with state for `n` elements.
std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig& config, size_t n);

}  // namespace chorus::training
