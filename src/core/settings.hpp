// The registry of settings. Each component declares the settings it reads next to its code, as a Setting<T> at
// namespace scope (its name, NCCL alias, default, documentation, scope and parser); the declaration registers itself,
// as algorithms and transports do. The environment is parsed once into a Settings table that leaf code reads by
// declaration (`settings()[kTcpBuffer]`); a communicator reads its own table, the process's with the overrides of
// its CommConfig::settings.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace chorus {

/// Whose value a setting is: the process's (read once, for everything), or each communicator's (read by the
/// communicator, which CommConfig::settings may give another value).
enum class SettingScope { kProcess, kCommunicator };

/// One documented setting, for chorus-info and the docs.
struct SettingDoc {
  const char* name;
  const char* alias;  // NCCL name honoured too, or ""
  const char* defaultValue;
  const char* doc;
  SettingScope scope = SettingScope::kProcess;  // filled from the declaration
};

/// The types a setting's value may have.
using SettingValue = std::variant<bool, int64_t, double, std::string>;

/// A setting as the registry sees it, whatever its type.
class SettingDeclaration {
 public:
  SettingDeclaration(const SettingDeclaration&) = delete;
  SettingDeclaration& operator=(const SettingDeclaration&) = delete;

  const SettingDoc& doc() const { return doc_; }
  /// What the setting accepts, for the error message ("a positive integer, with an optional K, M or G suffix").
  const char* accepted() const { return accepted_; }
  SettingScope scope() const { return doc_.scope; }
  /// The setting's place in every Settings table.
  size_t index() const { return index_; }
  /// The value `text` stands for; false when it is not a value of the setting.
  virtual bool parse(const std::string& text, SettingValue* out) const = 0;

 protected:
  SettingDeclaration(SettingDoc doc, const char* accepted, SettingScope scope);
  ~SettingDeclaration() = default;

 private:
  SettingDoc doc_;
  const char* accepted_;
  size_t index_;
};

/// A setting of type T, declared once at namespace scope by the component that reads it.
template <class T>
class Setting final : public SettingDeclaration {
 public:
  /// Turns a text into the value; false when the text is not a value of the setting.
  using Parser = std::function<bool(const std::string& text, T* out)>;
  Setting(SettingDoc doc, const char* accepted, SettingScope scope, Parser parser)
      : SettingDeclaration(doc, accepted, scope), parser_(std::move(parser)) {}
  bool parse(const std::string& text, SettingValue* out) const override {
    T value{};
    if (!parser_(text, &value)) return false;
    *out = std::move(value);
    return true;
  }

 private:
  Parser parser_;
};

/// The value of every registered setting: the process's (settings()), or one communicator's.
class Settings {
 public:
  /// Every setting at its documented default.
  Settings();
  template <class T>
  const T& operator[](const Setting<T>& setting) const {
    return std::get<T>(values_[setting.index()]);
  }
  /// The value of the setting named `name` (or by its NCCL alias), for code that does not see its declaration;
  /// null when no setting has that name.
  const SettingValue* find(const std::string& name) const;
  /// Gives a setting another value (tests, tools that force a transport).
  template <class T>
  void set(const Setting<T>& setting, T value) {
    values_[setting.index()] = std::move(value);
  }
  /// A copy with `overrides` (setting name or NCCL alias -> text) applied; the first that names no setting, names a
  /// process-wide one or holds an invalid value is described in *error and the copy keeps its value.
  Settings withOverrides(const std::map<std::string, std::string>& overrides, std::string* error) const;
  /// The settings of the environment; the first invalid value is described in *error (and keeps its default).
  static Settings fromEnvironment(std::string* error);

 private:
  std::vector<SettingValue> values_;
};

/// A byte count: digits with an optional K, M or G (binary) suffix ("1M" = 1048576); false for anything else, a
/// negative value or an overflow.
bool parseByteSize(const char* text, int64_t* out);

/// The settings of this process, parsed from the environment on first use.
const Settings& settings();
/// Re-reads the environment (tests change variables between cases).
void reloadSettings();
/// The first invalid value found ("CHORUS_TIMEOUT='abc' is invalid: ..."), empty when every value parsed. Invalid
/// values fall back to their defaults in settings(); communicator init fails with this message.
std::string settingsError();
/// Every registered setting's documentation, by name.
const std::vector<SettingDoc>& settingDocs();
/// The raw environment value of a setting (its own name first, then the NCCL alias); empty when unset.
std::string rawSettingValue(const SettingDoc& doc);

}  // namespace chorus
