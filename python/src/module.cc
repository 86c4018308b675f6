// The `chorus._chorus` extension: communicators and their calls on any buffer-protocol or DLPack object (numpy
// arrays, torch CPU tensors), without copies. Python's chorus/__init__.py is its public face.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/version.hpp"
#include "python_store.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace chorus::python {
namespace {

// A failed call, raised in Python as chorus.Error with the code's name in `.code`.
struct Failure {
  Status status;
};

const char* codeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kCudaError:
      return "cuda_error";
    case ErrorCode::kSystemError:
      return "system_error";
    case ErrorCode::kInternalError:
      return "internal_error";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kInvalidUsage:
      return "invalid_usage";
    case ErrorCode::kRemoteError:
      return "remote_error";
    case ErrorCode::kInProgress:
      return "in_progress";
    case ErrorCode::kTimeout:
      return "timeout";
  }
  return "unknown";
}

void check(const Status& st) {
  if (!st.isOk()) throw Failure{st};
}

using ReadOnly = nb::ndarray<nb::ro, nb::device::cpu>;
using Writable = nb::ndarray<nb::device::cpu>;

// An argument's name in errors ("all_reduce recv"), put together only for an error.
struct ArgName {
  const char* call;
  const char* role;
  std::string text() const { return std::string(call) + " " + role; }
};

template <typename Array>
DataType dataTypeOf(const Array& a, const ArgName& what) {
  const nb::dlpack::dtype t = a.dtype();
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(t.code);
  if (t.lanes == 1) {
    if (code == Code::Int && t.bits == 8) return DataType::kInt8;
    if (code == Code::UInt && t.bits == 8) return DataType::kUint8;
    if (code == Code::Bool && t.bits == 8) return DataType::kUint8;
    if (code == Code::Int && t.bits == 32) return DataType::kInt32;
    if (code == Code::UInt && t.bits == 32) return DataType::kUint32;
    if (code == Code::Int && t.bits == 64) return DataType::kInt64;
    if (code == Code::UInt && t.bits == 64) return DataType::kUint64;
    if (code == Code::Float && t.bits == 16) return DataType::kFloat16;
    if (code == Code::Float && t.bits == 32) return DataType::kFloat32;
    if (code == Code::Float && t.bits == 64) return DataType::kFloat64;
    if (code == Code::Bfloat && t.bits == 16) return DataType::kBfloat16;
  }
  throw Failure{invalidArgument(what.text() + ": element type (DLPack code " + std::to_string(t.code) + ", " +
                                std::to_string(t.bits) +
                                " bits) is none of chorus's: int8, uint8, bool, int32, "
                                "uint32, int64, uint64, float16, bfloat16, float32, float64")};
}

// A buffer chorus reads or writes in place: its element type, count and address, and the array it came from (held
// while a call may use it, so that its exporter can neither free nor resize the memory). Non-contiguous arrays are
// refused rather than copied, so a result never lands in a temporary.
struct Buffer {
  void* data = nullptr;
  size_t count = 0;
  DataType type = DataType::kFloat32;
  nb::object array;                   // the Python object
  std::optional<ReadOnly> readView;   // the view of it chorus reads through
  std::optional<Writable> writeView;  // or writes through
};

template <typename Array>
void describe(const Array& a, const ArgName& what, Buffer* b) {
  // An empty array has nothing to be contiguous about (numpy gives it strides of 0).
  size_t expected = 1;
  for (size_t d = a.ndim(); a.size() > 0 && d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != static_cast<int64_t>(expected)) {
      throw Failure{invalidArgument(what.text() + ": not contiguous (chorus works in place; pass a "
                                                  "contiguous array, e.g. numpy.ascontiguousarray)")};
    }
    expected *= a.shape(d);
  }
  b->data = const_cast<void*>(static_cast<const void*>(a.data()));
  b->count = a.size();
  b->type = dataTypeOf(a, what);
}

[[noreturn]] void notAnArray(const ArgName& what) {
  throw Failure{invalidArgument(what.text() +
                                ": not an array in host memory (a numpy array, a torch CPU tensor, or any "
                                "buffer-protocol or DLPack object)")};
}

// An array a call reads. No implicit conversion: a copy would be read, not the caller's array.
Buffer inputOf(nb::handle h, const ArgName& what) {
  Buffer b;
  ReadOnly view;
  if (!nb::try_cast(h, view, /*convert=*/false)) notAnArray(what);
  describe(view, what, &b);
  b.readView = std::move(view);
  b.array = nb::borrow(h);
  return b;
}

// An array a call writes: refused before a byte moves where it is read-only (a numpy array with writeable False,
// one over bytes or a read-only mmap, any exporter that refuses a writable view).
Buffer outputOf(nb::handle h, const ArgName& what) {
  Buffer b;
  Writable view;
  if (!nb::try_cast(h, view, /*convert=*/false)) {
    ReadOnly readOnly;
    if (nb::try_cast(h, readOnly, /*convert=*/false)) {
      throw Failure{invalidArgument(what.text() + ": read-only (the call writes into it; pass a writable array)")};
    }
    notAnArray(what);
  }
  describe(view, what, &b);
  b.writeView = std::move(view);
  b.array = nb::borrow(h);
  return b;
}

void sameType(const Buffer& a, const Buffer& b, const char* call) {
  if (a.type != b.type) {
    throw Failure{invalidArgument(std::string(call) + ": send and recv have different element types (" +
                                  dataTypeName(a.type) + " and " + dataTypeName(b.type) + ")")};
  }
}

void countIs(size_t actual, size_t expected, const char* call, const char* what) {
  if (actual != expected) {
    throw Failure{invalidArgument(std::string(call) + ": " + what + " holds " + std::to_string(actual) +
                                  " elements, expected " + std::to_string(expected))};
  }
}

RedOp redOpOf(const std::string& name) {
  if (name == "sum") return RedOp::sum();
  if (name == "prod") return RedOp::prod();
  if (name == "max") return RedOp::max();
  if (name == "min") return RedOp::min();
  if (name == "avg") return RedOp::avg();
  throw Failure{invalidArgument("reduction '" + name + "' is none of: sum, prod, max, min, avg")};
}

// An async call in flight: its Request and the arrays it reads and writes, kept alive until it finished.
class PyRequest {
 public:
  PyRequest(Request request, std::vector<Buffer> keepAlive)
      : request_(std::move(request)), keepAlive_(std::move(keepAlive)) {}
  void wait() {
    Status st;
    {
      nb::gil_scoped_release release;
      st = request_.wait();
    }
    keepAlive_.clear();
    check(st);
  }
  bool isCompleted() const { return request_.test(); }

 private:
  Request request_;
  std::vector<Buffer> keepAlive_;
};

// The C++ Communicator for chorus/_communicator.py, with the GIL released while a call runs.
class PyCommunicator {
 public:
  explicit PyCommunicator(std::unique_ptr<Communicator> comm) : comm_(std::move(comm)) {}

  Communicator& comm() {
    if (!comm_) throw Failure{invalidUsage("the communicator was closed")};
    return *comm_;
  }
  void close() {
    nb::gil_scoped_release release;
    comm_.reset();
  }

  // Runs `args` with the GIL released, or submits it and returns a Request holding `arrays` alive.
  nb::object call(bool async, std::vector<Buffer> arrays, const CollArgs& args) {
    Communicator& c = comm();
    if (async) return nb::cast(PyRequest(c.submit(args), std::move(arrays)));
    Status st;
    {
      nb::gil_scoped_release release;
      st = c.run(args);
    }
    check(st);
    return nb::none();
  }

 private:
  std::unique_ptr<Communicator> comm_;
};

// How a collective's arrays relate: the one thing the binding knows of each collective (chorus/_communicator.py
// gives each its Python signature and submits it here).
enum class Counts {
  kEqual,                 // recv holds send's count (the operation's count)
  kRecvIsSendTimesRanks,  // AllGather, Gather: the count is send's
  kSendIsRecvTimesRanks,  // ReduceScatter, Scatter: the count is recv's
  kEqualInRankBlocks,     // AlltoAll: equal, in one block per rank (the count is a block's)
  kPerPeer,               // AlltoAllv: counts per peer, packed
  kOneArray,              // Broadcast, Send, Recv: the count is the array's
};
enum class Needed { kBoth, kSendOnRoot, kRecvOnRoot };

struct ArrayRule {
  const char* call;
  const char* send;  // its name in errors; nullptr: no send array
  const char* recv;  // nullptr: no recv array
  Counts counts;
  bool inPlace = false;  // recv None: send receives the result
  Needed needed = Needed::kBoth;
  bool sendIsRecv = false;  // one array is both (Broadcast)
};

// In the order of chorus::Collective.
constexpr ArrayRule kArrayRules[] = {
    {"all_reduce", "send", "recv", Counts::kEqual, true},
    {"reduce_scatter", "send", "recv", Counts::kSendIsRecvTimesRanks},
    {"all_gather", "send", "recv", Counts::kRecvIsSendTimesRanks},
    {"all_to_all", "send", "recv", Counts::kEqualInRankBlocks},
    {"all_to_all_v", "send", "recv", Counts::kPerPeer},
    {"broadcast", nullptr, "buffer", Counts::kOneArray, false, Needed::kBoth, true},
    {"reduce", "send", "recv", Counts::kEqual, true},
    {"gather", "send", "recv", Counts::kRecvIsSendTimesRanks, false, Needed::kRecvOnRoot},
    {"scatter", "send", "recv", Counts::kSendIsRecvTimesRanks, false, Needed::kSendOnRoot},
    {"send", "buffer", nullptr, Counts::kOneArray},
    {"recv", nullptr, "buffer", Counts::kOneArray},
};
static_assert(std::size(kArrayRules) == static_cast<size_t>(Collective::kRecv) + 1, "a rule per collective");

// Checks a call's arrays against each other by its rule and runs or submits it: every call of the module but
// barrier goes through here.
nb::object submit(PyCommunicator& self, int collective, nb::handle sendArg, nb::handle recvArg, const std::string& op,
                  int root, bool async, std::optional<std::vector<size_t>> sendCountsArg,
                  std::optional<std::vector<size_t>> recvCountsArg) {
  if (collective < 0 || static_cast<size_t>(collective) >= std::size(kArrayRules))
    throw Failure{invalidArgument("submit: no collective " + std::to_string(collective))};
  const auto coll = static_cast<Collective>(collective);
  const ArrayRule& rule = kArrayRules[collective];
  const char* call = rule.call;
  const size_t n = static_cast<size_t>(self.comm().size());
  const bool isRoot = self.comm().rank() == root;
  const bool needSend = rule.send && (rule.needed != Needed::kSendOnRoot || isRoot);
  const bool needRecv = rule.recv && (rule.needed != Needed::kRecvOnRoot || isRoot);
  auto needed = [&](nb::handle h, const char* what) {
    if (h.is_none()) throw Failure{invalidArgument(std::string(call) + ": the root needs a " + what + " array")};
  };
  Buffer s, r;
  if (rule.inPlace && recvArg.is_none()) {
    s = outputOf(sendArg, {call, "send (in place: it receives the result)"});
    r = s;
  } else {
    if (needSend) {
      needed(sendArg, rule.send);
      s = inputOf(sendArg, {call, rule.send});
    }
    if (needRecv) {
      needed(recvArg, rule.recv);
      r = outputOf(recvArg, {call, rule.recv});
    }
    if (needSend && needRecv) sameType(s, r, call);
  }
  if (rule.sendIsRecv) s = r;
  size_t count = needSend ? s.count : r.count;
  const std::vector<size_t> sendCounts = sendCountsArg.value_or(std::vector<size_t>{});
  const std::vector<size_t> recvCounts = recvCountsArg.value_or(std::vector<size_t>{});
  std::vector<size_t> sendDispls, recvDispls;
  switch (rule.counts) {
    case Counts::kEqual:
      countIs(r.count, s.count, call, "recv");
      break;
    case Counts::kRecvIsSendTimesRanks:
      if (needRecv) countIs(r.count, s.count * n, call, "recv (send's count times the ranks)");
      break;
    case Counts::kSendIsRecvTimesRanks:
      if (needSend) countIs(s.count, r.count * n, call, "send (recv's count times the ranks)");
      count = r.count;
      break;
    case Counts::kEqualInRankBlocks:
      countIs(r.count, s.count, call, "recv");
      if (s.count % n != 0) {
        throw Failure{invalidArgument(std::string(call) + ": " + std::to_string(s.count) +
                                      " elements do not split evenly over " + std::to_string(n) + " ranks")};
      }
      count = s.count / n;
      break;
    case Counts::kPerPeer: {
      if (sendCounts.size() != n || recvCounts.size() != n) {
        throw Failure{invalidArgument(std::string(call) + ": the counts must have one entry per rank (" +
                                      std::to_string(n) + ")")};
      }
      size_t sendTotal = 0, recvTotal = 0;
      for (size_t i = 0; i < n; ++i) {
        sendDispls.push_back(sendTotal);
        recvDispls.push_back(recvTotal);
        sendTotal += sendCounts[i];
        recvTotal += recvCounts[i];
      }
      if (sendTotal > s.count || recvTotal > r.count) {
        throw Failure{invalidArgument(std::string(call) + ": the counts add up to more than the arrays hold")};
      }
      break;
    }
    case Counts::kOneArray:
      break;
  }
  const DataType type = needSend ? s.type : r.type;
  // The async call copies counts and displacements; the blocking one reads them before it returns.
  const CollArgs args = coll == Collective::kAlltoAllv
                            ? CollArgs::alltoAllv(s.data, sendCounts.data(), sendDispls.data(), r.data,
                                                  recvCounts.data(), recvDispls.data(), type)
                            : CollArgs(coll, s.data, r.data, count, type, redOpOf(op), root);
  std::vector<Buffer> arrays;  // what an async call holds alive
  if (async) arrays = {std::move(s), std::move(r)};
  return self.call(async, std::move(arrays), args);
}

void bindSubmit(nb::module_& m, nb::class_<PyCommunicator>& cls) {
  nb::enum_<Collective>(m, "Collective", "The operation of a submit (chorus::Collective).")
      .value("all_reduce", Collective::kAllReduce)
      .value("reduce_scatter", Collective::kReduceScatter)
      .value("all_gather", Collective::kAllGather)
      .value("all_to_all", Collective::kAlltoAll)
      .value("all_to_all_v", Collective::kAlltoAllv)
      .value("broadcast", Collective::kBroadcast)
      .value("reduce", Collective::kReduce)
      .value("gather", Collective::kGather)
      .value("scatter", Collective::kScatter)
      .value("send", Collective::kSend)
      .value("recv", Collective::kRecv);
  cls.def("submit", &submit, "collective"_a, "send"_a.none(), "recv"_a.none(), "op"_a = "sum", "root"_a = 0,
          "async_op"_a = false, "send_counts"_a = nb::none(), "recv_counts"_a = nb::none(),
          "Checks the arrays of one operation (`collective`: a Collective's value) against each other and runs it "
          "(chorus::Communicator::run), or "
          "submits it and returns a Request that holds them. The arrays are numpy arrays, torch CPU tensors or any "
          "buffer-protocol or DLPack object; recv None makes AllReduce and Reduce in place.");
  cls.def(
      "barrier",
      [](PyCommunicator& self, bool async) -> nb::object {
        Communicator& c = self.comm();
        if (async) return nb::cast(PyRequest(c.barrierAsync(), {}));
        Status st;
        {
          nb::gil_scoped_release release;
          st = c.barrier();
        }
        check(st);
        return nb::none();
      },
      "async_op"_a = false, "Returns once every rank has called it.");
}

std::unique_ptr<Communicator> created(const std::function<Status(std::unique_ptr<Communicator>*)>& create) {
  std::unique_ptr<Communicator> comm;
  Status st;
  {
    nb::gil_scoped_release release;
    st = create(&comm);
  }
  check(st);
  return comm;
}

CommConfig configOf(double timeout, const std::string& algorithm) {
  CommConfig config;
  config.timeoutSeconds = timeout;
  config.algorithm = algorithm;
  return config;
}

}  // namespace
}  // namespace chorus::python

NB_MODULE(_chorus, m) {
  using namespace chorus;
  using namespace chorus::python;
  m.doc() = "chorus collectives on host arrays (numpy, torch CPU tensors, any buffer-protocol or DLPack object)";
  m.attr("__version__") = chorus::version();

  static nb::object errorType = nb::steal(PyErr_NewExceptionWithDoc(
      "chorus.Error", "A failed chorus call; `code` names the cause (timeout, remote_error, invalid_argument, ...).",
      PyExc_RuntimeError, nullptr));
  m.attr("Error") = errorType;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Failure& f) {
      nb::object error = errorType(f.status.message());
      error.attr("code") = codeName(f.status.code());
      PyErr_SetObject(errorType.ptr(), error.ptr());
    }
  });

  nb::class_<UniqueId>(m, "UniqueId", "The token every rank of a new communicator receives (128 bytes).")
      .def_static(
          "create",
          [] {
            UniqueId id;
            check(UniqueId::create(&id));
            return id;
          },
          "A new id; this process runs the rendezvous root and must live until every rank joined.")
      .def_static(
          "from_bytes",
          [](nb::bytes b) {
            UniqueId id;
            if (b.size() != id.bytes.size()) {
              throw Failure{invalidArgument("a UniqueId is " + std::to_string(id.bytes.size()) + " bytes, not " +
                                            std::to_string(b.size()))};
            }
            std::memcpy(id.bytes.data(), b.c_str(), id.bytes.size());
            return id;
          },
          "bytes"_a)
      .def("to_bytes", [](const UniqueId& id) { return nb::bytes(id.bytes.data(), id.bytes.size()); })
      .def("__repr__", [](const UniqueId& id) { return "<chorus.UniqueId root " + id.rootAddress() + ">"; });

  nb::class_<PyRequest>(m, "Request", "An async call in flight.")
      .def("wait", &PyRequest::wait, "Blocks until the call finished; raises chorus.Error if it failed.")
      .def("is_completed", &PyRequest::isCompleted, "True once the call finished.");

  auto cls = nb::class_<PyCommunicator>(m, "Communicator", "A group of ranks that run collectives together.");
  cls.def(
         "__init__",
         [](PyCommunicator* self, const UniqueId& id, int nranks, int rank, double timeout,
            const std::string& algorithm) {
           CommConfig config = configOf(timeout, algorithm);
           new (self) PyCommunicator(created([&](std::unique_ptr<Communicator>* out) {
             return Communicator::create(id, nranks, rank, out, config);
           }));
         },
         "unique_id"_a, "nranks"_a, "rank"_a, "timeout"_a = 0.0, "algorithm"_a = "",
         "Joins communicator `unique_id` as `rank` of `nranks` (collective). timeout: seconds a call may wait "
         "without progress (0: CHORUS_TIMEOUT); algorithm: rules in CHORUS_ALGO's syntax.")
      .def_static(
          "from_environment",
          [] { return PyCommunicator(created([](auto* out) { return Communicator::createFromEnvironment(out); })); },
          "Rank, size and rendezvous from the launcher: torchrun, mpirun, Slurm, or CHORUS_COMM_ID.")
      .def_static(
          "from_store",
          [](nb::object store, const std::string& prefix, int nranks, int rank, double timeout,
             const std::string& algorithm) {
            auto adapter = std::make_shared<PythonStore>(std::move(store));
            CommConfig config = configOf(timeout, algorithm);
            return PyCommunicator(created([&](std::unique_ptr<Communicator>* out) {
              return Communicator::create(adapter, prefix, nranks, rank, out, config);
            }));
          },
          "store"_a, "prefix"_a, "nranks"_a, "rank"_a, "timeout"_a = 0.0, "algorithm"_a = "",
          "Ranks meet through `store`: any object with set(key: str, value: bytes), get(key: str) -> bytes that "
          "raises KeyError or returns None while the key is absent, and add(key: str, delta: int) -> int; "
          "optional compare_set(key, expected, desired) -> bytes, which agree() uses (torch.distributed's TCPStore "
          "has them all).")
      .def_prop_ro("rank", [](PyCommunicator& self) { return self.comm().rank(); })
      .def_prop_ro("size", [](PyCommunicator& self) { return self.comm().size(); })
      .def(
          "split",
          [](PyCommunicator& self, int color, int key) -> std::optional<PyCommunicator> {
            std::unique_ptr<Communicator> child =
                created([&](std::unique_ptr<Communicator>* out) { return self.comm().split(color, key, out); });
            if (!child) return std::nullopt;
            return PyCommunicator(std::move(child));
          },
          "color"_a, "key"_a = 0,
          "Ranks with the same color form a new communicator ordered by (key, rank); color -1 joins none (None).")
      .def(
          "agree",
          [](PyCommunicator& self, uint32_t value, double grace) {
            std::vector<int> members;
            Status st;
            {
              nb::gil_scoped_release release;  // a Python store takes the GIL on chorus's calls
              st = self.comm().agree(&value, &members, grace);
            }
            check(st);
            return std::make_pair(value, members);
          },
          "value"_a, "grace"_a = 1.0,
          "Fault-tolerant agreement (MPI_Comm_agree): returns (AND of the callers' values, their ranks). A rank not "
          "calling within `grace` seconds of another is left out; also after a failure or abort().")
      .def(
          "shrink",
          [](PyCommunicator& self, const std::vector<int>& excluded) {
            Communicator& comm = self.comm();
            return PyCommunicator(
                created([&](std::unique_ptr<Communicator>* out) { return comm.shrink(excluded, out); }));
          },
          "excluded"_a,
          "A communicator of the ranks not in `excluded`, renumbered in order; also after a rank died or abort().")
      .def(
          "abort", [](PyCommunicator& self) { self.comm().abort(); },
          "Ends every call of this communicator with an error; safe from any thread.")
      .def("close", &PyCommunicator::close, "Destroys the communicator (waits for its async calls).")
      .def("__enter__", [](nb::object self) { return self; })
      .def("__exit__", [](PyCommunicator& self, nb::args) { self.close(); });
  bindSubmit(m, cls);
}
