// Small helpers shared by the XML importers: parsing with errors that name the place, and attribute readers
// that reject what is not a number instead of reading it as 0.
#pragma once

#include <pugixml.hpp>
#include <string>

#include "chorus/status.hpp"

namespace chorus::topology::xml {

/// Parses `text` into `doc`; the error gives the line and column of the fault.
Status parse(const std::string& text, const std::string& what, pugi::xml_document* doc);

/// "<pci busid="0000:0c:00.0"> at line 3" for messages (the first attribute identifies most elements).
std::string describe(const pugi::xml_node& node, const std::string& text);

/// Reads attribute `name` as an integer in base 10, or base 16 with 0x; `fallback` when absent or empty.
Status intAttribute(const pugi::xml_node& node, const char* name, long fallback, const std::string& text, long* out);
/// Reads attribute `name` as a floating-point number; `fallback` when absent or empty.
Status numberAttribute(const pugi::xml_node& node, const char* name, double fallback, const std::string& text,
                       double* out);

}  // namespace chorus::topology::xml
