// `--version` of every chorus program: the program, the chorus library it runs with, and the NCCL API level.
#pragma once

#include <cstdio>
#include <cstring>

#include "chorus/version.hpp"

namespace chorus::tools {

/// Prints the version and returns true when argv holds --version.
inline bool printVersionIfAsked(int argc, char** argv, const char* program) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--version") == 0) {
      printf("%s (chorus %s, NCCL API %s)\n", program, chorus::version(), chorus::ncclApiVersion());
      return true;
    }
  }
  return false;
}

}  // namespace chorus::tools
