#include "chorus/unique_id.hpp"

#include <mutex>
#include <random>

#include "bootstrap/id_layout.hpp"
#include "bootstrap/settings.hpp"
#include "bootstrap/socket.hpp"
#include "bootstrap/store.hpp"
#include "core/log.hpp"

namespace chorus {

using bootstrap::IdLayout;

namespace {

// The secret of an id built from an address: every rank must derive the same one. CHORUS_COMM_SECRET makes it the
// job's own; without it, it is a constant anyone can know (as in NCCL), which the first use says once.
uint64_t addressSecret() {
  const std::string& secret = settings()[bootstrap::kCommSecret];
  if (secret.empty()) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      CHORUS_WARN(kBootstrap,
                  "rendezvous by address without CHORUS_COMM_SECRET: anyone who can reach the root's port can join "
                  "or write its keys; set CHORUS_COMM_SECRET to the same text on every rank of the job");
    });
    return 0x0280028002800280ull;
  }
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : secret) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Status UniqueId::create(UniqueId* out) {
  if (!out) return invalidArgument("UniqueId::create: null output");
  std::random_device rd;
  uint64_t secret = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  net::Endpoint bound;
  CHORUS_TRY(bootstrap::startStoreServer(net::localAddress(), 0, secret, &bound));
  *out = bootstrap::encodeId(IdLayout{bootstrap::kIdMagic, secret, bound.ip, bound.port, 0, 0});
  return Status::ok();
}

Status UniqueId::fromAddress(const std::string& hostPort, UniqueId* out) {
  net::Endpoint ep;
  CHORUS_TRY(net::Endpoint::parse(hostPort, &ep));
  *out = bootstrap::encodeId(IdLayout{bootstrap::kIdMagic, addressSecret(), ep.ip, ep.port, 1, 0});
  return Status::ok();
}

std::string UniqueId::rootAddress() const {
  IdLayout l = bootstrap::decodeId(*this);
  return net::Endpoint{l.rootIp, l.rootPort}.toString();
}

}  // namespace chorus
