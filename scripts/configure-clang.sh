# shellcheck shell=bash
# Sourced by scripts/fuzz.sh and scripts/test-sanitizers.sh: their builds of
# their own, with clang and without CUDA.
#
#   configure_clang DIR [CMAKE-ARGUMENT...]
#
# configures DIR (Ninja, Release, $LLVM_PREFIX's clang and MLIR) with the
# extra arguments; cmake's output goes to DIR.configure.log. Returns cmake's
# status.
configure_clang() {
  local dir=$1
  shift
  cmake -G Ninja -S "$ROOT" -B "$dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
    -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DOVERLAP_ENABLE_CUDA=OFF \
    "$@" >"$dir.configure.log" 2>&1
}
