#include "core/setting_parsers.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace chorus::setting_parsers {

Setting<std::string>::Parser text() {
  return [](const std::string& t, std::string* out) {
    *out = t;
    return true;
  };
}

Setting<std::string>::Parser lowerText() {
  return [](const std::string& t, std::string* out) {
    *out = t;
    for (auto& c : *out) c = static_cast<char>(tolower(c));
    return true;
  };
}

Setting<std::string>::Parser oneOf(std::vector<std::string> allowed) {
  return [allowed = std::move(allowed)](const std::string& t, std::string* out) {
    std::string upper = t;
    for (auto& c : upper) c = static_cast<char>(toupper(c));
    if (!t.empty() && std::find(allowed.begin(), allowed.end(), upper) == allowed.end()) return false;
    *out = t;
    return true;
  };
}

Setting<int64_t>::Parser byteCount(int64_t minimum, int64_t maximum, Word word) {
  return [=](const std::string& t, int64_t* out) {
    if (word.text && t == word.text) return (*out = word.value), true;
    int64_t x = 0;
    if (t.empty() || !parseByteSize(t.c_str(), &x) || x < minimum || x > maximum) return false;
    *out = x;
    return true;
  };
}

Setting<bool>::Parser boolean() {
  return [](const std::string& t, bool* out) {
    std::string lower = t;
    for (auto& c : lower) c = static_cast<char>(tolower(c));
    if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return (*out = true), true;
    if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return (*out = false), true;
    return false;
  };
}

Setting<double>::Parser seconds(const char* word) {
  return [=](const std::string& t, double* out) {
    if (word && t == word) return (*out = 0), true;
    char* end = nullptr;
    double x = strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !(x > 0)) return false;
    *out = x;
    return true;
  };
}

}  // namespace chorus::setting_parsers
