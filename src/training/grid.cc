#include "chorus/training/grid.hpp"

namespace chorus::training {

Status RankGrid::create(Communicator& world, int tp, int ep, RankGrid* out) {
  const int n = world.size(), r = world.rank();
  if (tp < 1 || ep < 1 || n % (tp * ep) != 0) {
    return invalidArgument("RankGrid: TP " + std::to_string(tp) + " x EP " + std::to_string(ep) +
                           " does not divide the world of " + std::to_string(n) + " ranks");
  }
  RankGrid& g = *out;
  g.tp = tp;
  g.ep = ep;
  g.dp = n / tp;
  g.tpRank = r % tp;
  g.dpRank = r / tp;
  g.epRank = g.dpRank % ep;
  g.edpRank = g.dpRank / ep;
  // Colour: the coordinates the group does not vary; key: the one it does.
  CHORUS_TRY(world.split(g.dpRank, g.tpRank, &g.tpComm));
  CHORUS_TRY(world.split(g.tpRank, g.dpRank, &g.dpComm));
  CHORUS_TRY(world.split(g.tpRank + tp * g.edpRank, g.epRank, &g.epComm));
  return world.split(g.tpRank + tp * g.epRank, g.edpRank, &g.expertDpComm);
}

}  // namespace chorus::training
