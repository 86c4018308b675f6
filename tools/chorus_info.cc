// chorus-info: every setting with its current value and documentation, and the algorithm catalogue.
#include <cstdio>
#include <string>

#include "algorithms/plan.hpp"
#include "core/settings.hpp"
#include "nccl.h"

int main() {
  int version = 0;
  ncclGetVersion(&version);
  printf("chorus: NCCL-compatible C API %d (libnccl.so.2), host memory collectives\n\n", version);
  printf("Settings (environment; the NCCL name is honoured too where given):\n");
  for (const auto& s : chorus::settingDocs()) {
    const std::string value = chorus::rawSettingValue(s);
    std::string names = s.name;
    if (*s.alias) names += " (" + std::string(s.alias) + ")";
    printf("  %-40s = %-10s default %-8s %s\n", names.c_str(), value.c_str(), *s.defaultValue ? s.defaultValue : "-",
           s.doc);
  }
  printf("\nAlgorithms (collective: name):\n");
  for (const auto& a : chorus::algo::algorithms()) printf("  %-14s %s\n", chorus::algo::collName(a.coll), a.name);
  printf(
      "\nTransports per peer pair: loopback (same process), shm (same host), tcp (otherwise);\n"
      "CHORUS_TRANSPORT forces one.\n");
  return 0;
}
