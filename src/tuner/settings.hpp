// The selector's settings: forced or excluded algorithms, deterministic reductions, a measured tuning table.
#pragma once

#include <string>

#include "core/settings.hpp"

namespace chorus::tuner {

extern const Setting<std::string> kAlgo;        // CHORUS_ALGO
extern const Setting<std::string> kNcclAlgo;    // NCCL_ALGO (read when CHORUS_ALGO is unset)
extern const Setting<bool> kDeterministic;      // CHORUS_DETERMINISTIC
extern const Setting<std::string> kTuningFile;  // CHORUS_TUNING_FILE

}  // namespace chorus::tuner
