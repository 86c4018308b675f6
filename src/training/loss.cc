#include "chorus/training/loss.hpp"

#include <cmath>

namespace chorus::training {

LossResult softmaxCrossEntropy(const Tensor& logits, const std::vector<int>& labels, Tensor* dlogits) {
  const size_t n = logits.rows(), c = logits.cols();
  LossResult result;
  if (dlogits) dlogits->resize(n, c);
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* z = logits.row(i);
    size_t best = 0;
    for (size_t j = 1; j < c; ++j)
      if (z[j] > z[best]) best = j;
    if (static_cast<int>(best) == labels[i]) ++result.correct;
    float sum = 0;
    for (size_t j = 0; j < c; ++j) sum += std::exp(z[j] - z[best]);
    total += std::log(sum) - (z[labels[i]] - z[best]);
    if (!dlogits) continue;
    float* g = dlogits->row(i);
    const float scale = 1.0f / static_cast<float>(n);
    for (size_t j = 0; j < c; ++j) {
      const float p = std::exp(z[j] - z[best]) / sum;
      g[j] = (p - (static_cast<int>(j) == labels[i] ? 1.0f : 0.0f)) * scale;
    }
  }
  result.loss = n ? static_cast<float>(total / static_cast<double>(n)) : 0.0f;
  return result;
}

}  // namespace chorus::training
