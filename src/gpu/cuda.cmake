# CUDA: calls on device buffers (src/gpu/). On wherever the CUDA toolkit is found; -DCHORUS_CUDA=OFF builds a host
# memory only library. The CUDA runtime is linked statically, so the library needs no libcudart at run time and still
# loads and runs on machines without a GPU or a CUDA driver (every buffer is then host memory).
find_package(CUDAToolkit QUIET)
option(CHORUS_CUDA "Device buffers through the CUDA runtime (needs the CUDA toolkit)" ${CUDAToolkit_FOUND})
if(CHORUS_CUDA AND NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "CHORUS_CUDA=ON but the CUDA toolkit was not found (set CUDAToolkit_ROOT)")
endif()
if(CHORUS_CUDA)
  message(STATUS "chorus: CUDA ${CUDAToolkit_VERSION} found, device buffers are on")
  list(FILTER CHORUS_SOURCES EXCLUDE REGEX "/src/gpu/no_cuda\\.cc$")
  list(APPEND CHORUS_TRANSPORT_LIBRARIES CUDA::cudart_static)
else()
  message(STATUS "chorus: CUDA off, host memory only")
  list(FILTER CHORUS_SOURCES EXCLUDE REGEX "/src/gpu/[^/]*_cuda\\.cc$")
endif()
