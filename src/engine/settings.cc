#include "engine/settings.hpp"

#include "core/setting_parsers.hpp"

namespace chorus::engine {

using namespace setting_parsers;

const Setting<int64_t> kSpin{
    {"CHORUS_SPIN", "", "auto",
     "polls before a waiting rank yields its core (auto: 20000, or 16 when ranks outnumber cores)"},
    "auto or a positive integer",
    SettingScope::kCommunicator,
    byteCount(1, INT64_MAX, {"auto", 0})};
const Setting<bool> kFarStreaming{
    {"CHORUS_FAR_STREAMING", "", "1",
     "1: a sender whose plain copies into a peer's shared-memory FIFO (timed from 16 KiB) run below 7 GB/s three "
     "times in a row (the cores far apart) writes its pieces of 16 KiB and more there with streaming stores for the "
     "next 20 ms"},
    kBoolean,
    SettingScope::kCommunicator,
    boolean()};
const Setting<int64_t> kColdStreaming{
    {"CHORUS_COLD_STREAMING", "", "65536",
     "steps of at least this many bytes into a receive buffer not written lately (judged from the buffers of a "
     "communicator's last calls) are written with streaming stores; 0 = off (every buffer taken as cached: streaming "
     "from CHORUS_CACHED_STREAMING)"},
    kNonNegative,
    SettingScope::kCommunicator,
    byteCount(0)};
const Setting<int64_t> kCachedStreaming{
    {"CHORUS_CACHED_STREAMING", "", "4194304",
     "steps of at least this many bytes into a receive buffer judged still in the cache are written with streaming "
     "stores"},
    kPositive,
    SettingScope::kCommunicator,
    byteCount(1)};
const Setting<bool> kCheckCalls{
    {"CHORUS_CHECK_CALLS", "", "1",
     "1: every call's first message to each peer carries its sequence number and a digest of its arguments, and a "
     "mismatch fails the call on both sides; must be the same on every rank"},
    kBoolean,
    SettingScope::kCommunicator,
    boolean()};

}  // namespace chorus::engine
