// What the MPI-launched baselines share: rank and size from MPI_COMM_WORLD, and the runner's combine and line
// gathering through MPI. mpi_perf (Open MPI, MPICH, Intel MPI) runs its collectives through MPI as well; oneccl_perf
// runs oneCCL's, with MPI only around them.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "perf/backend.hpp"
#include "perf/options.hpp"

namespace chorus::perf {

/// Ends the job with MPI's text for `err` unless it is MPI_SUCCESS.
inline void checkMpi(int err, const char* what) {
  if (err == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(err, text, &len);
  fprintf(stderr, "%s failed: %s\n", what, text);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

/// The MPI library's name and version: the first part of MPI_Get_library_version's text ("Open MPI v4.1.4",
/// "MPICH 4.0.2", "Intel(R) MPI Library 2021.18 for Linux* OS").
inline std::string mpiLibrary() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string text(version, static_cast<size_t>(len));
  text = text.substr(0, text.find_first_of(",\n"));
  if (size_t label = text.find(" Version:"); label != std::string::npos) text.erase(label, 9);  // MPICH's
  for (char& c : text)
    if (c == '\t') c = ' ';
  return text;
}

class MpiWorldBackend : public Backend {
 public:
  MpiWorldBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    ranks_ = {rank_};
  }
  int nranks() const override { return size_; }
  const std::vector<int>& localRanks() const override { return ranks_; }

  double combine(double value, Combine how) override {
    double out = 0;
    MPI_Op op = how == Combine::kMin ? MPI_MIN : how == Combine::kMax ? MPI_MAX : MPI_SUM;
    checkMpi(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, op, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }

  std::vector<std::string> gatherLines(const std::vector<std::string>& mine) override {
    constexpr int kLine = 192;
    std::vector<char> in(kLine), out(static_cast<size_t>(kLine) * size_);
    snprintf(in.data(), kLine, "%s", mine[0].c_str());
    checkMpi(MPI_Allgather(in.data(), kLine, MPI_CHAR, out.data(), kLine, MPI_CHAR, MPI_COMM_WORLD), "MPI_Allgather");
    std::vector<std::string> lines;
    for (int r = 0; r < size_; ++r) lines.emplace_back(out.data() + static_cast<size_t>(r) * kLine);
    return lines;
  }

 protected:
  int rank_ = 0, size_ = 1;
  std::vector<int> ranks_;
};

/// The main() of an MPI-launched baseline: MPI_Init; the collective (one of `offered`) and nccl-tests' flags from the
/// command line; the backend `make` returns, the preamble naming `library(backend)` and the sweep; MPI_Finalize
/// after the backend is gone.
inline int runMpiBaseline(int argc, char** argv, const char* program, const char* offered,
                          const std::function<std::unique_ptr<Backend>()>& make,
                          const std::function<std::string()>& library) {
  MPI_Init(&argc, &argv);
  const Collective* coll = argc > 1 ? findCollective(argv[1]) : nullptr;
  Options options;
  int code = 6;
  if (!coll)
    fprintf(stderr, "usage: mpirun -np N %s <%s> [nccl-tests flags]\n", argv[0], offered);
  else
    code = parseOptions(argc - 1, argv + 1, &options);
  if (code < 0) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    std::unique_ptr<Backend> backend = make();
    const bool printer = backend->localRanks()[0] == 0;
    if (printer) {
      const std::string first = "# baseline: " + library();
      printPreamble(first.c_str(), (std::string(program) + " " + coll->name).c_str(), options);
    }
    code = runSweep(options, *coll, *backend, printer);
  }
  MPI_Finalize();
  return code;
}

}  // namespace chorus::perf
