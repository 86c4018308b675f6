#include "soak/soak_rank.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace soak {
namespace {

constexpr size_t kGuard = 64;  // bytes on each side of every buffer that no call may write
constexpr unsigned char kGuardByte = 0xA5;
constexpr unsigned char kUnwrittenByte = 0x5A;  // what fills receive buffers before a call

int64_t rssKib() {
  FILE* f = fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int64_t openFds() {
  int64_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

// A buffer with guard bytes on both sides, from malloc or from ncclMemAlloc.
class Buffer {
 public:
  Buffer(size_t bytes, bool memAlloc, std::string* error) : bytes_(bytes), memAlloc_(memAlloc) {
    const size_t total = bytes + 2 * kGuard;
    if (memAlloc) {
      if (ncclResult_t r = ncclMemAlloc(&base_, total); r != ncclSuccess) {
        *error = std::string("ncclMemAlloc failed: ") + ncclGetLastError(nullptr);
        base_ = nullptr;
        return;
      }
    } else {
      base_ = malloc(total);
    }
    memset(base_, kGuardByte, kGuard);
    memset(data() + bytes, kGuardByte, kGuard);
    memset(data(), kUnwrittenByte, bytes);
  }
  ~Buffer() {
    if (!base_) return;
    if (memAlloc_) {
      ncclMemFree(base_);
    } else {
      free(base_);
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  char* data() const { return static_cast<char*>(base_) + kGuard; }
  bool guardsIntact() const {
    for (size_t i = 0; i < kGuard; ++i)
      if (static_cast<unsigned char*>(base_)[i] != kGuardByte || (unsigned char)data()[bytes_ + i] != kGuardByte)
        return false;
    return true;
  }
  bool unwritten(size_t offset, size_t bytes) const {
    for (size_t i = 0; i < bytes; ++i)
      if ((unsigned char)data()[offset + i] != kUnwrittenByte) return false;
    return true;
  }

 private:
  void* base_ = nullptr;
  size_t bytes_;
  bool memAlloc_;
};

// One item as this rank takes part in it: its buffers, where its input goes and what its output must be.
class RankItem {
 public:
  RankItem(const Item& item, size_t call, size_t index, int rank, int nranks, uint64_t seed)
      : item_(item), call_(call), index_(index), rank_(rank), nranks_(nranks), seed_(seed) {}

  // Allocates and fills this rank's buffers; false with *error set when allocation failed.
  bool prepare(ncclComm_t comm, std::string* error) {
    const size_t n = nranks_, c = item_.count, es = typeSize(item_.type);
    const bool root = rank_ == item_.root;
    switch (item_.kind) {
      case Kind::kAllReduce:
      case Kind::kBroadcast:
      case Kind::kReduce:
        sendCount_ = recvCount_ = c;
        break;
      case Kind::kAllGather:
        sendCount_ = c, recvCount_ = n * c, sendOffset_ = rank_ * c;
        break;
      case Kind::kReduceScatter:
        sendCount_ = n * c, recvCount_ = c, recvOffset_ = rank_ * c;
        break;
      case Kind::kAlltoAll:
        sendCount_ = recvCount_ = n * c;
        break;
      case Kind::kGather:
        sendCount_ = c, recvCount_ = n * c, sendOffset_ = item_.root * c;
        break;
      case Kind::kScatter:
        sendCount_ = n * c, recvCount_ = c, recvOffset_ = item_.root * c;
        break;
      case Kind::kSend:
        sendCount_ = rank_ == item_.root ? c : 0;
        recvCount_ = rank_ == item_.peer ? c : 0;
        break;
    }
    // In place: one buffer, the larger side, with the smaller side at its offset within it (NCCL's layouts).
    inPlace_ = item_.inPlace && (item_.kind != Kind::kGather || root) && (item_.kind != Kind::kScatter || root);
    if (inPlace_) {
      buffer_ = std::make_unique<Buffer>(std::max(sendCount_, recvCount_) * es, item_.memAlloc, error);
    } else {
      sendOffset_ = recvOffset_ = 0;
      send_ = std::make_unique<Buffer>(sendCount_ * es, item_.memAlloc, error);
      recv_ = std::make_unique<Buffer>(recvCount_ * es, item_.memAlloc, error);
    }
    if (!error->empty()) return false;
    for (size_t i = 0; i < sendCount_; ++i) encode(item_.type, input(rank_, i), sendPointer() + i * es);
    if (item_.op == ncclNumOps) {
      alignas(8) unsigned char scalar[8];
      encode(item_.type, item_.scalar, scalar);
      if (ncclRedOpCreatePreMulSum(&op_, scalar, item_.type, ncclScalarHostImmediate, comm) != ncclSuccess) {
        *error = std::string("ncclRedOpCreatePreMulSum failed: ") + ncclGetLastError(nullptr);
        return false;
      }
      madeOp_ = true;
    } else {
      op_ = static_cast<ncclRedOp_t>(item_.op);
    }
    return true;
  }

  ncclResult_t issue(ncclComm_t comm) const {
    char* s = sendPointer();
    char* r = recvPointer();
    const size_t c = item_.count;
    const ncclDataType_t t = item_.type;
    switch (item_.kind) {
      case Kind::kAllReduce:
        return ncclAllReduce(s, r, c, t, op_, comm, nullptr);
      case Kind::kBroadcast:
        return ncclBroadcast(s, r, c, t, item_.root, comm, nullptr);
      case Kind::kReduce:
        return ncclReduce(s, r, c, t, op_, item_.root, comm, nullptr);
      case Kind::kAllGather:
        return ncclAllGather(s, r, c, t, comm, nullptr);
      case Kind::kReduceScatter:
        return ncclReduceScatter(s, r, c, t, op_, comm, nullptr);
      case Kind::kAlltoAll:
        return ncclAlltoAll(s, r, c, t, comm, nullptr);
      case Kind::kGather:
        return ncclGather(s, r, c, t, item_.root, comm, nullptr);
      case Kind::kScatter:
        return ncclScatter(s, r, c, t, item_.root, comm, nullptr);
      case Kind::kSend: {
        ncclResult_t res = ncclSuccess;
        if (rank_ == item_.root) res = ncclSend(s, c, t, item_.peer, comm, nullptr);
        if (res == ncclSuccess && rank_ == item_.peer) res = ncclRecv(r, c, t, item_.root, comm, nullptr);
        return res;
      }
    }
    return ncclInternalError;
  }

  bool takesPart() const { return item_.kind != Kind::kSend || rank_ == item_.root || rank_ == item_.peer; }

  // "" or the first wrong byte this rank can see.
  std::string check() const {
    const size_t es = typeSize(item_.type);
    for (const Buffer* b : {buffer_.get(), send_.get(), recv_.get()})
      if (b && !b->guardsIntact()) return "a guard byte beside a buffer was overwritten";
    const bool writes = writesOutput();
    if (!writes && inPlace_) {
      for (size_t i = 0; i < sendCount_; ++i)
        if (decode(item_.type, sendPointer() + i * es) != input(rank_, i))
          return "the buffer of a non-root changed at element " + std::to_string(i);
    } else if (!writes) {
      if (!recv_->unwritten(0, recvCount_ * es)) return "the receive buffer of a non-root was written";
    } else {
      for (size_t i = 0; i < recvCount_; ++i) {
        const double got = decode(item_.type, recvPointer() + i * es), want = expected(i);
        if (!(got == want))
          return "element " + std::to_string(i) + " is " + std::to_string(got) + ", expected " + std::to_string(want);
      }
    }
    if (!inPlace_)
      for (size_t i = 0; i < sendCount_; ++i)
        if (decode(item_.type, sendPointer() + i * es) != input(rank_, i))
          return "the send buffer changed at element " + std::to_string(i);
    return "";
  }

  ~RankItem() {
    if (madeOp_) ncclRedOpDestroy(op_, comm_);
  }
  void setComm(ncclComm_t comm) { comm_ = comm; }

 private:
  bool writesOutput() const {
    if (item_.kind == Kind::kReduce || item_.kind == Kind::kGather) return rank_ == item_.root;
    return true;
  }
  char* sendPointer() const { return (buffer_ ? buffer_->data() : send_->data()) + sendOffset_ * typeSize(item_.type); }
  char* recvPointer() const { return (buffer_ ? buffer_->data() : recv_->data()) + recvOffset_ * typeSize(item_.type); }
  double input(int rank, size_t i) const { return inputValue(seed_, call_, index_, item_, nranks_, rank, i); }
  double reduced(size_t i) const { return reducedValue(seed_, call_, index_, item_, nranks_, i); }

  double expected(size_t i) const {
    const size_t c = item_.count;
    switch (item_.kind) {
      case Kind::kAllReduce:
      case Kind::kReduce:
        return reduced(i);
      case Kind::kBroadcast:
        return input(item_.root, i);
      case Kind::kAllGather:
      case Kind::kGather:
        return input(static_cast<int>(i / c), i % c);
      case Kind::kReduceScatter:
        return reduced(rank_ * c + i);
      case Kind::kAlltoAll:
        return input(static_cast<int>(i / c), rank_ * c + i % c);
      case Kind::kScatter:
        return input(item_.root, rank_ * c + i);
      case Kind::kSend:
        return input(item_.root, i);
    }
    return 0;
  }

  Item item_;
  size_t call_, index_;
  int rank_, nranks_;
  uint64_t seed_;
  size_t sendCount_ = 0, recvCount_ = 0, sendOffset_ = 0, recvOffset_ = 0;
  bool inPlace_ = false;
  std::unique_ptr<Buffer> buffer_, send_, recv_;
  ncclRedOp_t op_ = ncclSum;
  bool madeOp_ = false;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool listed(const std::string& only, size_t k) {
  if (only.empty()) return true;
  for (size_t at = 0; at < only.size();) {
    size_t end = only.find(',', at);
    if (end == std::string::npos) end = only.size();
    const std::string part = only.substr(at, end - at);
    const size_t dash = part.find('-');
    const size_t lo = strtoull(part.c_str(), nullptr, 10);
    const size_t hi = dash == std::string::npos ? lo
                      : dash + 1 == part.size() ? SIZE_MAX
                                                : strtoull(part.c_str() + dash + 1, nullptr, 10);
    if (k >= lo && k <= hi) return true;
    at = end + 1;
  }
  return false;
}

namespace {

std::string failed(const char* what, ncclResult_t r) {
  return std::string(what) + " returned " + ncclGetErrorString(r) + ": " + ncclGetLastError(nullptr);
}

}  // namespace

std::string runRank(ncclComm_t comm, int rank, int nranks, uint64_t seed, const std::vector<Call>& calls,
                    const std::string& only, Progress* progress) {
  for (size_t k = 0; k < calls.size(); ++k) {
    if (!listed(only, k)) continue;
    progress->call.store(static_cast<int64_t>(k));
    if (progress->fdsAtQuarter == 0 && k >= calls.size() / 4) {
      progress->rssKibAtQuarter = rssKib();
      progress->fdsAtQuarter = openFds();
    }
    const Call& call = calls[k];
    std::vector<std::unique_ptr<RankItem>> items;
    std::string error;
    for (size_t j = 0; j < call.items.size(); ++j) {
      auto item = std::make_unique<RankItem>(call.items[j], k, j, rank, nranks, seed);
      item->setComm(comm);
      if (!item->takesPart()) continue;
      if (!item->prepare(comm, &error)) return "call " + std::to_string(k) + ": " + error;
      items.push_back(std::move(item));
    }
    if (call.grouped && ncclGroupStart() != ncclSuccess) return "call " + std::to_string(k) + ": ncclGroupStart failed";
    for (const auto& item : items) {
      if (ncclResult_t r = item->issue(comm); r != ncclSuccess) {
        if (call.grouped) ncclGroupEnd();
        return "call " + std::to_string(k) + ": " + failed("the call", r);
      }
    }
    if (call.grouped)
      if (ncclResult_t r = ncclGroupEnd(); r != ncclSuccess)
        return "call " + std::to_string(k) + ": " + failed("ncclGroupEnd", r);
    for (size_t j = 0; j < items.size(); ++j)
      if (std::string wrong = items[j]->check(); !wrong.empty())
        return "call " + std::to_string(k) + " (" + describe(call) + "): " + wrong;
  }
  progress->rssKibAtEnd = rssKib();
  progress->fdsAtEnd = openFds();
  progress->finished.store(true, std::memory_order_release);
  return "";
}

}  // namespace soak
