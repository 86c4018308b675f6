/// @file moe.hpp
/// MoeLayer: a mixture-of-experts MLP with expert parallelism over an EP communicator of N ranks; rank r holds
/// experts [r E/N, (r+1) E/N).
///
/// Routing: router logits x Wg [h x E], softmax, each token's top-k experts (ties to the lower index); the gate of a
/// choice is its probability. Capacity mode (capacityFactor > 0): each expert takes at most
/// C = ceil(k cf T / E) of this rank's T tokens, in token order, then choice order; the rest are dropped (they add
/// nothing). Dispatch is one AlltoAll of [E x C x h] (empty slots zero), combine one AlltoAll back. Dropless mode
/// (capacityFactor == 0): an AlltoAll of per-expert token counts, then AlltoAllv of exactly the routed rows, and
/// back with the counts swapped. Backward runs the same exchanges once more each.
/// Each expert is Linear(h, f) -> GELU -> Linear(f, h). Output of token t = sum over its kept choices, in choice
/// order, of gate x expert(x_t).
/// Load balancing (Switch Transformer): auxLoss() = alpha E sum_i f_i P_i over this rank's tokens, with f_i the
/// share of the T k choices that picked expert i and P_i the mean probability of expert i; backward adds its
/// gradient.
/// The router is a dense parameter; the experts' are expertParams(): data parallelism reduces them only over the
/// expert-data-parallel group.
#pragma once

#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/layer.hpp"

namespace chorus::training {

struct MoeConfig {
  size_t hidden = 0, ffn = 0;
  int experts = 0, topK = 2;
  double capacityFactor = 1.25;  // 0: dropless
  float auxWeight = 0.01f;
};

class MoeLayer : public Layer {
 public:
  /// `experts` must divide by the EP size.
  MoeLayer(const MoeConfig& config, Communicator& ep);
  std::string name() const override { return "MoE"; }
  size_t paramCount() const override { return routerCount() + localExperts_ * expertCount(); }
  std::vector<ParamRange> tensors() const override;
  ParamRange expertParams() const override { return {routerCount(), localExperts_ * expertCount()}; }
  void initParams(float* params, Rng& rng) const override;
  Status forward(const float* params, const Tensor& x, Tensor* y) override;
  Status backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) override;

  float auxLoss() const { return auxLoss_; }
  /// Choices dropped by the capacity in the last forward, and tokens routed to each expert (before dropping).
  size_t dropped() const { return dropped_; }
  const std::vector<size_t>& expertLoad() const { return load_; }

 private:
  size_t routerCount() const { return c_.hidden * static_cast<size_t>(c_.experts); }
  size_t expertCount() const { return 2 * c_.hidden * c_.ffn + c_.ffn + c_.hidden; }
  /// Sends rows grouped per destination rank and returns the rows received (dispatch or combine direction).
  Status exchange(const Tensor& send, bool toExperts, Tensor* received);

  MoeConfig c_;
  Communicator& ep_;
  int localExperts_;
  // Forward state kept for backward.
  Tensor x_, probs_;
  struct Choice {
    int expert = 0;
    float gate = 0;
    long row = -1;  // row in the dispatch buffer; -1 when dropped
  };
  std::vector<std::vector<Choice>> choices_;  // per token
  size_t capacity_ = 0, dropped_ = 0;
  std::vector<size_t> load_;
  std::vector<size_t> sendRows_, recvRows_;      // per peer, dispatch direction
  std::vector<std::vector<size_t>> expertRows_;  // per local expert: its rows among the received ones
  Tensor expertIn_, expertHidden_;               // received rows and their pre-activation
  Tensor returned_;                              // expert outputs back in dispatch-row order
  float auxLoss_ = 0;
  std::vector<float> auxFraction_;  // f_i
};

}  // namespace chorus::training
