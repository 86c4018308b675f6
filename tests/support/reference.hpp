// Test inputs whose reductions are exact in every order (small integers, powers of two for products) and the
// expected results computed from them without chorus. Inputs repeat with period 13 in the element index, so the
// reduced value of index i is that of i % 13 and large buffers cost nothing to check.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "chorus/types.hpp"

namespace chorus::testing {

/// Rank r's input at element i for a reduction with `op` (or data movement when op is nullptr).
double inputValue(const RedOp* op, DataType type, int rank, size_t index, int seed = 0);
/// The scalar rank r uses in PreMulSum tests.
inline double preMulScalar(int rank) { return rank % 2 == 0 ? 1.0 : 2.0; }

/// Expected reduction over `nranks` ranks at element i, as stored in `type`. Cached per period.
class Reduced {
 public:
  Reduced(RedOp op, DataType type, int nranks, int seed = 0);
  /// Writes the expected value of element `index` at position `pos` of `buffer`.
  void store(void* buffer, size_t pos, size_t index) const;

 private:
  DataType type_;
  std::array<std::array<unsigned char, 8>, 13> bytes_{};
  int seed_;
};

/// Writes `value` converted to `type` (integers wrap) at position `pos`.
void storeValue(void* buffer, size_t pos, DataType type, double value);
/// Elements whose bit patterns differ; `firstBad` receives the first such index.
size_t mismatches(const void* actual, const void* expected, size_t count, DataType type, size_t* firstBad = nullptr);

}  // namespace chorus::testing
