#include "perf/options.hpp"

#include <getopt.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace chorus::perf {
namespace {

// "32M" -> 33554432; binary suffixes K, M, G in either case. Returns false on garbage.
bool parseSize(const char* text, size_t* out) {
  char* end = nullptr;
  double v = strtod(text, &end);
  if (end == text || v < 0) return false;
  size_t mult = 1;
  if (*end == 'K' || *end == 'k')
    mult = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm')
    mult = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g')
    mult = 1ull << 30, ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * static_cast<double>(mult));
  return true;
}

// A whole integer or nothing: "abc", "4x" and "" are refused (strtol alone reads them as 0 or 4).
bool parseInt(const char* text, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = strtol(text, &end, 0);
  if (end == text || *end != '\0' || errno != 0 || v < INT32_MIN || v > INT32_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

// A duration in seconds such as "30" or "2.5"; garbage and negative values are refused.
bool parseSeconds(const char* text, double* out) {
  char* end = nullptr;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0)) return false;
  *out = v;
  return true;
}

}  // namespace

void printUsage(const char* program) {
  printf(
      "USAGE: %s [options]\n"
      "Times one chorus collective over a sweep of message sizes and checks its results, with nccl-tests'\n"
      "options and table. Ranks come from -t/-g threads, from --nprocs local processes, or from a launcher\n"
      "(mpirun, srun, torchrun) that starts one process per rank.\n"
      "\t[-t,--nthreads <num threads>] (default 1)\n"
      "\t[-g,--ngpus <ranks per thread>] (default 1)\n"
      "\t[-b,--minbytes <min size in bytes, K/M/G suffixes>] (default 32M)\n"
      "\t[-e,--maxbytes <max size in bytes>] (default 32M)\n"
      "\t[-i,--stepbytes <increment size>] (default 1M)\n"
      "\t[-f,--stepfactor <increment factor>] (default: add -i)\n"
      "\t[-n,--iters <iteration count>] (default 20)\n"
      "\t[-m,--agg_iters <aggregated iteration count>] (default 1)\n"
      "\t[-w,--warmup_iters <warmup iteration count>] (default 1)\n"
      "\t[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)]\n"
      "\t[-c,--check <check iteration count>] (default 1; 0 = no check)\n"
      "\t[-o,--op <sum/prod/min/max/avg/mulsum/all>] (default sum)\n"
      "\t[-d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/f8e4m3/f8e5m2/all>] (default "
      "float)\n"
      "\t[-r,--root <root, -1 = every rank in turn>] (default 0)\n"
      "\t[-z,--blocking <0/1> barrier after each iteration] (default 0)\n"
      "\t[-T,--timeout <time in seconds>] (default 0 = CHORUS_TIMEOUT)\n"
      "\t[-C,--report_cputime <0/1>] (default 0)\n"
      "\t[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] (default 1)\n"
      "\t[-S,--report_timestamps <0/1>] (default 0)\n"
      "\t[-u,--unalign <num elements>] (default 0)\n"
      "\t[-I,--per_iter_timing <0/1> time every iteration: i_min i_max i_p99 i_cv%% columns] (default 0)\n"
      "\t[-K,--per_iter_skip <K> leave the first K iterations out of -I] (default 0)\n"
      "\t[-J,--output_file <FILE.json> nccl-tests' JSON report, written by rank 0]\n"
      "\t[--nprocs <N> fork N local processes, one rank each (chorus)]\n"
      "\t[--host_memory <0/1> 1: host buffers, 0: device buffers] (default: device buffers where a GPU is)\n"
      "\t[--cold_buffers <0/1> 1: each timed iteration uses the next send/recv pair of a pool twice the last-level\n"
      "\t                      cache, so no call finds its buffers in cache (host memory)] (default 0)\n"
      "\t[-R,--local_register <0/1/2> 1, 2: host buffers from the library's allocator (chorus: ncclMemAlloc's\n"
      "\t                      shareable memory, which peers on the host read in place)] (default 0)\n"
      "\t[-p -y -G -x -D -V -M: GPU options, accepted and ignored on host memory]\n"
      "\t[--version]\n"
      "\t[-h,--help]\n"
      "Examples:\n"
      "\t%s --nprocs 4 -b 8 -e 128M -f 2          4 local ranks, 8 B to 128 MiB, doubling\n"
      "\t%s -t 2 -g 2 -b 1M -e 1M -n 100 -I 1     4 ranks in one process, per-iteration timing\n"
      "\tmpirun -np 8 %s -b 8 -e 1G -f 2 -J out.json\n",
      program, program, program, program);
}

int parseOptions(int argc, char** argv, Options* o) {
  o->args.assign(argv, argv + argc);
  static const option longOptions[] = {{"nthreads", required_argument, 0, 't'},
                                       {"ngpus", required_argument, 0, 'g'},
                                       {"minbytes", required_argument, 0, 'b'},
                                       {"maxbytes", required_argument, 0, 'e'},
                                       {"stepbytes", required_argument, 0, 'i'},
                                       {"stepfactor", required_argument, 0, 'f'},
                                       {"iters", required_argument, 0, 'n'},
                                       {"agg_iters", required_argument, 0, 'm'},
                                       {"warmup_iters", required_argument, 0, 'w'},
                                       {"run_cycles", required_argument, 0, 'N'},
                                       {"parallel_init", required_argument, 0, 'p'},
                                       {"check", required_argument, 0, 'c'},
                                       {"op", required_argument, 0, 'o'},
                                       {"datatype", required_argument, 0, 'd'},
                                       {"root", required_argument, 0, 'r'},
                                       {"blocking", required_argument, 0, 'z'},
                                       {"stream_null", required_argument, 0, 'y'},
                                       {"timeout", required_argument, 0, 'T'},
                                       {"cudagraph", required_argument, 0, 'G'},
                                       {"report_cputime", required_argument, 0, 'C'},
                                       {"average", required_argument, 0, 'a'},
                                       {"local_register", required_argument, 0, 'R'},
                                       {"cta_policy", required_argument, 0, 'x'},
                                       {"device_implementation", required_argument, 0, 'D'},
                                       {"device_cta_count", required_argument, 0, 'V'},
                                       {"output_file", required_argument, 0, 'J'},
                                       {"report_timestamps", required_argument, 0, 'S'},
                                       {"memory", required_argument, 0, 'M'},
                                       {"unalign", required_argument, 0, 'u'},
                                       {"per_iter_timing", required_argument, 0, 'I'},
                                       {"per_iter_skip", required_argument, 0, 'K'},
                                       {"nprocs", required_argument, 0, 'P'},
                                       {"host_memory", required_argument, 0, 'H'},
                                       {"cold_buffers", required_argument, 0, 'L'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c;
  bool badValue = false;
  // Reads optarg as an integer; a bad one is reported with its flag and ends the parse.
  auto toInt = [&](const char* text) {
    int v = 0;
    if (!parseInt(text, &v)) {
      fprintf(stderr, "invalid value '%s' for -%c: an integer is expected\n", text, c);
      badValue = true;
    }
    return v;
  };
  while ((c = getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:", longOptions,
                          nullptr)) != -1) {
    switch (c) {
      case 't':
        o->nThreads = toInt(optarg);
        break;
      case 'g':
        o->nGpus = toInt(optarg);
        break;
      case 'b':
        if (!parseSize(optarg, &o->minBytes)) {
          fprintf(stderr, "invalid size specified for 'minbytes'\n");
          return 255;
        }
        break;
      case 'e':
        if (!parseSize(optarg, &o->maxBytes)) {
          fprintf(stderr, "invalid size specified for 'maxbytes'\n");
          return 255;
        }
        break;
      case 'i':
        if (!parseSize(optarg, &o->stepBytes)) {
          fprintf(stderr, "invalid size specified for 'stepbytes'\n");
          return 255;
        }
        break;
      case 'f':
        o->stepFactor = static_cast<size_t>(std::max(0, toInt(optarg)));
        break;
      case 'n':
        o->iters = toInt(optarg);
        break;
      case 'm':
        o->aggIters = toInt(optarg);
        break;
      case 'w':
        o->warmupIters = toInt(optarg);
        break;
      case 'N':
        o->runCycles = toInt(optarg);
        break;
      case 'c':
        o->check = toInt(optarg);
        break;
      case 'o':
        o->op = optarg;
        break;
      case 'd':
        o->datatype = optarg;
        break;
      case 'r':
        o->root = toInt(optarg);
        break;
      case 'z':
        o->blocking = toInt(optarg);
        break;
      case 'T':
        if (!parseSeconds(optarg, &o->timeout)) {
          fprintf(stderr, "invalid value '%s' for -T: seconds (a number >= 0) are expected\n", optarg);
          return 255;
        }
        break;
      case 'C':
        o->reportCpuTime = toInt(optarg);
        break;
      case 'a':
        o->average = toInt(optarg);
        break;
      case 'S':
        o->timestamps = toInt(optarg);
        break;
      case 'u':
        o->unalign = toInt(optarg);
        break;
      case 'P':
        o->nprocs = toInt(optarg);
        o->nprocsGiven = true;
        break;
      case 'H':
        o->hostMemory = toInt(optarg);
        break;
      case 'L':
        o->coldBuffers = toInt(optarg);
        break;
      case 'J':
        o->jsonFile = optarg;
        break;
      case 'I':
        o->perIterTiming = toInt(optarg);
        break;
      case 'K':
        o->perIterSkip = toInt(optarg);
        break;
      case 'p':
      case 'y':
      case 'R':
        o->registered = toInt(optarg);
        break;
      case 'G':
      case 'x':
      case 'D':
      case 'V':
      case 'M':
        if (toInt(optarg) != 0) o->ignored.push_back(std::string("-") + static_cast<char>(c));
        break;
      case 'h':
        printUsage(argv[0]);
        return 0;
      default:
        fprintf(stderr, "invalid option (see --help)\n");
        return 255;
    }
    if (badValue) return 255;
  }
  if (optind < argc) {
    fprintf(stderr, "unexpected argument '%s' (see --help)\n", argv[optind]);
    return 255;
  }
  if (o->minBytes > o->maxBytes) {
    fprintf(stderr, "invalid sizes for 'minbytes' and 'maxbytes': %zu > %zu\n", o->minBytes, o->maxBytes);
    return 255;
  }
  if (o->nThreads < 1 || o->nGpus < 1 || o->iters < 1 || o->aggIters < 1) {
    fprintf(stderr, "-t, -g, -n and -m must be at least 1\n");
    return 255;
  }
  if (!o->jsonFile.empty() &&
      (o->jsonFile.size() < 6 || o->jsonFile.compare(o->jsonFile.size() - 5, 5, ".json") != 0)) {
    fprintf(stderr, "-J %s: the report file must end in .json (nccl-tests' only output type)\n", o->jsonFile.c_str());
    return 255;
  }
  if (o->perIterSkip != 0 && (o->perIterTiming == 0 || o->perIterSkip < 0 || o->perIterSkip >= o->iters)) {
    fprintf(stderr, "-K %d: needs -I 1 and 0 <= K < iterations (-n %d)\n", o->perIterSkip, o->iters);
    return 255;
  }
  if (o->coldBuffers != 0 && o->coldBuffers != 1) {
    fprintf(stderr, "--cold_buffers takes 0 or 1 (got %d)\n", o->coldBuffers);
    return 255;
  }
  if (o->nprocsGiven && o->nprocs < 1) {
    fprintf(stderr, "--nprocs must be at least 1 (got %d)\n", o->nprocs);
    return 255;
  }
  return -1;
}

}  // namespace chorus::perf
