#include "topology/xml_util.hpp"

#include <algorithm>
#include <cstdlib>

namespace chorus::topology::xml {
namespace {

int lineOf(const std::string& text, ptrdiff_t offset) {
  if (offset < 0) return 0;
  const auto end = text.begin() + std::min<ptrdiff_t>(offset, static_cast<ptrdiff_t>(text.size()));
  return 1 + static_cast<int>(std::count(text.begin(), end, '\n'));
}

}  // namespace

Status parse(const std::string& text, const std::string& what, pugi::xml_document* doc) {
  pugi::xml_parse_result result = doc->load_buffer(text.data(), text.size(), pugi::parse_default);
  if (!result) {
    const int line = lineOf(text, result.offset);
    return invalidArgument(what + ": not well-formed XML at line " + std::to_string(line) + ": " +
                           result.description());
  }
  return Status::ok();
}

std::string describe(const pugi::xml_node& node, const std::string& text) {
  std::string out = "<" + std::string(node.name());
  if (pugi::xml_attribute a = node.first_attribute()) out += " " + std::string(a.name()) + "=\"" + a.value() + "\"";
  out += ">";
  if (int line = lineOf(text, node.offset_debug()); line > 0) out += " at line " + std::to_string(line);
  return out;
}

Status intAttribute(const pugi::xml_node& node, const char* name, long fallback, const std::string& text, long* out) {
  const char* value = node.attribute(name).value();
  if (!*value) {
    *out = fallback;
    return Status::ok();
  }
  char* end = nullptr;
  const long parsed = strtol(value, &end, 0);
  if (end == value || *end != '\0') {
    return invalidArgument(describe(node, text) + ": attribute " + name + "=\"" + value + "\" is not an integer");
  }
  *out = parsed;
  return Status::ok();
}

Status numberAttribute(const pugi::xml_node& node, const char* name, double fallback, const std::string& text,
                       double* out) {
  const char* value = node.attribute(name).value();
  if (!*value) {
    *out = fallback;
    return Status::ok();
  }
  char* end = nullptr;
  const double parsed = strtod(value, &end);
  if (end == value || *end != '\0') {
    return invalidArgument(describe(node, text) + ": attribute " + name + "=\"" + value + "\" is not a number");
  }
  *out = parsed;
  return Status::ok();
}

}  // namespace chorus::topology::xml
