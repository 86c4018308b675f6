// The device path's settings: whether device buffers meet over each other's memory, and how its calls are cut.
// Declared in a file built without CUDA too, so every build documents and checks the same settings.
#pragma once

#include <cstdint>

#include "core/settings.hpp"

namespace chorus::gpu {

extern const Setting<bool> kPeerMemory;    // CHORUS_GPU_PEER_MEMORY
extern const Setting<int64_t> kSlot;       // CHORUS_GPU_SLOT
extern const Setting<int64_t> kOneShot;    // CHORUS_GPU_ONE_SHOT
extern const Setting<int64_t> kOneKernel;  // CHORUS_GPU_ONE_KERNEL (bytes)

}  // namespace chorus::gpu
