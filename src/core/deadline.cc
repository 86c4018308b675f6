#include "core/deadline.hpp"

#include <cstdio>

#include "core/setting_parsers.hpp"

namespace chorus {

std::string formatSeconds(double seconds) {
  char text[32];
  snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

const Setting<double> kTimeout{
    {"CHORUS_TIMEOUT", "", "300",
     "seconds any wait may last before it fails with a timeout error (per communicator: CommConfig::timeoutSeconds)"},
    setting_parsers::kSeconds,
    SettingScope::kProcess,
    setting_parsers::seconds()};

}  // namespace chorus
