// chorus's use of the CUDA runtime, in one place: where a buffer lives, device memory, copies and streams. Without
// CUDA (a build without the toolkit, or a machine without a GPU) every buffer is host memory, and asking costs one
// load.
#pragma once

#include <atomic>
#include <string>

#include "chorus/status.hpp"

namespace chorus::gpu {

enum class MemoryType { kHost, kDevice, kManaged };

/// Whether this process can see a CUDA device (the first call asks the driver; later calls read the answer).
bool available();
/// The memory type of `p`; host memory for null and for any pointer CUDA does not know.
MemoryType memoryTypeOf(const void* p);
/// The CUDA device of the calling thread (cudaGetDevice), -1 without one; how many there are; choosing one.
int currentDevice();
int deviceCount();
Status setDevice(int device);
/// Device memory on the calling thread's device (cudaMalloc) and its release (ncclMemAlloc / ncclMemFree).
Status allocateDevice(size_t bytes, void** out);
Status freeDevice(void* p);
/// A copy between any two of host, device and managed memory that has landed when it returns (tools, tests).
Status copyMemory(void* dst, const void* src, size_t bytes);
/// A stream of its own (cudaStreamNonBlocking) on the calling thread's device, and its end.
Status createStream(void** out);
void destroyStream(void* stream);
/// Waits until everything enqueued on `stream` (a cudaStream_t) ran.
Status synchronizeStream(void* stream);
/// Records `event` (a cudaEvent_t) on `stream` (a cudaStream_t, null: the legacy default stream).
Status recordEvent(void* event, void* stream);
/// Waits until the stream has run everything before `event` (a cudaEvent_t): a spin of some milliseconds, then sleeps
/// of 20 µs, until CHORUS_TIMEOUT or, with `aborted` set, an abort. `what` names what the event marks in the errors
/// ("the call").
Status waitForEvent(void* event, const std::atomic<bool>* aborted, const std::string& what);
/// Loads chorus's device kernels. A communicator's init does it where there is a GPU, as NCCL's does: CUDA loads a
/// kernel at its first use otherwise (lazy loading), and loading waits for the device's other work, which may be a
/// stream held back until the call that launches the kernel returns.
Status loadKernels();
/// A CUDA runtime result as a chorus error naming `what` ("cudaMemcpyAsync: invalid argument").
Status cudaError(int code, const std::string& what);

}  // namespace chorus::gpu
