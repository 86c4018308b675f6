/// @file stream.hpp
/// The CUDA stream that calls on device buffers are enqueued on, set per thread as PyTorch's current stream is.
/// A call whose buffers are device (or managed) memory is enqueued on this stream and returns at once, ordered
/// with the stream's other work; a call on host buffers ignores it and completes before returning. The C API
/// sets it to each call's cudaStream_t. Null is CUDA's default stream.
#pragma once

namespace chorus {

/// The calling thread's stream (a cudaStream_t), null by default.
void* currentStream();

/// Makes `stream` (a cudaStream_t) the calling thread's stream until the scope ends.
class StreamScope {
 public:
  /// Makes `stream` current; the destructor restores the stream that was.
  explicit StreamScope(void* stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  void* previous_;
};

}  // namespace chorus
