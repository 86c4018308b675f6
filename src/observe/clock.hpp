// The flight recorder's clock: a tick counter cheap enough to read twice per call on the 8-byte AllReduce path
// (the TSC, ~11 ns, where it runs at a constant rate; clock_gettime's ~28 ns otherwise), turned into wall-clock
// nanoseconds only when a record is written out, so that ranks on one machine, or on hosts with synchronized
// clocks, compare.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace chorus::observe {

/// Whether this CPU's TSC ticks at a constant rate and does not stop (/proc/cpuinfo's flags, read once).
bool cpuHasSteadyTsc();

/// Whether ticks() reads the TSC rather than CLOCK_MONOTONIC. Inline: ticks() is read twice on every call's path.
inline bool ticksAreTsc() {
  static const bool tsc = cpuHasSteadyTsc();
  return tsc;
}

inline uint64_t monotonicNanoseconds();

/// A monotonic count, in units that wallNanoseconds() converts.
inline uint64_t ticks() {
#if defined(__x86_64__)
  if (ticksAreTsc()) return __rdtsc();
#endif
  return monotonicNanoseconds();
}

/// The wall-clock time (CLOCK_REALTIME, nanoseconds since the epoch) of a ticks() value read in this process.
int64_t wallNanoseconds(uint64_t tick);
/// Nanoseconds between two ticks() values.
double tickNanoseconds(uint64_t from, uint64_t to);

}  // namespace chorus::observe

#include <time.h>

inline uint64_t chorus::observe::monotonicNanoseconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
