#include "chorus/training/layer.hpp"

#include <cmath>

namespace chorus::training {

std::vector<ParamRange> Linear::tensors() const {
  std::vector<ParamRange> t{{0, in_ * out_}};
  if (bias_) t.push_back({in_ * out_, out_});
  return t;
}

void Linear::initParams(float* params, Rng& rng) const {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_));
  for (size_t i = 0; i < paramCount(); ++i) params[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
}

Status Linear::forward(const float* params, const Tensor& x, Tensor* y) {
  if (x.cols() != in_) {
    return invalidArgument("Linear(" + std::to_string(in_) + "->" + std::to_string(out_) + "): input has " +
                           std::to_string(x.cols()) + " columns");
  }
  x_ = x;
  matmul(x, params, bias_ ? params + in_ * out_ : nullptr, out_, y);
  return Status::ok();
}

Status Linear::backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) {
  accumulateWeightGrad(x_, dy, grads, bias_ ? grads + in_ * out_ : nullptr);
  if (dx) matmulTransposedB(dy, params, in_, dx);
  return Status::ok();
}

Status Linear::backwardInput(const float* params, const Tensor& dy, Tensor* dx) {
  dy_ = dy;
  if (dx) matmulTransposedB(dy, params, in_, dx);
  return Status::ok();
}

Status Linear::backwardWeight(float* grads) {
  accumulateWeightGrad(x_, dy_, grads, bias_ ? grads + in_ * out_ : nullptr);
  return Status::ok();
}

Status Layer::backwardInput(const float* params, const Tensor& dy, Tensor* dx) {
  if (paramCount() > 0) return invalidUsage(name() + " has parameters and cannot split its backward");
  return backward(params, dy, nullptr, dx);
}

Status Layer::backwardWeight(float*) { return Status::ok(); }

Status Relu::forward(const float*, const Tensor& x, Tensor* y) {
  x_ = x;
  y->resize(x.rows(), x.cols());
  for (size_t i = 0; i < x.size(); ++i) y->data()[i] = x.data()[i] > 0.0f ? x.data()[i] : 0.0f;
  return Status::ok();
}

Status Relu::backward(const float*, const Tensor& dy, float*, Tensor* dx) {
  if (!dx) return Status::ok();
  dx->resize(dy.rows(), dy.cols());
  for (size_t i = 0; i < dy.size(); ++i) dx->data()[i] = x_.data()[i] > 0.0f ? dy.data()[i] : 0.0f;
  return Status::ok();
}

namespace {
constexpr float kSqrt2OverPi = 0.7978845608f, kCubic = 0.044715f;
}

float gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x))); }

float geluGrad(float x) {
  const float t = std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
}

Status Gelu::forward(const float*, const Tensor& x, Tensor* y) {
  x_ = x;
  y->resize(x.rows(), x.cols());
  for (size_t i = 0; i < x.size(); ++i) y->data()[i] = gelu(x.data()[i]);
  return Status::ok();
}

Status Gelu::backward(const float*, const Tensor& dy, float*, Tensor* dx) {
  if (!dx) return Status::ok();
  dx->resize(dy.rows(), dy.cols());
  for (size_t i = 0; i < dy.size(); ++i) dx->data()[i] = dy.data()[i] * geluGrad(x_.data()[i]);
  return Status::ok();
}

}  // namespace chorus::training
