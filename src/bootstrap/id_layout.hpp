// The layout of the bytes inside a UniqueId. Private to chorus; the id is opaque to users.
#pragma once

#include <cstdint>
#include <cstring>

#include "chorus/unique_id.hpp"

namespace chorus::bootstrap {

struct IdLayout {
  uint64_t magic;        // kIdMagic: tells a chorus id from zeros or garbage
  uint64_t secret;       // random; every store client must present it
  uint32_t rootIp;       // network byte order
  uint16_t rootPort;     // host byte order
  uint16_t rootByRank0;  // 1: nobody runs the root yet; rank 0 starts it at init (CHORUS_COMM_ID)
  uint32_t grownFrom;    // an id of ncclCommGetUniqueId: the size of the communicator that grows by it; 0: none
};
static_assert(sizeof(IdLayout) <= sizeof(UniqueId::bytes));

inline constexpr uint64_t kIdMagic = 0x63686f7275734944ull;  // "chorusID"

inline IdLayout decodeId(const UniqueId& id) {
  IdLayout l;
  memcpy(&l, id.bytes.data(), sizeof(l));
  return l;
}
inline UniqueId encodeId(const IdLayout& l) {
  UniqueId id;
  memcpy(id.bytes.data(), &l, sizeof(l));
  return id;
}

}  // namespace chorus::bootstrap
