#include "transports/ucx/tagged_small_messages.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::transport::ucx {
namespace {

constexpr uint64_t kSmallTag = 0x736dull << 48;  // "sm", then the sending rank (16 bits)

}  // namespace

TaggedSmallMessages::~TaggedSmallMessages() {
  // Freed send requests finish inside UCX (or fail once the endpoint is gone); a receive under way is withdrawn.
  for (Slot& s : slots_)
    if (s.request) ucp().request_free(s.request);
  if (receive_) {
    ucp().request_cancel(worker_, receive_);
    ucp().request_free(receive_);
  }
}

uint64_t TaggedSmallMessages::tag(int sender) const {
  return kSmallTag | (static_cast<uint64_t>(sender & 0xffff) << 32);
}

void TaggedSmallMessages::reap() {
  while (inFlight_ > 0) {
    Slot& s = slots_[oldestSlot_];
    if (s.request) {
      const ucs_status_t status = ucp().request_check_status(s.request);
      if (status == UCS_INPROGRESS) return;
      ucp().request_free(s.request);
      s.request = nullptr;
      if (status != UCS_OK && sendFailure_ == UCS_OK) sendFailure_ = status;
    }
    oldestSlot_ = (oldestSlot_ + 1) % kSlots;
    --inFlight_;
  }
}

bool TaggedSmallMessages::sendsDone() {
  reap();
  return inFlight_ == 0;
}

Status TaggedSmallMessages::progress() {
  reap();
  const ucs_status_t failure = sendFailure_ != UCS_OK ? sendFailure_ : receiveStatus_;
  if (failure == UCS_OK) return Status::ok();
  return remoteError(std::string("ucx: small message ") + (sendFailure_ != UCS_OK ? "to" : "from") + " rank " +
                     std::to_string(peerRank_) + ": " + ucp().status_string(failure));
}

bool TaggedSmallMessages::send(const void* head, size_t headBytes, const void* src, size_t bytes) {
  if (inFlight_ == kSlots) reap();
  if (inFlight_ == kSlots) return false;
  Slot& s = slots_[nextSlot_];
  if (headBytes > 0) memcpy(s.bytes.data(), head, headBytes);
  if (bytes > 0) memcpy(s.bytes.data() + headBytes, src, bytes);
  ucp_request_param_t param{};
  ucs_status_ptr_t r = ucp().tag_send_nbx(ep_, s.bytes.data(), headBytes + bytes, tag(rank_), &param);
  if (UCS_PTR_IS_ERR(r)) {
    if (sendFailure_ == UCS_OK) sendFailure_ = UCS_PTR_STATUS(r);  // progress() reports it
    return true;
  }
  s.request = r;
  nextSlot_ = (nextSlot_ + 1) % kSlots;
  ++inFlight_;
  return true;
}

bool TaggedSmallMessages::hold() {
  if (holding_) return true;
  if (receiveStatus_ != UCS_OK) return false;
  if (!receiving_) {
    ucp_tag_recv_info_t info{};
    // The connection's progress() drives the worker once per round; a probe alone is cheap.
    ucp_tag_message_h message = ucp().tag_probe_nb(worker_, tag(peerRank_), ~uint64_t{0}, 1, &info);
    if (!message) return false;
    held_.resize(info.length);
    arrived_ = false;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = [](void*, ucs_status_t status, const ucp_tag_recv_info_t*, void* self) {
      auto* me = static_cast<TaggedSmallMessages*>(self);
      me->arrived_ = true;
      me->receiveStatus_ = status;
    };
    param.user_data = this;
    ucs_status_ptr_t r = ucp().tag_msg_recv_nbx(worker_, held_.data(), held_.size(), message, &param);
    if (UCS_PTR_IS_ERR(r)) {
      receiveStatus_ = UCS_PTR_STATUS(r);  // progress() reports it
      return false;
    }
    receive_ = r;
    receiving_ = true;
  }
  if (!arrived_) ucp().worker_progress(worker_);
  if (!arrived_) return false;
  ucp().request_free(receive_);
  receive_ = nullptr;
  receiving_ = false;
  if (receiveStatus_ != UCS_OK) return false;
  holding_ = true;
  return true;
}

bool TaggedSmallMessages::recv(void* dst, size_t bytes) {
  if (!hold()) return false;
  memcpy(dst, held_.data(), std::min(bytes, held_.size()));
  holding_ = false;
  return true;
}

bool TaggedSmallMessages::peek(void* dst, size_t bytes) {
  if (!hold()) return false;
  memcpy(dst, held_.data(), std::min(bytes, held_.size()));
  return true;
}

bool TaggedSmallMessages::waiting() { return hold(); }

}  // namespace chorus::transport::ucx
