#include "chorus/training/moe.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace chorus::training {
namespace {

// Rows `rows` of t as a new tensor.
Tensor takeRows(const Tensor& t, const std::vector<size_t>& rows) {
  Tensor out(rows.size(), t.cols());
  for (size_t i = 0; i < rows.size(); ++i) std::copy_n(t.row(rows[i]), t.cols(), out.row(i));
  return out;
}

void putRows(const Tensor& src, const std::vector<size_t>& rows, Tensor* dst) {
  for (size_t i = 0; i < rows.size(); ++i) std::copy_n(src.row(i), src.cols(), dst->row(rows[i]));
}

void uniformFill(float* p, size_t n, size_t fanIn, Rng& rng) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
}

}  // namespace

MoeLayer::MoeLayer(const MoeConfig& config, Communicator& ep)
    : c_(config), ep_(ep), localExperts_(config.experts / std::max(1, ep.size())) {}

std::vector<ParamRange> MoeLayer::tensors() const {
  std::vector<ParamRange> t{{0, routerCount()}};
  const size_t h = c_.hidden, f = c_.ffn;
  for (int e = 0; e < localExperts_; ++e) {
    const size_t base = routerCount() + static_cast<size_t>(e) * expertCount();
    t.push_back({base, h * f});
    t.push_back({base + h * f, f});
    t.push_back({base + h * f + f, f * h});
    t.push_back({base + 2 * h * f + f, h});
  }
  return t;
}

void MoeLayer::initParams(float* params, Rng& rng) const {
  // Router, then every expert in global order; this rank keeps its own, so any EP size starts from the same model.
  uniformFill(params, routerCount(), c_.hidden, rng);
  std::vector<float> expert(expertCount());
  const int first = localExperts_ * ep_.rank();
  const size_t h = c_.hidden, f = c_.ffn;
  for (int e = 0; e < c_.experts; ++e) {
    uniformFill(expert.data(), h * f + f, h, rng);
    uniformFill(expert.data() + h * f + f, f * h + h, f, rng);
    if (e >= first && e < first + localExperts_)
      std::copy(expert.begin(), expert.end(), params + routerCount() + static_cast<size_t>(e - first) * expertCount());
  }
}

Status MoeLayer::exchange(const Tensor& send, bool toExperts, Tensor* received) {
  const size_t n = static_cast<size_t>(ep_.size()), h = c_.hidden;
  const std::vector<size_t>& out = toExperts ? sendRows_ : recvRows_;
  const std::vector<size_t>& in = toExperts ? recvRows_ : sendRows_;
  received->resize(std::accumulate(in.begin(), in.end(), size_t{0}), h);
  if (c_.capacityFactor > 0)  // every peer gets the same number of rows: a plain AlltoAll
    return ep_.alltoAll(send.data(), received->data(), out[0] * h, DataType::kFloat32);
  std::vector<size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
  for (size_t p = 0, so = 0, ro = 0; p < n; ++p) {
    sendCounts[p] = out[p] * h;
    recvCounts[p] = in[p] * h;
    sendDispls[p] = so;
    recvDispls[p] = ro;
    so += sendCounts[p];
    ro += recvCounts[p];
  }
  return ep_.alltoAllv(send.data(), sendCounts.data(), sendDispls.data(), received->data(), recvCounts.data(),
                       recvDispls.data(), DataType::kFloat32);
}

Status MoeLayer::forward(const float* params, const Tensor& x, Tensor* y) {
  const size_t n = static_cast<size_t>(ep_.size()), h = c_.hidden, f = c_.ffn, T = x.rows();
  const int E = c_.experts, k = c_.topK, local = localExperts_;
  if (E % static_cast<int>(n) != 0 || k < 1 || k > E)
    return invalidArgument("MoE: " + std::to_string(E) + " experts, top-" + std::to_string(k) + ", EP size " +
                           std::to_string(n) + " (experts must divide by the EP size, 1 <= k <= experts)");
  if (x.cols() != h) return invalidArgument("MoE: input has " + std::to_string(x.cols()) + " columns");
  x_ = x;
  // Router.
  Tensor logits;
  matmul(x, params, nullptr, static_cast<size_t>(E), &logits);
  probs_.resize(T, static_cast<size_t>(E));
  for (size_t t = 0; t < T; ++t) {
    const float* z = logits.row(t);
    const float top = *std::max_element(z, z + E);
    float sum = 0;
    for (int e = 0; e < E; ++e) sum += (probs_.at(t, e) = std::exp(z[e] - top));
    for (int e = 0; e < E; ++e) probs_.at(t, e) /= sum;
  }
  // Top-k choices, then their rows in the dispatch buffer.
  choices_.assign(T, {});
  load_.assign(static_cast<size_t>(E), 0);
  std::vector<int> order(static_cast<size_t>(E));
  for (size_t t = 0; t < T; ++t) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs_.at(t, a) > probs_.at(t, b); });
    for (int j = 0; j < k; ++j) {
      choices_[t].push_back({order[j], probs_.at(t, order[j]), -1});
      ++load_[order[j]];
    }
  }
  std::vector<size_t> expertRowsOut(static_cast<size_t>(E), 0), expertBase(static_cast<size_t>(E) + 1, 0);
  dropped_ = 0;
  if (c_.capacityFactor > 0) {
    capacity_ = static_cast<size_t>(std::ceil(k * c_.capacityFactor * static_cast<double>(T) / E));
    for (auto& token : choices_)
      for (Choice& ch : token) {
        size_t& used = expertRowsOut[ch.expert];
        if (used < capacity_)
          ch.row = static_cast<long>(static_cast<size_t>(ch.expert) * capacity_ + used++);
        else
          ++dropped_;
      }
    std::fill(expertRowsOut.begin(), expertRowsOut.end(), capacity_);
  } else {
    expertRowsOut = load_;
  }
  std::partial_sum(expertRowsOut.begin(), expertRowsOut.end(), expertBase.begin() + 1);
  if (c_.capacityFactor == 0) {
    std::vector<size_t> next(expertBase.begin(), expertBase.end() - 1);
    for (auto& token : choices_)
      for (Choice& ch : token) ch.row = static_cast<long>(next[ch.expert]++);
  }
  Tensor dispatch(expertBase.back(), h);
  for (size_t t = 0; t < T; ++t)
    for (const Choice& ch : choices_[t])
      if (ch.row >= 0) std::copy_n(x.row(t), h, dispatch.row(static_cast<size_t>(ch.row)));
  // Rows per peer, and how many of the received rows each local expert gets from each source.
  sendRows_.assign(n, 0);
  for (int e = 0; e < E; ++e) sendRows_[static_cast<size_t>(e / local)] += expertRowsOut[e];
  std::vector<int64_t> sentPerExpert(expertRowsOut.begin(), expertRowsOut.end()), receivedPerExpert(E);
  if (c_.capacityFactor > 0) {
    std::fill(receivedPerExpert.begin(), receivedPerExpert.end(), static_cast<int64_t>(capacity_));
  } else {
    CHORUS_TRY(
        ep_.alltoAll(sentPerExpert.data(), receivedPerExpert.data(), static_cast<size_t>(local), DataType::kInt64));
  }
  recvRows_.assign(n, 0);
  expertRows_.assign(static_cast<size_t>(local), {});
  for (size_t s = 0, row = 0; s < n; ++s)
    for (int l = 0; l < local; ++l)
      for (int64_t i = 0; i < receivedPerExpert[s * static_cast<size_t>(local) + static_cast<size_t>(l)]; ++i) {
        expertRows_[l].push_back(row++);
        ++recvRows_[s];
      }
  CHORUS_TRY(exchange(dispatch, true, &expertIn_));
  // The local experts, each on all the rows it received.
  Tensor expertOut(expertIn_.rows(), h);
  expertHidden_.resize(expertIn_.rows(), f);
  for (int l = 0; l < local; ++l) {
    const float* w = params + routerCount() + static_cast<size_t>(l) * expertCount();
    Tensor in = takeRows(expertIn_, expertRows_[l]), hidden, out;
    matmul(in, w, w + h * f, f, &hidden);
    putRows(hidden, expertRows_[l], &expertHidden_);
    for (size_t i = 0; i < hidden.size(); ++i) hidden.data()[i] = gelu(hidden.data()[i]);
    matmul(hidden, w + h * f + f, w + 2 * h * f + f, h, &out);
    putRows(out, expertRows_[l], &expertOut);
  }
  CHORUS_TRY(exchange(expertOut, false, &returned_));
  // Combine, in choice order.
  y->resize(T, h);
  for (size_t t = 0; t < T; ++t)
    for (const Choice& ch : choices_[t]) {
      if (ch.row < 0) continue;
      const float* r = returned_.row(static_cast<size_t>(ch.row));
      for (size_t j = 0; j < h; ++j) y->at(t, j) += ch.gate * r[j];
    }
  // Load-balancing loss.
  auxFraction_.assign(static_cast<size_t>(E), 0.0f);
  auxLoss_ = 0;
  for (int e = 0; e < E; ++e) {
    auxFraction_[e] = static_cast<float>(load_[e]) / static_cast<float>(T * static_cast<size_t>(k));
    float meanProb = 0;
    for (size_t t = 0; t < T; ++t) meanProb += probs_.at(t, e);
    auxLoss_ += auxFraction_[e] * meanProb / static_cast<float>(T);
  }
  auxLoss_ *= c_.auxWeight * static_cast<float>(E);
  return Status::ok();
}

Status MoeLayer::backward(const float* params, const Tensor& dy, float* grads, Tensor* dx) {
  const size_t h = c_.hidden, f = c_.ffn, T = x_.rows();
  const int E = c_.experts;
  // Combine's backward: each kept choice's row gets gate x dy, its gate gets dy . expert output.
  Tensor dReturned(returned_.rows(), h), dProbs(T, static_cast<size_t>(E));
  for (size_t t = 0; t < T; ++t)
    for (const Choice& ch : choices_[t]) {
      if (ch.row < 0) continue;
      const float* r = returned_.row(static_cast<size_t>(ch.row));
      float* d = dReturned.row(static_cast<size_t>(ch.row));
      float dot = 0;
      for (size_t j = 0; j < h; ++j) {
        d[j] = ch.gate * dy.at(t, j);
        dot += dy.at(t, j) * r[j];
      }
      dProbs.at(t, ch.expert) += dot;
    }
  Tensor dExpertOut, dExpertIn(expertIn_.rows(), h);
  CHORUS_TRY(exchange(dReturned, true, &dExpertOut));
  for (int l = 0; l < localExperts_; ++l) {
    const size_t base = routerCount() + static_cast<size_t>(l) * expertCount();
    const float* w = params + base;
    float* g = grads + base;
    Tensor dOut = takeRows(dExpertOut, expertRows_[l]), in = takeRows(expertIn_, expertRows_[l]);
    Tensor hidden = takeRows(expertHidden_, expertRows_[l]), act = hidden, dAct, dIn;
    for (size_t i = 0; i < act.size(); ++i) act.data()[i] = gelu(act.data()[i]);
    accumulateWeightGrad(act, dOut, g + h * f + f, g + 2 * h * f + f);
    matmulTransposedB(dOut, w + h * f + f, f, &dAct);
    for (size_t i = 0; i < dAct.size(); ++i) dAct.data()[i] *= geluGrad(hidden.data()[i]);
    accumulateWeightGrad(in, dAct, g, g + h * f);
    matmulTransposedB(dAct, w, h, &dIn);
    putRows(dIn, expertRows_[l], &dExpertIn);
  }
  Tensor dDispatch;
  CHORUS_TRY(exchange(dExpertIn, false, &dDispatch));
  // Router: the load-balancing loss's gradient on the probabilities, then softmax's backward.
  for (size_t t = 0; t < T; ++t)
    for (int e = 0; e < E; ++e)
      dProbs.at(t, e) += c_.auxWeight * static_cast<float>(E) * auxFraction_[e] / static_cast<float>(T);
  Tensor dLogits(T, static_cast<size_t>(E));
  for (size_t t = 0; t < T; ++t) {
    float s = 0;
    for (int e = 0; e < E; ++e) s += probs_.at(t, e) * dProbs.at(t, e);
    for (int e = 0; e < E; ++e) dLogits.at(t, e) = probs_.at(t, e) * (dProbs.at(t, e) - s);
  }
  accumulateWeightGrad(x_, dLogits, grads, nullptr);
  if (!dx) return Status::ok();
  matmulTransposedB(dLogits, params, h, dx);
  for (size_t t = 0; t < T; ++t)
    for (const Choice& ch : choices_[t]) {
      if (ch.row < 0) continue;
      const float* d = dDispatch.row(static_cast<size_t>(ch.row));
      for (size_t j = 0; j < h; ++j) dx->at(t, j) += d[j];
    }
  return Status::ok();
}

}  // namespace chorus::training
