#include "transports/peer_info.hpp"

#include <charconv>
#include <sstream>

#include "core/cpu_set.hpp"
#include "transports/hex.hpp"

namespace chorus::transport {
namespace {

// The whole of `text` as a number of type T, or false.
template <typename T>
bool parseWhole(const std::string& text, T* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

// A transport's name as the registry spells them: lower-case letters, digits, '_'.
bool isTransportName(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace

std::string encodePeerInfo(const PeerInfo& p) {
  std::ostringstream os;
  os << p.rank << '\n'
     << p.hostId << '\n'
     << p.machineId << '\n'
     << p.pid << '\n'
     << p.processToken << '\n'
     << formatCpuList(p.cpus);
  for (const auto& [name, address] : p.addresses) {
    os << '\n' << name << '=' << toHex(address.data(), address.size());
  }
  return os.str();
}

Status decodePeerInfo(const std::string& blob, int rank, PeerInfo* out) {
  std::istringstream is(blob);
  std::string rankText, pid, token, cpus;
  PeerInfo p;
  const std::string where = "the bootstrap store's entry for rank " + std::to_string(rank);
  if (!std::getline(is, rankText) || !std::getline(is, p.hostId) || !std::getline(is, p.machineId) ||
      !std::getline(is, pid) || !std::getline(is, token) || !std::getline(is, cpus)) {
    return internalError(where + " is malformed (" + std::to_string(blob.size()) + " bytes, fields missing)");
  }
  if (!parseWhole(rankText, &p.rank) || p.rank != rank) {
    return internalError(where + " names rank '" + rankText + "'");
  }
  if (!parseWhole(pid, &p.pid) || p.pid <= 0) return internalError(where + " has a bad pid '" + pid + "'");
  if (!parseWhole(token, &p.processToken)) return internalError(where + " has a bad process token '" + token + "'");
  if (p.hostId.empty() || p.machineId.empty()) return internalError(where + " has no host id");
  if (!parseCpuList(cpus, &p.cpus)) return internalError(where + " has a bad CPU list '" + cpus.substr(0, 64) + "'");
  for (std::string line; std::getline(is, line);) {
    const size_t equals = line.find('=');
    const std::string name = line.substr(0, equals);
    if (equals == std::string::npos || !isTransportName(name) || (line.size() - equals - 1) % 2 != 0)
      return internalError(where + " has a malformed transport address '" + line.substr(0, 64) + "'");
    std::string address;
    if (!fromHex(std::string_view(line).substr(equals + 1), &address))
      return internalError(where + " has a transport address of " + name + " that is not hex");
    if (!p.addresses.emplace(name, std::move(address)).second)
      return internalError(where + " names transport " + name + " twice");
  }
  *out = std::move(p);
  return Status::ok();
}

}  // namespace chorus::transport
