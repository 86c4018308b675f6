// Mismatch detection. Every call opens each peer stream it uses with a header: the call's number on that stream,
// a digest of the call's arguments, and a digest of the bytes the plan moves in that direction. The receiver
// checks it before it copies or reduces anything, so mismatched calls (another count, type, op, root, collective
// or algorithm, a skipped call, Send/Recv sizes that differ) fail on both sides, naming both sides' arguments,
// instead of mixing two calls' bytes and leaving the streams out of step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "chorus/status.hpp"

namespace chorus::engine {

/// What a call looks like, as far as its peers must agree: filled by the communicator for each call.
struct CallSignature {
  uint32_t digest = 0;  // of every collective of the call (see mixCall); point-to-point parts are left to the flows
  uint64_t count = 0;   // of the first operation, for messages
  int32_t root = 0;
  uint8_t type = 0, dtype = 0, op = 0;  // algo::CollType, DataType, RedOpKind of the first operation
  uint8_t operations = 1;               // in the call (a group has several; saturates at 255)
  // Of them, collectives (saturates at 255): the same on every rank, where the point-to-point operations of a group
  // differ from rank to rank.
  uint8_t collectives = 1;
  uint32_t sequence = 0;  // the communicator's call number, for messages
};

/// Folds `value` into `digest` (FNV-1a over its 8 bytes).
uint32_t mix(uint32_t digest, uint64_t value);
/// The digest of a collective's arguments, folded into `digest`: collective, count, type, op, root, algorithm.
uint32_t mixCall(uint32_t digest, int type, uint64_t count, int dtype, int op, int root, const char* algorithm);

/// The header on the wire: 48 bytes, so it fits one line of the small-message channel and keeps streams 16-aligned.
/// Both ranks of every pair that exchanges anything in a call send one, whatever the direction of the data, so that
/// a disagreement is seen by both (two ranks that each believe they are a Broadcast's root only send). A collective
/// that only sends to a peer checks that peer's header later, when it arrives. On the small-message channel, a rank
/// that only receives from a peer checks the peer's header and confirms such calls in batches: one header whose
/// magic is kConfirmMagic and whose streamCall is the last call it confirms (Execution::armHeaders).
struct CallHeader {
  static constexpr uint32_t kMagic = 0x63686331;         // "chc1"
  static constexpr uint32_t kConfirmMagic = 0x63686b31;  // "chk1"
  uint32_t magic = kMagic;
  uint32_t streamCall = 0;  // calls on this stream so far, this one included
  uint32_t digest = 0;
  uint32_t flow = 0;      // digest of the byte counts of the sender's steps towards the receiver
  uint32_t backFlow = 0;  // and of the steps it expects from the receiver
  uint32_t reserved = 0;
  uint64_t count = 0;
  int32_t root = 0;
  uint32_t sequence = 0;
  uint8_t type = 0, dtype = 0, op = 0, operations = 0;
  uint32_t reserved2 = 0;
};
static_assert(sizeof(CallHeader) == 48);

/// True when `arrived` opens the call this rank expects (the cheap check of every call).
inline bool sameCall(const CallHeader& expected, const CallHeader& arrived) {
  return arrived.magic == CallHeader::kMagic && arrived.streamCall == expected.streamCall &&
         arrived.digest == expected.digest && arrived.flow == expected.flow && arrived.backFlow == expected.backFlow;
}

/// The same check on a header still in a receive buffer: the fields it compares are the first 20 bytes.
inline bool sameCallAt(const CallHeader& expected, const void* arrived) {
  static_assert(offsetof(CallHeader, backFlow) + sizeof(uint32_t) == 20);
  return memcmp(&expected, arrived, 20) == 0;
}

/// "AllReduce #5 (count 1000 float sum root 0)", or "a group of 3 operations starting with ...".
std::string describeCall(const CallHeader& h);

/// Checks the header that arrived from `peer` against what this rank expects from it; the error names both calls.
Status checkCallHeader(const CallHeader& expected, const CallHeader& arrived, int rank, int peer);

}  // namespace chorus::engine
