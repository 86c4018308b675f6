#include "perf/collective.hpp"

int main(int argc, char** argv) { return chorus::perf::runPerfTool(argc, argv, chorus::perf::kSendRecv); }
