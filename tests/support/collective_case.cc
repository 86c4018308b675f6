#include "tests/support/collective_case.hpp"

#include <cstring>

#include "tests/support/reference.hpp"

namespace chorus::testing {

using algo::CollType;

namespace {

constexpr unsigned char kSentinel = 0xA5;

struct Buffers {
  std::vector<unsigned char> send, recv, expected;
};

std::string fail(const Case& c, int rank, int nranks, const std::string& what) {
  return describe(c, nranks) + " rank " + std::to_string(rank) + ": " + what;
}

void fillMove(void* buf, DataType t, int rank, size_t first, size_t n) {
  for (size_t i = 0; i < n; ++i) storeValue(buf, i, t, inputValue(nullptr, t, rank, first + i));
}

void fillReduce(void* buf, const Case& c, int rank, size_t n) {
  for (size_t i = 0; i < n; ++i) storeValue(buf, i, c.type, inputValue(&c.op, c.type, rank, i));
}

}  // namespace

const std::vector<CollType>& testedCollectives() {
  static const std::vector<CollType> all = {
      CollType::kAllReduce, CollType::kReduceScatter, CollType::kAllGather, CollType::kAlltoAll, CollType::kAlltoAllv,
      CollType::kBroadcast, CollType::kReduce,        CollType::kGather,    CollType::kScatter,  CollType::kSend};
  return all;
}

const std::vector<DataType>& allDataTypes() {
  static const std::vector<DataType> all = {DataType::kInt8,     DataType::kUint8,      DataType::kInt32,
                                            DataType::kUint32,   DataType::kInt64,      DataType::kUint64,
                                            DataType::kFloat16,  DataType::kFloat32,    DataType::kFloat64,
                                            DataType::kBfloat16, DataType::kFloat8e4m3, DataType::kFloat8e5m2};
  return all;
}

const std::vector<RedOp>& allOps() {
  static const std::vector<RedOp> all = {RedOp::sum(), RedOp::prod(), RedOp::max(),
                                         RedOp::min(), RedOp::avg(),  RedOp::preMulSum(0)};
  return all;
}

bool usesOp(CollType coll) {
  return coll == CollType::kAllReduce || coll == CollType::kReduceScatter || coll == CollType::kReduce;
}

bool supportsInPlace(CollType coll) {
  return coll != CollType::kAlltoAll && coll != CollType::kAlltoAllv && coll != CollType::kSend;
}

std::string describe(const Case& c, int nranks) {
  std::string s = std::string(algo::collName(c.coll)) + "(" + dataTypeName(c.type);
  if (usesOp(c.coll)) s += std::string(", ") + redOpName(c.op.kind);
  s += ", count " + std::to_string(c.count) + ", " + (c.inPlace ? "in-place" : "out-of-place") + ", root " +
       std::to_string(c.root) + ", " + std::to_string(nranks) + " ranks)";
  return s;
}

std::string runCase(Communicator& comm, const Case& c, BufferHome* home) {
  const int r = comm.rank(), n = comm.size();
  const size_t e = dataTypeSize(c.type), cnt = c.count, N = static_cast<size_t>(n);
  RedOp op = c.op;
  if (op.kind == RedOpKind::kPreMulSum) op.scalar = preMulScalar(r);
  Buffers b;
  Status st;
  size_t expectCount = 0;  // elements of recv to compare
  size_t recvOffset = 0;   // where the result starts inside recv (in-place layouts)

  auto big = [&](size_t elems) { return std::vector<unsigned char>(elems * e + 16, kSentinel); };
  // The address the call gets for a byte of b.send or b.recv: itself, or its copy in `home`.
  auto at = [&](const unsigned char* p) -> unsigned char* {
    auto* q = const_cast<unsigned char*>(p);
    if (!home || !p) return q;
    auto& buffer = p >= b.send.data() && p < b.send.data() + b.send.size() ? b.send : b.recv;
    return static_cast<unsigned char*>(home->address(buffer, q));
  };
  bool recvIsSend = false;  // in-place Scatter: the result is read from the send buffer
  switch (c.coll) {
    case CollType::kAllReduce: {
      b.recv = big(cnt);
      b.send = big(cnt);
      unsigned char* in = c.inPlace ? b.recv.data() : b.send.data();
      fillReduce(in, c, r, cnt);
      b.expected = big(cnt);
      Reduced red(c.op, c.type, n);
      for (size_t i = 0; i < cnt; ++i) red.store(b.expected.data(), i, i);
      st = comm.allReduce(at(in), at(b.recv.data()), cnt, c.type, op);
      expectCount = cnt;
      break;
    }
    case CollType::kReduceScatter: {
      b.recv = big(cnt * N);
      b.send = big(cnt * N);
      unsigned char* in = c.inPlace ? b.recv.data() : b.send.data();
      fillReduce(in, c, r, cnt * N);
      recvOffset = c.inPlace ? cnt * static_cast<size_t>(r) : 0;
      b.expected = big(cnt);
      Reduced red(c.op, c.type, n);
      for (size_t i = 0; i < cnt; ++i) red.store(b.expected.data(), i, cnt * static_cast<size_t>(r) + i);
      st = comm.reduceScatter(at(in), at(b.recv.data() + recvOffset * e), cnt, c.type, op);
      expectCount = cnt;
      break;
    }
    case CollType::kAllGather: {
      b.recv = big(cnt * N);
      b.send = big(cnt);
      unsigned char* in = c.inPlace ? b.recv.data() + cnt * r * e : b.send.data();
      fillMove(in, c.type, r, 0, cnt);
      b.expected = big(cnt * N);
      for (int k = 0; k < n; ++k) fillMove(b.expected.data() + cnt * k * e, c.type, k, 0, cnt);
      st = comm.allGather(at(in), at(b.recv.data()), cnt, c.type);
      expectCount = cnt * N;
      break;
    }
    case CollType::kAlltoAll: {
      b.recv = big(cnt * N);
      b.send = big(cnt * N);
      fillMove(b.send.data(), c.type, r, 0, cnt * N);
      b.expected = big(cnt * N);
      for (int k = 0; k < n; ++k) fillMove(b.expected.data() + cnt * k * e, c.type, k, cnt * r, cnt);
      st = comm.alltoAll(at(b.send.data()), at(b.recv.data()), cnt, c.type);
      expectCount = cnt * N;
      break;
    }
    case CollType::kAlltoAllv: {
      // Rank s sends (count + s + d) % 5 * count / 2 elements to rank d: uneven, some zero.
      auto amount = [&](int s, int d) { return ((cnt + s + d) % 5) * cnt / 2; };
      std::vector<size_t> sc(N), sd(N), rc(N), rd(N);
      size_t sendTotal = 0, recvTotal = 0;
      for (int k = 0; k < n; ++k) {
        sc[k] = amount(r, k);
        sd[k] = sendTotal;
        sendTotal += sc[k];
        rc[k] = amount(k, r);
        rd[k] = recvTotal;
        recvTotal += rc[k];
      }
      b.send = big(sendTotal);
      b.recv = big(recvTotal);
      fillMove(b.send.data(), c.type, r, 0, sendTotal);
      b.expected = big(recvTotal);
      for (int k = 0; k < n; ++k) {
        size_t offsetAtSender = 0;  // where rank k's block for me starts in k's send buffer
        for (int d = 0; d < r; ++d) offsetAtSender += amount(k, d);
        fillMove(b.expected.data() + rd[k] * e, c.type, k, offsetAtSender, rc[k]);
      }
      st = comm.alltoAllv(at(b.send.data()), sc.data(), sd.data(), at(b.recv.data()), rc.data(), rd.data(), c.type);
      expectCount = recvTotal;
      break;
    }
    case CollType::kBroadcast: {
      b.recv = big(cnt);
      b.send = big(cnt);
      const void* in = nullptr;  // non-root ranks may pass no send buffer
      if (r == c.root) {
        unsigned char* src = c.inPlace ? b.recv.data() : b.send.data();
        fillMove(src, c.type, r, 0, cnt);
        in = src;
      } else if (c.inPlace) {
        in = b.recv.data();
      }
      b.expected = big(cnt);
      fillMove(b.expected.data(), c.type, c.root, 0, cnt);
      st = comm.broadcast(at(static_cast<const unsigned char*>(in)), at(b.recv.data()), cnt, c.type, c.root);
      expectCount = cnt;
      break;
    }
    case CollType::kReduce: {
      b.recv = big(cnt);
      b.send = big(cnt);
      unsigned char* in = c.inPlace ? b.recv.data() : b.send.data();
      fillReduce(in, c, r, cnt);
      b.expected = b.recv;  // non-root: recv stays as it was
      if (r == c.root) {
        Reduced red(c.op, c.type, n);
        for (size_t i = 0; i < cnt; ++i) red.store(b.expected.data(), i, i);
      }
      st = comm.reduce(at(in), at(b.recv.data()), cnt, c.type, op, c.root);
      expectCount = cnt;
      break;
    }
    case CollType::kGather: {
      b.recv = big(cnt * N);
      b.send = big(cnt);
      unsigned char* in = c.inPlace ? b.recv.data() + cnt * r * e : b.send.data();
      fillMove(in, c.type, r, 0, cnt);
      b.expected = b.recv;
      if (r == c.root) {
        for (int k = 0; k < n; ++k) fillMove(b.expected.data() + cnt * k * e, c.type, k, 0, cnt);
      }
      st = comm.gather(at(in), at(b.recv.data()), cnt, c.type, c.root);
      expectCount = cnt * N;
      break;
    }
    case CollType::kScatter: {
      b.send = big(cnt * N);
      unsigned char* in = b.send.data();
      if (r == c.root) fillMove(in, c.type, r, 0, cnt * N);
      recvOffset = c.inPlace ? cnt * static_cast<size_t>(r) : 0;
      unsigned char* out = nullptr;
      if (c.inPlace) {
        out = in + recvOffset * e;
      } else {
        b.recv = big(cnt);
        out = b.recv.data();
      }
      b.expected = big(cnt);
      fillMove(b.expected.data(), c.type, c.root, cnt * r, cnt);
      st = comm.scatter(at(in), at(out), cnt, c.type, c.root);
      recvIsSend = c.inPlace;
      expectCount = cnt;
      break;
    }
    case CollType::kSend: {
      // A ring of Send/Recv pairs in one group: to r+1, from r-1.
      b.send = big(cnt);
      b.recv = big(cnt);
      fillMove(b.send.data(), c.type, r, 0, cnt);
      b.expected = big(cnt);
      fillMove(b.expected.data(), c.type, (r - 1 + n) % n, 0, cnt);
      st = groupStart();
      if (st.isOk()) st = comm.send(at(b.send.data()), cnt, c.type, (r + 1) % n);
      if (st.isOk()) st = comm.recv(at(b.recv.data()), cnt, c.type, (r - 1 + n) % n);
      Status end = groupEnd();
      if (st.isOk()) st = end;
      expectCount = cnt;
      break;
    }
    default:
      return fail(c, r, n, "not a tested collective");
  }
  if (!st.isOk()) return fail(c, r, n, "returned error: " + st.message());
  if (home) {
    std::string failed = home->finish();
    if (!failed.empty()) return fail(c, r, n, failed);
  }
  if (recvIsSend) b.recv = b.send;
  size_t first = 0;
  size_t wrong = mismatches(b.recv.data() + recvOffset * e, b.expected.data(), expectCount, c.type, &first);
  if (wrong > 0) {
    return fail(c, r, n, std::to_string(wrong) + " wrong elements, first at " + std::to_string(first));
  }
  // Bytes past the result must be untouched.
  const unsigned char* tail = b.recv.data() + (recvOffset + expectCount) * e;
  if (!c.inPlace && c.coll != CollType::kScatter && tail[0] != kSentinel) {
    return fail(c, r, n, "wrote past the end of the receive buffer");
  }
  return "";
}

}  // namespace chorus::testing
