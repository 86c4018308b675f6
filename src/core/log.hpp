// Logging: CHORUS_DEBUG=WARN|INFO|TRACE (alias NCCL_DEBUG), CHORUS_DEBUG_SUBSYS, CHORUS_DEBUG_FILE.
// Each line carries host, pid and the rank the calling thread is working for. The level is checked before
// any formatting happens.
#pragma once

#include <cstdarg>

namespace chorus::log {

enum class Level : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

/// Subsystems, filterable with CHORUS_DEBUG_SUBSYS=INIT,COLL,... (default: all).
enum Subsys : unsigned { kInit = 1, kColl = 2, kBootstrap = 4, kTransport = 8, kEngine = 16, kAll = ~0u };

bool enabled(Level level, Subsys subsys);
/// Reads the logging settings again (after reloadSettings(); ncclResetDebugInit).
void reinitialize();
void write(Level level, Subsys subsys, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

/// Sets the rank printed in this thread's log lines for the scope's lifetime.
class RankScope {
 public:
  explicit RankScope(int rank);
  ~RankScope();

 private:
  int previous_;
};

}  // namespace chorus::log

#define CHORUS_LOG(level, subsys, ...)                                                       \
  do {                                                                                       \
    if (::chorus::log::enabled(::chorus::log::Level::level, ::chorus::log::subsys))          \
      ::chorus::log::write(::chorus::log::Level::level, ::chorus::log::subsys, __VA_ARGS__); \
  } while (0)
#define CHORUS_WARN(subsys, ...) CHORUS_LOG(kWarn, subsys, __VA_ARGS__)
#define CHORUS_INFO(subsys, ...) CHORUS_LOG(kInfo, subsys, __VA_ARGS__)
#define CHORUS_TRACE(subsys, ...) CHORUS_LOG(kTrace, subsys, __VA_ARGS__)
