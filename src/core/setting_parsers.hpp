// How a setting's text becomes its value: the parsers the components' Setting declarations use, and the phrases
// that say what each accepts (printed in the error for an invalid value).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/settings.hpp"

namespace chorus::setting_parsers {

inline constexpr const char* kAnyText = "any text";
inline constexpr const char* kPositive = "a positive integer, with an optional K, M or G suffix";
inline constexpr const char* kNonNegative = "a non-negative integer, with an optional K, M or G suffix";
inline constexpr const char* kBoolean = "0 or 1 (also true/false, yes/no, on/off)";
inline constexpr const char* kSeconds = "a positive number of seconds (e.g. 300 or 0.5)";

/// A special word (like "auto") that stands for a value outside the setting's range.
struct Word {
  const char* text;
  int64_t value;
};

/// Any text, kept as given.
Setting<std::string>::Parser text();
/// Any text, in lower case.
Setting<std::string>::Parser lowerText();
/// One of `allowed` in any case (kept as given), or empty.
Setting<std::string>::Parser oneOf(std::vector<std::string> allowed);
/// A byte count or count (K, M, G suffixes) in [minimum, maximum], or `word`.
Setting<int64_t>::Parser byteCount(int64_t minimum, int64_t maximum = INT64_MAX, Word word = {nullptr, 0});
/// 0/1, true/false, yes/no, on/off in any case.
Setting<bool>::Parser boolean();
/// A positive number of seconds, or `word`, which stands for 0 (off, or the setting's automatic value).
Setting<double>::Parser seconds(const char* word = nullptr);

}  // namespace chorus::setting_parsers
