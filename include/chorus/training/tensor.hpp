/// @file tensor.hpp
/// Tensor: a row-major float matrix (rows x cols), the one data type of the training layer. A batch of tokens or
/// samples is a Tensor with one row each; vectors are 1-row tensors.
#pragma once

#include <cstddef>
#include <vector>

namespace chorus::training {

class Tensor {
 public:
  Tensor() = default;
  Tensor(size_t rows, size_t cols) : rows_(rows), cols_(cols), data_(rows * cols, 0.0f) {}

  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  size_t size() const { return data_.size(); }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float* row(size_t r) { return data_.data() + r * cols_; }
  const float* row(size_t r) const { return data_.data() + r * cols_; }
  float& at(size_t r, size_t c) { return data_[r * cols_ + c]; }
  float at(size_t r, size_t c) const { return data_[r * cols_ + c]; }

  /// Reshapes to rows x cols, all zeros (keeps the allocation when it is large enough).
  void resize(size_t rows, size_t cols) {
    rows_ = rows;
    cols_ = cols;
    data_.assign(rows * cols, 0.0f);
  }
  /// Rows [begin, end) as a new tensor.
  Tensor rowsSlice(size_t begin, size_t end) const;

 private:
  size_t rows_ = 0, cols_ = 0;
  std::vector<float> data_;
};

/// The kernels every layer uses. Each output element is one dot product summed in index order, so the same inputs
/// give the same bits whatever the batch around them (row i of a product depends on row i of the input only).
/// y = x w (+ bias): x [n x k], w [k x m] row-major, bias [m] or null.
void matmul(const Tensor& x, const float* w, const float* bias, size_t m, Tensor* y);
/// dx = dy wᵀ: dy [n x m], w [k x m] -> dx [n x k].
void matmulTransposedB(const Tensor& dy, const float* w, size_t k, Tensor* dx);
/// dw += xᵀ dy and, when dbias is not null, dbias += column sums of dy (both summed over rows in order).
void accumulateWeightGrad(const Tensor& x, const Tensor& dy, float* dw, float* dbias);

}  // namespace chorus::training
