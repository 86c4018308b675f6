// The cost model every algorithm states its time in: time ≈ α per round + the bytes on the busiest link / β + the
// reduction's compute. Links come in two classes, between the ranks of one host (shared memory) and between hosts
// (each host's network link, shared by all flows leaving it); α and β per class come from the topology or from
// a tuning file written by chorus-tune.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algorithms/plan.hpp"

namespace chorus::algo {

struct LinkCost {
  double alpha = 1.0;  // µs per message
  double beta = 10.0;  // GB/s
};

struct CostInputs {
  LinkCost intra{0.5, 10.0};   // two ranks of one host
  LinkCost inter{20.0, 1.25};  // the network link of a host
  // Device memory the ranks of one host map (peer_plan.hpp): alpha is a barrier of all ranks, beta the rate at
  // which a rank's kernels move bytes between its buffers and the slots. A call of one barrier took 16-28 µs at 2-4
  // processes on one H200 under MPS, and AllGather moved 312 GB/s (docs/gpu.md, "Under MPS").
  LinkCost peer{20.0, 300.0};
  double reduceGBps = 10.0;     // one core reducing
  double roundPenalty = 0.0;    // µs more per dependent round when ranks outnumber cores (waiting for a switch)
  double pairsFactor = 1.0;     // how much more a byte of an all-pairs round costs inside a host, same condition
  double messagePenalty = 0.0;  // µs more per message a rank sends inside a host in a round, same condition
};

/// The cost of rounds of messages among the ranks of a shape.
class CostModel {
 public:
  CostModel(const CollShape& shape, const CostInputs& inputs);

  int nranks() const { return n_; }
  int hosts() const { return hosts_; }
  bool sameHost(int a, int b) const { return host_[a] == host_[b]; }
  const CostInputs& inputs() const { return in_; }

  /// One round in which every rank r (of `ranks`, default all) sends `bytes` to peerOf(r) (-1: none), in
  /// `messages` parts that become ready at different times: over the network each part pays its latency.
  double round(const std::function<int(int)>& peerOf, size_t bytes, const std::vector<int>* ranks = nullptr,
               int messages = 1) const;
  /// One round in which every rank sends `bytes` to every other rank (its network messages' latencies add up).
  double allPairs(size_t bytes) const { return pairs(bytes, 1.0, in_.pairsFactor); }
  /// The same round where every rank staged its `bytes` in shareable memory and the others of its host read them
  /// there in place: one copy where a hop through the FIFOs makes two (so half a hop's bytes), and one that never
  /// waits for a descheduled peer to make room in a FIFO (so no pairs factor). Between hosts it is allPairs.
  double allPairsInPlace(size_t bytes) const { return pairs(bytes, 0.5, 1.0); }
  /// `bytes` a staged send copies into shareable memory for its readers (allPairsInPlace): one copy, half a hop's.
  double stagingCopy(size_t bytes) const { return copy(bytes) / 2; }
  /// `bytes` reduced by one core.
  double reduce(size_t bytes) const { return static_cast<double>(bytes) / (in_.reduceGBps * 1e3); }
  /// `bytes` copied locally by one core (as fast as a shared-memory hop moves them).
  double copy(size_t bytes) const { return static_cast<double>(bytes) / (in_.intra.beta * 1e3); }
  /// The latency of a round in which a rank sends `messages` shared-memory messages: one, as they overlap, plus
  /// CostInputs::messagePenalty for each where ranks outnumber cores.
  double localLatency(int messages) const { return in_.intra.alpha + messages * in_.messagePenalty; }
  /// A barrier of all ranks over peer memory, and `bytes` one rank moves through it (peer_plan.hpp).
  double peerBarrier() const { return in_.peer.alpha; }
  double peerMove(size_t bytes) const { return static_cast<double>(bytes) / (in_.peer.beta * 1e3); }

 private:
  double finish(const std::vector<double>& rankIntra, const std::vector<double>& hostInter, double alpha) const;
  /// An all-pairs round whose bytes inside a host count `intraShare` times, and `intraFactor` times more when ranks
  /// outnumber cores (CostInputs::pairsFactor).
  double pairs(size_t bytes, double intraShare, double intraFactor) const;

  int n_;
  int hosts_ = 1;
  std::vector<int> host_;
  CostInputs in_;
};

}  // namespace chorus::algo
