#include "transports/ucx/tagged_transfers.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace chorus::transport::ucx {
namespace {

constexpr uint64_t kTransferTag = 0x6364ull << 48;  // "cd", then the sending rank (16 bits) and the transfer's number

}  // namespace

bool hasZeroCopyLane(const std::string& endpointInfo) {
  // Lines like "lane[1]:  5:cma/memory.0 md[4] -> md[4]/cma/sysdev[255] rma_bw#0": the transport is between the
  // index's colon and the first slash.
  size_t at = 0;
  while ((at = endpointInfo.find("lane[", at)) != std::string::npos) {
    const size_t end = std::min(endpointInfo.find('\n', at), endpointInfo.size());
    const std::string line = endpointInfo.substr(at, end - at);
    at = end;
    if (line.find("rma_bw") == std::string::npos) continue;
    const size_t colon = line.find(':', line.find(']'));
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" 0123456789:", colon);
    const size_t slash = line.find('/', start);
    if (start == std::string::npos || slash == std::string::npos) continue;
    if (line.substr(start, slash - start) != "tcp") return true;
  }
  return false;
}

std::string describeEndpoint(ucp_ep_h ep) {
  char* text = nullptr;
  size_t length = 0;
  FILE* out = open_memstream(&text, &length);
  if (!out) return "";
  ucp().ep_print_info(ep, out);
  fclose(out);
  std::string info(text, length);
  free(text);
  return info;
}

// The default threshold (256 KiB steps) holds over UCX too: lower ones won on AllReduce and lost on AlltoAll over
// UCX's shared memory and cross-memory attach, and lost by more over its tcp (perf/RESULTS.md, the UCX section). A
// reducing receive takes a direct transfer in pieces through a staging buffer, which a plain receive does not.
void TaggedTransfers::start(ucp_ep_h ep) { ep_ = ep; }

TaggedTransfers::~TaggedTransfers() {
  // Freed requests finish (or fail, once the endpoint is gone) inside UCX; a receive is withdrawn.
  for (const Send& s : sends_)
    if (s.request) ucp().request_free(s.request);
  if (receive_) {
    ucp().request_cancel(worker_, receive_);
    ucp().request_free(receive_);
  }
}

Status TaggedTransfers::fail(const std::string& what, ucs_status_t status) const {
  return remoteError("ucx: " + what + " (rank " + std::to_string(peerRank_) + "): " + ucp().status_string(status));
}

uint64_t TaggedTransfers::tag(int sender, uint32_t sequence) const {
  return kTransferTag | (static_cast<uint64_t>(sender & 0xffff) << 32) | sequence;
}

Status TaggedTransfers::registerMemory(const void* base, size_t bytes, MemoryType type,
                                       std::shared_ptr<const Registration>* out) {
  // UCX registers what its protocols need itself (and caches it): the region is only the range reads are checked
  // against.
  return addressRangeRegistration("ucx", base, bytes, type, out);
}

uint64_t TaggedTransfers::post(const Registration& region, size_t offset, size_t bytes) {
  posted_ += bytes;
  ucp_request_param_t param{};
  ucs_status_ptr_t r = ucp().tag_send_nbx(ep_, region.base + offset, bytes, tag(rank_, sendSequence_++), &param);
  if (UCS_PTR_IS_ERR(r)) {
    if (sendFailure_ == UCS_OK) sendFailure_ = UCS_PTR_STATUS(r);  // progress() reports it; acked() stays short
    return posted_;
  }
  sends_.push_back({posted_, r});
  return posted_;
}

uint64_t TaggedTransfers::acked() {
  // In order: bytes count as delivered once every send before them is done too.
  while (!sends_.empty()) {
    Send& s = sends_.front();
    if (s.request) {
      const ucs_status_t status = ucp().request_check_status(s.request);
      if (status == UCS_INPROGRESS) break;
      ucp().request_free(s.request);
      s.request = nullptr;
      if (status != UCS_OK) {
        if (sendFailure_ == UCS_OK) sendFailure_ = status;
        break;
      }
    }
    acked_ = s.end;
    sends_.pop_front();
  }
  return acked_;
}

Status TaggedTransfers::progress() {
  (void)acked();
  return sendFailure_ == UCS_OK ? Status::ok() : fail("direct send", sendFailure_);
}

Status TaggedTransfers::read(void* dst, RemoteRegion& region, size_t offset, size_t bytes, Stores, size_t* done) {
  AddressRange range;
  if (!AddressRange::decode(region.peerBytes, &range) || !range.holds(offset, bytes)) {
    return internalError("ucx: rank " + std::to_string(peerRank_) + " named " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) + " of a region it did not register");
  }
  if (!receiving_) {
    // The next message: it starts where this read does, and the engine never reads past it.
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h message = ucp().tag_probe_nb(worker_, tag(peerRank_, recvSequence_), ~uint64_t{0}, 1, &info);
    if (!message) {
      ucp().worker_progress(worker_);
      message = ucp().tag_probe_nb(worker_, tag(peerRank_, recvSequence_), ~uint64_t{0}, 1, &info);
    }
    if (!message) return Status::ok();
    ++recvSequence_;
    if (info.length < bytes) {
      return internalError("ucx: rank " + std::to_string(peerRank_) + " sent " + std::to_string(info.length) +
                           " bytes where " + std::to_string(bytes) + " were expected");
    }
    receiving_ = true;
    messageStart_ = offset;
    messageBytes_ = info.length;
    staging_.clear();
    if (info.length > bytes) staging_.resize(info.length);
    arrival_ = Arrival{};
    ucp_request_param_t param{};
    // Completion always through the callback, which is told the length that arrived.
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = [](void*, ucs_status_t status, const ucp_tag_recv_info_t* received, void* arrival) {
      *static_cast<Arrival*>(arrival) = Arrival{true, status, received && status == UCS_OK ? received->length : 0};
    };
    param.user_data = &arrival_;
    void* into = staging_.empty() ? dst : staging_.data();
    ucs_status_ptr_t r = ucp().tag_msg_recv_nbx(worker_, into, info.length, message, &param);
    if (UCS_PTR_IS_ERR(r))
      return fail("direct receive of " + std::to_string(info.length) + " bytes", UCS_PTR_STATUS(r));
    receive_ = r;
  }
  if (offset < messageStart_ || offset - messageStart_ + bytes > messageBytes_ ||
      (staging_.empty() && offset != messageStart_)) {
    return internalError("ucx: a read of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                         " outside the message of " + std::to_string(messageBytes_) + " at " +
                         std::to_string(messageStart_));
  }
  if (!arrival_.done) ucp().worker_progress(worker_);
  if (!arrival_.done) return Status::ok();
  if (receive_) {
    ucp().request_free(receive_);
    receive_ = nullptr;
    if (arrival_.status != UCS_OK) {
      return fail("direct receive of " + std::to_string(messageBytes_) + " bytes", arrival_.status);
    }
    if (arrival_.length != messageBytes_) {
      return internalError("ucx: rank " + std::to_string(peerRank_) + " sent " + std::to_string(arrival_.length) +
                           " bytes where " + std::to_string(messageBytes_) + " were announced");
    }
  }
  if (!staging_.empty()) memcpy(dst, staging_.data() + (offset - messageStart_), bytes);
  *done += bytes;
  if (offset - messageStart_ + bytes == messageBytes_) receiving_ = false;
  return Status::ok();
}

}  // namespace chorus::transport::ucx
