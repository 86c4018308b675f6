#include "tuner/call_selection.hpp"

#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "tuner/algo_override.hpp"

namespace chorus::tuner {
namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool startsWith(const std::string& name, const std::string& prefix) {
  return name.compare(0, prefix.size(), prefix) == 0;
}

// NCCL's algorithm and protocol names that chorus has no counterpart for: known, so a selection may name them,
// matching nothing here.
const char* const kNcclOnlyNames[] = {"RING_LL",
                                      "RING_LL128",
                                      "TREE_LL",
                                      "TREE_LL128",
                                      "COLLNET_DIRECT_LL",
                                      "COLLNET_DIRECT_LL128",
                                      "COLLNET_DIRECT_SIMPLE",
                                      "COLLNET_CHAIN_LL",
                                      "COLLNET_CHAIN_LL128",
                                      "COLLNET_CHAIN_SIMPLE",
                                      "NVLS_SIMPLE",
                                      "NVLS_TREE_SIMPLE",
                                      "PAT_SIMPLE",
                                      "LL",
                                      "LL128"};

// Every name an algorithm answers to, upper-cased.
std::vector<std::string> namesOf(const algo::Algorithm& a) {
  std::vector<std::string> names{upper(a.name), "SIMPLE"};
  if (a.memory != algo::Memory::kHost) return names;
  if (std::strcmp(a.name, "ring") == 0) names.push_back("RING_SIMPLE");
  if (std::strcmp(a.name, ncclTreeAlgorithm(a.coll)) == 0) names.push_back("TREE_SIMPLE");
  return names;
}

bool matches(const algo::Algorithm& a, const std::string& tag) {
  for (const std::string& name : namesOf(a))
    if (startsWith(name, tag)) return true;
  return false;
}

bool known(const std::string& tag) {
  for (const algo::Algorithm& a : algo::algorithms())
    if (matches(a, tag)) return true;
  for (const char* name : kNcclOnlyNames)
    if (startsWith(name, tag)) return true;
  return false;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

bool CallSelection::has(const algo::Algorithm& a) const {
  const std::vector<algo::Algorithm>& all = algo::algorithms();
  const size_t i = static_cast<size_t>(&a - all.data());
  return i < allowed_.size() && allowed_[i];
}

Status CallSelection::parse(const std::string& text, bool required, CallSelection* out) {
  const std::vector<algo::Algorithm>& all = algo::algorithms();
  out->text_ = text;
  out->required_ = required;
  out->allowed_.assign(all.size(), false);
  for (const std::string& rawTerm : split(text, ',')) {
    const std::string term = trimmed(rawTerm);
    if (term.empty()) return invalidArgument("algorithm selection '" + text + "': an empty term");
    std::vector<bool> satisfies(all.size(), true);
    for (const std::string& rawFactor : split(term, '+')) {
      std::string tag = upper(trimmed(rawFactor));
      const bool negated = !tag.empty() && tag[0] == '^';
      if (negated) tag = trimmed(tag.substr(1));
      if (tag.empty()) return invalidArgument("algorithm selection '" + text + "': an empty name in '" + term + "'");
      if (!known(tag)) {
        return invalidArgument("algorithm selection '" + text + "': no algorithm is called '" + tag +
                               "' (chorus-info lists chorus's; NCCL's RING_*, TREE_* and protocol names are known)");
      }
      for (size_t i = 0; i < all.size(); ++i)
        if (matches(all[i], tag) == negated) satisfies[i] = false;
    }
    for (size_t i = 0; i < all.size(); ++i)
      if (satisfies[i]) out->allowed_[i] = true;
  }
  return Status::ok();
}

Status internSelection(const char* text, bool required, const CallSelection** out) {
  // A loop makes the same call with the same selection: it is found without the lock.
  thread_local const CallSelection* last = nullptr;
  if (last && last->required() == required && last->text() == text) {
    *out = last;
    return Status::ok();
  }
  static std::mutex mutex;
  static std::map<std::pair<std::string, bool>, std::unique_ptr<CallSelection>> interned;
  std::pair<std::string, bool> key{text, required};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = interned.find(key);
  if (it == interned.end()) {
    if (interned.size() >= kMaxSelections) {
      return invalidArgument("more than " + std::to_string(kMaxSelections) +
                             " distinct algorithm selections in one process");
    }
    auto parsed = std::make_unique<CallSelection>();
    CHORUS_TRY(CallSelection::parse(key.first, required, parsed.get()));
    it = interned.emplace(std::move(key), std::move(parsed)).first;
  }
  *out = last = it->second.get();
  return Status::ok();
}

}  // namespace chorus::tuner
