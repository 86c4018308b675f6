// A point in time after which a wait gives up. Every blocking loop in chorus takes one.
//
// A deadline also ends early when the work it belongs to is cancelled: a thread that runs a communicator's init
// (or any other long wait) under a CancelScope makes every Deadline it creates expire as soon as the scope's flag
// is set, so ncclCommAbort stops a wait deep inside the bootstrap or a transport's setup within a few milliseconds.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "core/settings.hpp"

namespace chorus {

/// CHORUS_TIMEOUT: seconds any wait may last (a communicator's own: CommConfig::timeoutSeconds).
extern const Setting<double> kTimeout;

namespace detail {
// No initial-exec model for chorus's thread-locals: it would need static TLS, which a library dlopen'ed late (by
// Python, after torch) may not get ("cannot allocate memory in static TLS block").
inline thread_local const std::atomic<bool>* tCancelFlag = nullptr;
inline thread_local double tTimeoutSeconds = 0;  // 0: CHORUS_TIMEOUT
}  // namespace detail

/// `seconds` as a timeout's error message writes it ("0.5", "300").
std::string formatSeconds(double seconds);

/// A communicator's own timeout when it has one (`seconds` > 0), else CHORUS_TIMEOUT.
inline double timeoutOr(double seconds) { return seconds > 0 ? seconds : settings()[kTimeout]; }

/// While alive, Deadline::fromSettings() on this thread means `seconds` (a communicator's own timeout, set in its
/// CommConfig) instead of CHORUS_TIMEOUT; 0 keeps the setting.
class TimeoutScope {
 public:
  explicit TimeoutScope(double seconds) : previous_(detail::tTimeoutSeconds) {
    if (seconds > 0) detail::tTimeoutSeconds = seconds;
  }
  ~TimeoutScope() { detail::tTimeoutSeconds = previous_; }
  TimeoutScope(const TimeoutScope&) = delete;
  TimeoutScope& operator=(const TimeoutScope&) = delete;
  /// The timeout in force on this thread, in seconds.
  static double seconds() { return timeoutOr(detail::tTimeoutSeconds); }

 private:
  double previous_;
};

/// While alive, Deadlines created on this thread expire once `*flag` is true.
class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>* flag) : previous_(detail::tCancelFlag) { detail::tCancelFlag = flag; }
  ~CancelScope() { detail::tCancelFlag = previous_; }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;
  /// True when the innermost scope of this thread was cancelled.
  static bool cancelled() { return detail::tCancelFlag && detail::tCancelFlag->load(std::memory_order_relaxed); }

 private:
  const std::atomic<bool>* previous_;
};

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(double seconds) { return Deadline(fromNow(seconds), detail::tCancelFlag); }
  /// The deadline of CHORUS_TIMEOUT seconds from now (or of the communicator's own timeout, see TimeoutScope).
  static Deadline fromSettings() { return after(TimeoutScope::seconds()); }
  /// `seconds` from now, whatever CancelScope is in force: for finishing a message already under way, since one
  /// left half-read puts its stream out of step for good.
  static Deadline uncancellableAfter(double seconds) { return Deadline(fromNow(seconds), nullptr); }

  bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
  bool expired() const { return cancelled() || Clock::now() >= end_; }
  /// Milliseconds left, clamped to [0, INT_MAX/2] so it can be passed to poll(). A cancellable deadline answers at
  /// most kCancelPollMs, so that waits which sleep in poll() look at the flag that often.
  int remainingMs() const {
    if (cancelled()) return 0;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - Clock::now()).count();
    if (left < 0) return 0;
    const long long cap = cancel_ ? kCancelPollMs : (1 << 30);
    return static_cast<int>(left < cap ? left : cap);
  }

 private:
  static constexpr int kCancelPollMs = 10;
  Deadline(Clock::time_point end, const std::atomic<bool>* cancel) : end_(end), cancel_(cancel) {}
  static Clock::time_point fromNow(double seconds) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  Clock::time_point end_;
  const std::atomic<bool>* cancel_;
};

}  // namespace chorus
