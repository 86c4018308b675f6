#!/usr/bin/env bash
# chorus as strangers consume it: installed into a fresh prefix, then used by an outside CMake project
# (find_package), by a C program compiled with pkg-config's flags, through the installed tools, and as a
# subproject (add_subdirectory). Also checks that programs get chorus's libnccl.so.2 even where another
# libnccl.so.2 (NVIDIA's, from the CUDA toolkit) is on the system's library path.
# Usage: consume.sh <source dir> <build dir>
set -euo pipefail
src=$1 build=$2
# Inside the build tree, so that ccache's paths relative to the source root match every clone's (cmake/ccache.cmake).
work=$(mktemp -d "$(cd "$build" && pwd)/install-and-consume.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { echo "== $*"; }

step "install into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/chorus/communicator.hpp include/chorus/version.hpp include/chorus-nccl/nccl.h \
         lib/libchorus.so.0 lib/chorus-nccl/libnccl.so.2 lib/cmake/chorus/chorusConfig.cmake \
         lib/pkgconfig/chorus.pc lib/pkgconfig/chorus-nccl.pc bin/chorus-info bin/all_reduce_perf; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
# nccl.h and libnccl.so.2 stay out of the default search directories.
[ ! -e "$prefix/include/nccl.h" ] && [ ! -e "$prefix/lib/libnccl.so.2" ] || { echo "NCCL files in default dirs"; exit 1; }

if ldconfig -p | grep 'libnccl.so.2 ' >/dev/null; then
  echo "another libnccl.so.2 is on the system path: $(ldconfig -p | awk '/libnccl.so.2 / {print $NF; exit}')"
fi

step "find_package(chorus): the examples as an outside project"
cmake -S "$src/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/examples" -j2 >/dev/null
"$work/examples/allreduce_cpp"
"$work/examples/nccl_allreduce"

step "pkg-config: cc nccl_allreduce.c \$(pkg-config --cflags --libs chorus-nccl)"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc "$src/examples/nccl_allreduce.c" $(pkg-config --cflags --libs chorus-nccl) -ldl -o "$work/nccl_pc"
"$work/nccl_pc"
c++ -std=c++20 "$src/examples/allreduce.cpp" $(pkg-config --cflags --libs chorus) -pthread -o "$work/cpp_pc"
"$work/cpp_pc"

step "installed tools find their libraries"
"$prefix/bin/chorus-info" --version
loaded=$(realpath "$(ldd "$prefix/bin/all_reduce_perf" | awk '/libnccl.so.2/ {print $3}')")
[ "$loaded" = "$(realpath "$prefix/lib/chorus-nccl/libnccl.so.2")" ] ||
  { echo "all_reduce_perf loads $loaded, not chorus's libnccl.so.2"; exit 1; }
# The output is taken whole before it is searched: grep -q leaving early would kill the tool with SIGPIPE.
perf_output=$("$prefix/bin/all_reduce_perf" -t 2 -b 1K -e 1K -n 2 -w 1 -c 1)
grep -q "Out of bounds values : 0 OK" <<<"$perf_output" || { echo "$perf_output"; exit 1; }

step "add_subdirectory(chorus) from an outside project"
cmake -S "$src/tests/packaging/install/subproject" -B "$work/sub" -DCHORUS_SOURCE="$src" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/sub" -j2 --target allreduce_cpp >/dev/null
"$work/sub/allreduce_cpp"
echo "all consumers built and ran"
