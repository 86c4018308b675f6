#include "chorus/training/pipeline/partition.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

#include "chorus/training/random.hpp"

namespace chorus::training::pipeline {

Status partitionLayers(const std::vector<double>& layerCosts, int stages, std::vector<int>* starts) {
  const int n = static_cast<int>(layerCosts.size());
  if (stages < 1) return invalidArgument("a pipeline needs at least one stage, not " + std::to_string(stages));
  if (n < stages) {
    return invalidArgument("cannot cut " + std::to_string(n) + " layers into " + std::to_string(stages) +
                           " pipeline stages: every stage needs a layer");
  }
  for (int i = 0; i < n; ++i)
    if (!(layerCosts[i] >= 0)) return invalidArgument("layer " + std::to_string(i) + " has a negative cost");
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layerCosts[i];
  // best[s][i]: the smallest largest-stage cost of layers [0, i) in s stages; cut[s][i]: where the last one starts.
  const double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int i = s; i <= n; ++i) {
      for (int j = s - 1; j < i; ++j) {
        const double cost = std::max(best[s - 1][j], prefix[i] - prefix[j]);
        if (cost < best[s][i]) best[s][i] = cost, cut[s][i] = j;
      }
    }
  }
  starts->assign(stages, 0);
  for (int s = stages, i = n; s > 0; --s) i = (*starts)[s - 1] = cut[s][i];
  return Status::ok();
}

Status measureLayerCosts(const std::function<Sequential()>& makeModel, size_t rows, int repeats,
                         std::vector<double>* costs) {
  if (rows < 1 || repeats < 1) return invalidArgument("measuring layer costs needs at least one row and one run");
  Sequential model = makeModel();
  std::vector<float> params(model.paramCount()), grads(model.paramCount());
  model.initParams(params.data(), 1);
  // The input width: the first layer with parameters tells it; a model starting with others is measured on
  // what its first Linear takes.
  size_t width = 0;
  for (int i = 0; i < model.layers() && !width; ++i)
    if (auto* linear = dynamic_cast<Linear*>(&model.layer(i))) width = linear->in();
  if (!width) return invalidArgument("measuring layer costs needs a model with a Linear layer");
  Rng rng(1);
  Tensor x(rows, width);
  for (size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(2.0 * rng.uniform() - 1.0);
  std::vector<std::vector<double>> samples(model.layers());
  for (int r = 0; r < repeats; ++r) {
    Tensor in = x;
    std::vector<Tensor> outs(model.layers());
    for (int i = 0; i < model.layers(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      CHORUS_TRY(model.layer(i).forward(params.data() + model.offset(i), in, &outs[i]));
      samples[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      in = outs[i];
    }
    Tensor dy = in, dx;
    for (int i = model.layers() - 1; i >= 0; --i) {
      const auto start = std::chrono::steady_clock::now();
      CHORUS_TRY(model.layer(i).backward(params.data() + model.offset(i), dy, grads.data() + model.offset(i), &dx));
      samples[i].back() += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      dy = dx;
    }
  }
  costs->clear();
  for (auto& s : samples) {
    std::sort(s.begin(), s.end());
    costs->push_back(s[s.size() / 2]);
  }
  return Status::ok();
}

}  // namespace chorus::training::pipeline
