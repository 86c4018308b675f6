// NCCL 2.30's parameters by name (ncclParam*): each key is an environment variable chorus reads (settingDocs(), by
// its own name or its NCCL alias), its value the one in effect: the environment's, else the documented default.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "capi/api_support.hpp"
#include "core/log.hpp"
#include "core/settings.hpp"

using chorus::Status;
using chorus::capi::report;

struct ncclParamHandle {
  const chorus::SettingDoc* doc;
};

namespace {

const chorus::SettingDoc* findSetting(const char* key) {
  for (const chorus::SettingDoc& d : chorus::settingDocs()) {
    if (std::strcmp(d.name, key) == 0 || (*d.alias && std::strcmp(d.alias, key) == 0)) return &d;
  }
  return nullptr;
}

Status unknownKey(const char* key) {
  return chorus::invalidArgument(std::string("ncclParam: no parameter '") + key +
                                 "' (ncclParamGetAllParameterKeys and chorus-info list them)");
}

std::string valueOf(const chorus::SettingDoc& doc) {
  std::string raw = chorus::rawSettingValue(doc);
  return raw.empty() ? doc.defaultValue : raw;
}

// One handle per setting, made once: a handle stays valid for the life of the process.
ncclParamHandle* handleOf(const chorus::SettingDoc* doc) {
  static std::vector<ncclParamHandle> handles = [] {
    std::vector<ncclParamHandle> all;
    for (const chorus::SettingDoc& d : chorus::settingDocs()) all.push_back({&d});
    return all;
  }();
  return &handles[static_cast<size_t>(doc - chorus::settingDocs().data())];
}

// The value as an integer of [lo, hi]: a plain integer or a byte size (64K, 1M).
Status integerOf(ncclParamHandle_t handle, long long lo, unsigned long long hi, const char* type, long long* asSigned,
                 unsigned long long* asUnsigned) {
  if (!handle) return chorus::invalidArgument(std::string("ncclParamGet") + type + ": NULL handle");
  const std::string text = valueOf(*handle->doc);
  const auto notA = [&] {
    return chorus::invalidArgument(std::string("ncclParamGet") + type + ": " + handle->doc->name + "='" + text +
                                   "' is not a " + type);
  };
  errno = 0;
  char* end = nullptr;
  const bool negative = !text.empty() && text[0] == '-';
  long long s = 0;
  unsigned long long u = 0;
  if (negative) {
    s = std::strtoll(text.c_str(), &end, 0);
  } else {
    u = std::strtoull(text.c_str(), &end, 0);
  }
  if (text.empty() || errno != 0 || *end != '\0') {
    int64_t bytes = 0;
    if (negative || !chorus::parseByteSize(text.c_str(), &bytes) || bytes < 0) return notA();
    u = static_cast<unsigned long long>(bytes);
  }
  if (negative ? s < lo : u > hi) return notA();
  *asSigned = negative ? s : static_cast<long long>(u);
  *asUnsigned = u;
  return Status::ok();
}

template <typename T>
ncclResult_t getInteger(ncclParamHandle_t handle, T* out, const char* type) {
  if (!out) return report(chorus::invalidArgument(std::string("ncclParamGet") + type + ": NULL out"));
  long long s = 0;
  unsigned long long u = 0;
  const long long lo = std::numeric_limits<T>::min();
  const unsigned long long hi = static_cast<unsigned long long>(std::numeric_limits<T>::max());
  CHORUS_CHECK(integerOf(handle, lo, hi, type, &s, &u));
  *out = static_cast<T>(std::numeric_limits<T>::is_signed ? s : static_cast<long long>(u));
  return ncclSuccess;
}

// The text a getter hands out, kept until the thread's next call.
thread_local std::string handedOut;

}  // namespace

extern "C" {

ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key) try {
  if (!out || !key) return report(chorus::invalidArgument("ncclParamBind: NULL argument"));
  const chorus::SettingDoc* doc = findSetting(key);
  if (!doc) return report(unknownKey(key));
  *out = handleOf(doc);
  return ncclSuccess;
}
CHORUS_CATCH("ncclParamBind")

ncclResult_t pncclParamGetI8(ncclParamHandle_t h, int8_t* out) try { return getInteger(h, out, "I8"); }
CHORUS_CATCH("ncclParamGetI8")
ncclResult_t pncclParamGetI16(ncclParamHandle_t h, int16_t* out) try { return getInteger(h, out, "I16"); }
CHORUS_CATCH("ncclParamGetI16")
ncclResult_t pncclParamGetI32(ncclParamHandle_t h, int32_t* out) try { return getInteger(h, out, "I32"); }
CHORUS_CATCH("ncclParamGetI32")
ncclResult_t pncclParamGetI64(ncclParamHandle_t h, int64_t* out) try { return getInteger(h, out, "I64"); }
CHORUS_CATCH("ncclParamGetI64")
ncclResult_t pncclParamGetU8(ncclParamHandle_t h, uint8_t* out) try { return getInteger(h, out, "U8"); }
CHORUS_CATCH("ncclParamGetU8")
ncclResult_t pncclParamGetU16(ncclParamHandle_t h, uint16_t* out) try { return getInteger(h, out, "U16"); }
CHORUS_CATCH("ncclParamGetU16")
ncclResult_t pncclParamGetU32(ncclParamHandle_t h, uint32_t* out) try { return getInteger(h, out, "U32"); }
CHORUS_CATCH("ncclParamGetU32")
ncclResult_t pncclParamGetU64(ncclParamHandle_t h, uint64_t* out) try { return getInteger(h, out, "U64"); }
CHORUS_CATCH("ncclParamGetU64")

ncclResult_t pncclParamGetStr(ncclParamHandle_t handle, const char** out) try {
  if (!handle || !out) return report(chorus::invalidArgument("ncclParamGetStr: NULL argument"));
  handedOut = valueOf(*handle->doc);
  *out = handedOut.c_str();
  return ncclSuccess;
}
CHORUS_CATCH("ncclParamGetStr")

ncclResult_t pncclParamGet(ncclParamHandle_t handle, void* out, int maxLen, int* len) try {
  if (!handle || !len || (maxLen > 0 && !out) || maxLen < 0)
    return report(chorus::invalidArgument("ncclParamGet: NULL argument or negative maxLen"));
  const std::string value = valueOf(*handle->doc);
  *len = static_cast<int>(value.size() + 1);
  if (maxLen > 0) {
    const size_t copied = std::min(value.size(), static_cast<size_t>(maxLen - 1));
    std::memcpy(out, value.data(), copied);
    static_cast<char*>(out)[copied] = '\0';
  }
  return ncclSuccess;
}
CHORUS_CATCH("ncclParamGet")

ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen) try {
  if (!key || !value || !valueLen) return report(chorus::invalidArgument("ncclParamGetParameter: NULL argument"));
  const chorus::SettingDoc* doc = findSetting(key);
  if (!doc) return report(unknownKey(key));
  handedOut = valueOf(*doc);
  *value = handedOut.c_str();
  *valueLen = static_cast<int>(handedOut.size());
  return ncclSuccess;
}
CHORUS_CATCH("ncclParamGetParameter")

ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen) try {
  if (!table || !tableLen) return report(chorus::invalidArgument("ncclParamGetAllParameterKeys: NULL argument"));
  static std::vector<const char*> keys = [] {
    std::vector<const char*> all;
    for (const chorus::SettingDoc& d : chorus::settingDocs()) all.push_back(d.name);
    return all;
  }();
  *table = keys.data();
  *tableLen = static_cast<int>(keys.size());
  return ncclSuccess;
}
CHORUS_CATCH("ncclParamGetAllParameterKeys")

void pncclParamDumpAll(void) {
  try {
    for (const chorus::SettingDoc& d : chorus::settingDocs())
      CHORUS_INFO(kInit, "param %s=%s", d.name, valueOf(d).c_str());
  } catch (...) {
    (void)chorus::capi::caught("ncclParamDumpAll");
  }
}

CHORUS_NCCL_ALIAS(ncclParamBind)
CHORUS_NCCL_ALIAS(ncclParamGetI8)
CHORUS_NCCL_ALIAS(ncclParamGetI16)
CHORUS_NCCL_ALIAS(ncclParamGetI32)
CHORUS_NCCL_ALIAS(ncclParamGetI64)
CHORUS_NCCL_ALIAS(ncclParamGetU8)
CHORUS_NCCL_ALIAS(ncclParamGetU16)
CHORUS_NCCL_ALIAS(ncclParamGetU32)
CHORUS_NCCL_ALIAS(ncclParamGetU64)
CHORUS_NCCL_ALIAS(ncclParamGetStr)
CHORUS_NCCL_ALIAS(ncclParamGet)
CHORUS_NCCL_ALIAS(ncclParamGetParameter)
CHORUS_NCCL_ALIAS(ncclParamGetAllParameterKeys)
CHORUS_NCCL_ALIAS(ncclParamDumpAll)

}  // extern "C"
