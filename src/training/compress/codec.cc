#include "chorus/training/compress/codec.hpp"

namespace chorus::training::compress {

namespace {
std::vector<CodecRegistration>& registry() {
  static std::vector<CodecRegistration> all;
  return all;
}
}  // namespace

CodecRegistrar::CodecRegistrar(CodecRegistration registration) { registry().push_back(std::move(registration)); }

const std::vector<CodecRegistration>& codecs() { return registry(); }

Status makeCodec(const std::string& spec, std::unique_ptr<GradientCodec>* out) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon), argument = colon == std::string::npos ? "" : spec.substr(colon + 1);
  std::string known;
  for (const CodecRegistration& c : registry()) {
    if (name == c.name) return c.make(argument, out).withContext("gradient codec '" + spec + "'");
    known += (known.empty() ? "" : ", ") + std::string(c.name);
  }
  return invalidArgument("unknown gradient codec '" + spec + "' (known: " + known + ")");
}

}  // namespace chorus::training::compress
