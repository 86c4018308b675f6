// What the perf driver needs from a communication library: the ranks one thread drives, a way to combine a
// number over all ranks, and the collective call itself. chorus (through nccl.h) is one backend; the baselines in
// perf/baselines/ (Open MPI, Gloo) are others, so every library is measured by the same sweep, timer and check.
#pragma once

#include <string>
#include <vector>

#include "perf/collective.hpp"

namespace chorus::perf {

struct Options;

/// The send and receive pointers of one local rank for one call.
struct Pointers {
  const char* send;
  char* recv;
};

enum class Combine { kSum, kMin, kMax };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int nranks() const = 0;
  /// Global ranks this thread drives (nccl-tests' -g: several per thread).
  virtual const std::vector<int>& localRanks() const = 0;
  /// The value combined over every rank (each local rank contributes `value`).
  virtual double combine(double value, Combine how) = 0;
  /// Every rank's line, in rank order; `mine` holds one line per local rank.
  virtual std::vector<std::string> gatherLines(const std::vector<std::string>& mine) = 0;
  /// Runs `coll` once on every local rank. `op` is an ncclRedOp_t value, kMulSum, or -1 for data movement.
  /// Failures end the process with a message (as nccl-tests does).
  virtual void launch(const Collective& coll, const std::vector<Pointers>& pointers, size_t count, ncclDataType_t type,
                      int op, int root) = 0;
  /// Whether this backend can run the combination (a baseline may lack a type or op); unsupported rows are skipped.
  virtual bool supports(const Collective& coll, ncclDataType_t type, int op) const { return true; }
  /// Brackets -m aggregated launches (a group in NCCL terms); no-op where the library has no such notion.
  virtual void aggregateStart() {}
  virtual void aggregateEnd() {}
  /// ncclGetVersion() of the library measured, for the JSON report; 0 where the library is not an NCCL.
  virtual int ncclVersion() const { return 0; }
  /// Transport or mode shown in the device list ("shm", "vader", "tcp", ...).
  virtual std::string describe() const = 0;
  /// The CUDA device of local rank `g` when the buffers are device memory, -1 for host buffers.
  virtual int device(size_t g) const { return -1; }
  /// Device memory for local rank `g` (ending the process when there is none left), its release, and a copy between
  /// host and device memory. Only called where device(g) >= 0.
  virtual char* allocateDevice(size_t g, size_t bytes) { return nullptr; }
  virtual void freeDevice(char* p) {}
  virtual void copy(void* dst, const void* src, size_t bytes) {}
  /// Host memory from the library's own allocator (-R; ncclMemAlloc for an NCCL), and its release; null where the
  /// library has none, and the driver then uses plain pages.
  virtual char* allocateRegistered(size_t bytes) { return nullptr; }
  virtual void freeRegistered(char* p) {}
  /// Waits until every launched call completed (device calls return once enqueued on their streams).
  virtual void synchronize() {}
};

/// Prints the lines before the device list: `firstLine` (library and version), then nccl-tests' preamble.
void printPreamble(const char* firstLine, const char* program, const Options& options);

/// Runs the nccl-tests sweep for `coll` on `backend` and prints the table when `printer`. Returns the exit code.
int runSweep(const Options& options, const Collective& coll, Backend& backend, bool printer);

}  // namespace chorus::perf
