/// @file version.hpp
/// The version of chorus. The macros are the version this program was compiled against; version() is the version
/// of the library it runs with. CMake's project version is read from this file.
#pragma once

/// The version of the headers, major.minor.patch.
///@{
#define CHORUS_VERSION_MAJOR 0
#define CHORUS_VERSION_MINOR 2
#define CHORUS_VERSION_PATCH 0
///@}
/// The NCCL API level of chorus's nccl.h and libnccl.so.2 (what ncclGetVersion returns).
#define CHORUS_NCCL_API_CODE 22707

namespace chorus {

/// "major.minor.patch" of the loaded library.
const char* version();
/// The NCCL API level the library implements, as "2.27.7".
const char* ncclApiVersion();

}  // namespace chorus
