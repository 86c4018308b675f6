#include "engine/call_header.hpp"

#include <cstring>

#include "algorithms/plan.hpp"
#include "chorus/types.hpp"

namespace chorus::engine {

uint32_t mix(uint32_t digest, uint64_t value) {
  if (digest == 0) digest = 2166136261u;
  for (int i = 0; i < 8; ++i) {
    digest ^= static_cast<uint8_t>(value >> (8 * i));
    digest *= 16777619u;
  }
  return digest;
}

uint32_t mixCall(uint32_t digest, int type, uint64_t count, int dtype, int op, int root, const char* algorithm) {
  digest = mix(digest, static_cast<uint64_t>(type) | static_cast<uint64_t>(dtype) << 8 |
                           static_cast<uint64_t>(op) << 16 | static_cast<uint64_t>(static_cast<uint32_t>(root)) << 32);
  digest = mix(digest, count);
  for (const char* c = algorithm; c && *c; ++c) digest = mix(digest, static_cast<uint8_t>(*c));
  return digest;
}

std::string describeCall(const CallHeader& h) {
  const auto type = static_cast<algo::CollType>(h.type);
  std::string args = std::string(algo::collName(type)) + " #" + std::to_string(h.sequence) + " (count " +
                     std::to_string(h.count) + " " + dataTypeName(static_cast<DataType>(h.dtype));
  const bool reduction =
      type == algo::CollType::kAllReduce || type == algo::CollType::kReduceScatter || type == algo::CollType::kReduce;
  if (reduction) args += std::string(" ") + redOpName(static_cast<RedOpKind>(h.op));
  args += " root " + std::to_string(h.root) + ")";
  if (h.operations > 1) args = "a group of " + std::to_string(h.operations) + " operations starting with " + args;
  return args;
}

Status checkCallHeader(const CallHeader& expected, const CallHeader& arrived, int rank, int peer) {
  if (arrived.magic == CallHeader::kConfirmMagic) {
    return invalidUsage("the stream from rank " + std::to_string(peer) +
                        " is out of step: it confirms its calls up to " + std::to_string(arrived.streamCall) +
                        " where this rank expects the start of call " + std::to_string(expected.streamCall) +
                        " (an earlier call differed)");
  }
  if (arrived.magic != CallHeader::kMagic) {
    return invalidUsage("the stream from rank " + std::to_string(peer) +
                        " is out of step: its next bytes are not the start of a call (an earlier call differed)");
  }
  if (sameCall(expected, arrived)) return Status::ok();
  std::string why;
  if (arrived.streamCall != expected.streamCall) {
    why = "rank " + std::to_string(peer) + " is at its call " + std::to_string(arrived.streamCall) +
          " with this rank, this rank at " + std::to_string(expected.streamCall) + " (a call was skipped)";
  } else if (arrived.digest != expected.digest) {
    why = "the calls differ";
  } else {
    why = "the bytes to exchange differ (Send/Recv sizes or layouts)";
  }
  // Every field a message shows agrees, yet the digests differ: a later operation of a group, or the algorithm.
  const bool looksAlike = arrived.count == expected.count && arrived.type == expected.type &&
                          arrived.dtype == expected.dtype && arrived.op == expected.op &&
                          arrived.root == expected.root && arrived.streamCall == expected.streamCall &&
                          arrived.operations == expected.operations && arrived.digest != expected.digest;
  return invalidUsage("mismatched calls: rank " + std::to_string(rank) + " called " + describeCall(expected) +
                      ", rank " + std::to_string(peer) + " called " + describeCall(arrived) + ": " + why +
                      (looksAlike ? " (a later operation of the group, or the algorithm: are CHORUS_ALGO and the "
                                    "other settings the same on every rank?)"
                                  : ""));
}

}  // namespace chorus::engine
