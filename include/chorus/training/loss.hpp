/// @file loss.hpp
/// Softmax cross-entropy, the loss of the classifiers.
#pragma once

#include <vector>

#include "chorus/training/tensor.hpp"

namespace chorus::training {

struct LossResult {
  float loss = 0;   // mean over the rows
  int correct = 0;  // rows whose largest logit is the label
};

/// Mean cross-entropy of softmax(logits) against `labels`; `dlogits` gets its gradient, (softmax - onehot) / rows.
LossResult softmaxCrossEntropy(const Tensor& logits, const std::vector<int>& labels, Tensor* dlogits);

}  // namespace chorus::training
