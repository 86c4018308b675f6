#include "tuner/settings.hpp"

#include "core/setting_parsers.hpp"

namespace chorus::tuner {

using namespace setting_parsers;

const Setting<std::string> kAlgo{
    {"CHORUS_ALGO", "", "",
     "force or exclude algorithms: [^][collective:]name[@lo-hi], comma separated (e.g. allreduce:ring@1M-)"},
    kAnyText,
    SettingScope::kCommunicator,
    text()};
const Setting<std::string> kNcclAlgo{
    {"NCCL_ALGO", "", "", "read when CHORUS_ALGO is unset: Ring -> ring, Tree -> the log-depth algorithms"},
    kAnyText,
    SettingScope::kCommunicator,
    text()};
const Setting<bool> kDeterministic{
    {"CHORUS_DETERMINISTIC", "", "0",
     "1: AllReduce, ReduceScatter and Reduce fold every element in rank order, so results do not depend on the "
     "algorithm or the message size (Communicator::setDeterministic per communicator)"},
    kBoolean,
    SettingScope::kCommunicator,
    boolean()};
const Setting<std::string> kTuningFile{
    {"CHORUS_TUNING_FILE", "", "",
     "alpha/beta table and measured choices written by chorus-tune for the algorithm selector"},
    kAnyText,
    SettingScope::kCommunicator,
    text()};

}  // namespace chorus::tuner
