// chorus-train's command line: the options of every mode, their help text and their checks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace chorus::train_demo {

struct Options {
  std::string mode = "dp", data = "/usr/share/datasets/fashion-mnist", csv, schedule = "1f1b";
  int ranks = 4, epochs = 2, microBatches = 8;
  int slowRank = -1;           // --slow-rank r:factor
  std::vector<int> killRanks;  // --kill-rank r[,r...] --at-step s
  long atStep = 0;
  long diskEvery = 0;  // --disk-every n --disk-dir d
  std::string diskDir;
  double slowFactor = 1;
  bool balance = false;
  std::string codec;         // --mode compress
  std::string sync = "bsp";  // --mode ps
  int servers = 1, staleness = 2;
  bool replicate = false;
  size_t trainSamples = 0, batch = 64;
  float lr = 1e-3f;
  uint64_t seed = 1;
};

/// Prints the help text to standard output.
void usage();
/// Reads the command line into *o; returns why it cannot ("" when it can, "help" for -h and --help).
std::string parse(int argc, char** argv, Options* o);

}  // namespace chorus::train_demo
