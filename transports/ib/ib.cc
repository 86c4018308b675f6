// ib: ranks on different hosts that share an InfiniBand or RoCE fabric, over libibverbs. One reliable-connected
// queue pair per peer. The byte stream is RDMA WRITE WITH IMMEDIATE from this side's staging FIFO into the peer's
// ring, credits and acknowledgements come back as zero-byte writes with immediates, and direct transfers are RDMA
// READs of the sender's registered buffer (stream_protocol.hpp has the protocol). Completions are polled in
// progress(), inside the engine's deadlines; a completion with an error becomes a Status naming the peer and the
// operation.
#include <arpa/inet.h>

#include <cstring>
#include <deque>

#include "bootstrap/bootstrap.hpp"
#include "core/log.hpp"
#include "transports/fifo.hpp"
#include "transports/hex.hpp"
#include "transports/ib/device_selection.hpp"
#include "transports/ib/settings.hpp"
#include "transports/ib/stream_protocol.hpp"
#include "transports/ib/verbs_library.hpp"
#include "transports/rdma_device.hpp"
#include "transports/registration_cache.hpp"
#include "transports/registry.hpp"
#include "transports/staged_streams.hpp"

namespace chorus::transport {
namespace {

using ib::verbs;

constexpr uint64_t kMaxWrite = 256 << 10;   // bytes per stream write
constexpr uint32_t kMaxDataWrites = 32;     // stream writes in flight per peer
constexpr uint64_t kReadChunk = 256 << 10;  // bytes per RDMA READ of a direct transfer
constexpr uint32_t kReadSlots = 4;          // RDMA READs in flight per peer (the bounce area's chunks)
constexpr uint32_t kQueueDepth = 128;       // send and receive work requests per queue pair
constexpr size_t kRegistrations = 64;       // cached memory regions per communicator

enum WorkId : uint64_t { kDataWrite = 1, kControlWrite = 2, kRead = 3, kReceive = 4 };

/// An active port this rank uses: the first one NCCL_IB_HCA admits.
struct Port {
  std::string device;
  int number = 0;
  ibv_port_attr attr{};
  int gidIndex = 0;
  ibv_gid gid{};
};

Status findPort(const Settings& cfg, ibv_context** context, Port* out) {
  ib::HcaFilter filter;
  CHORUS_TRY(ib::parseHcaFilter(cfg[ib::kHca], &filter));
  int count = 0;
  ibv_device** list = verbs().get_device_list(&count);
  if (!list || count == 0) {
    if (list) verbs().free_device_list(list);
    return systemError("ib: no RDMA device");
  }
  Status st = systemError("ib: no active port" +
                          std::string(cfg[ib::kHca].empty() ? "" : " that NCCL_IB_HCA='" + cfg[ib::kHca] + "' admits"));
  for (int d = 0; d < count && !st.isOk(); ++d) {
    const std::string name = verbs().get_device_name(list[d]);
    ibv_context* ctx = verbs().open_device(list[d]);
    if (!ctx) continue;
    for (int p = 1; p <= 2 && !st.isOk(); ++p) {
      ibv_port_attr attr{};
      // The exported symbol fills the leading, compatible part of ibv_port_attr (all the fields read here).
      if (verbs().query_port(ctx, static_cast<uint8_t>(p), reinterpret_cast<_compat_ibv_port_attr*>(&attr)) != 0) break;
      if (attr.state != IBV_PORT_ACTIVE || !filter.accepts(name, p)) continue;
      out->device = name;
      out->number = p;
      out->attr = attr;
      // RoCE needs a GID to address the peer; index 3 is RoCE v2 over IPv4 on common setups (NCCL's default too).
      out->gidIndex = cfg[ib::kGidIndex] >= 0 ? static_cast<int>(cfg[ib::kGidIndex])
                                              : (attr.link_layer == IBV_LINK_LAYER_ETHERNET ? 3 : 0);
      if (verbs().query_gid(ctx, static_cast<uint8_t>(p), out->gidIndex, &out->gid) != 0) {
        st = remoteError("ib: " + name + " port " + std::to_string(p) + " has no GID " + std::to_string(out->gidIndex) +
                         " (NCCL_IB_GID_INDEX)");
        break;
      }
      *context = ctx;
      st = Status::ok();
    }
    if (!st.isOk()) verbs().close_device(ctx);
  }
  verbs().free_device_list(list);
  return st;
}

/// This rank's device for one communicator: context, protection domain, and the registrations of send buffers.
class Device {
 public:
  ~Device() {
    cache_.reset();
    if (pd_) verbs().dealloc_pd(pd_);
    if (context_) verbs().close_device(context_);
  }
  Status open(const Settings& cfg) {
    CHORUS_TRY(findPort(cfg, &context_, &port_));
    pd_ = verbs().alloc_pd(context_);
    if (!pd_) return remoteError("ib: ibv_alloc_pd on " + port_.device + ": " + strerror(errno));
    cache_ = std::make_unique<RegistrationCache>(
        kRegistrations, [this](const void* base, size_t bytes, MemoryType type, Registration* out) {
          if (type != MemoryType::kHost) return invalidUsage("ib registers host memory only, not device memory");
          ibv_mr* mr = registerRegion(const_cast<void*>(base), bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
          if (!mr) return remoteError("ib: ibv_reg_mr of " + std::to_string(bytes) + " bytes: " + strerror(errno));
          RemoteBuffer peer{reinterpret_cast<uint64_t>(base), bytes, mr->rkey};
          out->peerBytes.resize(sizeof(peer));
          memcpy(out->peerBytes.data(), &peer, sizeof(peer));
          out->state = std::shared_ptr<void>(mr, [](void* m) { verbs().dereg_mr(static_cast<ibv_mr*>(m)); });
          return Status::ok();
        });
    return Status::ok();
  }
  ibv_mr* registerRegion(void* base, size_t bytes, int access) { return verbs().reg_mr(pd_, base, bytes, access); }

  /// What a peer needs to read a registered buffer.
  struct RemoteBuffer {
    uint64_t address;
    uint64_t bytes;
    uint32_t rkey;
    uint32_t unused = 0;
  };

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const Port& port() const { return port_; }
  RegistrationCache& cache() { return *cache_; }

 private:
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  Port port_;
  std::unique_ptr<RegistrationCache> cache_;
};

/// What each side of a pair publishes to the other through the bootstrap.
struct QueuePairInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint16_t lid = 0;
  uint8_t mtu = 0;
  uint8_t linkLayer = 0;
  uint32_t ringRkey = 0;
  uint64_t ringAddress = 0;
  uint64_t ringBytes = 0;
  ibv_gid gid{};
};

class IbConnection final : public StagedStreams, public DirectTransfers {
 public:
  IbConnection(std::shared_ptr<Device> device, size_t fifoBytes, int peerRank)
      : device_(std::move(device)),
        peerRank_(peerRank),
        capacity_(fifoBytes),
        writer_(fifoBytes, kMaxWrite, kMaxDataWrites),
        reader_(fifoBytes),
        window_(kReadChunk, kReadSlots) {}
  ~IbConnection() override {
    if (qp_) verbs().destroy_qp(qp_);
    if (cq_) verbs().destroy_cq(cq_);
    if (mr_) verbs().dereg_mr(mr_);
    free(memory_);
  }

  /// Memory, completion queue, queue pair (in INIT, receives posted); `mine` is what the peer needs.
  Status create(QueuePairInfo* mine) {
    const size_t one = Fifo::bytesFor(capacity_);
    const size_t bytes = 2 * one + kReadChunk * kReadSlots;
    memory_ = Fifo::allocate(bytes);
    if (!memory_) return systemError("ib: out of memory for the FIFOs of rank " + std::to_string(peerRank_));
    placeStreams(memory_, capacity_);
    bounce_ = static_cast<std::byte*>(memory_) + 2 * one;
    mr_ = device_->registerRegion(memory_, bytes,
                                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!mr_) return fail("ibv_reg_mr of the FIFOs", errno);
    cq_ = verbs().create_cq(device_->context(), 2 * kQueueDepth, nullptr, nullptr, 0);
    if (!cq_) return fail("ibv_create_cq", errno);
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = kQueueDepth;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    qp_ = verbs().create_qp(device_->pd(), &init);
    if (!qp_) return fail("ibv_create_qp", errno);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = static_cast<uint8_t>(device_->port().number);
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (int e = verbs().modify_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return fail("moving the queue pair to INIT", e);
    for (uint32_t i = 0; i < kQueueDepth; ++i) CHORUS_TRY(postReceive());
    const Port& port = device_->port();
    mine->qpn = qp_->qp_num;
    mine->psn = qp_->qp_num & 0xffffff;
    mine->lid = port.attr.lid;
    mine->mtu = static_cast<uint8_t>(port.attr.active_mtu);
    mine->linkLayer = port.attr.link_layer;
    mine->gid = port.gid;
    mine->ringRkey = mr_->rkey;
    mine->ringAddress = reinterpret_cast<uint64_t>(in_.data());
    mine->ringBytes = capacity_;
    return Status::ok();
  }

  /// RTR then RTS, addressed at the peer's queue pair.
  Status connect(const QueuePairInfo& mine, const QueuePairInfo& peer) {
    if (peer.ringBytes != capacity_)
      return remoteError("ib: rank " + std::to_string(peerRank_) + " has another ring size");
    peer_ = peer;
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = static_cast<ibv_mtu>(std::min(mine.mtu, peer.mtu));
    attr.dest_qp_num = peer.qpn;
    attr.rq_psn = peer.psn;
    attr.max_dest_rd_atomic = kReadSlots;
    attr.min_rnr_timer = 12;
    attr.ah_attr.port_num = static_cast<uint8_t>(device_->port().number);
    if (peer.linkLayer == IBV_LINK_LAYER_ETHERNET || peer.lid == 0) {
      attr.ah_attr.is_global = 1;
      attr.ah_attr.grh.dgid = peer.gid;
      attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_->port().gidIndex);
      attr.ah_attr.grh.hop_limit = 255;
    } else {
      attr.ah_attr.dlid = peer.lid;
    }
    if (int e = verbs().modify_qp(qp_, &attr,
                                  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      return fail("moving the queue pair to RTR", e);
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = mine.psn;
    attr.timeout = 14;  // 4.096 us * 2^14 = 67 ms per try: a dead peer shows within a second
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;  // receives are reposted as they complete; wait for them rather than fail
    attr.max_rd_atomic = kReadSlots;
    if (int e = verbs().modify_qp(qp_, &attr,
                                  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                      IBV_QP_MAX_QP_RD_ATOMIC))
      return fail("moving the queue pair to RTS", e);
    return Status::ok();
  }

  Status progress(bool* moved) override {
    CHORUS_TRY(pollCompletions(moved));
    for (auto w = writer_.next(produced_); w.bytes > 0; w = writer_.next(produced_)) {
      CHORUS_TRY(postWrite(kDataWrite, out_.data() + w.offset, w.bytes, peer_.ringAddress + w.offset,
                           ib::immediate(ib::ImmediateKind::kData, static_cast<uint32_t>(w.bytes))));
      writer_.posted(w);
      *moved = true;
    }
    if (uint64_t due = reader_.creditDue(consumed_); due > 0) {
      CHORUS_TRY(postControl(ib::ImmediateKind::kCredit, due));
      reader_.credited(due);
    }
    if (ackDue_ > 0) {
      CHORUS_TRY(postControl(ib::ImmediateKind::kDirectAck, ackDue_));
      ackDue_ = 0;
    }
    return Status::ok();
  }
  // A zero-byte write that the peer's adapter must acknowledge: a dead peer's queue pair fails it within the retry
  // budget (about half a second), and pollCompletions reports the failure.
  Status checkPeer() override {
    bool moved = false;
    if (controlOutstanding_ == 0) CHORUS_TRY(postControl(ib::ImmediateKind::kCredit, 0));
    return progress(&moved);
  }
  bool peerClosed() override { return peerClosed_; }
  void close() override {
    if (!closed_ && qp_) (void)postControl(ib::ImmediateKind::kClose, 0);
    closed_ = true;
  }
  bool sendDrained() override {
    return writer_.written() == produced_ && writer_.outstanding() == 0 && controlOutstanding_ == 0;
  }
  bool addPollFds(std::vector<pollfd>*) override { return false; }
  const char* transportName() const override { return "ib"; }

  DirectTransfers* directTransfers() override { return this; }
  Status registerMemory(const void* base, size_t bytes, MemoryType type,
                        std::shared_ptr<const Registration>* out) override {
    return device_->cache().find(base, bytes, type, out);
  }
  // The receiver pulls the bytes: posting only counts them.
  uint64_t post(const Registration&, size_t, size_t bytes) override { return directPosted_ += bytes; }
  uint64_t acked() override { return directAcked_; }
  Status read(void* dst, RemoteRegion& region, size_t offset, size_t bytes, Stores, size_t* done) override {
    Device::RemoteBuffer buffer{};
    if (region.peerBytes.size() != sizeof(buffer)) return badRegion(offset, bytes);
    memcpy(&buffer, region.peerBytes.data(), sizeof(buffer));
    if (offset > buffer.bytes || bytes > buffer.bytes - offset) return badRegion(offset, bytes);
    window_.want(offset, bytes);
    bool moved = false;
    CHORUS_TRY(pollCompletions(&moved));
    for (auto r = window_.next(); r.bytes > 0; r = window_.next()) {
      CHORUS_TRY(postRead(bounce_ + r.slot * kReadChunk, r.bytes, buffer.address + r.offset, buffer.rkey));
      window_.posted(r);
    }
    for (auto r = window_.ready(); r.bytes > 0; r = window_.ready()) {
      memcpy(static_cast<std::byte*>(dst) + (r.offset - offset), bounce_ + r.slot * kReadChunk, r.bytes);
      window_.taken();
      *done += r.bytes;
      ackDue_ += r.bytes;
    }
    return Status::ok();
  }

 private:
  Status fail(const std::string& what, int error) {
    return remoteError("ib: " + what + " for rank " + std::to_string(peerRank_) + " on " + device_->port().device +
                       ": " + strerror(error));
  }
  Status badRegion(size_t offset, size_t bytes) {
    return internalError("ib: rank " + std::to_string(peerRank_) + " named " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) + " of a region it did not register");
  }

  Status postReceive() {
    ibv_recv_wr wr{};
    wr.wr_id = kReceive;
    ibv_recv_wr* bad = nullptr;
    if (int e = ibv_post_recv(qp_, &wr, &bad)) return fail("ibv_post_recv", e);
    return Status::ok();
  }
  Status postWrite(WorkId id, const void* src, size_t bytes, uint64_t remote, uint32_t imm) {
    ibv_sge sge{reinterpret_cast<uint64_t>(src), static_cast<uint32_t>(bytes), mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = bytes > 0 ? &sge : nullptr;
    wr.num_sge = bytes > 0 ? 1 : 0;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(imm);
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = peer_.ringRkey;
    ibv_send_wr* bad = nullptr;
    if (int e = ibv_post_send(qp_, &wr, &bad)) return fail("RDMA write", e);
    return Status::ok();
  }
  Status postControl(ib::ImmediateKind kind, uint64_t bytes) {
    CHORUS_TRY(
        postWrite(kControlWrite, nullptr, 0, peer_.ringAddress, ib::immediate(kind, static_cast<uint32_t>(bytes))));
    ++controlOutstanding_;
    return Status::ok();
  }
  Status postRead(std::byte* to, size_t bytes, uint64_t remote, uint32_t rkey) {
    ibv_sge sge{reinterpret_cast<uint64_t>(to), static_cast<uint32_t>(bytes), mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = kRead;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    if (int e = ibv_post_send(qp_, &wr, &bad)) return fail("RDMA read", e);
    return Status::ok();
  }

  Status pollCompletions(bool* moved) {
    ibv_wc wc[16];
    for (;;) {
      const int n = ibv_poll_cq(cq_, 16, wc);
      if (n < 0) return fail("ibv_poll_cq", EIO);
      for (int i = 0; i < n; ++i) CHORUS_TRY(complete(wc[i], moved));
      if (n < 16) return Status::ok();
    }
  }
  Status complete(const ibv_wc& wc, bool* moved) {
    if (wc.status != IBV_WC_SUCCESS) {
      static constexpr const char* kOps[] = {"", "RDMA write of the stream", "RDMA write of a credit", "RDMA read",
                                             "receive"};
      return remoteError("ib: " + std::string(kOps[wc.wr_id < 5 ? wc.wr_id : 0]) + " with rank " +
                         std::to_string(peerRank_) + " failed: " + verbs().wc_status_str(wc.status) +
                         " (the peer or its link is gone)");
    }
    *moved = true;
    switch (wc.wr_id) {
      case kDataWrite:
        writer_.completed();
        break;
      case kControlWrite:
        --controlOutstanding_;
        break;
      case kRead:
        window_.completed();
        break;
      case kReceive: {
        const uint32_t imm = ntohl(wc.imm_data);
        const uint32_t bytes = ib::immediateBytes(imm);
        switch (ib::immediateKind(imm)) {
          case ib::ImmediateKind::kData:
            reader_.arrived(bytes);
            in_.publish(reader_.arrivedTotal());
            break;
          case ib::ImmediateKind::kCredit:
            out_.release(bytes);
            break;
          case ib::ImmediateKind::kDirectAck:
            directAcked_ += bytes;
            break;
          case ib::ImmediateKind::kClose:
            peerClosed_ = true;
            break;
        }
        return postReceive();
      }
      default:
        break;
    }
    return Status::ok();
  }

  std::shared_ptr<Device> device_;
  int peerRank_;
  size_t capacity_;
  void* memory_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  std::byte* bounce_ = nullptr;
  QueuePairInfo peer_;
  ib::RingWriter writer_;
  ib::RingReader reader_;
  ib::ReadWindow window_;
  uint64_t directPosted_ = 0, directAcked_ = 0, ackDue_ = 0;
  uint32_t controlOutstanding_ = 0;
  bool peerClosed_ = false, closed_ = false;
};

class IbTransport final : public Transport {
 public:
  /// Opens the device; the address says which fabric this rank is on: the link layer and, for InfiniBand, the
  /// subnet prefix.
  Status open(const Settings& cfg, std::string* address) {
    device_ = std::make_shared<Device>();
    CHORUS_TRY(device_->open(cfg));
    const Port& port = device_->port();
    const bool ethernet = port.attr.link_layer == IBV_LINK_LAYER_ETHERNET;
    *address = ethernet ? "roce" : "ib/" + toHex(port.gid.raw, 8);
    CHORUS_INFO(kTransport, "ib: %s port %d, %s, %.0f Gbit/s", port.device.c_str(), port.number,
                ethernet ? "RoCE" : "InfiniBand", ib::portGbps(port.attr.active_width, port.attr.active_speed));
    return Status::ok();
  }

  Status connect(const ConnectContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>* out) override {
    const size_t fifoBytes =
        std::min<size_t>(fifoBytesFor((*ctx.settings)[ib::kBuffer], ctx.nranks), ib::kMaxRingBytes);
    std::vector<std::unique_ptr<IbConnection>> made;
    std::vector<QueuePairInfo> mine(peers.size());
    for (size_t i = 0; i < peers.size(); ++i) {
      made.push_back(std::make_unique<IbConnection>(device_, fifoBytes, peers[i]));
      CHORUS_TRY(made.back()->create(&mine[i]));
      CHORUS_TRY(ctx.bootstrap->set(tag(ctx.rank, peers[i]), toHex(&mine[i], sizeof(QueuePairInfo))));
    }
    for (size_t i = 0; i < peers.size(); ++i) {
      std::string text;
      CHORUS_TRY(ctx.bootstrap->get(tag(peers[i], ctx.rank), &text));
      QueuePairInfo theirs;
      std::string bytes;
      if (fromHex(text, &bytes) && bytes.size() == sizeof(theirs)) memcpy(&theirs, bytes.data(), sizeof(theirs));
      if (bytes.size() != sizeof(theirs))
        return remoteError("ib: rank " + std::to_string(peers[i]) + " published a malformed queue pair");
      CHORUS_TRY(made[i]->connect(mine[i], theirs));
    }
    for (auto& c : made) out->push_back(std::move(c));
    return Status::ok();
  }

 private:
  static std::string tag(int from, int to) { return "ib/" + std::to_string(from) + "-" + std::to_string(to); }
  std::shared_ptr<Device> device_;
};

}  // namespace

CHORUS_REGISTER_TRANSPORT(
    ib,
    {.name = "ib",
     .preference = 2,
     .description = "InfiniBand and RoCE verbs: RDMA writes for the stream, RDMA reads for large messages",
     .unavailable =
         [] {
           std::string why;
           if (!ib::loadVerbs(&why)) return why;
           return rdmaDevicePresent() ? std::string() : std::string("no RDMA device (/sys/class/infiniband is empty)");
         },
     .offeredUnforced = rdmaDevicePresent,
     .open =
         [](const Settings& cfg, std::unique_ptr<Transport>* out, std::string* address) {
           auto t = std::make_unique<IbTransport>();
           CHORUS_TRY(t->open(cfg, address));
           *out = std::move(t);
           return Status::ok();
         },
     .reaches =
         [](const PeerInfo& mine, const PeerInfo& peer, std::string* why) {
           const std::string* a = mine.address("ib");
           const std::string* b = peer.address("ib");
           if (!a || !b) {
             *why = "has no active RDMA port on both sides";
             return false;
           }
           *why = *a == *b ? "shares the RDMA fabric " + *a : "is on another fabric (" + *b + ", this rank " + *a + ")";
           return *a == *b;
         }});

}  // namespace chorus::transport
