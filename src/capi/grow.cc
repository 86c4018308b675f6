// ncclCommGetUniqueId and ncclCommGrow (NCCL 2.29): ranks join a running communicator. One rank of it (the
// coordinator) makes an id that carries the communicator's size and hands it to the joiners; its ranks agree on the
// id over the communicator itself, then everyone inits the grown communicator by it: the old ranks keep their
// numbers, the joiners take the ranks from the old size up. A joiner that never comes ends the others' init at its
// deadline with an error naming the ranks that did not come, as any init's missing rank does.
#include <cstring>
#include <string>

#include "bootstrap/id_layout.hpp"
#include "capi/api_support.hpp"
#include "capi/nccl_comm.hpp"

using chorus::Status;
using chorus::capi::initRank;
using chorus::capi::report;

namespace {

// What each old rank brings to the agreement on the id.
struct GrowVote {
  int32_t nRanks;
  int32_t hasId;
  unsigned char id[NCCL_UNIQUE_ID_BYTES];
};

chorus::bootstrap::IdLayout layoutOf(const ncclUniqueId& id) {
  chorus::UniqueId uid;
  memcpy(uid.bytes.data(), id.internal, sizeof(id.internal));
  return chorus::bootstrap::decodeId(uid);
}

Status checkGrowId(const ncclUniqueId& id, int nRanks, const char* who) {
  const chorus::bootstrap::IdLayout l = layoutOf(id);
  if (l.magic != chorus::bootstrap::kIdMagic || l.grownFrom == 0)
    return chorus::invalidArgument(std::string("ncclCommGrow: ") + who +
                                   "'s uniqueId is not one of ncclCommGetUniqueId");
  if (static_cast<int64_t>(l.grownFrom) >= nRanks) {
    return chorus::invalidArgument("ncclCommGrow: nRanks " + std::to_string(nRanks) +
                                   " does not exceed the size of the communicator that grows (" +
                                   std::to_string(l.grownFrom) + ")");
  }
  return Status::ok();
}

// An old rank's side: the id agreed over `comm`, then the init of the grown communicator by it.
ncclResult_t growFrom(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, ncclComm_t* newcomm,
                      ncclConfig_t* config) {
  const int size = comm->comm->size();
  GrowVote mine{};
  mine.nRanks = nRanks;
  mine.hasId = uniqueId ? 1 : 0;
  if (uniqueId) memcpy(mine.id, uniqueId->internal, sizeof(mine.id));
  std::vector<GrowVote> votes(static_cast<size_t>(size));
  chorus::Request gathered =
      comm->comm->allGatherAsync(&mine, votes.data(), sizeof(GrowVote), chorus::DataType::kUint8);
  if (Status st = gathered.wait(); !st.isOk()) return report(st.withContext("ncclCommGrow: agreeing on the id"));
  // Every rank judges the same votes, so every rank fails alike or none does.
  int coordinator = -1;
  for (int r = 0; r < size; ++r) {
    const GrowVote& v = votes[static_cast<size_t>(r)];
    if (v.nRanks != nRanks) {
      return report(chorus::invalidArgument("ncclCommGrow: rank " + std::to_string(r) + " passed nRanks " +
                                            std::to_string(v.nRanks) + ", rank " + std::to_string(comm->comm->rank()) +
                                            " " + std::to_string(nRanks)));
    }
    if (!v.hasId) continue;
    if (coordinator >= 0) {
      return report(chorus::invalidArgument("ncclCommGrow: ranks " + std::to_string(coordinator) + " and " +
                                            std::to_string(r) + " both passed a uniqueId (exactly one rank does)"));
    }
    coordinator = r;
  }
  if (coordinator < 0) return report(chorus::invalidArgument("ncclCommGrow: no rank of comm passed the uniqueId"));
  ncclUniqueId id;
  memcpy(id.internal, votes[static_cast<size_t>(coordinator)].id, sizeof(id.internal));
  CHORUS_CHECK(checkGrowId(id, nRanks, "the coordinator"));
  if (static_cast<int>(layoutOf(id).grownFrom) != size) {
    return report(chorus::invalidArgument("ncclCommGrow: the uniqueId was made by a communicator of " +
                                          std::to_string(layoutOf(id).grownFrom) + " ranks, not this one of " +
                                          std::to_string(size)));
  }
  if (uniqueId) comm->growIdOutstanding = false;
  ncclConfig_t inherited = NCCL_CONFIG_INITIALIZER;
  inherited.blocking = comm->blocking ? 1 : 0;
  ncclResult_t r = initRank(newcomm, nRanks, id, comm->comm->rank(), config ? config : &inherited, "ncclCommGrow");
  if (*newcomm) (*newcomm)->cudaDevice = comm->cudaDevice;
  return r;
}

}  // namespace

extern "C" {

ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) try {
  CHORUS_ENTER_OWNER(comm, "ncclCommGetUniqueId");
  if (!uniqueId) return report(chorus::invalidArgument("ncclCommGetUniqueId: uniqueId is NULL"));
  if (comm->growIdOutstanding) {
    return report(chorus::invalidUsage("ncclCommGetUniqueId: this comm's last id has not served an ncclCommGrow yet"));
  }
  chorus::UniqueId id;
  if (Status st = chorus::UniqueId::create(&id); !st.isOk()) return report(st.withContext("ncclCommGetUniqueId"));
  chorus::bootstrap::IdLayout l = chorus::bootstrap::decodeId(id);
  l.grownFrom = static_cast<uint32_t>(comm->comm->size());
  id = chorus::bootstrap::encodeId(l);
  memcpy(uniqueId->internal, id.bytes.data(), sizeof(uniqueId->internal));
  comm->growIdOutstanding = true;
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommGetUniqueId")

ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                           ncclConfig_t* config) try {
  if (!newcomm) return report(chorus::invalidArgument("ncclCommGrow: newcomm is NULL"));
  *newcomm = nullptr;
  if (!comm) {  // a joiner
    if (!uniqueId)
      return report(chorus::invalidArgument("ncclCommGrow: a joining rank (comm NULL) needs the uniqueId"));
    CHORUS_CHECK(checkGrowId(*uniqueId, nRanks, "this rank"));
    const int from = static_cast<int>(layoutOf(*uniqueId).grownFrom);
    if (rank < from || rank >= nRanks) {
      return report(chorus::invalidArgument("ncclCommGrow: a joining rank's rank " + std::to_string(rank) +
                                            " is outside [" + std::to_string(from) + ", " + std::to_string(nRanks) +
                                            ") (the old ranks keep theirs)"));
    }
    return initRank(newcomm, nRanks, *uniqueId, rank, config, "ncclCommGrow");
  }
  CHORUS_ENTER_OWNER(comm, "ncclCommGrow");
  if (rank != -1 && rank != comm->comm->rank()) {
    return report(chorus::invalidArgument("ncclCommGrow: a rank of comm passes rank -1 (it keeps its number " +
                                          std::to_string(comm->comm->rank()) + "), not " + std::to_string(rank)));
  }
  return growFrom(comm, nRanks, uniqueId, newcomm, config);
}
CHORUS_CATCH("ncclCommGrow")

CHORUS_NCCL_ALIAS(ncclCommGetUniqueId)
CHORUS_NCCL_ALIAS(ncclCommGrow)

}  // extern "C"
