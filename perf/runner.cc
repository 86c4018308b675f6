// The nccl-tests sweep, timing, data check and table, on any Backend.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <string>
#include <vector>

#include "core/cache_size.hpp"
#include "perf/backend.hpp"
#include "perf/data.hpp"
#include "perf/iteration_stats.hpp"
#include "perf/json_report.hpp"
#include "perf/options.hpp"

namespace chorus::perf {
namespace {

// The preamble's first line (library and version), repeated in the JSON report.
std::string& libraryLine() {
  static std::string line;
  return line;
}

// Fits a number into `width` characters: `most` decimals (2 by default), then fewer, then exponent notation.
std::string fit(double v, int width, int most = 2) {
  char buf[64];
  for (int decimals = most; decimals >= 0; --decimals) {
    snprintf(buf, sizeof(buf), "%*.*f", width, decimals, v);
    if (static_cast<int>(strlen(buf)) <= width) return buf;
  }
  snprintf(buf, sizeof(buf), "%*.0e", width, v);
  return buf;
}

// A local rank's buffers. On device memory, send and recv are the host copies the data is filled into and checked
// in, and deviceSend and deviceRecv what the calls get.
struct RankBuffers {
  int rank = 0;
  int device = -1;
  char* send = nullptr;
  char* recv = nullptr;
  char* expected = nullptr;
  char* deviceSend = nullptr;
  char* deviceRecv = nullptr;
  char* pool = nullptr;  // --cold_buffers: the timed iterations' send/recv pairs, one after another
};

// The largest last-level cache size the system reports (cpuid through sysconf may give a whole socket's, sysfs the
// cache a core sees), or 64 MiB when neither says.
size_t lastLevelCacheBytes() {
  const size_t bytes = std::max(sysconfLastLevelCacheBytes(), sysfsLastLevelCacheBytes());
  return bytes ? bytes : size_t{64} << 20;
}

class Runner {
 public:
  Runner(const Options& o, const Collective& c, Backend& b, bool printer)
      : opt_(o), coll_(c), backend_(b), printer_(printer), nranks_(b.nranks()) {}

  ~Runner() {
    for (auto& r : ranks_) {
      release(r.send);
      release(r.recv);
      free(r.expected);
      release(r.pool);
      if (r.deviceSend) backend_.freeDevice(r.deviceSend);
      if (r.deviceRecv) backend_.freeDevice(r.deviceRecv);
    }
  }

  int run() {
    report_.startTime = timestampNow();
    printDevices();
    allocate();
    if (printer_ && opt_.registered) {
      printf(registered_.empty() ? "# -R: this library has no host allocator here: plain host buffers\n#\n"
                                 : "# -R: send and receive buffers from the library's allocator (ncclMemAlloc)\n#\n");
    }
    if (printer_ && opt_.coldBuffers) {
      if (poolBytes_)
        printf(
            "# Cold buffers: timed iterations rotate through a %zu MiB pool of send/recv pairs per rank (twice the "
            "last-level cache, %zu MiB)\n#\n",
            poolBytes_ >> 20, lastLevelCacheBytes() >> 20);
      else
        printf("# Cold buffers: ignored on device memory\n#\n");
    }
    std::vector<int> types, ops, roots;
    for (int i = 0; i < kNumTypes; ++i)
      if (opt_.datatype == "all" || opt_.datatype == kTypeNames[i]) types.push_back(i);
    if (types.empty()) {
      if (printer_) printf("# Invalid datatype '%s', using float\n", opt_.datatype.c_str());
      types.push_back(kFloatIndex);
    }
    if (coll_.usesOp) {
      for (int i = 0; i < kNumOps; ++i)
        if (opt_.op == "all" || opt_.op == kOpNames[i]) ops.push_back(kOps[i]);
      if (ops.empty()) {
        if (printer_) printf("# Invalid op '%s', using sum\n", opt_.op.c_str());
        ops.push_back(ncclSum);
      }
    } else {
      ops.push_back(-1);
    }
    if (coll_.usesRoot && (opt_.root >= nranks_ || opt_.root < -1)) {
      if (printer_) fprintf(stderr, "invalid root %d for %d ranks\n", opt_.root, nranks_);
      return 6;
    }
    if (coll_.usesRoot && opt_.root == -1) {
      for (int r = 0; r < nranks_; ++r) roots.push_back(r);
    } else {
      roots.push_back(coll_.usesRoot ? opt_.root : -1);
    }

    printHeader();
    for (int cycle = 0; opt_.runCycles == 0 || cycle < opt_.runCycles; ++cycle) {
      for (int t : types)
        for (int o : ops)
          for (int root : roots)
            if (backend_.supports(coll_, kTypes[t], o)) sweep(t, o, root);
    }
    double avgBw = cells_ ? bwSum_ / cells_ : 0;
    double wrongCells = backend_.combine(static_cast<double>(wrongCells_), Combine::kSum);
    if (printer_) {
      printf("# Out of bounds values : %.0f %s\n", wrongCells, wrongCells == 0 ? "OK" : "FAILED");
      printf("# Avg bus bandwidth    : %g \n", avgBw);
      printf("#\n# Collective test concluded: %s_perf\n#\n\n", coll_.name);
      fflush(stdout);
    }
    if (printer_ && !opt_.jsonFile.empty()) {
      report_.library = libraryLine();
      report_.ncclVersion = backend_.ncclVersion();
      report_.wrongCells = wrongCells;
      report_.averageBusBw = avgBw;
      report_.endTime = timestampNow();
      std::string written = writeJsonReport(opt_.jsonFile, opt_, report_);
      if (written.empty()) return 6;
      printf("# JSON report written to %s\n", written.c_str());
      fflush(stdout);
    }
    barrier();
    return wrongCells == 0 ? 0 : 7;
  }

 private:
  void barrier() { (void)backend_.combine(0, Combine::kSum); }

  // Buffers big enough for the largest size of any type.
  void allocate() {
    size_t maxElems = 0, maxRecv = 0;
    for (ncclDataType_t t : kTypes) {
      Counts c = coll_.counts(opt_.maxBytes, nranks_, typeSize(t));
      maxElems = std::max({maxElems, c.sendCount * typeSize(t), c.recvCount * typeSize(t)});
      maxRecv = std::max(maxRecv, c.recvCount * typeSize(t));
    }
    const size_t pad = 8 * static_cast<size_t>(opt_.unalign) + 64;
    auto page = [](size_t bytes) { return static_cast<char*>(aligned_alloc(4096, pageRound(bytes))); };
    // What the calls read and write: with -R, the library's own host memory where it has some.
    auto callBuffer = [&](size_t bytes) {
      char* p = opt_.registered ? backend_.allocateRegistered(pageRound(bytes)) : nullptr;
      if (p) registered_.insert(p);
      return p ? p : page(bytes);
    };
    bufferBytes_ = maxElems + pad;
    for (int rank : backend_.localRanks()) {
      RankBuffers r;
      r.rank = rank;
      r.device = backend_.device(ranks_.size());
      r.send = callBuffer(maxElems + pad);
      r.recv = callBuffer(maxElems + pad);
      r.expected = page(maxRecv + pad);
      fillBackground(r.send, maxElems + pad, kAllocatedBackground);
      fillBackground(r.recv, maxElems + pad, kAllocatedBackground);
      if (opt_.coldBuffers && r.device < 0) {
        // At least two pairs of the largest size, so that consecutive calls never share buffers.
        poolBytes_ = std::max(2 * lastLevelCacheBytes(), 4 * pageRound(bufferBytes_));
        r.pool = callBuffer(poolBytes_);
        fillBackground(r.pool, poolBytes_, kAllocatedBackground);  // its pages exist before the timing
      }
      if (r.device >= 0) {
        r.deviceSend = backend_.allocateDevice(ranks_.size(), maxElems + pad);
        r.deviceRecv = backend_.allocateDevice(ranks_.size(), maxElems + pad);
        backend_.copy(r.deviceSend, r.send, maxElems + pad);
        backend_.copy(r.deviceRecv, r.recv, maxElems + pad);
      }
      ranks_.push_back(r);
    }
  }

  void release(char* p) {
    if (registered_.erase(p))
      backend_.freeRegistered(p);
    else
      free(p);
  }

  // Host pointers `p` into `r`'s send and recv buffers, moved to the same places in buffers at `send` and `recv`.
  Pointers moved(const RankBuffers& r, Pointers p, char* send, char* recv) const {
    auto move = [&](const char* q) -> char* {
      if (q >= r.send && q < r.send + bufferBytes_) return send + (q - r.send);
      return recv + (q - r.recv);
    };
    return {move(p.send), move(p.recv)};
  }

  // What the call gets for host pointers `p` of `r`: themselves, or the same places in the device buffers.
  Pointers onDevice(const RankBuffers& r, Pointers p) const {
    return r.deviceSend ? moved(r, p, r.deviceSend, r.deviceRecv) : p;
  }

  void printDevices() {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    if (char* dot = strchr(host, '.')) *dot = 0;
    std::vector<std::string> mine;
    for (int rank : backend_.localRanks()) {
      char line[512];  // room for a 255-byte host name
      const int device = backend_.device(mine.size());
      snprintf(line, sizeof(line), "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s", rank, getpid(), host,
               device, device >= 0 ? "device memory" : "host memory", backend_.describe().c_str());
      mine.push_back(line);
    }
    std::vector<std::string> all = backend_.gatherLines(mine);
    if (!opt_.jsonFile.empty()) gatherDevices(host);
    if (!printer_) return;
    printf("#\n# Using devices\n");
    for (const auto& line : all) printf("%s\n", line.c_str());
    printf("#\n");
  }

  // The records of the JSON report's device list: "rank pid host info", tab separated, from every rank.
  void gatherDevices(const char* host) {
    std::vector<std::string> mine;
    for (int rank : backend_.localRanks())
      mine.push_back(std::to_string(rank) + "\t" + std::to_string(getpid()) + "\t" + host + "\t" + backend_.describe());
    for (const std::string& line : backend_.gatherLines(mine)) {
      ReportDevice d;
      size_t a = line.find('\t'), b = line.find('\t', a + 1), c = line.find('\t', b + 1);
      if (c == std::string::npos) continue;
      d.rank = atoi(line.substr(0, a).c_str());
      d.pid = atoi(line.substr(a + 1, b - a - 1).c_str());
      d.host = line.substr(b + 1, c - b - 1);
      d.info = line.substr(c + 1);
      report_.devices.push_back(d);
    }
  }

  void printHeader() {
    if (!printer_) return;
    const char* timeName = opt_.reportCpuTime ? "cputime" : "time";
    const bool perIter = opt_.perIterTiming != 0;
    // One half's column titles; -I adds the per-iteration summary after #wrong.
    auto half = [&](const char* t, const char* alg, const char* bus, const char* wrong, const char* imin,
                    const char* imax, const char* ip99, const char* icv) {
      char text[128];
      int n = snprintf(text, sizeof(text), "  %7s  %6s  %6s  %6s", t, alg, bus, wrong);
      if (perIter) snprintf(text + n, sizeof(text) - n, "  %7s  %7s  %7s  %6s", imin, imax, ip99, icv);
      return std::string(text);
    };
    const std::string titles = half(timeName, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%");
    const std::string units = half("(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)");
    // The placement labels sit over the middle of each half.
    std::string labels(titles.size() * 2, ' ');
    const std::string outOfPlace = "out-of-place", inPlace = "in-place";
    labels.replace((titles.size() - outOfPlace.size()) / 2, outOfPlace.size(), outOfPlace);
    labels.replace(titles.size() + (titles.size() - inPlace.size()) / 2, inPlace.size(), inPlace);
    printf("#\n");
    printf("# %10s  %12s  %8s  %6s  %6s%s\n", "", "", "", "", "", labels.c_str());
    printf("# %10s  %12s  %8s  %6s  %6s%s%s%s\n", "size", "count", "type", "redop", "root", titles.c_str(),
           titles.c_str(), opt_.timestamps ? "  timestamp" : "");
    printf("# %10s  %12s  %8s  %6s  %6s%s%s\n", "(B)", "(elements)", "", "", "", units.c_str(), units.c_str());
    fflush(stdout);
  }

  Pointers pointers(const RankBuffers& r, bool inPlace, const Counts& c, size_t e) const {
    const size_t shift = static_cast<size_t>(opt_.unalign) * e;
    if (!inPlace) return {r.send + shift, r.recv + shift};
    char* base = r.recv + shift;
    const size_t offset = c.paramCount * static_cast<size_t>(r.rank) * e;
    switch (coll_.inPlace) {
      case InPlace::kSendInsideRecv:
        return {base + offset, base};
      case InPlace::kRecvInsideSend:
        return {base, base + offset};
      default:
        return {base, base};
    }
  }

  static size_t pageRound(size_t bytes) { return (bytes + 4095) & ~size_t{4095}; }

  // The offset in the pool of the next pair for a call: a send half, then a recv half, each `halfBytes` (the bytes
  // the call touches, page-rounded). Pairs follow one another through the whole pool, across calls, halves and sizes,
  // and start over at its front only when the next would pass its end: every timed call gets lines no call touched for
  // a pool's length, twice the last-level cache. (Starting over at the front for every half and size, 2,000 calls of up
  // to 4 KiB would span 16 MiB, which the half before has just left in a 32 MiB cache.)
  size_t nextPoolPair(size_t halfBytes) {
    const size_t pairBytes = 2 * halfBytes;
    if (poolCursor_ + pairBytes > poolBytes_) poolCursor_ = 0;
    const size_t offset = poolCursor_;
    poolCursor_ += pairBytes;
    return offset;
  }

  // `fromPool` in timed loops: with --cold_buffers, the call runs on the pool's next pair.
  void launchAll(int typeIndex, int op, int root, const Counts& c, bool inPlace, bool fromPool = false) {
    const ncclDataType_t type = kTypes[typeIndex];
    ptrs_.clear();  // a member: no allocation inside the timed loop
    const bool pooled = fromPool && poolBytes_ > 0;
    const size_t half = pooled ? pageRound(usedBytes(c, typeSize(type))) : 0;
    const size_t pair = pooled ? nextPoolPair(half) : 0;
    for (const auto& r : ranks_) {
      Pointers p = pointers(r, inPlace, c, typeSize(type));
      if (pooled && r.pool) p = moved(r, p, r.pool + pair, r.pool + pair + half);
      ptrs_.push_back(onDevice(r, p));
    }
    backend_.launch(coll_, ptrs_, c.paramCount, type, op, root < 0 ? 0 : root);
  }

  // The bytes of each buffer a call of counts `c` can touch, unaligned start included.
  size_t usedBytes(const Counts& c, size_t e) const {
    return std::min(bufferBytes_, std::max(c.sendCount, c.recvCount) * e + 8 * static_cast<size_t>(opt_.unalign) + 64);
  }

  // Fills inputs and expected results. Recv regions start zeroed.
  void prepare(int typeIndex, int op, int root, const Counts& c, bool inPlace, uint64_t seed) {
    const ncclDataType_t type = kTypes[typeIndex];
    const size_t e = typeSize(type);
    for (auto& r : ranks_) {
      Pointers p = pointers(r, inPlace, c, e);
      memset(r.recv, 0, std::max(c.sendCount, c.recvCount) * e + 8 * static_cast<size_t>(opt_.unalign));
      FillArgs a{r.rank, nranks_, root < 0 ? 0 : root,       op,        c.paramCount,
                 type,   seed,    const_cast<char*>(p.send), r.expected};
      if (!coll_.fill(a)) memcpy(r.expected, p.recv, c.recvCount * e);
      if (r.deviceSend) {
        const size_t used = usedBytes(c, e);
        backend_.copy(r.deviceSend, r.send, used);
        backend_.copy(r.deviceRecv, r.recv, used);
      }
    }
  }

  size_t verify(int typeIndex, const Counts& c, bool inPlace) {
    const ncclDataType_t type = kTypes[typeIndex];
    size_t wrong = 0;
    backend_.synchronize();
    for (auto& r : ranks_) {
      if (r.deviceRecv) backend_.copy(r.recv, r.deviceRecv, usedBytes(c, typeSize(type)));
      Pointers p = pointers(r, inPlace, c, typeSize(type));
      wrong += countMismatches(p.recv, r.expected, c.recvCount, type);
    }
    return wrong;
  }

  // A rank's time combined over all ranks as -a says (rank 0's, the average, the minimum or the maximum).
  double combineTime(double local) {
    switch (opt_.average) {
      case 0:
        return local;
      case 2:
        return backend_.combine(local, Combine::kMin);
      case 3:
        return backend_.combine(local, Combine::kMax);
      default:
        return backend_.combine(local, Combine::kSum) / nranks_;
    }
  }

  // Times one half of a row: time per operation in microseconds, the wrong count (-1 when unchecked) and,
  // with -I, every iteration's time, each combined over ranks like the time column.
  ReportHalf measure(int typeIndex, int op, int root, const Counts& c, bool inPlace) {
    ReportHalf half;
    const bool check = opt_.check > 0 && (!inPlace || coll_.checksInPlace);
    const bool perIter = opt_.perIterTiming != 0;
    if (perIter) iterationEnds_.assign(opt_.iters, {});
    if (opt_.check > 0) prepare(typeIndex, op, root, c, inPlace, 99);
    launchAll(typeIndex, op, root, c, inPlace);  // untimed
    backend_.synchronize();
    barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < opt_.iters; ++it) {
      if (opt_.aggIters > 1) backend_.aggregateStart();
      for (int a = 0; a < opt_.aggIters; ++a) launchAll(typeIndex, op, root, c, inPlace, true);
      if (opt_.aggIters > 1) backend_.aggregateEnd();
      if (opt_.blocking == 1 || perIter) backend_.synchronize();
      if (opt_.blocking == 1) barrier();
      if (perIter) iterationEnds_[it] = std::chrono::steady_clock::now();
    }
    backend_.synchronize();
    const auto end = std::chrono::steady_clock::now();
    const double perOp = 1.0 / (static_cast<double>(opt_.iters) * opt_.aggIters);
    half.timeUs = combineTime(std::chrono::duration<double, std::micro>(end - start).count() * perOp);
    if (perIter) {
      half.perIteration = true;
      auto previous = start;
      for (const auto& iterationEnd : iterationEnds_) {
        const double us = std::chrono::duration<double, std::micro>(iterationEnd - previous).count() / opt_.aggIters;
        half.timesUs.push_back(combineTime(us));
        previous = iterationEnd;
      }
      half.stats = summarize(half.timesUs, opt_.perIterSkip);
    }
    if (!check) return half;
    double total = 0;
    for (int k = 0; k < opt_.check; ++k) {
      prepare(typeIndex, op, root, c, inPlace, seed_++);
      launchAll(typeIndex, op, root, c, inPlace);
      total = backend_.combine(static_cast<double>(verify(typeIndex, c, inPlace)), Combine::kSum);
      if (total > 0) break;
    }
    half.wrong = total;
    if (total > 0) ++wrongCells_;
    return half;
  }

  // A half's table cells: time, algbw, busbw, #wrong, and with -I i_min i_max i_p99 i_cv%.
  std::string formatHalf(const ReportHalf& half) const {
    char wrongText[16];
    if (half.wrong < 0)
      snprintf(wrongText, sizeof(wrongText), "%6s", "N/A");
    else
      snprintf(wrongText, sizeof(wrongText), "%6g", half.wrong);
    // Sub-microsecond times, common on host memory, keep a third decimal: two would make 0.065 us 0.07.
    auto time = [](double us) { return fit(us, 7, us < 1 ? 3 : 2); };
    std::string text =
        "  " + time(half.timeUs) + "  " + fit(half.algBw, 6) + "  " + fit(half.busBw, 6) + "  " + wrongText;
    if (half.perIteration) {
      const IterationStats& s = half.stats;
      text += "  " + time(s.min) + "  " + time(s.max) + "  " + time(s.p99) + "  " + fit(s.cv, 6);
    }
    return text;
  }

  // With --cold_buffers, calls of the largest size on every pair of the pool, out of place and in place, so that
  // every part of the pool a timed call touches went through a call before: what a call does once for memory it has
  // not seen (a peer mapping the pages of ncclMemAlloc's buffers, which took 2 ms a call at the first size of a
  // 2-rank sweep) stays out of the timing, as the warm-up keeps it out for the hot buffers. The timed calls then
  // start at the pool's front, the part these calls touched longest ago.
  void warmPool(int typeIndex, int op, int root) {
    if (!opt_.coldBuffers || ranks_.empty() || !ranks_.front().pool) return;
    const Counts c = coll_.counts(opt_.maxBytes, nranks_, typeSize(kTypes[typeIndex]));
    const size_t pairs = poolBytes_ / (2 * pageRound(usedBytes(c, typeSize(kTypes[typeIndex]))));
    for (bool inPlace : {false, true}) {
      poolCursor_ = 0;
      for (size_t call = 0; call < pairs; ++call) launchAll(typeIndex, op, root, c, inPlace, true);
      backend_.synchronize();
    }
    poolCursor_ = 0;
  }

  void sweep(int typeIndex, int op, int root) {
    const size_t e = typeSize(kTypes[typeIndex]);
    // Ones of this type in what the warm-up and unchecked calls read: another type's ones could be large numbers
    // here (1.0f is 2^30 as an int32), whose sums overflow.
    if (backgroundType_ != kTypes[typeIndex]) {
      for (auto& r : ranks_) {
        fillBackground(r.send, bufferBytes_, kTypes[typeIndex]);
        fillBackground(r.recv, bufferBytes_, kTypes[typeIndex]);
        if (r.pool) fillBackground(r.pool, poolBytes_, kTypes[typeIndex]);
      }
      backgroundType_ = kTypes[typeIndex];
    }
    // Warm-up: every size of a doubling sweep, out of place.
    for (size_t size = opt_.minBytes; size <= opt_.maxBytes; size = size ? size * 2 : 1) {
      Counts c = coll_.counts(size, nranks_, e);
      for (int w = 0; w < opt_.warmupIters; ++w) launchAll(typeIndex, op, root, c, false);
      backend_.synchronize();
      if (size == opt_.maxBytes || size == 0) break;
    }
    warmPool(typeIndex, op, root);
    for (size_t size = opt_.minBytes; size <= opt_.maxBytes;) {
      Counts c = coll_.counts(size, nranks_, e);
      const size_t bytes = std::max(c.sendCount, c.recvCount) * e;
      char head[128];
      snprintf(head, sizeof(head), "%12zu  %12zu  %8s  %6s  %6d", bytes, c.paramCount, kTypeNames[typeIndex],
               opName(op), root);
      std::string row = head;
      ReportRow record;
      record.bytes = bytes;
      record.count = c.paramCount;
      record.type = kTypeNames[typeIndex];
      record.redop = opName(op);
      record.root = root;
      record.iterations = opt_.iters * opt_.aggIters;
      record.experiment = std::string(coll_.name) + "_perf";
      for (bool inPlace : {false, true}) {
        ReportHalf half = measure(typeIndex, op, root, c, inPlace);
        half.algBw = half.timeUs > 0 ? static_cast<double>(bytes) / half.timeUs / 1e3 : 0;
        half.busBw = half.algBw * coll_.busFactor(nranks_);
        bwSum_ += half.busBw;
        ++cells_;
        row += formatHalf(half);
        (inPlace ? record.inPlace : record.outOfPlace) = std::move(half);
      }
      if (printer_ && !opt_.jsonFile.empty()) report_.rows.push_back(std::move(record));
      if (opt_.timestamps) {
        char ts[64];
        time_t now = time(nullptr);
        strftime(ts, sizeof(ts), "  %Y-%m-%d %H:%M:%S", localtime(&now));
        row += ts;
      }
      if (printer_) {
        printf("%s\n", row.c_str());
        fflush(stdout);
      }
      if (opt_.stepFactor > 1) {
        size = size ? size * opt_.stepFactor : 1;
      } else {
        if (opt_.stepBytes == 0) break;
        size += opt_.stepBytes;
      }
    }
  }

  const Options& opt_;
  const Collective& coll_;
  Backend& backend_;
  bool printer_;
  int nranks_;
  std::vector<RankBuffers> ranks_;
  size_t bufferBytes_ = 0;      // of each send and recv buffer
  std::set<char*> registered_;  // buffers from Backend::allocateRegistered
  // The type whose ones fill the buffers (fillBackground): the allocation's, then the last sweep's.
  static constexpr ncclDataType_t kAllocatedBackground = ncclFloat32;
  ncclDataType_t backgroundType_ = kAllocatedBackground;
  size_t poolBytes_ = 0;   // of each rank's --cold_buffers pool (0: none)
  size_t poolCursor_ = 0;  // where the next timed call's pair starts in it (nextPoolPair)
  std::vector<Pointers> ptrs_;
  uint64_t seed_ = 1000;
  double bwSum_ = 0;
  int cells_ = 0;
  int wrongCells_ = 0;
  std::vector<std::chrono::steady_clock::time_point> iterationEnds_;  // -I samples, sized before the timed loop
  Report report_;
};

}  // namespace

void printPreamble(const char* firstLine, const char* program, const Options& o) {
  libraryLine() = firstLine[0] == '#' ? firstLine + 2 : firstLine;
  printf("%s\n", firstLine);
  printf("# Collective test starting: %s\n", program);
  printf(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: %d "
      "validation: %d graph: 0 unalign: %d\n",
      o.nThreads, o.nGpus, o.minBytes, o.maxBytes, o.stepFactor > 1 ? o.stepFactor : o.stepBytes,
      o.stepFactor > 1 ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check, o.unalign);
  if (o.blocking) printf("# Blocking Enabled: wait for completion and barrier after each collective \n");
  if (o.perIterTiming)
    printf("# Per-iteration timing enabled: each iteration's time combined over ranks as -a %d, first %d skipped\n",
           o.average, o.perIterSkip);
  for (const auto& flag : o.ignored) printf("# %s has no effect on host memory and is ignored\n", flag.c_str());
  fflush(stdout);
}

int runSweep(const Options& options, const Collective& coll, Backend& backend, bool printer) {
  return Runner(options, coll, backend, printer).run();
}

}  // namespace chorus::perf
