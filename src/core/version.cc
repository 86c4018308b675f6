#include "chorus/version.hpp"

#include "nccl.h"

#define CHORUS_STRINGIFY2(x) #x
#define CHORUS_STRINGIFY(x) CHORUS_STRINGIFY2(x)

static_assert(CHORUS_NCCL_API_CODE == NCCL_VERSION_CODE, "version.hpp and nccl.h disagree on the NCCL API level");

namespace chorus {

const char* version() {
  return CHORUS_STRINGIFY(CHORUS_VERSION_MAJOR) "." CHORUS_STRINGIFY(CHORUS_VERSION_MINOR) "." CHORUS_STRINGIFY(
      CHORUS_VERSION_PATCH);
}

const char* ncclApiVersion() {
  return CHORUS_STRINGIFY(NCCL_MAJOR) "." CHORUS_STRINGIFY(NCCL_MINOR) "." CHORUS_STRINGIFY(NCCL_PATCH);
}

}  // namespace chorus
