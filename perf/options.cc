#include "perf/options.hpp"

#include <getopt.h>

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

}  // namespace

void printUsage(const char* program) {
  printf(
      "USAGE: %s\n"
      "\t[-t,--nthreads <num threads>]\n"
      "\t[-g,--ngpus <ranks per thread>]\n"
      "\t[-b,--minbytes <min size in bytes>]\n"
      "\t[-e,--maxbytes <max size in bytes>]\n"
      "\t[-i,--stepbytes <increment size>]\n"
      "\t[-f,--stepfactor <increment factor>]\n"
      "\t[-n,--iters <iteration count>]\n"
      "\t[-m,--agg_iters <aggregated iteration count>]\n"
      "\t[-w,--warmup_iters <warmup iteration count>]\n"
      "\t[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)]\n"
      "\t[-p,--parallel_init <0/1>]\n"
      "\t[-c,--check <check iteration count>]\n"
      "\t[-o,--op <sum/prod/min/max/avg/mulsum/all>]\n"
      "\t[-d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/all>]\n"
      "\t[-r,--root <root>]\n"
      "\t[-z,--blocking <0/1>]\n"
      "\t[-y,--stream_null <0/1>]\n"
      "\t[-T,--timeout <time in seconds>]\n"
      "\t[-G,--cudagraph <num graph launches>]\n"
      "\t[-C,--report_cputime <0/1>]\n"
      "\t[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>]\n"
      "\t[-R,--local_register <0/1/2>]\n"
      "\t[-S,--report_timestamps <0/1>]\n"
      "\t[-u,--unalign <num elements>]\n"
      "\t[--nprocs <N> fork N local processes, one rank each (chorus)]\n"
      "\t[--version]\n"
      "\t[-h,--help]\n",
      program);
}

int parseOptions(int argc, char** argv, Options* o) {
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
        o->stepFactor = static_cast<size_t>(strtol(optarg, nullptr, 0));
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
        o->timeout = atof(optarg);
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
      case 'p':
      case 'y':
      case 'G':
      case 'R':
      case 'x':
      case 'D':
      case 'V':
      case 'J':
      case 'M':
      case 'I':
      case 'K':
        if (toInt(optarg) != 0 || c == 'J') o->ignored.push_back(std::string("-") + static_cast<char>(c));
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
  if (o->nprocsGiven && o->nprocs < 1) {
    fprintf(stderr, "--nprocs must be at least 1 (got %d)\n", o->nprocs);
    return 255;
  }
  return -1;
}

}  // namespace chorus::perf
