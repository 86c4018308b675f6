// Bytes as lower-case hex text, for values that travel through the bootstrap store's text entries.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace chorus::transport {

inline std::string toHex(const void* data, size_t bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (size_t i = 0; i < bytes; ++i) {
    const auto b = static_cast<const unsigned char*>(data)[i];
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

/// The bytes `text` spells, appended to *out; false (out unspecified) for an odd length or a non-hex digit.
inline bool fromHex(std::string_view text, std::string* out) {
  auto value = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  if (text.size() % 2 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 2) {
    const int high = value(text[i]), low = value(text[i + 1]);
    if (high < 0 || low < 0) return false;
    out->push_back(static_cast<char>(high * 16 + low));
  }
  return true;
}

}  // namespace chorus::transport
