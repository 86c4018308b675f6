// A point in time after which a wait gives up. Every blocking loop in chorus takes one.
#pragma once

#include <chrono>

#include "core/settings.hpp"

namespace chorus {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(double seconds) {
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
  }
  /// The deadline of CHORUS_TIMEOUT seconds from now.
  static Deadline fromSettings() { return after(settings().timeoutSeconds); }

  bool expired() const { return Clock::now() >= end_; }
  /// Milliseconds left, clamped to [0, INT_MAX/2] so it can be passed to poll().
  int remainingMs() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - Clock::now()).count();
    if (left < 0) return 0;
    if (left > (1 << 30)) return 1 << 30;
    return static_cast<int>(left);
  }

 private:
  explicit Deadline(Clock::time_point end) : end_(end) {}
  Clock::time_point end_;
};

}  // namespace chorus
