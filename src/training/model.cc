#include "chorus/training/model.hpp"

namespace chorus::training {

Sequential& Sequential::add(std::unique_ptr<Layer> layer) {
  offsets_.push_back(offsets_.back() + layer->paramCount());
  layers_.push_back(std::move(layer));
  return *this;
}

void Sequential::initParams(float* params, uint64_t seed) const {
  Rng rng(seed);
  for (int i = 0; i < layers(); ++i) layers_[i]->initParams(params + offsets_[i], rng);
}

Status Sequential::forward(const Tensor& x, ParamAccess& access, Tensor* out) {
  activations_.resize(layers_.size() + 1);
  activations_[0] = x;
  for (int i = 0; i < layers(); ++i) {
    const float* params = nullptr;
    CHORUS_TRY(access.acquire(i, false, &params, nullptr));
    Status st = layers_[i]->forward(params, activations_[i], &activations_[i + 1]);
    if (!st.isOk()) return st.withContext("layer " + std::to_string(i) + " (" + layers_[i]->name() + ") forward");
    CHORUS_TRY(access.release(i, false));
  }
  *out = activations_.back();
  return Status::ok();
}

Status Sequential::backward(const Tensor& dout, ParamAccess& access, Tensor* dx) {
  Tensor grad = dout, next;
  for (int i = layers() - 1; i >= 0; --i) {
    const float* params = nullptr;
    float* grads = nullptr;
    CHORUS_TRY(access.acquire(i, true, &params, &grads));
    // The first layer's input gradient is wanted only when the caller asks for it.
    Tensor* inputGrad = (i > 0 || dx) ? &next : nullptr;
    Status st = layers_[i]->backward(params, grad, grads, inputGrad);
    if (!st.isOk()) return st.withContext("layer " + std::to_string(i) + " (" + layers_[i]->name() + ") backward");
    CHORUS_TRY(access.release(i, true));
    if (inputGrad) std::swap(grad, next);
  }
  if (dx) *dx = grad;
  return Status::ok();
}

Sequential makeMlp(const std::vector<size_t>& widths) {
  Sequential m;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    m.add(std::make_unique<Linear>(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) m.add(std::make_unique<Relu>());
  }
  return m;
}

}  // namespace chorus::training
