#include "comm/peer_info.hpp"

#include <charconv>
#include <sstream>

namespace chorus {
namespace {

// The whole of `text` as a number of type T, or false.
template <typename T>
bool parseWhole(const std::string& text, T* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

}  // namespace

std::string encodePeerInfo(const transport::PeerInfo& p) {
  std::ostringstream os;
  os << p.rank << '\n'
     << p.hostId << '\n'
     << p.machineId << '\n'
     << p.pid << '\n'
     << p.processToken << '\n'
     << p.tcpAddress;
  return os.str();
}

Status decodePeerInfo(const std::string& blob, int rank, transport::PeerInfo* out) {
  std::istringstream is(blob);
  std::string rankText, pid, token;
  transport::PeerInfo p;
  const std::string where = "the bootstrap store's entry for rank " + std::to_string(rank);
  if (!std::getline(is, rankText) || !std::getline(is, p.hostId) || !std::getline(is, p.machineId) ||
      !std::getline(is, pid) || !std::getline(is, token) || !std::getline(is, p.tcpAddress)) {
    return internalError(where + " is malformed (" + std::to_string(blob.size()) + " bytes, fields missing)");
  }
  if (!parseWhole(rankText, &p.rank) || p.rank != rank) {
    return internalError(where + " names rank '" + rankText + "'");
  }
  if (!parseWhole(pid, &p.pid) || p.pid <= 0) return internalError(where + " has a bad pid '" + pid + "'");
  if (!parseWhole(token, &p.processToken)) return internalError(where + " has a bad process token '" + token + "'");
  if (p.hostId.empty() || p.machineId.empty()) return internalError(where + " has no host id");
  *out = std::move(p);
  return Status::ok();
}

}  // namespace chorus
