# What `cmake --install` puts under the prefix:
#   include/chorus/          the C++ API (and training/)
#   include/chorus-nccl/     nccl.h
#   lib/libchorus.so.0, lib/libchorus_training.so.0
#   lib/chorus-nccl/         libnccl.so.2 (its own directory: never found by accident instead of a real NCCL)
#   lib/cmake/chorus/        find_package(chorus): chorus::chorus, chorus::nccl, chorus::training
#   lib/pkgconfig/           chorus.pc, chorus-nccl.pc
#   bin/                     chorus-info, chorus-topo, chorus-tune, chorus-train and the perf tools
include(CMakePackageConfigHelpers)

install(DIRECTORY include/chorus DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(FILES include/nccl.h DESTINATION ${CHORUS_NCCL_INCLUDEDIR})
install(TARGETS chorus chorus_training EXPORT chorusTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS nccl EXPORT chorusTargets LIBRARY DESTINATION ${CHORUS_NCCL_LIBDIR})
install(EXPORT chorusTargets NAMESPACE chorus:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/chorus)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/chorusConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/chorusConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/chorus)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/chorusConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/chorusConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/chorusConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/chorus)

foreach(pc chorus chorus-nccl)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/chorus)
