// shm: ranks on the same host, in different processes. Each pair shares one POSIX shared-memory segment holding
// the two FIFOs. The lower rank creates it and reserves its pages (so a full /dev/shm fails here with a clear
// error instead of a SIGBUS later), the higher rank maps it, and then the lower rank unlinks the name: from then
// on nothing is left in /dev/shm even if a process is killed.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bootstrap/bootstrap.hpp"
#include "core/log.hpp"
#include "transports/fifo_connection.hpp"

namespace chorus::transport {
namespace {

struct Mapping {
  void* address = nullptr;
  size_t bytes = 0;
  ~Mapping() {
    if (address) munmap(address, bytes);
  }
};

std::string segmentName(uint64_t comm, int low, int high) {
  char name[96];
  snprintf(name, sizeof(name), "/chorus-%d-%016llx-%d-%d", getpid(), static_cast<unsigned long long>(comm), low, high);
  return name;
}

std::string pairTag(int low, int high) { return "shm/" + std::to_string(low) + "-" + std::to_string(high); }

Status mapSegment(const std::string& name, size_t bytes, bool create, std::shared_ptr<Mapping>* out) {
  int fd = shm_open(name.c_str(), create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
  if (fd < 0) return systemError("shm_open " + name + ": " + strerror(errno));
  if (create) {
    int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (err != 0) {
      close(fd);
      shm_unlink(name.c_str());
      return systemError("cannot reserve " + std::to_string(bytes) + " bytes in /dev/shm for " + name + ": " +
                         strerror(err) + (err == ENOSPC ? " (/dev/shm is full)" : ""));
    }
  }
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (address == MAP_FAILED) {
    if (create) shm_unlink(name.c_str());
    return systemError("mmap " + name + ": " + strerror(errno));
  }
  auto m = std::make_shared<Mapping>();
  m->address = address;
  m->bytes = bytes;
  *out = std::move(m);
  return Status::ok();
}

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "shm"; }

  Status connect(const ConnectContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>* out) override {
    const size_t one = Fifo::bytesFor(ctx.fifoBytes);
    const size_t bytes = 2 * one;
    std::vector<std::shared_ptr<Mapping>> maps(peers.size());
    std::vector<std::string> names(peers.size());
    auto& bs = *ctx.bootstrap;
    Status st;
    // 1. As the lower rank of a pair: create, initialise and announce. Never blocks.
    for (size_t i = 0; i < peers.size() && st.isOk(); ++i) {
      if (ctx.rank > peers[i]) continue;
      names[i] = segmentName(ctx.commHash, ctx.rank, peers[i]);
      st = mapSegment(names[i], bytes, true, &maps[i]);
      if (!st.isOk()) break;
      Fifo(maps[i]->address, ctx.fifoBytes, true);
      Fifo(static_cast<std::byte*>(maps[i]->address) + one, ctx.fifoBytes, true);
      st = bs.set(pairTag(ctx.rank, peers[i]), names[i]);
    }
    // 2. As the higher rank: map the peer's segment and confirm.
    for (size_t i = 0; i < peers.size() && st.isOk(); ++i) {
      if (ctx.rank < peers[i]) continue;
      st = bs.get(pairTag(peers[i], ctx.rank), &names[i]);
      if (st.isOk()) st = mapSegment(names[i], bytes, false, &maps[i]);
      if (st.isOk()) st = bs.set(pairTag(peers[i], ctx.rank) + "/mapped", "1");
    }
    // 3. As the lower rank: once the peer mapped it, remove the name.
    for (size_t i = 0; i < peers.size(); ++i) {
      if (ctx.rank > peers[i] || !maps[i]) continue;
      std::string ignored;
      if (st.isOk()) st = bs.get(pairTag(ctx.rank, peers[i]) + "/mapped", &ignored);
      shm_unlink(names[i].c_str());
    }
    if (!st.isOk()) return st.withContext("shm setup");
    out->clear();
    for (size_t i = 0; i < peers.size(); ++i) {
      std::byte* base = static_cast<std::byte*>(maps[i]->address);
      bool low = ctx.rank < peers[i];
      Fifo lowToHigh(base, ctx.fifoBytes, false), highToLow(base + one, ctx.fifoBytes, false);
      int pid = (*ctx.peers)[peers[i]].pid;
      out->push_back(std::make_unique<FifoConnection>(maps[i], low ? lowToHigh : highToLow, low ? highToLow : lowToHigh,
                                                      peers[i], pid, "shm"));
    }
    CHORUS_INFO(kTransport, "shm: connected to %zu peers, %zu-byte FIFOs", peers.size(), ctx.fifoBytes);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Transport> makeShmTransport() { return std::make_unique<ShmTransport>(); }

}  // namespace chorus::transport
