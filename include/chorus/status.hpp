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
  /// An ok status.
  Status() = default;
  /// An error `code` with `message`.
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::make_unique<std::string>(std::move(message))) {}
  /// Copies the code and the message.
  Status(const Status& other) : code_(other.code_) {
    if (other.message_) message_ = std::make_unique<std::string>(*other.message_);
  }
  /// Copies the code and the message.
  Status& operator=(const Status& other) {
    if (this != &other) *this = Status(other);
    return *this;
  }
  /// Moves without copying the message.
  Status(Status&&) noexcept = default;
  /// Moves without copying the message.
  Status& operator=(Status&&) noexcept = default;

  /// An ok status.
  static Status ok() { return Status(); }

  /// True when the operation succeeded.
  bool isOk() const { return code_ == ErrorCode::kOk; }
  /// The error's category (kOk when ok).
  ErrorCode code() const { return code_; }
  /// What went wrong, naming the call, the rank and the cause; empty when ok.
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

/// A kInvalidArgument error with message `msg`.
inline Status invalidArgument(std::string msg) { return {ErrorCode::kInvalidArgument, std::move(msg)}; }
/// A kInvalidUsage error with message `msg`.
inline Status invalidUsage(std::string msg) { return {ErrorCode::kInvalidUsage, std::move(msg)}; }
/// A kSystemError error with message `msg`.
inline Status systemError(std::string msg) { return {ErrorCode::kSystemError, std::move(msg)}; }
/// A kInternalError error with message `msg`.
inline Status internalError(std::string msg) { return {ErrorCode::kInternalError, std::move(msg)}; }
/// A kRemoteError error with message `msg`.
inline Status remoteError(std::string msg) { return {ErrorCode::kRemoteError, std::move(msg)}; }
/// A kTimeout error with message `msg`.
inline Status timeoutError(std::string msg) { return {ErrorCode::kTimeout, std::move(msg)}; }

}  // namespace chorus

/// Propagates a non-ok Status to the caller.
#define CHORUS_TRY(expr)                               \
  do {                                                 \
    ::chorus::Status chorus_status_ = (expr);          \
    if (!chorus_status_.isOk()) return chorus_status_; \
  } while (0)
