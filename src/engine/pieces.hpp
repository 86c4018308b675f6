// How many bytes of a step a sender copies into the stream before it publishes them (Execution::advanceSend); the
// sizes and why: engine/tuning.hpp.
#pragma once

#include <cstddef>

#include "engine/tuning.hpp"

namespace chorus::engine {

struct Pieces {
  static constexpr size_t kBulk = kBulkPiece;
  static constexpr size_t kMidStep = kMidStepPiece;

  bool ranksShareCores = false;  // this machine runs more ranks of the communicator than it has cores

  /// The bytes published at once of a step of `stepBytes`.
  size_t forStep(size_t stepBytes) const { return stepBytes <= kBulk && !ranksShareCores ? kMidStep : kBulk; }
};

}  // namespace chorus::engine
