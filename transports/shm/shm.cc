// shm: ranks on the same host, in different processes. Each pair shares one anonymous shared-memory file
// (memfd) holding the two FIFOs. The lower rank creates it and reserves its pages (so running out of memory fails
// here with a clear error instead of a SIGBUS later) and publishes its descriptor number; the higher rank opens it
// through /proc/<pid>/fd. The file has no name anywhere, so no kill at any moment can leave one behind (named
// /dev/shm segments stayed when a rank died between creating and unlinking them), and the size of /dev/shm (64 MB
// in a default container) does not limit it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "bootstrap/bootstrap.hpp"
#include "core/log.hpp"
#include "core/setting_parsers.hpp"
#include "transports/fifo_connection.hpp"
#include "transports/peer_memfd.hpp"
#include "transports/registry.hpp"
#include "transports/settings.hpp"

namespace chorus::transport {
namespace {

const Setting<int64_t> kShmBuffer{
    {"CHORUS_SHM_BUFFER", "", "auto",
     "bytes of each shared-memory FIFO (one per direction per peer; auto: 4 MiB, or 1 MiB when ranks outnumber "
     "cores)"},
    "auto or a positive integer, with an optional K, M or G suffix",
    SettingScope::kCommunicator,
    setting_parsers::byteCount(1, INT64_MAX, {"auto", 0})};
const Setting<bool> kShmCma{
    {"CHORUS_SHM_CMA", "", "0", "1: single-copy transfers between processes too (process_vm_readv)"},
    setting_parsers::kBoolean,
    SettingScope::kCommunicator,
    setting_parsers::boolean()};

struct Mapping {
  void* address = nullptr;
  size_t bytes = 0;
  ~Mapping() {
    if (address) munmap(address, bytes);
  }
};

std::string segmentName(uint64_t comm, int low, int high) {
  char name[96];
  snprintf(name, sizeof(name), "chorus-%016llx-%d-%d", static_cast<unsigned long long>(comm), low, high);
  return name;
}

// After the two FIFOs, each segment holds what the pair needs to decide on direct transfers: every side writes
// the address of its probe word, reads the other's through process_vm_readv and records whether that worked.
struct PairProbe {
  uint64_t address[2];               // [0] lower rank, [1] higher rank
  std::atomic<uint32_t> verdict[2];  // 1: this side can read the other's memory, and CHORUS_SHM_CMA asks it to
};
constexpr uint64_t kProbeMagic = 0x63686f7275734d41ull;  // "chorusMA"
const volatile uint64_t gProbeWord = kProbeMagic;

uint64_t probeAddress() { return reinterpret_cast<uint64_t>(&gProbeWord); }

// Cross-memory attach works when the kernel lets this process read the peer's memory (same user; on kernels
// with Yama, the peer must allow it, which every chorus process does below).
bool canReadPeer(int pid, uint64_t address) {
  uint64_t value = 0;
  iovec local{&value, sizeof(value)};
  iovec remote{reinterpret_cast<void*>(address), sizeof(value)};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == sizeof(value) && value == kProbeMagic;
}

std::string pairTag(int low, int high) { return "shm/" + std::to_string(low) + "-" + std::to_string(high); }

Status mapFile(int fd, size_t bytes, const std::string& name, std::shared_ptr<Mapping>* out) {
  // MAP_POPULATE maps every page now: a stream walking into unmapped FIFO pages would take a page fault per
  // 4 KiB on the critical path, which made mid-size calls several times slower until the ring wrapped.
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (address == MAP_FAILED) return systemError("mmap " + name + ": " + strerror(errno));
  auto m = std::make_shared<Mapping>();
  m->address = address;
  m->bytes = bytes;
  *out = std::move(m);
  return Status::ok();
}

// The lower rank's side: a new file of `bytes`, reserved and mapped; `*fd` stays open until the peer opened it.
Status createSegment(const std::string& name, size_t bytes, int* fd, std::shared_ptr<Mapping>* out) {
  *fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (*fd < 0) return systemError("memfd_create " + name + ": " + strerror(errno));
  int err = posix_fallocate(*fd, 0, static_cast<off_t>(bytes));
  Status st = err == 0 ? mapFile(*fd, bytes, name, out)
                       : systemError("cannot reserve " + std::to_string(bytes) + " bytes of shared memory for " + name +
                                     ": " + strerror(err));
  if (!st.isOk()) {
    close(*fd);
    *fd = -1;
  }
  return st;
}

// The higher rank's side: the peer's file, found by its descriptor number (a store value, so checked: it must be a
// number, and name the file of this pair with the expected size).
Status openPeerSegment(int peer, int pid, const std::string& fdText, const std::string& name, size_t bytes,
                       std::shared_ptr<Mapping>* out) {
  const std::string whose = "rank " + std::to_string(peer) + "'s shared memory ";
  char* end = nullptr;
  errno = 0;
  long peerFd = strtol(fdText.c_str(), &end, 10);
  if (fdText.empty() || *end != '\0' || errno != 0 || peerFd < 0 || peerFd > INT_MAX)
    return remoteError("shm: rank " + std::to_string(peer) + " published '" + fdText.substr(0, 32) +
                       "', not a descriptor number");
  int fd = -1;
  CHORUS_TRY(openPeerMemfd(pid, peerFd, name, bytes, O_RDWR, whose, &fd).withContext("shm"));
  Status st = mapFile(fd, bytes, name, out);
  close(fd);
  return st;
}

class ShmTransport final : public Transport {
 public:
  Status connect(const ConnectContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>* out) override {
    const FifoLaps laps = fifoLaps(ctx);
    const size_t fifoBytes = fifoBytesFor(laps.fifoBytes((*ctx.settings)[kShmBuffer]), ctx.nranks);
    const size_t one = Fifo::bytesFor(fifoBytes);
    const size_t bytes = 2 * one + sizeof(PairProbe);
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);  // let peers read our buffers (Yama); harmless elsewhere
#endif
    std::vector<std::shared_ptr<Mapping>> maps(peers.size());
    std::vector<int> files(peers.size(), -1);  // the lower rank's memfds, open until the peer opened them
    auto probe = [&](size_t i) {
      return reinterpret_cast<PairProbe*>(static_cast<std::byte*>(maps[i]->address) + 2 * one);
    };
    auto& bs = *ctx.bootstrap;
    Status st;
    // 1. As the lower rank of a pair: create, initialise and announce. Never blocks.
    for (size_t i = 0; i < peers.size() && st.isOk(); ++i) {
      if (ctx.rank > peers[i]) continue;
      st = createSegment(segmentName(ctx.commHash, ctx.rank, peers[i]), bytes, &files[i], &maps[i]);
      if (!st.isOk()) break;
      Fifo(maps[i]->address, fifoBytes, true);
      Fifo(static_cast<std::byte*>(maps[i]->address) + one, fifoBytes, true);
      probe(i)->address[0] = probeAddress();
      st = bs.set(pairTag(ctx.rank, peers[i]), std::to_string(files[i]));
    }
    // 2. As the higher rank: map the peer's file and confirm.
    for (size_t i = 0; i < peers.size() && st.isOk(); ++i) {
      if (ctx.rank < peers[i]) continue;
      std::string fdText;
      const int pid = (*ctx.peers)[peers[i]].pid;
      st = bs.get(pairTag(peers[i], ctx.rank), &fdText);
      if (st.isOk())
        st = openPeerSegment(peers[i], pid, fdText, segmentName(ctx.commHash, peers[i], ctx.rank), bytes, &maps[i]);
      if (!st.isOk()) break;
      probe(i)->address[1] = probeAddress();
      probe(i)->verdict[1] = (*ctx.settings)[kShmCma] && canReadPeer(pid, probe(i)->address[0]) ? 1 : 0;
      st = bs.set(pairTag(peers[i], ctx.rank) + "/mapped", "1");
    }
    // 3. As the lower rank: once the peer mapped it, the descriptor is no longer needed.
    for (size_t i = 0; i < peers.size(); ++i) {
      if (ctx.rank > peers[i] || !maps[i]) continue;
      std::string ignored;
      if (st.isOk()) st = bs.get(pairTag(ctx.rank, peers[i]) + "/mapped", &ignored);
      if (!st.isOk()) continue;
      probe(i)->verdict[0] =
          (*ctx.settings)[kShmCma] && canReadPeer((*ctx.peers)[peers[i]].pid, probe(i)->address[1]) ? 1 : 0;
      st = bs.set(pairTag(ctx.rank, peers[i]) + "/verdict", "1");
    }
    for (int& fd : files)
      if (fd >= 0) close(fd);
    // 4. As the higher rank: wait for the lower rank's verdict.
    for (size_t i = 0; i < peers.size() && st.isOk(); ++i) {
      std::string ignored;
      if (ctx.rank > peers[i]) st = bs.get(pairTag(peers[i], ctx.rank) + "/verdict", &ignored);
    }
    if (!st.isOk()) {
      // A peer that died here fails its namespace at the root too: its cause is the one to report.
      Status cause = bs.setupStatus();
      return (cause.isOk() ? st : cause).withContext("shm setup");
    }
    out->clear();
    int cmaPairs = 0;
    for (size_t i = 0; i < peers.size(); ++i) {
      std::byte* base = static_cast<std::byte*>(maps[i]->address);
      bool low = ctx.rank < peers[i];
      Fifo lowToHigh(base, fifoBytes, false), highToLow(base + one, fifoBytes, false);
      int pid = (*ctx.peers)[peers[i]].pid;
      // Shareable blocks can always be read in place (this pair's file was opened the same way); other memory
      // only by cross-memory attach, when both sides ask for it and it works both ways (both read the verdicts, so
      // they agree even where CHORUS_SHM_CMA differs between them).
      const bool cma = probe(i)->verdict[0] == 1 && probe(i)->verdict[1] == 1;
      using Direct = FifoConnection::Direct;
      const Direct direct = !directTransfersOn(*ctx.settings) ? Direct::kNone
                            : cma                             ? Direct::kSharedBlocksAndCrossMemoryAttach
                                                              : Direct::kSharedBlocks;
      cmaPairs += cma ? 1 : 0;
      out->push_back(std::make_unique<FifoConnection>(maps[i], low ? lowToHigh : highToLow, low ? highToLow : lowToHigh,
                                                      peers[i], pid, "shm", direct, laps));
    }
    const FifoLap first = laps.initial();
    CHORUS_INFO(kTransport,
                "shm: connected to %zu peers (%d with single-copy reads of any buffer, by cross-memory attach), "
                "%zu-byte FIFOs wrapping early from %zu bytes (%zu after pieces of %zu)%s",
                peers.size(), cmaPairs, fifoBytes, static_cast<size_t>(first.bytes),
                static_cast<size_t>(first.bulkBytes), first.bulkPiece,
                laps.sharedBudget > 0 ? ", longer where calls write to fewer peers" : "");
    return Status::ok();
  }
};

}  // namespace

CHORUS_REGISTER_TRANSPORT(
    shm, {.name = "shm",
          .preference = 1,
          .description = "processes of one host: FIFOs in shared memory (memfd); large transfers read in place from "
                         "buffers of ncclMemAlloc, and from any buffer by cross-memory attach with CHORUS_SHM_CMA=1",
          .open =
              [](const Settings&, std::unique_ptr<Transport>* out, std::string*) {
                *out = std::make_unique<ShmTransport>();
                return Status::ok();
              },
          .reaches =
              [](const PeerInfo& mine, const PeerInfo& peer, std::string* why) {
                const bool same = peer.hostId == mine.hostId;
                *why = same ? "is on the same host" : "is on host " + peer.hostId;
                return same;
              }});

}  // namespace chorus::transport
