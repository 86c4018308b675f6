# CUDA: calls on device buffers (src/gpu/). On wherever the CUDA toolkit is found; -DCHORUS_CUDA=OFF builds a host
# memory only library. The CUDA runtime is linked statically, so the library needs no libcudart at run time and still
# loads and runs on machines without a GPU or a CUDA driver (every buffer is then host memory).
find_package(CUDAToolkit QUIET)
option(CHORUS_CUDA "Device buffers through the CUDA runtime (needs the CUDA toolkit)" ${CUDAToolkit_FOUND})
if(CHORUS_CUDA AND NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "CHORUS_CUDA=ON but the CUDA toolkit was not found (set CUDAToolkit_ROOT)")
endif()
set(CHORUS_GPU_OBJECTS "")
if(CHORUS_CUDA)
  message(STATUS "chorus: CUDA ${CUDAToolkit_VERSION} found, device buffers are on")
  list(FILTER CHORUS_SOURCES EXCLUDE REGEX "/src/gpu/cuda_absent\\.cc$")
  list(APPEND CHORUS_TRANSPORT_LIBRARIES CUDA::cudart_static)
  # The kernels: machine code for Ampere (sm_80) and Hopper (sm_90), and PTX that later GPUs compile at load time.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
  endif()
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no C++20 dialect for nvcc
  file(GLOB CHORUS_CUDA_KERNELS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/*_cuda.cu)
  add_library(chorus_cuda_kernels OBJECT ${CHORUS_CUDA_KERNELS})
  target_include_directories(chorus_cuda_kernels PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  # 2810: a [[nodiscard]] on Status's assignment, which nvcc's front end reports in code that only assigns.
  target_compile_options(chorus_cuda_kernels PRIVATE --diag-suppress=2810 -O3)
  set(CHORUS_GPU_OBJECTS $<TARGET_OBJECTS:chorus_cuda_kernels>)
else()
  message(STATUS "chorus: CUDA off, host memory only")
  list(FILTER CHORUS_SOURCES EXCLUDE REGEX "/src/gpu/[^/]*_cuda\\.cc$")
endif()
