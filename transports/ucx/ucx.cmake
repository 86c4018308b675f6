# The ucx transport: built where UCX's headers are (Debian's libucx-dev), switched off otherwise. UCX itself is
# loaded when the transport opens (ucp_library.hpp), so chorus does not link it.
if(PkgConfig_FOUND)
  pkg_check_modules(UCX ucx)
endif()
if(UCX_FOUND)
  message(STATUS "chorus: UCX ${UCX_VERSION} headers found, the ucx transport is on (UCX is loaded when it is used)")
  list(APPEND CHORUS_TRANSPORT_INCLUDES ${UCX_INCLUDE_DIRS})
  list(APPEND CHORUS_TRANSPORT_LIBRARIES ${CMAKE_DL_LIBS})
else()
  message(STATUS "chorus: UCX not found (libucx-dev), the ucx transport is off")
  list(FILTER CHORUS_SOURCES EXCLUDE REGEX "/transports/ucx/")
endif()
