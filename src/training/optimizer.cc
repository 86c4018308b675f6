#include "chorus/training/optimizer.hpp"

#include <cmath>

namespace chorus::training {
namespace {

class Sgd : public Optimizer {
 public:
  Sgd(const OptimizerConfig& c, size_t n) : c_(c), momentum_(c.momentum != 0 ? n : 0, 0.0f) {}
  void update(float* p, const float* g, size_t off, size_t n) override {
    if (c_.momentum == 0) {
      for (size_t i = 0; i < n; ++i) p[i] -= c_.lr * g[i];
      return;
    }
    float* buf = momentum_.data() + off;
    for (size_t i = 0; i < n; ++i) {
      buf[i] = c_.momentum * buf[i] + g[i];
      p[i] -= c_.lr * buf[i];
    }
  }
  std::vector<std::vector<float>*> stateVectors() override { return {&momentum_}; }
  long& stepCount() override { return steps_; }
  void beginStep() override { ++steps_; }

 private:
  OptimizerConfig c_;
  std::vector<float> momentum_;
  long steps_ = 0;
};

class Adam : public Optimizer {
 public:
  Adam(const OptimizerConfig& c, size_t n) : c_(c), m_(n, 0.0f), v_(n, 0.0f) {}
  void beginStep() override {
    ++t_;
    // Computed once per step in double and rounded, so every shard uses the same factors.
    correction1_ = static_cast<float>(1.0 - std::pow(static_cast<double>(c_.beta1), static_cast<double>(t_)));
    correction2_ = static_cast<float>(1.0 - std::pow(static_cast<double>(c_.beta2), static_cast<double>(t_)));
  }
  void update(float* p, const float* g, size_t off, size_t n) override {
    float* m = m_.data() + off;
    float* v = v_.data() + off;
    for (size_t i = 0; i < n; ++i) {
      m[i] = c_.beta1 * m[i] + (1.0f - c_.beta1) * g[i];
      v[i] = c_.beta2 * v[i] + (1.0f - c_.beta2) * g[i] * g[i];
      const float mHat = m[i] / correction1_, vHat = v[i] / correction2_;
      p[i] -= c_.lr * mHat / (std::sqrt(vHat) + c_.eps);
    }
  }
  std::vector<std::vector<float>*> stateVectors() override { return {&m_, &v_}; }
  long& stepCount() override { return t_; }

 private:
  OptimizerConfig c_;
  std::vector<float> m_, v_;
  long t_ = 0;
  float correction1_ = 1, correction2_ = 1;
};

}  // namespace

std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig& config, size_t n) {
  if (config.kind == "sgd") return std::make_unique<Sgd>(config, n);
  return std::make_unique<Adam>(config, n);
}

}  // namespace chorus::training
