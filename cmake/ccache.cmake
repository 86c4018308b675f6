# Compiles through ccache where it is installed (scripts/install_deps.sh installs it), so that a clean clone in
# another folder — CI's, or scripts/ci_local.sh's — reuses the objects of any earlier build of the same sources, plain
# or sanitized. The cache lives outside the clone (ccache's default, ~/.cache/ccache). What makes a hit independent of
# the clone's folder: paths under the source root are hashed relative to it (base_dir), the working directory is not
# hashed for debug information (hash_dir), and __FILE__, which only names places in messages here, does not key an
# object (file_macro). `ccache -s` shows the hit rate.
option(CHORUS_CCACHE "Compile through ccache when it is installed" ON)
find_program(CHORUS_CCACHE_PROGRAM ccache)
if(CHORUS_CCACHE AND CHORUS_CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(chorus_ccache_launcher /usr/bin/env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
                             CCACHE_SLOPPINESS=file_macro ${CHORUS_CCACHE_PROGRAM})
  foreach(lang C CXX CUDA)
    set(CMAKE_${lang}_COMPILER_LAUNCHER ${chorus_ccache_launcher})
  endforeach()
endif()
