// Top-k sparsification with error feedback (Deep Gradient Compression, Lin et al., ICLR'18): each rank adds what it
// held back before to the bucket's gradient, sends only the k largest magnitudes as (index, value) pairs, and holds
// back the rest. The ranks' index sets differ, so the pairs travel by AllGather, not AllReduce, and the sum is
// built from them in rank order. Sends 8k bytes per rank against the bucket's 4n.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "chorus/training/compress/codec.hpp"

namespace chorus::training::compress {
namespace {

class TopKCodec : public GradientCodec {
 public:
  explicit TopKCodec(double fraction) : fraction_(fraction) {}
  std::string name() const override { return "topk:" + std::to_string(fraction_); }

  Request start(Communicator& comm, int bucket, float* g, size_t n) override {
    if (static_cast<size_t>(bucket) >= buckets_.size()) buckets_.resize(bucket + 1);
    State& b = buckets_[bucket];
    b.residual.resize(n, 0.0f);
    b.ranks = comm.size();
    const size_t k = std::max<size_t>(1, static_cast<size_t>(std::ceil(fraction_ * static_cast<double>(n))));
    // The gradient with what was held back, then its k largest magnitudes (ties: the lower index).
    for (size_t i = 0; i < n; ++i) b.residual[i] += g[i];
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    auto larger = [&](uint32_t a, uint32_t c) {
      const float x = std::fabs(b.residual[a]), y = std::fabs(b.residual[c]);
      return x > y || (x == y && a < c);
    };
    std::nth_element(order.begin(), order.begin() + static_cast<long>(k - 1), order.end(), larger);
    std::sort(order.begin(), order.begin() + static_cast<long>(k));
    b.mine.assign(2 * k, 0u);
    for (size_t j = 0; j < k; ++j) {
      const uint32_t i = order[j];
      b.mine[2 * j] = i;
      std::memcpy(&b.mine[2 * j + 1], &b.residual[i], 4);
      b.residual[i] = 0.0f;  // sent: nothing of it is held back
    }
    b.all.assign(2 * k * b.ranks, 0u);
    return comm.allGatherAsync(b.mine.data(), b.all.data(), 2 * k, DataType::kUint32);
  }

  Status finish(int bucket, float* g, size_t n) override {
    const State& b = buckets_[bucket];
    std::fill(g, g + n, 0.0f);
    for (size_t p = 0; p < b.all.size(); p += 2) {
      float v;
      std::memcpy(&v, &b.all[p + 1], 4);
      if (b.all[p] >= n) return internalError("top-k index " + std::to_string(b.all[p]) + " past the bucket");
      g[b.all[p]] += v;
    }
    return Status::ok();
  }

  /// What bucket `bucket` holds back (tests).
  const std::vector<float>& residual(int bucket) const { return buckets_[bucket].residual; }

 private:
  struct State {
    std::vector<float> residual;      // error feedback
    std::vector<uint32_t> mine, all;  // (index, value bits) pairs: this rank's, every rank's
    int ranks = 1;
  };
  double fraction_;
  std::vector<State> buckets_;
};

}  // namespace

CHORUS_REGISTER_GRADIENT_CODEC(
    top_k, "topk", "the largest fraction f of each bucket's entries (topk:f), the rest fed back into the next step",
    [](const std::string& argument, std::unique_ptr<GradientCodec>* out) -> Status {
      char* end = nullptr;
      const double f = strtod(argument.c_str(), &end);
      if (argument.empty() || *end != '\0' || !(f > 0 && f <= 1))
        return invalidArgument("topk:<fraction> needs a fraction in (0, 1], not '" + argument + "'");
      *out = std::make_unique<TopKCodec>(f);
      return Status::ok();
    });

}  // namespace chorus::training::compress
