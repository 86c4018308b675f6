// PowerSGD (Vogels, Karimireddy and Jaggi, NeurIPS'19), in its batched form (PyTorch's batched_powerSGD_hook): the
// bucket, with what was held back before added (error feedback), is read as a rows x cols matrix M (cols =
// ceil(sqrt(n)), zero-padded) and sent as two rank-r factors. One power iteration per step, warm-started from the
// last step's Q (the same on every rank: the first is drawn from a seed):
//   P = M Q, summed over the ranks; P orthonormalised; Q_w = M^T P, summed over the ranks into Q;
//   the sum is P Q^T, and each rank holds back M - P Q_w^T (its own share of what the factors missed).
// The two sums are AllReduces of (rows + cols) r floats against the bucket's n, one after the other: the second
// needs the first (the dependency pytorch#74148 measured). A bucket too small to gain is summed as it is, and so is
// every bucket for the first `start` steps (PyTorch's start_powerSGD_iter: compression after a plain warm-up).
#include <algorithm>
#include <cmath>

#include "chorus/training/compress/codec.hpp"
#include "chorus/training/random.hpp"

namespace chorus::training::compress {
namespace {

class PowerSgdCodec : public GradientCodec {
 public:
  PowerSgdCodec(int rank, long start) : rank_(rank), start_(start) {}
  std::string name() const override { return "powersgd:" + std::to_string(rank_) + ":" + std::to_string(start_); }

  Request start(Communicator& comm, int bucket, float* g, size_t n) override {
    if (static_cast<size_t>(bucket) >= buckets_.size()) buckets_.resize(bucket + 1);
    State& b = buckets_[bucket];
    b.comm = &comm;
    b.cols = static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(n))));
    b.rows = b.cols ? (n + b.cols - 1) / b.cols : 0;
    b.r = std::min<size_t>(static_cast<size_t>(rank_), std::min(b.rows, b.cols));
    b.compressed = (b.rows + b.cols) * b.r < n && b.steps++ >= start_;
    if (!b.compressed) return comm.allReduceAsync(g, g, n, DataType::kFloat32, RedOp::sum());
    b.error.resize(n, 0.0f);
    b.m.resize(b.rows * b.cols, 0.0f);
    for (size_t i = 0; i < n; ++i) b.m[i] = g[i] + b.error[i];
    if (b.q.size() != b.cols * b.r) {  // the first step: a Q every rank draws alike
      Rng rng(0x9e3779b9ull + static_cast<uint64_t>(bucket));
      b.q.resize(b.cols * b.r);
      for (float& x : b.q) x = static_cast<float>(rng.normal());
    }
    b.p.assign(b.rows * b.r, 0.0f);
    for (size_t i = 0; i < b.rows; ++i)
      for (size_t k = 0; k < b.cols; ++k) {
        const float mik = b.m[i * b.cols + k];
        for (size_t j = 0; j < b.r; ++j) b.p[i * b.r + j] += mik * b.q[k * b.r + j];
      }
    return comm.allReduceAsync(b.p.data(), b.p.data(), b.p.size(), DataType::kFloat32, RedOp::sum());
  }

  Status finish(int bucket, float* g, size_t n) override {
    State& b = buckets_[bucket];
    if (!b.compressed) return Status::ok();
    orthonormalizeColumns(b.p.data(), b.rows, b.r);
    b.qLocal.assign(b.cols * b.r, 0.0f);
    for (size_t i = 0; i < b.rows; ++i)
      for (size_t k = 0; k < b.cols; ++k) {
        const float mik = b.m[i * b.cols + k];
        for (size_t j = 0; j < b.r; ++j) b.qLocal[k * b.r + j] += mik * b.p[i * b.r + j];
      }
    b.q = b.qLocal;
    CHORUS_TRY(b.comm->allReduce(b.q.data(), b.q.data(), b.q.size(), DataType::kFloat32, RedOp::sum()));
    for (size_t i = 0; i < n; ++i) {
      const size_t row = i / b.cols, col = i % b.cols;
      float sum = 0, mine = 0;
      for (size_t j = 0; j < b.r; ++j) {
        sum += b.p[row * b.r + j] * b.q[col * b.r + j];
        mine += b.p[row * b.r + j] * b.qLocal[col * b.r + j];
      }
      g[i] = sum;
      b.error[i] = b.m[i] - mine;
    }
    return Status::ok();
  }

 private:
  // Gram-Schmidt over the r columns of the rows x r matrix a (row-major); a column with nothing left becomes zero.
  static void orthonormalizeColumns(float* a, size_t rows, size_t r) {
    for (size_t j = 0; j < r; ++j) {
      for (size_t k = 0; k < j; ++k) {
        double dot = 0;
        for (size_t i = 0; i < rows; ++i) dot += static_cast<double>(a[i * r + j]) * a[i * r + k];
        for (size_t i = 0; i < rows; ++i) a[i * r + j] -= static_cast<float>(dot) * a[i * r + k];
      }
      double norm = 0;
      for (size_t i = 0; i < rows; ++i) norm += static_cast<double>(a[i * r + j]) * a[i * r + j];
      const float scale = norm > 1e-30 ? static_cast<float>(1.0 / std::sqrt(norm)) : 0.0f;
      for (size_t i = 0; i < rows; ++i) a[i * r + j] *= scale;
    }
  }

  struct State {
    Communicator* comm = nullptr;
    size_t rows = 0, cols = 0, r = 0;
    bool compressed = false;
    long steps = 0;
    std::vector<float> error, m, p, q, qLocal;
  };
  int rank_;
  long start_;
  std::vector<State> buckets_;
};

}  // namespace

CHORUS_REGISTER_GRADIENT_CODEC(
    power_sgd, "powersgd",
    "rank-r factors of each bucket read as a square matrix (powersgd:r, or powersgd:r:s to sum the first s steps "
    "whole), what they miss fed back into the next step",
    [](const std::string& argument, std::unique_ptr<GradientCodec>* out) -> Status {
      char* end = nullptr;
      const long r = strtol(argument.c_str(), &end, 10);
      if (argument.empty() || (*end != '\0' && *end != ':') || r < 1 || r > 1024)
        return invalidArgument("powersgd:<rank>[:<start step>] needs a rank from 1 to 1024, not '" + argument + "'");
      long start = 0;
      if (*end == ':') {
        const char* s = end + 1;
        start = strtol(s, &end, 10);
        if (*s == '\0' || *end != '\0' || start < 0)
          return invalidArgument("powersgd:<rank>:<start step> needs a step count of at least 0, not '" +
                                 std::string(s) + "'");
      }
      *out = std::make_unique<PowerSgdCodec>(static_cast<int>(r), start);
      return Status::ok();
    });

}  // namespace chorus::training::compress
