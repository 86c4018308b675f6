// One element of any chorus type read as a double (PreMulSum scalars).
#pragma once

#include "chorus/types.hpp"

namespace chorus::kernels {

double elementAsDouble(const void* p, DataType type);

}  // namespace chorus::kernels
