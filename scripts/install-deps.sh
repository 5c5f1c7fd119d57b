#!/usr/bin/env bash
# Installs what Overlap needs to build and test, from Debian's packages, when
# it is missing. Safe to run again: it installs nothing that is present.
set -euo pipefail

LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}

need=()
have_file() { [ -e "$1" ]; }
have_file "$LLVM_PREFIX/lib/cmake/mlir/MLIRConfig.cmake" || need+=(libmlir-22-dev)
have_file "$LLVM_PREFIX/lib/cmake/llvm/LLVMConfig.cmake"  || need+=(llvm-22-dev)
have_file "$LLVM_PREFIX/bin/mlir-tblgen"                 || need+=(libmlir-22-dev)
have_file "$LLVM_PREFIX/bin/mlir-opt"                    || need+=(mlir-22-tools)
have_file "$LLVM_PREFIX/bin/FileCheck"                   || need+=(llvm-22-tools)
have_file "$LLVM_PREFIX/bin/lit"                         || need+=(llvm-22-tools)
have_file "$LLVM_PREFIX/bin/clang"                       || need+=(clang-22)
have_file "$LLVM_PREFIX/bin/clang++"                     || need+=(clang-22)
# libFuzzer and the ASan, UBSan and TSan runtimes (scripts/fuzz.sh,
# scripts/test-sanitizers.sh).
compgen -G "$LLVM_PREFIX/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null \
  || need+=(libclang-rt-22-dev)
compgen -G "$LLVM_PREFIX/lib/clang/*/lib/linux/libclang_rt.tsan-x86_64.a" >/dev/null \
  || need+=(libclang-rt-22-dev)
command -v ninja  >/dev/null || need+=(ninja-build)
command -v cmake  >/dev/null || need+=(cmake)
command -v c++    >/dev/null || need+=(g++)
command -v python3 >/dev/null || need+=(python3)
have_file /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake \
  || have_file /usr/lib/cmake/GTest/GTestConfig.cmake || need+=(libgtest-dev)
have_file /usr/lib/x86_64-linux-gnu/cmake/benchmark/benchmarkConfig.cmake \
  || have_file /usr/lib/cmake/benchmark/benchmarkConfig.cmake || need+=(libbenchmark-dev)
# Open MPI: mpirun runs host ranks as processes (docs/runtime.md), and its
# headers and libmpi build the runtime's MPI transport, liboverlap_runtime_mpi.so.
command -v mpirun >/dev/null || need+=(openmpi-bin)
compgen -G "/usr/lib/*/openmpi/include/mpi.h" >/dev/null || need+=(libopenmpi-dev)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

# Unique, in order.
mapfile -t need < <(printf '%s\n' "${need[@]}" | awk '!seen[$0]++')
echo "install-deps: installing ${need[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${need[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "install-deps: done"
