/// @file status.hpp
/// Status: the one error type of chorus. Every fallible call returns one; it carries a code that maps 1:1 onto
/// ncclResult_t and a message naming the cause.
#pragma once

#include <memory>
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
/// An ok Status holds no string, so creating, moving and dropping one on the hot path costs a few instructions.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& other) : code_(other.code_) {
    if (other.message_) message_ = std::make_unique<std::string>(*other.message_);
  }
  Status& operator=(const Status& other) {
    if (this != &other) *this = Status(other);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_ ? *message_ : kNoMessage; }

  /// Returns this status with `context` prepended to its message (no-op when ok).
  Status withContext(const std::string& context) const {
    if (isOk()) return *this;
    return Status(code_, context + ": " + message());
  }

 private:
  static inline const std::string kNoMessage;
  ErrorCode code_ = ErrorCode::kOk;
  std::unique_ptr<std::string> message_;
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
