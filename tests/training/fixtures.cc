#include "training/fixtures.hpp"

#include <cmath>

#include "chorus/training/data_parallel.hpp"
#include "chorus/training/zero.hpp"

namespace chorus::testing {

using training::Tensor;

Batch makeBatch(int step, int rank, size_t rows, size_t inputs, int classes) {
  training::Rng rng(1000003ull * static_cast<uint64_t>(step + 1) + 7919ull * static_cast<uint64_t>(rank));
  Batch b{Tensor(rows, inputs), {}};
  for (size_t i = 0; i < b.x.size(); ++i) b.x.data()[i] = static_cast<float>(2.0 * rng.uniform() - 1.0);
  for (size_t i = 0; i < rows; ++i) b.labels.push_back(static_cast<int>(rng.below(static_cast<uint64_t>(classes))));
  return b;
}

training::OptimizerConfig testOptimizer() {
  training::OptimizerConfig c;
  c.kind = "adam";
  c.lr = 0.01f;
  return c;
}

std::vector<float> referenceDataParallel(const std::vector<size_t>& widths, int nranks, int steps, int microBatches,
                                         size_t rows) {
  training::Sequential model = training::makeMlp(widths);
  const size_t p = model.paramCount();
  std::vector<float> params(p), grads(p), rankGrads(p);
  model.initParams(params.data(), kInitSeed);
  auto optimizer = training::makeOptimizer(testOptimizer(), p);
  const float scale = 1.0f / static_cast<float>(nranks);
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < nranks; ++r) {
      std::fill(rankGrads.begin(), rankGrads.end(), 0.0f);
      training::FlatAccess access(model, params.data(), rankGrads.data());
      for (int m = 0; m < microBatches; ++m) {
        Batch b = makeBatch(s * microBatches + m, r, rows, widths.front(), static_cast<int>(widths.back()));
        Tensor logits, dlogits;
        (void)model.forward(b.x, access, &logits);
        training::softmaxCrossEntropy(logits, b.labels, &dlogits);
        (void)model.backward(dlogits, access);
      }
      for (size_t i = 0; i < p; ++i) {
        const float g = rankGrads[i] * scale;
        grads[i] = r == 0 ? g : grads[i] + g;
      }
    }
    optimizer->beginStep();
    optimizer->update(params.data(), grads.data(), 0, p);
  }
  return params;
}

std::string sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " != " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " != " + std::to_string(b[i]);
  }
  return "";
}

std::string closeTo(const std::vector<float>& a, const std::vector<float>& b, float rtol, float atol) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " != " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i])))
      return "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  }
  return "";
}

std::unique_ptr<training::Trainer> makeTestTrainer(Communicator& comm, training::Sequential& model, int stage,
                                                   bool prefetch) {
  if (stage == 0) {
    training::DataParallelConfig c;
    c.optimizer = testOptimizer();
    return std::make_unique<training::DataParallel>(comm, model, c);
  }
  training::ZeroConfig c;
  c.stage = stage;
  c.optimizer = testOptimizer();
  c.prefetch = prefetch;
  return std::make_unique<training::Zero>(comm, model, c);
}

std::string sameCheckpoint(const training::Checkpoint& a, const training::Checkpoint& b) {
  if (a.step != b.step) return "step " + std::to_string(a.step) + " != " + std::to_string(b.step);
  if (std::string d = sameBits(a.params, b.params); !d.empty()) return "parameters: " + d;
  if (a.state.size() != b.state.size()) return "state vector counts differ";
  for (size_t k = 0; k < a.state.size(); ++k)
    if (std::string d = sameBits(a.state[k], b.state[k]); !d.empty()) return "state " + std::to_string(k) + ": " + d;
  return "";
}

}  // namespace chorus::testing
