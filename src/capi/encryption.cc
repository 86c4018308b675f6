// ncclSetEncryption (NCCL 2.32): TLS 1.3 with a pre-shared key on chorus's own sockets, the rendezvous store's and
// the tcp transport's (bootstrap/tls.hpp). Process-wide, for the connections made after it, like NCCL's.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "bootstrap/tls.hpp"
#include "capi/api_support.hpp"

using chorus::capi::report;

namespace {

// The smallest struct a caller may pass: everything up to mode.
constexpr size_t kSmallestConfig = offsetof(ncclEncryptionConfig_t, psk);

}  // namespace

extern "C" {

ncclResult_t pncclSetEncryption(const ncclEncryptionConfig_t* config) try {
  ncclEncryptionConfig_t c = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  if (config != nullptr) {
    if (config->magic != NCCL_API_MAGIC)
      return report(
          chorus::invalidArgument("ncclSetEncryption: the config was not made by NCCL_ENCRYPTION_CONFIG_INITIALIZER"));
    if (config->size < kSmallestConfig)
      return report(chorus::invalidArgument("ncclSetEncryption: config size " + std::to_string(config->size) +
                                            " is smaller than any nccl.h's"));
    // Read by the caller's declared size: nothing past it, nor past this header's struct.
    memcpy(&c, config, std::min(config->size, sizeof(c)));
    if (config->size < sizeof(c)) c.psk = nullptr;
  }
  switch (c.mode) {
    case NCCL_ENCRYPTION_MODE_NONE:
      return report(chorus::net::tls::setKey(nullptr));
    case NCCL_ENCRYPTION_MODE_PSK:
      if (c.psk == nullptr)
        return report(chorus::invalidArgument("ncclSetEncryption: NCCL_ENCRYPTION_MODE_PSK needs config->psk"));
      return report(chorus::net::tls::setKey(c.psk).withContext("ncclSetEncryption"));
    default:
      return report(chorus::invalidArgument("ncclSetEncryption: unknown mode " + std::to_string(c.mode) +
                                            " (NCCL_ENCRYPTION_MODE_NONE or NCCL_ENCRYPTION_MODE_PSK)"));
  }
}
CHORUS_CATCH("ncclSetEncryption")

CHORUS_NCCL_ALIAS(ncclSetEncryption)

}  // extern "C"
