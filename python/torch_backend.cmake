# chorus._torch_backend: the torch.distributed backend. torch is found through the build's Python and the
# extension is compiled as torch.utils.cpp_extension would: torch's headers (its pybind11 among them, so the two
# share their registered types), its libraries and its C++ ABI.
execute_process(
  COMMAND "${Python_EXECUTABLE}" -c "
import torch, torch.utils.cpp_extension as ext
print('set(torch_includes \"%s\")' % ';'.join(ext.include_paths()))
print('set(torch_libdirs \"%s\")' % ';'.join(ext.library_paths()))
print('set(torch_cxx11_abi %d)' % torch._C._GLIBCXX_USE_CXX11_ABI)
print('set(CHORUS_TORCH_VERSION %s)' % torch.__version__)"
  OUTPUT_VARIABLE torch_facts RESULT_VARIABLE torch_missing ERROR_QUIET)
if(torch_missing)
  message(STATUS "chorus: no torch in ${Python_EXECUTABLE}; the torch.distributed backend is not built")
  return()
endif()
cmake_language(EVAL CODE "${torch_facts}")
message(STATUS "chorus: building the torch.distributed backend against torch ${CHORUS_TORCH_VERSION}")

Python_add_library(_torch_backend MODULE WITH_SOABI src/torch_backend.cc src/torch_work.cc src/torch_hooks.cc
                                                   src/torch_store.cc src/torch_allocator.cc src/torch_reconfigure.cc)
target_include_directories(_torch_backend SYSTEM PRIVATE ${torch_includes})
target_compile_definitions(
  _torch_backend PRIVATE TORCH_EXTENSION_NAME=_torch_backend TORCH_API_INCLUDE_EXTENSION_H
                         _GLIBCXX_USE_CXX11_ABI=${torch_cxx11_abi})
target_link_directories(_torch_backend PRIVATE ${torch_libdirs})
target_link_libraries(_torch_backend PRIVATE chorus c10 torch torch_cpu torch_python)
set_target_properties(_torch_backend PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CHORUS_PYTHON_PACKAGE_DIR}
                                                CXX_VISIBILITY_PRESET hidden)
if(SKBUILD)
  set_target_properties(_torch_backend PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS _torch_backend LIBRARY DESTINATION chorus COMPONENT python)
endif()
