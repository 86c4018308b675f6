# The ib transport: built where libibverbs' headers are (Debian's libibverbs-dev), switched off otherwise.
# libibverbs itself is loaded when the transport opens (verbs_library.hpp), so chorus does not link it. The
# protocol logic (device_selection, stream_protocol) needs no verbs and is always built and tested.
if(PkgConfig_FOUND)
  pkg_check_modules(IBVERBS libibverbs)
endif()
if(IBVERBS_FOUND)
  message(STATUS "chorus: libibverbs ${IBVERBS_VERSION} headers found, the ib transport is on (loaded when used)")
  list(APPEND CHORUS_TRANSPORT_INCLUDES ${IBVERBS_INCLUDE_DIRS})
  list(APPEND CHORUS_TRANSPORT_LIBRARIES ${CMAKE_DL_LIBS})
else()
  message(STATUS "chorus: libibverbs not found (libibverbs-dev), the ib transport is off")
  list(FILTER CHORUS_SOURCES EXCLUDE REGEX "/transports/ib/(ib|verbs_library)\\.cc$")
endif()
