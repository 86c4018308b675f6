// What the training tests share: a small classifier whose parameter count is prime (so ZeRO's shards need
// padding on every rank count), seeded batches, and the single-process reference of data-parallel training.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/loss.hpp"
#include "chorus/training/model.hpp"
#include "chorus/training/optimizer.hpp"
#include "chorus/training/trainer.hpp"

namespace chorus::testing {

/// 8 -> 6 -> 6 -> 5 with ReLUs: 54 + 42 + 35 = 131 parameters, a prime.
inline std::vector<size_t> primeMlpWidths() { return {8, 6, 6, 5}; }
constexpr uint64_t kInitSeed = 7;

struct Batch {
  training::Tensor x;
  std::vector<int> labels;
};
/// The micro-batch of `rows` samples that rank `rank` trains on at step `step` (inputs in [-1, 1)).
Batch makeBatch(int step, int rank, size_t rows, size_t inputs, int classes);

training::OptimizerConfig testOptimizer();

/// Data parallelism (stage 0) or ZeRO stage 1-3 over `comm`, with testOptimizer().
std::unique_ptr<training::Trainer> makeTestTrainer(Communicator& comm, training::Sequential& model, int stage,
                                                   bool prefetch = true);

/// One process running what N data-parallel ranks run: at each step, every rank's micro-batches in rank order,
/// each rank's gradient scaled by 1/N and added up in rank order, then one optimizer step. Returns the parameters.
std::vector<float> referenceDataParallel(const std::vector<size_t>& widths, int nranks, int steps, int microBatches,
                                         size_t rows);

/// "" when a and b hold the same bits, else where they first differ.
std::string sameBits(const std::vector<float>& a, const std::vector<float>& b);
/// "" when a and b hold the same step and the same bits of every parameter and state element, else the first
/// difference.
std::string sameCheckpoint(const training::Checkpoint& a, const training::Checkpoint& b);
/// "" when |a - b| <= atol + rtol |b| everywhere.
std::string closeTo(const std::vector<float>& a, const std::vector<float>& b, float rtol, float atol);

}  // namespace chorus::testing
