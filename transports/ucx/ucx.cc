// ucx: ranks joined through UCX's UCP layer, which picks the fabric itself (shared memory, cma, tcp, InfiniBand,
// RoCE, cuda_ipc; UCX_TLS and UCX_NET_DEVICES choose as for any UCX program). Each rank opens a UCP context and a
// worker per communicator and publishes the worker's address; each peer gets an endpoint made from its address, and
// the byte stream travels on UCP's stream API: committed bytes are posted from the staging FIFO as they come, and
// freed when UCX is done with them; incoming bytes are taken from UCX's buffers into the receiving FIFO. Large
// messages go beside the stream as tagged messages (tagged_transfers.hpp), and so do small ones
// (tagged_small_messages.hpp).
//
// A stream has no end of its own, so a closing side sends one tagged message with the number of bytes it sent:
// the peer counts as closed once that many arrived. A peer that dies without it is found by UCX's error handling
// (the endpoint fails) or, on the same machine, by its process being gone.
//
// Offered without being forced only where an RDMA device exists (/sys/class/infiniband), where UCX can beat the tcp
// transport; elsewhere CHORUS_TRANSPORT=ucx runs it over what UCX finds (posix, sysv, cma, tcp).
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "core/log.hpp"
#include "transports/fifo.hpp"
#include "transports/rdma_device.hpp"
#include "transports/registry.hpp"
#include "transports/staged_streams.hpp"
#include "transports/tcp/settings.hpp"
#include "transports/ucx/tagged_small_messages.hpp"
#include "transports/ucx/tagged_transfers.hpp"
#include "transports/ucx/ucp_library.hpp"

namespace chorus::transport {
namespace {

using ucx::ucp;

constexpr uint64_t kEndTag = 0x63686f7275730000ull;  // "chorus" and the sending rank in the low bits
constexpr size_t kMaxSend = 256 << 10;               // one stream send; more are posted while it is in flight

std::string ucxError(const std::string& what, ucs_status_t status) {
  return "ucx: " + what + ": " + ucp().status_string(status);
}

// One rank's UCP context and worker for one communicator; its endpoints share it.
class UcxWorker {
 public:
  ~UcxWorker() {
    if (wakeFd_ >= 0) close(wakeFd_);
    if (worker_) ucp().worker_destroy(worker_);
    if (context_) ucp().cleanup(context_);
  }

  Status open(std::string* address) {
    if (std::string why; !ucx::loadUcp(&why)) return systemError(why);
    ucp_config_t* config = nullptr;
    ucs_status_t s = ucp().config_read(nullptr, nullptr, &config);  // UCX_* variables apply
    if (s != UCS_OK) return systemError(ucxError("reading UCX's configuration", s));
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_STREAM | UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    s = ucp().init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context_);
    ucp().config_release(config);
    if (s != UCS_OK) return systemError(ucxError("ucp_init", s));
    ucp_worker_params_t workerParams{};
    workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    workerParams.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // a communicator's calls never overlap
    if ((s = ucp().worker_create(context_, &workerParams, &worker_)) != UCS_OK)
      return systemError(ucxError("ucp_worker_create", s));
    if ((s = ucp().worker_get_efd(worker_, &eventFd_)) != UCS_OK) return systemError(ucxError("ucp_worker_get_efd", s));
    // Always readable: what a waiter polls on when the worker has events it must not sleep through.
    wakeFd_ = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wakeFd_ < 0) return systemError("ucx: eventfd: " + std::string(strerror(errno)));
    ucp_address_t* bytes = nullptr;
    size_t length = 0;
    if ((s = ucp().worker_get_address(worker_, &bytes, &length)) != UCS_OK)
      return systemError(ucxError("ucp_worker_get_address", s));
    address->assign(reinterpret_cast<const char*>(bytes), length);
    ucp().worker_release_address(worker_, bytes);
    return Status::ok();
  }

  ucp_worker_h worker() const { return worker_; }
  /// Where an endpoint's error handler records its failure. UCX may call the handler of an endpoint whose
  /// connection is gone (its endpoint closed, the close still under way in the worker), so the slot lives as long as
  /// the worker, not the connection.
  ucs_status_t* failureSlot() { return &failures_.emplace_back(UCS_OK); }
  /// Until when a closing connection may make progress to send its end message: 100 ms from the first close.
  std::chrono::steady_clock::time_point closingDeadline() {
    if (!closingSince_) closingSince_ = std::chrono::steady_clock::now();
    return *closingSince_ + std::chrono::milliseconds(100);
  }
  bool progress() { return ucp().worker_progress(worker_) != 0; }
  /// The descriptor a waiter sleeps on: the worker's, armed, or one that is ready when events are already pending.
  int sleepFd() { return ucp().worker_arm(worker_) == UCS_OK ? eventFd_ : wakeFd_; }

  // Waits for `request` (from a non-blocking UCP call) with progress, up to `seconds`; frees it. OK when done.
  ucs_status_t wait(ucs_status_ptr_t request, double seconds) {
    if (request == nullptr) return UCS_OK;
    if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    ucs_status_t s;
    while ((s = ucp().request_check_status(request)) == UCS_INPROGRESS && std::chrono::steady_clock::now() < end) {
      if (!progress()) std::this_thread::yield();
    }
    ucp().request_free(request);
    return s;
  }

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int eventFd_ = -1;
  int wakeFd_ = -1;
  std::optional<std::chrono::steady_clock::time_point> closingSince_;
  std::deque<ucs_status_t> failures_;  // one per endpoint; a deque keeps their addresses
};

class UcxConnection final : public StagedStreams {
 public:
  UcxConnection(std::shared_ptr<UcxWorker> worker, size_t fifoBytes, int rank, int peerRank, int samePid)
      : worker_(std::move(worker)),
        rank_(rank),
        peerRank_(peerRank),
        peerPid_(samePid),
        memory_(Fifo::allocate(2 * Fifo::bytesFor(fifoBytes))),
        failure_(worker_->failureSlot()),
        small_(worker_->worker(), rank, peerRank),
        direct_(worker_->worker(), rank, peerRank) {
    placeStreams(memory_, fifoBytes);
  }

  ~UcxConnection() override {
    if (ep_) {
      if (held_) ucp().stream_data_release(ep_, held_);
      close();
      // What was posted (the end message too) is delivered before the endpoint goes, unless the peer left already or
      // failed: it may still be reading the last call's bytes. A completed send may still sit in UCX's own buffer
      // (its tcp), so a flush of the endpoint ends it. Then the endpoint is dropped without a handshake, which a peer
      // that got the end message takes as the goodbye it is.
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      bool moved = false;
      while (!sendDrained() && !peerClosed() && std::chrono::steady_clock::now() < end && progress(&moved).isOk()) {
        if (!moved) std::this_thread::yield();
        moved = false;
      }
      if (*failure_ == UCS_OK && !peerClosed()) {
        ucp_request_param_t flush{};
        worker_->wait(ucp().ep_flush_nbx(ep_, &flush),
                      std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count());
      }
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_EP_CLOSE_FLAG_FORCE;
      worker_->wait(ucp().ep_close_nbx(ep_, &param), 10);
    }
    for (const PendingSend& p : pending_) ucp().request_free(p.request);
    if (endRecv_) {
      ucp().request_cancel(worker_->worker(), endRecv_);
      worker_->wait(endRecv_, 1);
    }
    free(memory_);
  }

  Status connect(const std::string& peerAddress) {
    ucp_ep_params_t params{};
    params.field_mask =
        UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(peerAddress.data());
    // UCX's shared-memory transports cannot report a failed peer, and asking for that leaves only tcp between the
    // ranks of one machine; there checkPeer() watches the peer's process instead.
    params.err_mode = peerPid_ > 0 ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = [](void* slot, ucp_ep_h, ucs_status_t status) {
      *static_cast<ucs_status_t*>(slot) = status;
    };
    params.err_handler.arg = failure_;
    ucs_status_t s = ucp().ep_create(worker_->worker(), &params, &ep_);
    if (s != UCS_OK) return remoteError(ucxError("endpoint to rank " + std::to_string(peerRank_), s));
    // The peer's end message, whenever it comes.
    ucp_request_param_t recv{};
    recv.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    recv.cb.recv = [](void*, ucs_status_t status, const ucp_tag_recv_info_t*, void* self) {
      if (status == UCS_OK) static_cast<UcxConnection*>(self)->endArrived_ = true;
    };
    recv.user_data = this;
    ucs_status_ptr_t r = ucp().tag_recv_nbx(worker_->worker(), &peerEnd_, sizeof(peerEnd_),
                                            kEndTag | static_cast<uint64_t>(peerRank_), ~uint64_t{0}, &recv);
    if (UCS_PTR_IS_ERR(r)) return remoteError(ucxError("posting the end receive", UCS_PTR_STATUS(r)));
    endRecv_ = r;
    // Where UCX moves bytes without a socket (shared memory, cross-memory attach, verbs), tagged messages beat the
    // stream for small steps too; over UCX's tcp they lost, and the stream carries small steps there (perf/RESULTS.md,
    // the UCX section).
    zeroCopyLane_ = ucx::hasZeroCopyLane(ucx::describeEndpoint(ep_));
    small_.start(ep_);
    direct_.start(ep_);
    CHORUS_INFO(kTransport, "ucx: rank %d: %s, transfers from %zu KiB as tagged messages", peerRank_,
                zeroCopyLane_ ? "zero-copy lane, small messages tagged" : "no zero-copy lane",
                direct_.threshold() >> 10);
    return Status::ok();
  }

  Status progress(bool* moved) override {
    *moved = worker_->progress() || *moved;
    CHORUS_TRY(pullIn(moved));
    // An endpoint that fails after the peer said goodbye and all its bytes arrived is the peer leaving, not a fault.
    if (*failure_ != UCS_OK && !peerClosed()) return fail("the endpoint failed", *failure_);
    if (*failure_ != UCS_OK) return Status::ok();
    CHORUS_TRY(postSends(moved));
    reapSends();
    CHORUS_TRY(small_.progress());
    return direct_.progress();
  }

  Status checkPeer() override {
    if (peerPid_ > 0 && kill(peerPid_, 0) != 0 && errno == ESRCH)
      return remoteError("rank " + std::to_string(peerRank_) + " (pid " + std::to_string(peerPid_) + ") is gone");
    bool ignored = false;
    return progress(&ignored);
  }

  bool peerClosed() override { return endArrived_ && received_ >= peerEnd_; }

  void close() override {
    if (closed_ || !ep_) return;
    closed_ = true;
    sentTotal_ = produced_;
    ucp_request_param_t param{};
    ucs_status_ptr_t r =
        ucp().tag_send_nbx(ep_, &sentTotal_, sizeof(sentTotal_), kEndTag | static_cast<uint64_t>(rank_), &param);
    if (r == nullptr || UCS_PTR_IS_ERR(r)) return;
    pending_.push_back({r, posted_});
    // UCX moves it only with progress, which a closing side may not make again: a moment's worth here, shared by
    // all the connections a failing rank closes at once.
    const auto end = worker_->closingDeadline();
    while (ucp().request_check_status(r) == UCS_INPROGRESS && *failure_ == UCS_OK &&
           std::chrono::steady_clock::now() < end)
      if (!worker_->progress()) std::this_thread::yield();
  }

  const char* transportName() const override { return "ucx"; }
  SmallMessages* smallMessages() override { return zeroCopyLane_ ? &small_ : nullptr; }
  DirectTransfers* directTransfers() override { return &direct_; }
  // Every committed byte and direct transfer was handed to UCX. Not a flush: that would wait for the peer to
  // acknowledge (over UCX's tcp, a round trip per call); the destructor flushes once.
  bool sendDrained() override {
    return posted_ == produced_ && pending_.empty() && small_.sendsDone() && direct_.sendsDone();
  }
  bool addPollFds(std::vector<pollfd>* fds) override {
    fds->push_back({worker_->sleepFd(), POLLIN, 0});
    return true;
  }

 private:
  struct PendingSend {
    ucs_status_ptr_t request;
    uint64_t end;  // stream offset up to which the staging FIFO is free once this one completes
  };

  Status fail(const std::string& what, ucs_status_t status) {
    return remoteError(ucxError(what + " (rank " + std::to_string(peerRank_) + ")", status));
  }

  // Posts the committed bytes not posted yet, in pieces that do not cross the FIFO's end.
  Status postSends(bool* moved) {
    const uint64_t capacity = out_.capacity();
    const std::byte* base = static_cast<const std::byte*>(memory_) + sizeof(FifoHeader);
    while (posted_ < produced_) {
      const uint64_t n = std::min({produced_ - posted_, capacity - posted_ % capacity, uint64_t{kMaxSend}});
      ucp_request_param_t param{};
      ucs_status_ptr_t r = ucp().stream_send_nbx(ep_, base + posted_ % capacity, n, &param);
      if (UCS_PTR_IS_ERR(r)) return fail("stream send", UCS_PTR_STATUS(r));
      posted_ += n;
      *moved = true;
      if (r != nullptr) {
        pending_.push_back({r, posted_});
      } else if (pending_.empty()) {
        release(posted_);
      } else {
        pending_.back().end = posted_;  // done already, but the space frees in order
      }
    }
    return Status::ok();
  }

  // Completed sends free their part of the staging FIFO, in order.
  void reapSends() {
    while (!pending_.empty() && ucp().request_check_status(pending_.front().request) != UCS_INPROGRESS) {
      ucp().request_free(pending_.front().request);
      release(pending_.front().end);
      pending_.pop_front();
    }
  }

  void release(uint64_t upTo) {
    if (upTo <= freed_) return;
    FifoHeader* h = static_cast<FifoHeader*>(memory_);
    h->head.store(h->head.load(std::memory_order_relaxed) + (upTo - freed_), std::memory_order_release);
    freed_ = upTo;
  }

  // Moves what UCX received into the receiving FIFO, as far as it has room.
  Status pullIn(bool* moved) {
    while (true) {
      if (!held_) {
        size_t length = 0;
        ucs_status_ptr_t data = ucp().stream_recv_data_nb(ep_, &length);
        if (data == nullptr) return Status::ok();
        if (UCS_PTR_IS_ERR(data)) return fail("stream receive", UCS_PTR_STATUS(data));
        held_ = data;
        heldLength_ = length;
        heldTaken_ = 0;
      }
      auto room = in_.writable();
      const size_t n = std::min(room.size(), heldLength_ - heldTaken_);
      if (n == 0) return Status::ok();
      memcpy(room.data(), static_cast<const std::byte*>(held_) + heldTaken_, n);
      in_.produce(n);
      received_ += n;
      heldTaken_ += n;
      *moved = true;
      if (heldTaken_ == heldLength_) {
        ucp().stream_data_release(ep_, held_);
        held_ = nullptr;
      }
    }
  }

  std::shared_ptr<UcxWorker> worker_;
  int rank_, peerRank_, peerPid_;
  void* memory_;
  ucp_ep_h ep_ = nullptr;
  ucs_status_t* failure_;  // the worker's slot for this endpoint's error handler
  uint64_t posted_ = 0, freed_ = 0, received_ = 0;
  std::deque<PendingSend> pending_;
  void* held_ = nullptr;  // UCX's buffer of received bytes not yet all copied
  size_t heldLength_ = 0, heldTaken_ = 0;
  bool closed_ = false;
  uint64_t sentTotal_ = 0;  // this side's end message
  uint64_t peerEnd_ = 0;    // the peer's: how many bytes it sent in all
  bool endArrived_ = false;
  ucs_status_ptr_t endRecv_ = nullptr;
  bool zeroCopyLane_ = false;  // UCX reaches the peer without a socket for its bytes
  ucx::TaggedSmallMessages small_;
  ucx::TaggedTransfers direct_;
};

class UcxTransport final : public Transport {
 public:
  Status open(std::string* address) {
    worker_ = std::make_shared<UcxWorker>();
    return worker_->open(address);
  }

  Status connect(const ConnectContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>* out) override {
    const Settings& cfg = *ctx.settings;
    const PeerInfo& mine = (*ctx.peers)[ctx.rank];
    out->clear();
    for (int peer : peers) {
      const PeerInfo& p = (*ctx.peers)[peer];
      const std::string* address = p.address("ucx");
      if (!address) return invalidUsage("rank " + std::to_string(peer) + " published no ucx address");
      const int samePid = p.machineId == mine.machineId ? p.pid : 0;
      auto c =
          std::make_unique<UcxConnection>(worker_, fifoBytesFor(cfg[kTcpBuffer], ctx.nranks), ctx.rank, peer, samePid);
      if (Status st = c->connect(*address); !st.isOk()) {
        // A peer that failed its init and left takes its worker with it: its failure is the cause.
        if (Status cause = ctx.bootstrap->setupStatus(); !cause.isOk()) return cause;
        return st;
      }
      out->push_back(std::move(c));
    }
    // Endpoints made from addresses finish their wireup through progress: a few rounds start it here, the calls'
    // progress does the rest.
    for (int i = 0; i < 100; ++i) worker_->progress();
    CHORUS_INFO(kTransport, "ucx: endpoints to %zu peers", peers.size());
    return Status::ok();
  }

 private:
  std::shared_ptr<UcxWorker> worker_;
};

}  // namespace

CHORUS_REGISTER_TRANSPORT(
    ucx, {.name = "ucx",
          .preference = 3,
          .description = "UCX's UCP stream API over what UCX finds (UCX_TLS): InfiniBand, RoCE, shared memory, tcp",
          .unavailable =
              [] {
                std::string why;
                ucx::loadUcp(&why);
                return why;
              },
          .offeredUnforced = rdmaDevicePresent,
          .open =
              [](const Settings&, std::unique_ptr<Transport>* out, std::string* address) {
                auto t = std::make_unique<UcxTransport>();
                CHORUS_TRY(t->open(address));
                *out = std::move(t);
                return Status::ok();
              },
          .reaches =
              [](const PeerInfo&, const PeerInfo&, std::string* why) {
                // UCX finds a way to any worker whose address it has; on one host loopback and shm come first.
                *why = "is reached through UCX";
                return true;
              }});

}  // namespace chorus::transport
