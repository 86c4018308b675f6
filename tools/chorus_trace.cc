// chorus-trace DIR: reads the flight records that the ranks of one or more communicators wrote to DIR (on a
// timeout, a failure, an abort, SIGUSR1 or request) and prints, per communicator, what went wrong.
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/trace/analysis.hpp"
#include "tools/trace/records.hpp"
#include "tools/version_flag.hpp"

int main(int argc, char** argv) {
  if (chorus::tools::printVersionIfAsked(argc, argv, "chorus-trace")) return 0;
  if (argc != 2 || argv[1][0] == '-') {
    fprintf(stderr,
            "usage: chorus-trace DIR\n"
            "  DIR holds the ranks' flight records (chorus-trace-<comm>-rank<r>.json), written to CHORUS_TRACE_DIR\n"
            "  on a timeout, a failure, an abort or SIGUSR1, or by Communicator::dumpFlightRecord.\n");
    return 2;
  }
  std::vector<std::string> problems;
  const auto comms = chorus::trace::loadRecords(argv[1], &problems);
  for (const std::string& p : problems) fprintf(stderr, "chorus-trace: skipped %s\n", p.c_str());
  if (comms.empty()) {
    fprintf(stderr, "chorus-trace: no flight records in %s\n", argv[1]);
    return 1;
  }
  bool first = true;
  for (const auto& [comm, ranks] : comms) {
    printf("%s%s", first ? "" : "\n", chorus::trace::analyze(ranks).c_str());
    first = false;
  }
  return 0;
}
