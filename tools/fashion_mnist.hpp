// Fashion-MNIST from its IDX files (Debian's dataset-fashion-mnist: /usr/share/datasets/fashion-mnist/), pixels
// scaled to [0, 1].
#pragma once

#include <string>
#include <vector>

#include "chorus/status.hpp"
#include "chorus/training/tensor.hpp"

namespace chorus::tools {

struct Dataset {
  training::Tensor images;  // one row of 784 per image
  std::vector<int> labels;
};

/// Reads `<dir>/<prefix>-images-idx3-ubyte.gz` and `<dir>/<prefix>-labels-idx1-ubyte.gz` (prefix "train" or
/// "t10k"); at most `limit` samples (0: all).
Status loadFashionMnist(const std::string& dir, const std::string& prefix, size_t limit, Dataset* out);

}  // namespace chorus::tools
