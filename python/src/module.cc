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

template <typename Array>
DataType dataTypeOf(const Array& a, const char* what) {
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
  throw Failure{invalidArgument(std::string(what) + ": element type (DLPack code " + std::to_string(t.code) + ", " +
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
void describe(const Array& a, const char* what, Buffer* b) {
  // An empty array has nothing to be contiguous about (numpy gives it strides of 0).
  size_t expected = 1;
  for (size_t d = a.ndim(); a.size() > 0 && d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != static_cast<int64_t>(expected)) {
      throw Failure{invalidArgument(std::string(what) + ": not contiguous (chorus works in place; pass a "
                                                        "contiguous array, e.g. numpy.ascontiguousarray)")};
    }
    expected *= a.shape(d);
  }
  b->data = const_cast<void*>(static_cast<const void*>(a.data()));
  b->count = a.size();
  b->type = dataTypeOf(a, what);
}

[[noreturn]] void notAnArray(const char* what) {
  throw Failure{invalidArgument(std::string(what) +
                                ": not an array in host memory (a numpy array, a torch CPU tensor, or any "
                                "buffer-protocol or DLPack object)")};
}

// An array a call reads. No implicit conversion: a copy would be read, not the caller's array.
Buffer inputOf(nb::handle h, const char* what) {
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
Buffer outputOf(nb::handle h, const char* what) {
  Buffer b;
  Writable view;
  if (!nb::try_cast(h, view, /*convert=*/false)) {
    ReadOnly readOnly;
    if (nb::try_cast(h, readOnly, /*convert=*/false)) {
      throw Failure{
          invalidArgument(std::string(what) + ": read-only (the call writes into it; pass a writable array)")};
    }
    notAnArray(what);
  }
  describe(view, what, &b);
  b.writeView = std::move(view);
  b.array = nb::borrow(h);
  return b;
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

// Every call goes through one binding: chorus/_communicator.py checks each collective's arrays against each other and
// submits them here with the operation's other fields.
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
  nb::class_<Buffer>(m, "Array", "An array a call reads or writes in place, checked once and held while it may.")
      .def_ro("count", &Buffer::count, "Its elements.")
      .def_prop_ro(
          "dtype", [](const Buffer& b) { return std::string(dataTypeName(b.type)); }, "chorus's name of its type.");
  m.def(
      "array_read", [](nb::handle h, const std::string& what) { return inputOf(h, what.c_str()); }, "array"_a,
      "what"_a, "`array` as an Array a call reads; chorus.Error naming `what` if it cannot be one.");
  m.def(
      "array_written", [](nb::handle h, const std::string& what) { return outputOf(h, what.c_str()); }, "array"_a,
      "what"_a, "`array` as an Array a call writes; chorus.Error naming `what` if it cannot be one (read-only too).");
  cls.def(
      "submit",
      [](PyCommunicator& self, Collective coll, const Buffer* send, const Buffer* recv, size_t count,
         const std::string& op, int root, const std::vector<size_t>& sendCounts, const std::vector<size_t>& sendDispls,
         const std::vector<size_t>& recvCounts, const std::vector<size_t>& recvDispls, bool async) {
        std::vector<Buffer> arrays;
        if (send) arrays.push_back(*send);
        if (recv) arrays.push_back(*recv);
        if (arrays.empty()) throw Failure{invalidArgument("submit: a call needs an array")};
        const DataType type = arrays.front().type;
        void* sendData = send ? send->data : nullptr;
        void* recvData = recv ? recv->data : nullptr;
        // The async call copies counts and displacements; the blocking one reads them before it returns.
        const CollArgs args =
            coll == Collective::kAlltoAllv
                ? CollArgs::alltoAllv(sendData, sendCounts.data(), sendDispls.data(), recvData, recvCounts.data(),
                                      recvDispls.data(), type)
                : CollArgs(coll, sendData, recvData, count, type, redOpOf(op), root);
        return self.call(async, std::move(arrays), args);
      },
      "collective"_a, "send"_a.none(), "recv"_a.none(), "count"_a, "op"_a = "sum", "root"_a = 0,
      "send_counts"_a = std::vector<size_t>{}, "send_displs"_a = std::vector<size_t>{},
      "recv_counts"_a = std::vector<size_t>{}, "recv_displs"_a = std::vector<size_t>{}, "async_op"_a = false,
      "Runs one operation (chorus::Communicator::run), or submits it and returns a Request that holds its arrays.");
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
