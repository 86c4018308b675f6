// One collective call with known inputs and an independently computed expected result, runnable on any
// communicator: the tier-1 (threads) and tier-2 (processes) tests share it.
#pragma once

#include <string>
#include <vector>

#include "algorithms/plan.hpp"
#include "chorus/communicator.hpp"

namespace chorus::testing {

struct Case {
  algo::CollType coll = algo::CollType::kAllReduce;
  DataType type = DataType::kFloat32;
  RedOp op;
  bool inPlace = false;
  size_t count = 0;  // as the call takes it (per rank / per peer where the API says so)
  int root = 0;
};

std::string describe(const Case& c, int nranks);
bool usesOp(algo::CollType coll);
bool supportsInPlace(algo::CollType coll);

/// Where runCase's buffers are during the call: host memory by default; the GPU tests move them to the device.
class BufferHome {
 public:
  virtual ~BufferHome() = default;
  /// The address the call gets for byte `p` of `buffer`, one of the case's buffers (filled by then).
  virtual void* address(std::vector<unsigned char>& buffer, unsigned char* p) = 0;
  /// After the call returned: waits until it completed and copies the buffers' contents back. "" or the error.
  virtual std::string finish() = 0;
};

/// Runs `c` on this rank of `comm` and checks this rank's result. Returns "" or what went wrong.
std::string runCase(Communicator& comm, const Case& c, BufferHome* home = nullptr);

/// The collectives the tests cover (all of the public API; Send/Recv as a ring inside a group).
const std::vector<algo::CollType>& testedCollectives();
const std::vector<DataType>& allDataTypes();
const std::vector<RedOp>& allOps();

}  // namespace chorus::testing
