// Small messages over UCX as tagged messages, beside the byte stream: a call's header and its small steps travel as
// one eager message each, which UCX delivers whole and in order (messages with the same tag from one endpoint are
// never overtaken). The receiver takes the next message with a probe and holds it until the engine consumes it, so
// peek() sees its start. Over shared memory cheaper than the stream for a few bytes: no staging FIFO on either side
// and no stream reassembly inside UCX. Over UCX's tcp it is not, and the connection does not offer it there.
#pragma once

#include <array>
#include <vector>

#include "transports/transport.hpp"
#include "transports/ucx/ucp_library.hpp"

namespace chorus::transport::ucx {

class TaggedSmallMessages final : public SmallMessages {
 public:
  static constexpr size_t kLimit = 4096;

  TaggedSmallMessages(ucp_worker_h worker, int rank, int peerRank)
      : worker_(worker), rank_(rank), peerRank_(peerRank) {}
  TaggedSmallMessages(const TaggedSmallMessages&) = delete;
  TaggedSmallMessages& operator=(const TaggedSmallMessages&) = delete;
  ~TaggedSmallMessages() override;

  void start(ucp_ep_h ep) { ep_ = ep; }
  /// True when every message sent has left this side (UCX took it); a send that failed is reported here.
  bool sendsDone();
  Status progress();

  size_t limit() override { return kLimit; }
  size_t firstPart() override { return kLimit; }  // a tagged message arrives whole
  bool send(const void* head, size_t headBytes, const void* src, size_t bytes) override;
  bool recv(void* dst, size_t bytes) override;
  bool peek(void* dst, size_t bytes) override;
  bool waiting() override;

 private:
  // A message being sent: its bytes stay here until UCX is done with them.
  struct Slot {
    std::array<std::byte, kLimit> bytes;
    ucs_status_ptr_t request = nullptr;
  };
  static constexpr size_t kSlots = 16;

  uint64_t tag(int sender) const;
  void reap();
  // Makes the next incoming message the held one once all of it is in; false until then.
  bool hold();

  ucp_worker_h worker_;
  int rank_, peerRank_;
  ucp_ep_h ep_ = nullptr;
  std::array<Slot, kSlots> slots_;
  size_t nextSlot_ = 0, oldestSlot_ = 0, inFlight_ = 0;  // a ring: sends complete in any order, slots free in order
  ucs_status_t sendFailure_ = UCS_OK;
  // The held incoming message, and the receive that fills it.
  std::vector<std::byte> held_;
  bool holding_ = false, receiving_ = false, arrived_ = false;
  ucs_status_t receiveStatus_ = UCS_OK;
  ucs_status_ptr_t receive_ = nullptr;
};

}  // namespace chorus::transport::ucx
