// One call's own choice of algorithms: CollArgs::algorithms, and NCCL 2.31's ncclCollConfig_t.algSelection behind
// the nccl*Config functions. NCCL's grammar:
//
//   selection := term (',' term)*         an algorithm that satisfies any term
//   term      := factor ('+' factor)*     ... satisfies every factor of it
//   factor    := ['^'] tag                ... matches the tag, or with '^' does not
//
// A tag matches an algorithm when it is a case-insensitive prefix of one of its names: chorus's own (chorus-info
// lists them) and NCCL's for what chorus runs in its place, RING_SIMPLE for the ring and TREE_SIMPLE for the
// collective's log-depth algorithm (tuner::ncclTreeAlgorithm), SIMPLE being the one protocol of chorus's host path.
// NCCL's other names (its LL and LL128 protocols, COLLNET_*, NVLS*, PAT) are known and match nothing here; a tag
// that is a prefix of no name at all is an error. The selection takes the place of CHORUS_ALGO and the tuning file
// for its call: the selector runs the fastest algorithm it allows (deterministic mode still applies).
#pragma once

#include <string>
#include <vector>

#include "algorithms/plan.hpp"
#include "chorus/status.hpp"

namespace chorus::tuner {

class CallSelection {
 public:
  /// Whether the selection allows `a` (an algorithm of algo::algorithms()).
  bool has(const algo::Algorithm& a) const;
  /// Whether a call this selection leaves no algorithm for is an error (else the selector's own choice runs).
  bool required() const { return required_; }
  const std::string& text() const { return text_; }

  /// Parses `text`; the error names the tag or term that is wrong.
  static Status parse(const std::string& text, bool required, CallSelection* out);

 private:
  std::string text_;
  bool required_ = true;
  std::vector<bool> allowed_;  // by index into algo::algorithms()
};

/// The selection of `text` and `required`, parsed once and kept for the life of the process: equal selections are
/// the same pointer, so the plan cache and the repeated-call check compare pointers. A program has a few; more than
/// kMaxSelections distinct ones is an error rather than memory without end.
Status internSelection(const char* text, bool required, const CallSelection** out);
inline constexpr size_t kMaxSelections = 4096;

}  // namespace chorus::tuner
