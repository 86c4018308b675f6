// Checks that every rank configured the same thing: each hashes what must agree, and the hashes are compared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"

namespace chorus::training {

/// FNV-1a over the values mixed in.
class Fingerprint {
 public:
  Fingerprint& mix(uint64_t v) {
    for (int i = 0; i < 8; ++i) hash_ = (hash_ ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ULL;
    return *this;
  }
  Fingerprint& mix(const std::string& s) {
    for (char c : s) mix(static_cast<unsigned char>(c));
    return mix(s.size());
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 1469598103934665603ULL;
};

/// Collective: an invalid argument naming the first rank whose fingerprint differs from this rank's, saying that it
/// configured a different `what`.
inline Status checkSameOnEveryRank(Communicator& comm, uint64_t mine, const std::string& what) {
  std::vector<uint64_t> all(comm.size());
  CHORUS_TRY(comm.allGather(&mine, all.data(), 1, DataType::kUint64).withContext(what + " setup"));
  for (int r = 0; r < comm.size(); ++r) {
    if (all[r] != mine) {
      return invalidArgument("rank " + std::to_string(r) + " configured a different " + what + " than rank " +
                             std::to_string(comm.rank()));
    }
  }
  return Status::ok();
}

}  // namespace chorus::training
