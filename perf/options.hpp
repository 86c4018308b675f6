// nccl-tests' command line (same letters, defaults and meaning), plus --nprocs N for our local launcher.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace chorus::perf {

struct Options {
  int nThreads = 1;
  int nGpus = 1;
  size_t minBytes = 32 << 20;
  size_t maxBytes = 32 << 20;
  size_t stepBytes = 1 << 20;
  size_t stepFactor = 1;
  int iters = 20;
  int warmupIters = 1;
  int aggIters = 1;
  int runCycles = 1;
  int check = 1;
  std::string op = "sum";
  std::string datatype = "float";
  int root = 0;
  int blocking = 0;
  double timeout = 0;
  int reportCpuTime = 0;
  int average = 1;
  int unalign = 0;
  int timestamps = 0;
  std::string jsonFile;           // -J: nccl-tests' JSON report, written by the printing rank
  int perIterTiming = 0;          // -I: time every iteration and add i_min i_max i_p99 i_cv% to each half
  int perIterSkip = 0;            // -K: leave the first K iterations out of the -I summary
  std::vector<std::string> args;  // the command line as given, for the JSON report
  int hostMemory = -1;            // --host_memory: 1 host buffers, 0 device buffers, -1 device where a GPU is
  int registered = 0;             // -R: 1 or 2 = host buffers from the library's allocator (ncclMemAlloc)
  int coldBuffers = 0;            // --cold_buffers: 1 = each timed iteration on the next buffers of a pool past the LLC
  int nprocs = 0;                 // --nprocs: fork this many local processes
  bool nprocsGiven = false;
  std::vector<std::string> ignored;  // accepted flags that mean nothing on host memory
};

/// Parses argv. Returns -1 to go on, else the exit code (help, bad value).
int parseOptions(int argc, char** argv, Options* out);
void printUsage(const char* program);

}  // namespace chorus::perf
