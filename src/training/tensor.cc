#include "chorus/training/tensor.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::training {

Tensor Tensor::rowsSlice(size_t begin, size_t end) const {
  Tensor t(end - begin, cols_);
  std::copy(row(begin), row(begin) + (end - begin) * cols_, t.data());
  return t;
}

void matmul(const Tensor& x, const float* w, const float* bias, size_t m, Tensor* y) {
  const size_t n = x.rows(), k = x.cols();
  y->resize(n, m);
  for (size_t i = 0; i < n; ++i) {
    float* out = y->row(i);
    const float* in = x.row(i);
    // Row i accumulates w's rows in index order: vectorisable over j, and the same bits for any batch.
    for (size_t p = 0; p < k; ++p) {
      const float a = in[p];
      const float* wr = w + p * m;
      for (size_t j = 0; j < m; ++j) out[j] += a * wr[j];
    }
    if (bias)
      for (size_t j = 0; j < m; ++j) out[j] += bias[j];
  }
}

void matmulTransposedB(const Tensor& dy, const float* w, size_t k, Tensor* dx) {
  const size_t n = dy.rows(), m = dy.cols();
  dx->resize(n, k);
  for (size_t i = 0; i < n; ++i) {
    const float* g = dy.row(i);
    float* out = dx->row(i);
    for (size_t p = 0; p < k; ++p) {
      const float* wr = w + p * m;
      float s = 0.0f;
      for (size_t j = 0; j < m; ++j) s += g[j] * wr[j];
      out[p] = s;
    }
  }
}

void accumulateWeightGrad(const Tensor& x, const Tensor& dy, float* dw, float* dbias) {
  const size_t n = x.rows(), k = x.cols(), m = dy.cols();
  for (size_t i = 0; i < n; ++i) {
    const float* in = x.row(i);
    const float* g = dy.row(i);
    for (size_t p = 0; p < k; ++p) {
      const float a = in[p];
      float* out = dw + p * m;
      for (size_t j = 0; j < m; ++j) out[j] += a * g[j];
    }
    if (dbias)
      for (size_t j = 0; j < m; ++j) dbias[j] += g[j];
  }
}

}  // namespace chorus::training
