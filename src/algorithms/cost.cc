#include "algorithms/cost.hpp"

#include <algorithm>

namespace chorus::algo {

CostModel::CostModel(const CollShape& shape, const CostInputs& inputs) : n_(shape.nranks), in_(inputs) {
  host_.assign(n_, 0);
  for (int r = 0; r < n_; ++r) {
    host_[r] = shape.hostOfRank ? (*shape.hostOfRank)[r] : 0;
    hosts_ = std::max(hosts_, host_[r] + 1);
  }
}

double CostModel::finish(const std::vector<double>& rankIntra, const std::vector<double>& hostInter,
                         double alpha) const {
  const double intraBytes = rankIntra.empty() ? 0 : *std::max_element(rankIntra.begin(), rankIntra.end());
  const double interBytes = hostInter.empty() ? 0 : *std::max_element(hostInter.begin(), hostInter.end());
  return alpha + in_.roundPenalty + std::max(intraBytes / (in_.intra.beta * 1e3), interBytes / (in_.inter.beta * 1e3));
}

double CostModel::round(const std::function<int(int)>& peerOf, size_t bytes, const std::vector<int>* ranks,
                        int messages) const {
  std::vector<double> rankIntra(n_, 0), hostInter(hosts_, 0);
  bool crossing = false;
  auto add = [&](int r) {
    const int peer = peerOf(r);
    if (peer < 0 || peer == r) return;
    if (sameHost(r, peer)) {
      rankIntra[r] += static_cast<double>(bytes);
    } else {
      hostInter[host_[r]] += static_cast<double>(bytes);
      crossing = true;
    }
  };
  if (ranks) {
    for (int r : *ranks) add(r);
  } else {
    for (int r = 0; r < n_; ++r) add(r);
  }
  return finish(rankIntra, hostInter, crossing ? messages * in_.inter.alpha : localLatency(messages));
}

double CostModel::pairs(size_t bytes, double intraShare, double intraFactor) const {
  std::vector<double> rankIntra(n_, 0), hostInter(hosts_, 0);
  // A rank pays the latency of each of its network messages one after another (a system call and a wake-up
  // each); its shared-memory messages overlap (each costs a few stores, the latency is the cache line's trip),
  // unless ranks outnumber cores (CostInputs::messagePenalty).
  double alpha = 0;
  for (int r = 0; r < n_; ++r) {
    int local = 0, remote = 0;
    for (int q = 0; q < n_; ++q) {
      if (q == r) continue;
      if (sameHost(r, q)) {
        rankIntra[r] += intraShare * static_cast<double>(bytes);
        ++local;
      } else {
        hostInter[host_[r]] += static_cast<double>(bytes);
        ++remote;
      }
    }
    alpha = std::max({alpha, local ? localLatency(local) : 0.0, remote * in_.inter.alpha});
    rankIntra[r] *= intraFactor;
  }
  return finish(rankIntra, hostInter, alpha);
}

}  // namespace chorus::algo
