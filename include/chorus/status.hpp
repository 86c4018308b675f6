/// @file status.hpp
/// Status: the one error type of chorus. Every fallible call returns one; it carries a code that maps 1:1 onto
/// ncclResult_t and a message naming the cause.
#pragma once

#include <string>
#include <utility>

namespace chorus {

/// Error categories. The numeric values equal NCCL's ncclResult_t so the C API can cast.
enum class ErrorCode : int {
  kOk = 0,
  kCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
  kTimeout = 8,
};

/// Result of an operation: ok, or an error code with a human-readable message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Returns this status with `context` prepended to its message (no-op when ok).
  Status withContext(const std::string& context) const {
    if (isOk()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string msg) { return {ErrorCode::kInvalidArgument, std::move(msg)}; }
inline Status invalidUsage(std::string msg) { return {ErrorCode::kInvalidUsage, std::move(msg)}; }
inline Status systemError(std::string msg) { return {ErrorCode::kSystemError, std::move(msg)}; }
inline Status internalError(std::string msg) { return {ErrorCode::kInternalError, std::move(msg)}; }
inline Status remoteError(std::string msg) { return {ErrorCode::kRemoteError, std::move(msg)}; }
inline Status timeoutError(std::string msg) { return {ErrorCode::kTimeout, std::move(msg)}; }

}  // namespace chorus

/// Propagates a non-ok Status to the caller.
#define CHORUS_TRY(expr)                               \
  do {                                                 \
    ::chorus::Status chorus_status_ = (expr);          \
    if (!chorus_status_.isOk()) return chorus_status_; \
  } while (0)
