#include "observe/clock.hpp"

#include <fstream>
#include <mutex>
#include <string>

namespace chorus::observe {
namespace {

int64_t realtimeNow() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000ll + ts.tv_nsec;
}

// A (tick, wall time) pair read together, and the tick rate measured between two such pairs.
struct Calibration {
  uint64_t tick = 0;
  int64_t wall = 0;
  double nanosecondsPerTick = 1;
};

Calibration measure() {
  Calibration c;
  if (!ticksAreTsc()) {
    c.tick = monotonicNanoseconds();
    c.wall = realtimeNow();
    return c;
  }
  // 20 ms between two pairs puts the rate within a few parts per million of the truth.
  const uint64_t t0 = ticks();
  const int64_t w0 = realtimeNow();
  const uint64_t m0 = monotonicNanoseconds();
  while (monotonicNanoseconds() - m0 < 20000000ull) {
  }
  c.tick = ticks();
  c.wall = realtimeNow();
  c.nanosecondsPerTick = static_cast<double>(c.wall - w0) / static_cast<double>(c.tick - t0);
  return c;
}

const Calibration& calibration() {
  static const Calibration c = measure();  // measured on the first conversion, never on the call path
  return c;
}

}  // namespace

bool cpuHasSteadyTsc() {
#if defined(__x86_64__)
  // Both flags: the TSC ticks at one rate whatever the core's frequency, and keeps ticking in deep sleep states.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
  }
#endif
  return false;
}

int64_t wallNanoseconds(uint64_t tick) {
  const Calibration& c = calibration();
  return c.wall +
         static_cast<int64_t>((static_cast<double>(tick) - static_cast<double>(c.tick)) * c.nanosecondsPerTick);
}

double tickNanoseconds(uint64_t from, uint64_t to) {
  return (static_cast<double>(to) - static_cast<double>(from)) * calibration().nanosecondsPerTick;
}

}  // namespace chorus::observe
