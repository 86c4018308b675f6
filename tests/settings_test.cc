// The settings parser: sizes with K/M/G everywhere, booleans, durations, enums; an invalid value is an error that
// names the variable, the value and what is accepted, and communicator init fails with it.
#include "core/settings.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "chorus/communicator.hpp"

namespace chorus {
namespace {

class Settings : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"CHORUS_TIMEOUT", "CHORUS_DEBUG", "NCCL_DEBUG", "CHORUS_DIRECT_THRESHOLD",
                             "CHORUS_SHM_BUFFER", "CHORUS_SHM_CMA", "CHORUS_TRANSPORT"})
      unsetenv(name);
    reloadSettings();
  }
  static std::string errorWith(const char* name, const char* value) {
    setenv(name, value, 1);
    reloadSettings();
    std::string e = settingsError();
    unsetenv(name);
    reloadSettings();
    return e;
  }
};

TEST_F(Settings, SizesTakeBinarySuffixes) {
  setenv("CHORUS_DIRECT_THRESHOLD", "1M", 1);
  setenv("CHORUS_SHM_BUFFER", "1G", 1);
  reloadSettings();
  EXPECT_EQ(settings().directThreshold, 1 << 20);
  EXPECT_EQ(settings().shmBufferBytes, int64_t{1} << 30);
  EXPECT_EQ(settingsError(), "");
  setenv("CHORUS_DIRECT_THRESHOLD", "0", 1);  // 0 is "off" here, not invalid
  reloadSettings();
  EXPECT_EQ(settings().directThreshold, 0);
  EXPECT_EQ(settingsError(), "");
}

// What `chorus-info` and the README print as a setting's default is a value the setting takes.
TEST_F(Settings, EverySettingAcceptsItsDocumentedDefault) {
  int checked = 0;
  for (const SettingDoc& doc : settingDocs()) {
    if (std::string(doc.defaultValue).empty()) continue;
    EXPECT_EQ(errorWith(doc.name, doc.defaultValue), "") << doc.name << "=" << doc.defaultValue;
    ++checked;
  }
  EXPECT_GT(checked, 15);
}

// A setting's default is its documented text, parsed: the value in effect without the variable is the one
// chorus-info and the README print.
TEST_F(Settings, UnsetSettingsTakeTheirDocumentedDefaults) {
  reloadSettings();
  ASSERT_EQ(settingsError(), "");
  const chorus::Settings& s = settings();
  EXPECT_EQ(s.timeoutSeconds, 300);
  EXPECT_EQ(s.shmBufferBytes, 0);  // auto
  EXPECT_EQ(s.tcpSockets, 2);
  EXPECT_EQ(s.tcpCongestion, "auto");
  EXPECT_EQ(s.debugSubsys, "ALL");
  EXPECT_EQ(s.ibGidIndex, -1);       // "": by link layer
  EXPECT_EQ(s.directThreshold, -1);  // "": each transport's own
  EXPECT_EQ(s.spinIterations, 0);    // auto
  EXPECT_TRUE(s.checkCalls);
  EXPECT_FALSE(s.shmCma);
  EXPECT_EQ(s.traceEntries, 2000);
  EXPECT_EQ(s.heartbeatPeriod, 0);
  EXPECT_EQ(s.heartbeatTimeout, 0);  // auto
  EXPECT_TRUE(s.gpuPeerMemory);
  EXPECT_EQ(s.gpuSlotBytes, 64 << 20);
  EXPECT_EQ(s.gpuOneShotBytes, 1 << 20);
  EXPECT_EQ(s.gpuOneKernelMax, 4 << 20);
}

TEST_F(Settings, RangesAndSpecialWordsAreChecked) {
  EXPECT_EQ(errorWith("CHORUS_SPIN", "0"), "CHORUS_SPIN='0' is invalid: auto or a positive integer");
  EXPECT_EQ(errorWith("CHORUS_SPIN", "64"), "");
  EXPECT_NE(errorWith("CHORUS_GPU_SLOT", "4095").find("at least 4096"), std::string::npos);
  EXPECT_NE(errorWith("CHORUS_TRACE_ENTRIES", "2M").find("from 0 to 1048576"), std::string::npos);
  EXPECT_EQ(errorWith("CHORUS_HEARTBEAT_PERIOD", "0"), "");
  EXPECT_NE(errorWith("CHORUS_HEARTBEAT_PERIOD", "-1").find("0 or a positive number"), std::string::npos);
  EXPECT_NE(errorWith("CHORUS_HEARTBEAT_TIMEOUT", "0").find("auto or a positive number"), std::string::npos);
  // An invalid value keeps the default in effect.
  setenv("CHORUS_GPU_SLOT", "12", 1);
  reloadSettings();
  EXPECT_EQ(settings().gpuSlotBytes, 64 << 20);
  unsetenv("CHORUS_GPU_SLOT");
  // NCCL's names stay lenient: an invalid NCCL_IB_GID_INDEX is ignored, as NCCL ignores it.
  setenv("NCCL_IB_GID_INDEX", "x", 1);
  reloadSettings();
  EXPECT_EQ(settingsError(), "");
  EXPECT_EQ(settings().ibGidIndex, -1);
  unsetenv("NCCL_IB_GID_INDEX");
}

TEST_F(Settings, InvalidValuesAreNamedErrors) {
  EXPECT_EQ(errorWith("CHORUS_TIMEOUT", "abc"),
            "CHORUS_TIMEOUT='abc' is invalid: a positive number of seconds (e.g. 300 or 0.5)");
  EXPECT_NE(errorWith("CHORUS_DEBUG", "LOUD").find("CHORUS_DEBUG='LOUD' is invalid: one of WARN, INFO, TRACE"),
            std::string::npos);
  EXPECT_NE(errorWith("CHORUS_SHM_BUFFER", "4X").find("CHORUS_SHM_BUFFER='4X'"), std::string::npos);
  EXPECT_NE(errorWith("CHORUS_SHM_CMA", "maybe").find("0 or 1"), std::string::npos);
  // NCCL's own name keeps NCCL's leniency.
  EXPECT_EQ(errorWith("NCCL_DEBUG", "LOUD"), "");
  EXPECT_EQ(errorWith("CHORUS_TIMEOUT", "0.5"), "");
}

TEST_F(Settings, InitFailsWithTheInvalidSetting) {
  setenv("CHORUS_TIMEOUT", "abc", 1);
  reloadSettings();
  std::vector<std::unique_ptr<Communicator>> comms;
  Status st = Communicator::createLocal(2, &comms);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("CHORUS_TIMEOUT='abc'"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace chorus
