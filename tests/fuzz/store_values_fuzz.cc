// Values ranks read from the rendezvous store, which anyone holding the secret (or, without CHORUS_COMM_SECRET,
// anyone) can write: peer entries, rank 0's tuning table, forcing rules, addresses. Each parser must answer with a
// value or an error, never crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/socket.hpp"
#include "transports/peer_info.hpp"
#include "tuner/algo_override.hpp"
#include "tuner/costs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  chorus::transport::PeerInfo peer;
  (void)chorus::transport::decodePeerInfo(text, static_cast<int>(size % 7), &peer);
  chorus::tuner::CostTable costs;
  (void)chorus::tuner::parseTuning(text, &costs);
  std::vector<chorus::tuner::AlgoRule> rules;
  (void)chorus::tuner::parseAlgoRules(text, &rules);
  chorus::net::Endpoint endpoint;
  // Addresses with a host part would ask the resolver: only the numeric form is fuzzed.
  if (text.find_first_not_of("0123456789.:") == std::string::npos) (void)chorus::net::Endpoint::parse(text, &endpoint);
  return 0;
}
