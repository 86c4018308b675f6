// The header that opens each call on every connection (shm, tcp, loopback), as it arrives from a peer: any 48 bytes
// must be either accepted as this call or refused with a message, never crash; and the only header accepted is
// one that equals the expected one in every field compared.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "engine/call_header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 * sizeof(chorus::engine::CallHeader)) return 0;
  chorus::engine::CallHeader expected, arrived;
  memcpy(&expected, data, sizeof(expected));
  memcpy(&arrived, data + sizeof(expected), sizeof(arrived));
  chorus::Status st = chorus::engine::checkCallHeader(expected, arrived, 0, 1);
  (void)chorus::engine::describeCall(arrived);
  if (st.isOk() && !chorus::engine::sameCall(expected, arrived)) abort();  // accepted a different call
  return 0;
}
