#include "gpu/settings.hpp"

#include "core/setting_parsers.hpp"

namespace chorus::gpu {

using namespace setting_parsers;

// Process-wide: the device path sets up one peer-memory group per communicator from these, before any call.
const Setting<bool> kPeerMemory{
    {"CHORUS_GPU_PEER_MEMORY", "", "1",
     "1: calls on device buffers among ranks of one host run on the GPU, through each other's device memory (CUDA "
     "IPC); 0: they are staged through pinned host memory and run on the host path"},
    kBoolean,
    SettingScope::kProcess,
    boolean()};
const Setting<int64_t> kSlot{
    {"CHORUS_GPU_SLOT", "", "67108864",
     "bytes of each of the two device-memory slots a rank's peers read from (a call moves at most this much per "
     "step)"},
    "an integer of at least 4096, with an optional K, M or G suffix",
    SettingScope::kProcess,
    byteCount(4096)};
const Setting<int64_t> kOneShot{
    {"CHORUS_GPU_ONE_SHOT", "", "1048576",
     "device AllReduce up to this many bytes: every rank reduces the whole buffer after one barrier (above it, each "
     "reduces its share and then copies the others')"},
    kNonNegative,
    SettingScope::kProcess,
    byteCount(0)};
const Setting<int64_t> kOneKernel{
    {"CHORUS_GPU_ONE_KERNEL", "", "4194304",
     "a device call of one step that moves at most this many bytes per rank runs as one kernel, its barrier inside "
     "it (0: never; above it, copy and reduction kernels with the barriers as stream memory operations between)"},
    kNonNegative,
    SettingScope::kProcess,
    byteCount(0)};

}  // namespace chorus::gpu
