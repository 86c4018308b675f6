// Direct transfers over UCX as tagged messages: the sender's post() sends the bytes straight from its registered
// buffer with ucp_tag_send_nbx, and the receiver's read() receives them straight into its own buffer. Above UCX's
// rendezvous threshold that is zero-copy: the receiver fetches the bytes (cross-memory attach on one machine, RDMA
// READ over verbs), UCX registering both buffers through its own registration cache; over tcp they go on UCX's sockets,
// without the byte stream's two staging copies. The k-th transfer to a peer carries tag (prefix, sending rank, k), and
// both sides count transfers in stream order.
//
// The receiver probes for the next message to learn its length: when the engine reads it whole, it lands in the
// engine's buffer; when the engine reads it in pieces (a reduction's bounce buffer), it lands in a staging buffer
// the pieces are copied from.
//
// No RMA: UCX's RMA feature makes an endpoint's flush wait for the peer's progress over tcp, which would tie a
// closing rank to what its peer does after its last call.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "transports/transport.hpp"
#include "transports/ucx/ucp_library.hpp"

namespace chorus::transport::ucx {

/// Whether an endpoint, as ucp_ep_print_info describes it, has a rendezvous lane (rma_bw) on a transport that moves
/// bytes without copying them through a socket: cross-memory attach, shared memory, verbs. There tagged transfers
/// beat the stream from smaller messages than over tcp, where UCX copies them through its sockets.
bool hasZeroCopyLane(const std::string& endpointInfo);
/// ucp_ep_print_info's text for `ep`.
std::string describeEndpoint(ucp_ep_h ep);

class TaggedTransfers final : public DirectTransfers {
 public:
  TaggedTransfers(ucp_worker_h worker, int rank, int peerRank) : worker_(worker), rank_(rank), peerRank_(peerRank) {}
  TaggedTransfers(const TaggedTransfers&) = delete;
  TaggedTransfers& operator=(const TaggedTransfers&) = delete;
  ~TaggedTransfers();

  /// Takes the endpoint, once connected.
  void start(ucp_ep_h ep);
  /// Frees the sends UCX finished; a send that failed is reported here.
  Status progress();
  /// True when every posted send is done.
  bool sendsDone() const { return sends_.empty(); }

  Status registerMemory(const void* base, size_t bytes, MemoryType type,
                        std::shared_ptr<const Registration>* out) override;
  uint64_t post(const Registration& region, size_t offset, size_t bytes) override;
  uint64_t acked() override;
  Status read(void* dst, RemoteRegion& region, size_t offset, size_t bytes, Stores, size_t* done) override;

 private:
  struct Arrival {
    bool done = false;
    ucs_status_t status = UCS_OK;
    size_t length = 0;
  };
  struct Send {
    uint64_t end;  // the running total of posted bytes once this one is done
    ucs_status_ptr_t request;
  };

  Status fail(const std::string& what, ucs_status_t status) const;
  uint64_t tag(int sender, uint32_t sequence) const;

  ucp_worker_h worker_;
  int rank_, peerRank_;
  ucp_ep_h ep_ = nullptr;
  // Sending side.
  uint32_t sendSequence_ = 0;
  uint64_t posted_ = 0, acked_ = 0;
  std::deque<Send> sends_;
  ucs_status_t sendFailure_ = UCS_OK;
  // Receiving side: the message under way, if any, which holds region bytes [messageStart_, + messageBytes_).
  uint32_t recvSequence_ = 0;
  bool receiving_ = false;
  size_t messageStart_ = 0, messageBytes_ = 0;
  std::vector<std::byte> staging_;  // the message, when the engine reads it in pieces; else empty
  ucs_status_ptr_t receive_ = nullptr;
  Arrival arrival_;  // written by UCX's completion callback
};

}  // namespace chorus::transport::ucx
