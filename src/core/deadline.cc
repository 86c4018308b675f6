#include "core/deadline.hpp"

#include "core/setting_parsers.hpp"

namespace chorus {

const Setting<double> kTimeout{
    {"CHORUS_TIMEOUT", "", "300",
     "seconds any wait may last before it fails with a timeout error (per communicator: CommConfig::timeoutSeconds)"},
    setting_parsers::kSeconds,
    SettingScope::kProcess,
    setting_parsers::seconds()};

}  // namespace chorus
