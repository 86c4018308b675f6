// The settings parser: sizes with K/M/G everywhere, booleans, durations, enums; an invalid value is an error that
// names the variable, the value and what is accepted, and communicator init fails with it.
#include "core/settings.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "chorus/communicator.hpp"

namespace chorus {
namespace {

// The process's value of the setting `name`, which the test does not see declared: by name, as ncclParam does.
template <class T>
T valueOf(const char* name) {
  const SettingValue* v = settings().find(name);
  EXPECT_NE(v, nullptr) << name;
  return v ? std::get<T>(*v) : T{};
}

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
  EXPECT_EQ(valueOf<int64_t>("CHORUS_DIRECT_THRESHOLD"), 1 << 20);
  EXPECT_EQ(valueOf<int64_t>("CHORUS_SHM_BUFFER"), int64_t{1} << 30);
  EXPECT_EQ(settingsError(), "");
  setenv("CHORUS_DIRECT_THRESHOLD", "0", 1);  // 0 is "off" here, not invalid
  reloadSettings();
  EXPECT_EQ(valueOf<int64_t>("CHORUS_DIRECT_THRESHOLD"), 0);
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
  EXPECT_EQ(valueOf<double>("CHORUS_TIMEOUT"), 300);
  EXPECT_EQ(valueOf<int64_t>("CHORUS_SHM_BUFFER"), 0);  // auto
  EXPECT_EQ(valueOf<int64_t>("CHORUS_TCP_SOCKETS"), 2);
  EXPECT_EQ(valueOf<std::string>("CHORUS_TCP_CONGESTION"), "auto");
  EXPECT_EQ(valueOf<std::string>("CHORUS_DEBUG_SUBSYS"), "ALL");
  EXPECT_EQ(valueOf<int64_t>("CHORUS_IB_GID_INDEX"), -1);      // "": by link layer
  EXPECT_EQ(valueOf<int64_t>("CHORUS_DIRECT_THRESHOLD"), -1);  // "": each transport's own
  EXPECT_EQ(valueOf<int64_t>("CHORUS_SPIN"), 0);               // auto
  EXPECT_TRUE(valueOf<bool>("CHORUS_CHECK_CALLS"));
  EXPECT_FALSE(valueOf<bool>("CHORUS_SHM_CMA"));
  EXPECT_EQ(valueOf<int64_t>("CHORUS_TRACE_ENTRIES"), 2000);
  EXPECT_EQ(valueOf<double>("CHORUS_HEARTBEAT_PERIOD"), 0);
  EXPECT_EQ(valueOf<double>("CHORUS_HEARTBEAT_TIMEOUT"), 0);  // auto
  EXPECT_TRUE(valueOf<bool>("CHORUS_GPU_PEER_MEMORY"));
  EXPECT_EQ(valueOf<int64_t>("CHORUS_GPU_SLOT"), 64 << 20);
  EXPECT_EQ(valueOf<int64_t>("CHORUS_GPU_ONE_SHOT"), 1 << 20);
  EXPECT_EQ(valueOf<int64_t>("CHORUS_GPU_ONE_KERNEL"), 4 << 20);
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
  EXPECT_EQ(valueOf<int64_t>("CHORUS_GPU_SLOT"), 64 << 20);
  unsetenv("CHORUS_GPU_SLOT");
  // NCCL's names stay lenient: an invalid NCCL_IB_GID_INDEX is ignored, as NCCL ignores it.
  setenv("NCCL_IB_GID_INDEX", "x", 1);
  reloadSettings();
  EXPECT_EQ(settingsError(), "");
  EXPECT_EQ(valueOf<int64_t>("NCCL_IB_GID_INDEX"), -1);
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

// Each component declares its own settings; together they are one table with no name twice, each documented.
TEST_F(Settings, EveryDeclaredSettingHasOneNameAndADocument) {
  std::set<std::string> names;
  for (const SettingDoc& doc : settingDocs()) {
    EXPECT_TRUE(names.insert(doc.name).second) << doc.name << " is declared twice";
    if (*doc.alias) {
      EXPECT_TRUE(names.insert(doc.alias).second) << doc.alias << " is declared twice";
    }
    EXPECT_GT(strlen(doc.doc), 10u) << doc.name;
    EXPECT_NE(settings().find(doc.name), nullptr) << doc.name;
  }
  EXPECT_EQ(settings().find("CHORUS_NO_SUCH_SETTING"), nullptr);
}

// A communicator's overrides make a copy: the process's values stay, a name or an NCCL alias may be given.
TEST_F(Settings, OverridesChangeOnlyTheCopy) {
  std::string error;
  const chorus::Settings s = settings().withOverrides(
      {{"CHORUS_TCP_BUFFER", "1M"}, {"NCCL_IB_HCA", "mlx5_1"}, {"CHORUS_SHM_CMA", "on"}}, &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(std::get<int64_t>(*s.find("CHORUS_TCP_BUFFER")), 1 << 20);
  EXPECT_EQ(std::get<std::string>(*s.find("CHORUS_IB_HCA")), "mlx5_1");
  EXPECT_TRUE(std::get<bool>(*s.find("CHORUS_SHM_CMA")));
  EXPECT_EQ(valueOf<int64_t>("CHORUS_TCP_BUFFER"), 4 << 20);
  EXPECT_EQ(valueOf<std::string>("CHORUS_IB_HCA"), "");
  EXPECT_FALSE(valueOf<bool>("CHORUS_SHM_CMA"));
}

TEST_F(Settings, OverridesNameWhatIsWrong) {
  auto errorOf = [](const std::string& name, const std::string& value) {
    std::string error;
    (void)settings().withOverrides({{name, value}}, &error);
    return error;
  };
  EXPECT_EQ(errorOf("CHORUS_TCP_BUFER", "1M"), "'CHORUS_TCP_BUFER' is not a setting (chorus-info lists them)");
  EXPECT_EQ(errorOf("CHORUS_DEBUG", "INFO"),
            "CHORUS_DEBUG is read once for the whole process: it cannot be set per communicator");
  EXPECT_EQ(errorOf("CHORUS_TCP_BUFFER", "0"),
            "CHORUS_TCP_BUFFER='0' is invalid: a positive integer, with an optional K, M or G suffix");
  // An invalid override keeps the value it would have replaced.
  std::string error;
  const chorus::Settings s = settings().withOverrides({{"CHORUS_TCP_BUFFER", "x"}}, &error);
  EXPECT_NE(error, "");
  EXPECT_EQ(std::get<int64_t>(*s.find("CHORUS_TCP_BUFFER")), 4 << 20);
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
