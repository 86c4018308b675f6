#include "chorus/unique_id.hpp"

#include <random>

#include "bootstrap/id_layout.hpp"
#include "bootstrap/socket.hpp"
#include "bootstrap/store.hpp"

namespace chorus {

using bootstrap::IdLayout;

namespace {
// The secret of an id built from an explicit address: every rank must derive the same one, as NCCL does.
constexpr uint64_t kFixedSecret = 0x0280028002800280ull;
}  // namespace

Status UniqueId::create(UniqueId* out) {
  if (!out) return invalidArgument("UniqueId::create: null output");
  std::random_device rd;
  uint64_t secret = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  net::Endpoint bound;
  CHORUS_TRY(bootstrap::startStoreServer(net::localAddress(), 0, secret, &bound));
  *out = bootstrap::encodeId(IdLayout{bootstrap::kIdMagic, secret, bound.ip, bound.port, 0});
  return Status::ok();
}

Status UniqueId::fromAddress(const std::string& hostPort, UniqueId* out) {
  net::Endpoint ep;
  CHORUS_TRY(net::Endpoint::parse(hostPort, &ep));
  *out = bootstrap::encodeId(IdLayout{bootstrap::kIdMagic, kFixedSecret, ep.ip, ep.port, 1});
  return Status::ok();
}

std::string UniqueId::rootAddress() const {
  IdLayout l = bootstrap::decodeId(*this);
  return net::Endpoint{l.rootIp, l.rootPort}.toString();
}

}  // namespace chorus
