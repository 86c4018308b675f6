// The perf sweep on Intel oneCCL: `mpirun -np N oneccl_perf <collective> [nccl-tests flags]` (Intel MPI's
// mpirun) prints the same table as chorus's <collective>_perf, from the same runner. oneCCL's C++ API on host
// buffers: allreduce, reduce_scatter, allgather, alltoall, broadcast, reduce. MPI starts the ranks, hands rank 0's
// key-value store address to the others and carries the runner's own exchanges; every timed call is oneCCL's.
// oneCCL chooses its algorithms itself unless its settings force one (CCL_ALLREDUCE=ring, CCL_ATL_TRANSPORT, ...).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <oneapi/ccl.hpp>
#include <string>
#include <vector>

#include "perf/backend.hpp"
#include "perf/baselines/mpi_world.hpp"
#include "perf/data.hpp"
#include "perf/options.hpp"

namespace chorus::perf {
namespace {

bool cclType(ncclDataType_t t, ccl::datatype* out) {
  switch (t) {
    case ncclInt8:
      *out = ccl::datatype::int8;
      return true;
    case ncclUint8:
      *out = ccl::datatype::uint8;
      return true;
    case ncclInt32:
      *out = ccl::datatype::int32;
      return true;
    case ncclUint32:
      *out = ccl::datatype::uint32;
      return true;
    case ncclInt64:
      *out = ccl::datatype::int64;
      return true;
    case ncclUint64:
      *out = ccl::datatype::uint64;
      return true;
    case ncclFloat16:
      *out = ccl::datatype::float16;
      return true;
    case ncclFloat32:
      *out = ccl::datatype::float32;
      return true;
    case ncclFloat64:
      *out = ccl::datatype::float64;
      return true;
    case ncclBfloat16:
      *out = ccl::datatype::bfloat16;
      return true;
    default:
      return false;
  }
}

bool cclOp(int op, ccl::reduction* out) {
  switch (op) {
    case ncclSum:
      *out = ccl::reduction::sum;
      return true;
    case ncclProd:
      *out = ccl::reduction::prod;
      return true;
    case ncclMax:
      *out = ccl::reduction::max;
      return true;
    case ncclMin:
      *out = ccl::reduction::min;
      return true;
    case ncclAvg:
      *out = ccl::reduction::avg;
      return true;
    default:
      return false;  // no pre-multiplied sum
  }
}

std::string cclVersion() {
  const ccl::library_version v = ccl::get_library_version();
  return "oneCCL " + std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.update);
}

class OnecclBackend final : public MpiWorldBackend {
 public:
  OnecclBackend() {
    ccl::init();
    ccl::shared_ptr_class<ccl::kvs> kvs;
    ccl::kvs::address_type address;
    if (rank_ == 0) {
      kvs = ccl::create_main_kvs();
      address = kvs->get_address();
    }
    checkMpi(MPI_Bcast(address.data(), static_cast<int>(address.size()), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (rank_ != 0) kvs = ccl::create_kvs(address);
    comm_ = std::make_unique<ccl::communicator>(ccl::create_communicator(size_, rank_, kvs));
  }
  std::string describe() const override { return cclVersion(); }

  bool supports(const Collective& coll, ncclDataType_t type, int op) const override {
    ccl::datatype t;
    ccl::reduction r;
    const bool collective = coll.id == CollId::kAllReduce || coll.id == CollId::kReduceScatter ||
                            coll.id == CollId::kAllGather || coll.id == CollId::kAlltoAll ||
                            coll.id == CollId::kBroadcast || coll.id == CollId::kReduce;
    return collective && cclType(type, &t) && (!coll.usesOp || cclOp(op, &r));
  }

  void launch(const Collective& coll, const std::vector<Pointers>& ptrs, size_t count, ncclDataType_t type, int op,
              int root) override {
    const Pointers& p = ptrs[0];
    ccl::datatype t{};
    ccl::reduction r{};
    cclType(type, &t);
    if (coll.usesOp) cclOp(op, &r);
    const ccl::communicator& c = *comm_;
    try {
      switch (coll.id) {
        case CollId::kAllReduce:
          ccl::allreduce(p.send, p.recv, count, t, r, c).wait();
          break;
        case CollId::kReduceScatter:
          ccl::reduce_scatter(p.send, p.recv, count, t, r, c).wait();
          break;
        case CollId::kAllGather:
          ccl::allgather(p.send, p.recv, count, t, c).wait();
          break;
        case CollId::kAlltoAll:
          ccl::alltoall(p.send, p.recv, count, t, c).wait();
          break;
        case CollId::kBroadcast:
          // oneCCL's broadcast works in place; out of place the root first copies its input, as NCCL's semantics ask.
          if (rank_ == root && p.send != p.recv) memcpy(p.recv, p.send, count * typeSize(type));
          ccl::broadcast(p.recv, count, t, root, c).wait();
          break;
        case CollId::kReduce:
          ccl::reduce(p.send, p.recv, count, t, r, root, c).wait();
          break;
        default:
          break;  // not offered (supports)
      }
    } catch (const std::exception& e) {
      fprintf(stderr, "oneccl_perf: %s failed: %s\n", coll.name, e.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }

 private:
  std::unique_ptr<ccl::communicator> comm_;
};

}  // namespace
}  // namespace chorus::perf

int main(int argc, char** argv) {
  using namespace chorus::perf;
  return runMpiBaseline(
      argc, argv, "oneccl_perf", "all_reduce|reduce_scatter|all_gather|alltoall|broadcast|reduce",
      [] { return std::make_unique<OnecclBackend>(); }, [] { return cclVersion() + " (over " + mpiLibrary() + ")"; });
}
