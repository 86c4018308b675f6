// chorus's C++ API in a program a launcher starts, one process per rank: AllReduce blocking, then asynchronous.
//
//   mpirun -np 4 build/examples/allreduce_launched        # or torchrun --no-python, srun, CHORUS_COMM_ID
#include <chorus/communicator.hpp>
#include <cstdio>
#include <vector>

int main() {
  std::unique_ptr<chorus::Communicator> comm;
  chorus::Status st = chorus::Communicator::createFromEnvironment(&comm);  // torchrun / mpirun / srun
  if (!st.isOk()) {
    fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  const int n = comm->size();
  std::vector<float> in(1 << 20, static_cast<float>(comm->rank() + 1)), out(in.size());
  st = comm->allReduce(in.data(), out.data(), in.size(), chorus::DataType::kFloat32, chorus::RedOp::sum());
  if (!st.isOk() || out[0] != n * (n + 1) / 2.0f) {
    fprintf(stderr, "rank %d: sum failed: %s\n", comm->rank(), st.message().c_str());
    return 1;
  }
  chorus::Request r =
      comm->allReduceAsync(in.data(), out.data(), in.size(), chorus::DataType::kFloat32, chorus::RedOp::avg());
  // ... work that does not touch `in` or `out` ...
  st = r.wait();
  if (!st.isOk() || out.back() != (n + 1) / 2.0f) {
    fprintf(stderr, "rank %d: avg failed: %s\n", comm->rank(), st.message().c_str());
    return 1;
  }
  printf("rank %d of %d: sum %g, average %g\n", comm->rank(), n, n * (n + 1) / 2.0f, out.back());
  return 0;
}
