// The ib transport's settings. Declared in a file that is built without verbs too, so every build documents and
// checks the same settings.
#pragma once

#include <cstdint>
#include <string>

#include "core/settings.hpp"

namespace chorus::transport::ib {

extern const Setting<std::string> kHca;   // CHORUS_IB_HCA / NCCL_IB_HCA
extern const Setting<int64_t> kGidIndex;  // CHORUS_IB_GID_INDEX / NCCL_IB_GID_INDEX (-1: by link layer)
extern const Setting<int64_t> kBuffer;    // CHORUS_IB_BUFFER

}  // namespace chorus::transport::ib
