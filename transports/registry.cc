#include "transports/registry.hpp"

#include <algorithm>

namespace chorus::transport {
namespace {

std::vector<TransportKind>& registry() {
  static std::vector<TransportKind> all;
  return all;
}

}  // namespace

TransportRegistrar::TransportRegistrar(TransportKind kind) { registry().push_back(std::move(kind)); }

std::vector<const TransportKind*> transportKinds() {
  std::vector<const TransportKind*> kinds;
  for (const TransportKind& k : registry()) kinds.push_back(&k);
  std::stable_sort(kinds.begin(), kinds.end(), [](const TransportKind* a, const TransportKind* b) {
    return a->preference != b->preference ? a->preference < b->preference : a->name < b->name;
  });
  return kinds;
}

const TransportKind* findTransportKind(const std::string& name) {
  for (const TransportKind& k : registry())
    if (k.name == name) return &k;
  return nullptr;
}

std::string transportNameList() {
  std::string names;
  for (const TransportKind* k : transportKinds()) names += (names.empty() ? "" : ", ") + k->name;
  return names;
}

}  // namespace chorus::transport
