#include "topology/link_model.hpp"

#include <cstdlib>

namespace chorus::topology::link_model {

double nvlinkLaneBandwidth(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm == 86 || sm == 87 || sm == 89) return 12.0;
  if (sm >= 70) return 20.0;
  if (sm >= 60) return 18.0;
  return 20.0;  // unknown: a V100/A100-class lane
}

double pcieBandwidth(double gigatransfers, int lanes) {
  if (gigatransfers <= 0 || lanes <= 0) return 12.0;  // unknown: Gen3 x16 after overheads, as NCCL assumes
  // Gen1/2 use 8b/10b coding, Gen3 and later 128b/130b (Gen6's FLIT mode is close to the same efficiency).
  const double coding = gigatransfers <= 5.0 ? 0.8 : 128.0 / 130.0;
  return gigatransfers * coding / 8.0 * lanes;
}

double parseGigatransfers(const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  double value = strtod(s, &end);
  if (end == s || value <= 0) return 0;
  return value;
}

double interSocketBandwidth() { return 16.0; }
double hostMemoryBandwidth() { return 10.0; }
double networkBandwidth(double gbps) { return gbps > 0 ? gbps / 8.0 : 12.0; }

}  // namespace chorus::topology::link_model
