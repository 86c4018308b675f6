// The transports a communicator can use. Each one registers itself from its own folder (CHORUS_REGISTER_TRANSPORT):
// its name, its place in the order of preference, how it opens this rank's side (and the address it publishes),
// and which peers it reaches, judged from the two ranks' published PeerInfo. Connection setup (peer_mesh.hpp) asks
// the registry; nothing else names a transport.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transports/transport.hpp"

namespace chorus::transport {

struct TransportKind {
  std::string name;
  int preference = 0;       // among the transports that reach a peer, the lowest is used
  std::string description;  // one line for chorus-info
  /// Why this transport cannot run in this process; empty when it can.
  std::function<std::string()> unavailable = [] { return std::string(); };
  /// Whether it is opened when CHORUS_TRANSPORT forces nothing: false for a transport that only pays off on hardware
  /// this machine lacks (opening costs time at every init).
  std::function<bool()> offeredUnforced = [] { return true; };
  /// Opens this rank's side for one communicator, and the address the peers need to reach it (may be empty).
  std::function<Status(const Settings&, std::unique_ptr<Transport>*, std::string* address)> open;
  /// Whether the rank `mine` reaches `peer` this way; `why` says how, or why not (to complete "rank N ...").
  std::function<bool(const PeerInfo& mine, const PeerInfo& peer, std::string* why)> reaches;
};

struct TransportRegistrar {
  explicit TransportRegistrar(TransportKind kind);
};

/// Every registered transport, most preferred first.
std::vector<const TransportKind*> transportKinds();
/// The one named `name`, or null.
const TransportKind* findTransportKind(const std::string& name);
/// "loopback, shm, tcp": the registered names in order of preference, for messages.
std::string transportNameList();

}  // namespace chorus::transport

#define CHORUS_REGISTER_TRANSPORT(ident, ...) \
  static const ::chorus::transport::TransportRegistrar ident##_transport_registrar(__VA_ARGS__)
