// The perf sweep on an MPI library: `mpirun -np N mpi_perf <collective> [nccl-tests flags]` prints the same table as
// chorus's <collective>_perf, from the same runner (timing, data check, bus bandwidth). Built once per MPI found
// (Open MPI as mpi_perf, MPICH as mpi_perf_mpich, Intel MPI as mpi_perf_impi), each run with its own mpirun; Open
// MPI's transport (vader shared memory, tcp, UCX) is chosen with mpirun's --mca options.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "perf/backend.hpp"
#include "perf/baselines/mpi_world.hpp"
#include "perf/options.hpp"

namespace chorus::perf {
namespace {

MPI_Datatype mpiType(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return MPI_INT8_T;
    case ncclUint8:
      return MPI_UINT8_T;
    case ncclInt32:
      return MPI_INT32_T;
    case ncclUint32:
      return MPI_UINT32_T;
    case ncclInt64:
      return MPI_INT64_T;
    case ncclUint64:
      return MPI_UINT64_T;
    case ncclFloat32:
      return MPI_FLOAT;
    case ncclFloat64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;  // MPI has no fp16 / bf16
  }
}

MPI_Op mpiOp(int op) {
  switch (op) {
    case ncclSum:
      return MPI_SUM;
    case ncclProd:
      return MPI_PROD;
    case ncclMax:
      return MPI_MAX;
    case ncclMin:
      return MPI_MIN;
    default:
      return MPI_OP_NULL;  // no avg, no pre-multiplied sum
  }
}

void check(int err, const char* what) { checkMpi(err, what); }

class MpiBackend final : public MpiWorldBackend {
 public:
  std::string describe() const override { return mpiLibrary(); }

  bool supports(const Collective& coll, ncclDataType_t type, int op) const override {
    return mpiType(type) != MPI_DATATYPE_NULL && (!coll.usesOp || mpiOp(op) != MPI_OP_NULL);
  }

  void launch(const Collective& coll, const std::vector<Pointers>& ptrs, size_t count, ncclDataType_t type, int op,
              int root) override {
    const Pointers& p = ptrs[0];
    const MPI_Datatype t = mpiType(type);
    const int n = static_cast<int>(count);
    const size_t bytes = count * typeBytes(type);
    const bool inPlace = p.send == p.recv;
    switch (coll.id) {
      case CollId::kAllReduce:
        check(MPI_Allreduce(inPlace ? MPI_IN_PLACE : p.send, p.recv, n, t, mpiOp(op), MPI_COMM_WORLD), "MPI_Allreduce");
        break;
      case CollId::kReduceScatter:
        if (p.recv == p.send + bytes * rank_) {
          // MPI's in-place result lands at the start of the buffer; NCCL's at the rank's block.
          check(MPI_Reduce_scatter_block(MPI_IN_PLACE, const_cast<char*>(p.send), n, t, mpiOp(op), MPI_COMM_WORLD),
                "MPI_Reduce_scatter_block");
          if (rank_ != 0) memmove(p.recv, p.send, bytes);
        } else {
          check(MPI_Reduce_scatter_block(p.send, p.recv, n, t, mpiOp(op), MPI_COMM_WORLD), "MPI_Reduce_scatter_block");
        }
        break;
      case CollId::kAllGather:
        check(
            MPI_Allgather(p.send == p.recv + bytes * rank_ ? MPI_IN_PLACE : p.send, n, t, p.recv, n, t, MPI_COMM_WORLD),
            "MPI_Allgather");
        break;
      case CollId::kAlltoAll:
        check(MPI_Alltoall(inPlace ? MPI_IN_PLACE : p.send, n, t, p.recv, n, t, MPI_COMM_WORLD), "MPI_Alltoall");
        break;
      case CollId::kBroadcast:
        // MPI_Bcast works in place; out of place the root first copies its input, as NCCL's semantics ask.
        if (rank_ == root && !inPlace) memcpy(p.recv, p.send, bytes);
        check(MPI_Bcast(p.recv, n, t, root, MPI_COMM_WORLD), "MPI_Bcast");
        break;
      case CollId::kReduce:
        check(
            MPI_Reduce(inPlace && rank_ == root ? MPI_IN_PLACE : p.send, p.recv, n, t, mpiOp(op), root, MPI_COMM_WORLD),
            "MPI_Reduce");
        break;
      case CollId::kGather:
        check(MPI_Gather(rank_ == root && p.send == p.recv + bytes * rank_ ? MPI_IN_PLACE : p.send, n, t, p.recv, n, t,
                         root, MPI_COMM_WORLD),
              "MPI_Gather");
        break;
      case CollId::kScatter:
        check(MPI_Scatter(p.send, n, t, rank_ == root && p.recv == p.send + bytes * rank_ ? MPI_IN_PLACE : p.recv, n, t,
                          root, MPI_COMM_WORLD),
              "MPI_Scatter");
        break;
      case CollId::kSendRecv:
        check(MPI_Sendrecv(p.send, n, t, (rank_ + 1) % size_, 0, p.recv, n, t, (rank_ - 1 + size_) % size_, 0,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
        break;
    }
  }

 private:
  static size_t typeBytes(ncclDataType_t t) {
    int size = 0;
    MPI_Type_size(mpiType(t), &size);
    return static_cast<size_t>(size);
  }
};

}  // namespace
}  // namespace chorus::perf

int main(int argc, char** argv) {
  using namespace chorus::perf;
  return runMpiBaseline(
      argc, argv, "mpi_perf", "all_reduce|reduce_scatter|all_gather|alltoall|broadcast|reduce|gather|scatter|sendrecv",
      [] { return std::make_unique<MpiBackend>(); }, mpiLibrary);
}
