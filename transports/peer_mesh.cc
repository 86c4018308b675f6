#include "transports/peer_mesh.hpp"

#include <unistd.h>

#include <map>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/host_id.hpp"
#include "core/cpu_set.hpp"
#include "core/log.hpp"
#include "transports/fifo_connection.hpp"
#include "transports/peer_info.hpp"
#include "transports/registry.hpp"
#include "transports/settings.hpp"

namespace chorus::transport {
namespace {

// A connection from a rank to itself (send/recv to self): one FIFO that is both ends.
std::unique_ptr<Connection> selfConnection(int rank, const Settings& settings) {
  const size_t fifoBytes = fifoBytesFor(settings[kLoopbackBuffer], 2);
  std::shared_ptr<void> memory(Fifo::allocate(Fifo::bytesFor(fifoBytes)), free);
  Fifo fifo(memory.get(), fifoBytes, true);
  return std::make_unique<FifoConnection>(
      memory, fifo, fifo, rank, 0, "self",
      directTransfersOn(settings) ? FifoConnection::Direct::kSameProcess : FifoConnection::Direct::kNone);
}

// Whether `kind` joins `mine` and `peer`: both opened it, and it reaches (the same answer from either side).
bool joins(const TransportKind& kind, const PeerInfo& mine, const PeerInfo& peer, std::string* why) {
  if (!peer.address(kind.name)) {
    *why = "did not open it";
    return false;
  }
  return mine.address(kind.name) && kind.reaches(mine, peer, why);
}

// The transport for `peer`: the forced one when it joins them, else the most preferred that does.
Status chooseTransport(const std::vector<const TransportKind*>& opened, const PeerInfo& mine, const PeerInfo& peer,
                       const std::string& forced, const TransportKind** choice) {
  const std::string who = "rank " + std::to_string(peer.rank);
  std::string why;
  if (!forced.empty()) {
    for (const TransportKind* kind : opened) {
      if (kind->name != forced) continue;
      if (!joins(*kind, mine, peer, &why))
        return invalidUsage("CHORUS_TRANSPORT=" + forced + ", but " + who + " " + why);
      *choice = kind;
      CHORUS_INFO(kTransport, "peer %s (host %s, pid %d): %s, forced by CHORUS_TRANSPORT", who.c_str(),
                  peer.hostId.c_str(), peer.pid, forced.c_str());
      return Status::ok();
    }
    return internalError("CHORUS_TRANSPORT=" + forced + " was not opened");
  }
  std::string whyNot;
  for (const TransportKind* kind : opened) {
    if (joins(*kind, mine, peer, &why)) {
      *choice = kind;
      CHORUS_INFO(kTransport, "peer %s (host %s, pid %d): %s, it %s", who.c_str(), peer.hostId.c_str(), peer.pid,
                  kind->name.c_str(), why.c_str());
      return Status::ok();
    }
    whyNot += (whyNot.empty() ? "" : "; ") + kind->name + ": it " + why;
  }
  return invalidUsage("no transport reaches " + who + " (" + whyNot + ")");
}

}  // namespace

Status connectPeerMesh(bootstrap::Bootstrap& bootstrap, int rank, int nranks, const Settings& settings, PeerMesh* out) {
  const std::string& forced = settings[kTransport];
  if (!forced.empty() && !findTransportKind(forced))
    return invalidArgument("CHORUS_TRANSPORT='" + forced + "' is not one of " + transportNameList());

  PeerInfo mine;
  mine.rank = rank;
  mine.hostId = bootstrap::hostId();
  mine.machineId = bootstrap::machineId();
  mine.pid = getpid();
  mine.cpus = allowedCpus();
  mine.processToken = bootstrap::processToken();
  // Every transport that can run here opens (a listener, a worker) before the exchange, so that its address can be
  // published; a forced transport alone is opened, and must open.
  std::vector<const TransportKind*> opened;
  std::map<std::string, std::unique_ptr<Transport>> transports;
  for (const TransportKind* kind : transportKinds()) {
    if (forced.empty() ? !kind->offeredUnforced() : kind->name != forced) continue;
    Status st;
    if (std::string why = kind->unavailable(); !why.empty()) st = systemError(kind->name + ": " + why);
    std::string address;
    if (st.isOk()) st = kind->open(settings, &transports[kind->name], &address);
    if (!st.isOk()) {
      if (!forced.empty()) return st.withContext("CHORUS_TRANSPORT=" + forced);
      CHORUS_INFO(kTransport, "transport %s is not used: %s", kind->name.c_str(), st.message().c_str());
      transports.erase(kind->name);
      continue;
    }
    mine.addresses[kind->name] = std::move(address);
    opened.push_back(kind);
  }

  std::vector<std::string> blobs;
  CHORUS_TRY(bootstrap.allGather("peers", encodePeerInfo(mine), &blobs));
  out->peers.resize(nranks);
  for (int r = 0; r < nranks; ++r) CHORUS_TRY(decodePeerInfo(blobs[r], r, &out->peers[r]));

  std::map<const TransportKind*, std::vector<int>> byTransport;
  for (int r = 0; r < nranks; ++r) {
    if (r == rank) continue;
    const TransportKind* choice = nullptr;
    CHORUS_TRY(chooseTransport(opened, mine, out->peers[r], forced, &choice));
    byTransport[choice].push_back(r);
  }

  out->connections.resize(nranks);
  out->connections[rank] = selfConnection(rank, settings);
  const ConnectContext ctx{rank, nranks, bootstrap.commHash(), &bootstrap, &out->peers, &settings};
  // Each transport's setup is deadlock-free by itself, and all ranks run them in the same order.
  for (const TransportKind* kind : opened) {
    auto it = byTransport.find(kind);
    if (it == byTransport.end()) continue;
    std::vector<std::unique_ptr<Connection>> conns;
    CHORUS_TRY(transports[kind->name]->connect(ctx, it->second, &conns));
    for (size_t i = 0; i < conns.size(); ++i) out->connections[it->second[i]] = std::move(conns[i]);
  }
  return Status::ok();
}

}  // namespace chorus::transport
