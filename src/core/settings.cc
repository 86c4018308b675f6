#include "core/settings.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/setting_parsers.hpp"

namespace chorus {
namespace {

// Every declared setting, in the order of registration (its index). Declarations are made during static
// initialization; the tables are made after it.
std::vector<const SettingDeclaration*>& declarations() {
  static std::vector<const SettingDeclaration*> all;
  return all;
}

const SettingDeclaration* findDeclaration(const std::string& name) {
  for (const SettingDeclaration* d : declarations()) {
    if (name == d->doc().name || (*d->doc().alias && name == d->doc().alias)) return d;
  }
  return nullptr;
}

const char* lookup(const char* name, const char* alias) {
  if (const char* v = getenv(name)) return v;
  if (alias && *alias) return getenv(alias);
  return nullptr;
}

std::mutex gMutex;
std::atomic<Settings*> gSettings{nullptr};
std::string gError;  // under gMutex

}  // namespace

SettingDeclaration::SettingDeclaration(SettingDoc doc, const char* accepted, SettingScope scope)
    : doc_(doc), accepted_(accepted), index_(declarations().size()) {
  doc_.scope = scope;
  declarations().push_back(this);
}

// The default goes through the same parser as any value, so the documented default and the one in effect cannot
// disagree (settings_test checks every default parses).
Settings::Settings() {
  values_.resize(declarations().size());
  for (const SettingDeclaration* d : declarations()) (void)d->parse(d->doc().defaultValue, &values_[d->index()]);
}

const SettingValue* Settings::find(const std::string& name) const {
  const SettingDeclaration* d = findDeclaration(name);
  return d ? &values_[d->index()] : nullptr;
}

Settings Settings::withOverrides(const std::map<std::string, std::string>& overrides, std::string* error) const {
  Settings s = *this;
  for (const auto& [name, text] : overrides) {
    const SettingDeclaration* d = findDeclaration(name);
    std::string problem;
    if (!d) {
      problem = "'" + name + "' is not a setting (chorus-info lists them)";
    } else if (d->scope() == SettingScope::kProcess) {
      problem = name + " is read once for the whole process: it cannot be set per communicator";
    } else if (!d->parse(text, &s.values_[d->index()])) {
      problem = name + "='" + text + "' is invalid: " + d->accepted();
    }
    if (!problem.empty() && error->empty()) *error = problem;
  }
  return s;
}

// Every setting at its default, then at its value from the environment. An invalid value keeps the default and,
// under chorus's own name, is reported in `error` (the first one); NCCL's own names keep NCCL's leniency, where an
// invalid value is ignored.
Settings Settings::fromEnvironment(std::string* error) {
  Settings s;
  for (const SettingDeclaration* d : declarations()) {
    const SettingDoc& doc = d->doc();
    SettingValue unused;
    if (!d->parse(doc.defaultValue, &unused) && error->empty())
      *error = std::string("internal error: the default of ") + doc.name + ", '" + doc.defaultValue +
               "', is not a value it takes";
    const char* v = lookup(doc.name, doc.alias);
    if (!v || !*v) continue;
    if (!d->parse(v, &s.values_[d->index()]) && getenv(doc.name) && error->empty())
      *error = std::string(doc.name) + "='" + v + "' is invalid: " + d->accepted();
  }
  return s;
}

bool parseByteSize(const char* text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long x = strtoll(text, &end, 10);
  if (end == text || x < 0 || errno != 0) return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10, ++end;
  else if (*end == 'M' || *end == 'm')
    shift = 20, ++end;
  else if (*end == 'G' || *end == 'g')
    shift = 30, ++end;
  if (*end != '\0' || x > (INT64_MAX >> shift)) return false;
  *out = static_cast<int64_t>(x) << shift;
  return true;
}

const Settings& settings() {
  // Read on every collective: lock-free once parsed.
  if (Settings* s = gSettings.load(std::memory_order_acquire)) return *s;
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gSettings.load()) gSettings.store(new Settings(Settings::fromEnvironment(&gError)), std::memory_order_release);
  return *gSettings.load();
}

void reloadSettings() {
  std::lock_guard<std::mutex> lock(gMutex);
  // The old object is kept for the life of the process: other threads may still hold references to it.
  static auto* retired = new std::vector<Settings*>();
  if (Settings* old = gSettings.load()) retired->push_back(old);
  gError.clear();
  gSettings.store(new Settings(Settings::fromEnvironment(&gError)), std::memory_order_release);
}

std::string settingsError() {
  (void)settings();
  std::lock_guard<std::mutex> lock(gMutex);
  return gError;
}

const std::vector<SettingDoc>& settingDocs() {
  static const std::vector<SettingDoc> docs = [] {
    std::vector<SettingDoc> out;
    for (const SettingDeclaration* d : declarations()) out.push_back(d->doc());
    std::sort(out.begin(), out.end(),
              [](const SettingDoc& a, const SettingDoc& b) { return strcmp(a.name, b.name) < 0; });
    return out;
  }();
  return docs;
}

std::string rawSettingValue(const SettingDoc& doc) {
  const char* v = lookup(doc.name, doc.alias);
  return v ? v : "";
}

}  // namespace chorus
