/// @file grid.hpp
/// RankGrid: the communicators of a DP x TP x EP layout, made with Communicator::split.
///
/// Ranks are laid out tensor-parallel fastest, then expert-parallel, then expert-data-parallel:
///   rank = tp_rank + TP (ep_rank + EP edp_rank),   DP = EP x EDP = world / TP.
/// So a TP group is TP consecutive ranks (keep them on one host); the DP group of a rank is every rank with its
/// tp_rank; the EP group varies ep_rank only and the expert-data-parallel group edp_rank only. Within each group
/// ranks are ordered by their coordinate.
#pragma once

#include <memory>

#include "chorus/communicator.hpp"

namespace chorus::training {

struct RankGrid {
  int tp = 1, ep = 1, dp = 1;
  int tpRank = 0, epRank = 0, edpRank = 0, dpRank = 0;
  std::unique_ptr<Communicator> tpComm, dpComm, epComm, expertDpComm;

  /// Collective over `world`; TP x EP must divide its size.
  static Status create(Communicator& world, int tp, int ep, RankGrid* out);
};

}  // namespace chorus::training
