#!/usr/bin/env bash
# Preflight of a GPU session: can every binary the session runs load its
# libraries, and which NCCL will it use? scripts/gpu/run.sh sources this
# file and calls `preflight` first; run alone it checks a build directory:
#
#   scripts/gpu/preflight.sh BUILD_DIR [BINARY...]
#
#   1. Finds libcudart.so.13, libcublasLt.so.13 and libnccl.so.2: in the
#      CUDA directories first ($CUDA_DIRS, default $CUDA_HOME/lib64,
#      $CUDA_HOME/lib and $CUDA_HOME/targets/x86_64-linux/lib, CUDA_HOME
#      defaulting to /usr/local/cuda), then in the pip packages of the
#      machine's python3 ($PYTHON, default python3): <site-packages>/nvidia/
#      */lib, where the nvidia-* wheels PyTorch depends on put them (the GPU
#      machine's NCCL and cuBLASLt live there, not under /usr/local/cuda),
#      then in the dynamic linker's cache.
#   2. Builds LD_LIBRARY_PATH: BUILD_DIR/lib, then each directory a library
#      was found in, then what LD_LIBRARY_PATH held before.
#   3. Runs ldd on every binary the session runs (BUILD_DIR's runtime
#      library, CUDA unit tests, tools and compiled programs, or the
#      BINARY arguments) and stops with exit status 2, naming each binary and
#      each library that is "not found".
#   4. Prints the libraries ldd resolved and the NCCL version that will be
#      loaded (ncclGetVersion of that libnccl.so.2, through python3's ctypes;
#      else its file name), and stops with exit status 2 when that is of an
#      older minor version than the NCCL the backend was built against
#      (BUILD_DIR/lib/overlap_runtime_cuda.nccl): it lacks calls the backend
#      makes, and every program would die at the first ("symbol lookup
#      error", exit 127).
#
# Run alone it ends with the line `export LD_LIBRARY_PATH=...` to paste.
# Exit status: 0, or 2 when a library is missing or NCCL too old (1: bad
# usage).

# The libraries the CUDA backend links (liboverlap_runtime_cuda.so).
PREFLIGHT_LIBS=${PREFLIGHT_LIBS:-libcudart.so.13 libcublasLt.so.13 libnccl.so.2}

# The site-packages directories of $PYTHON, one per line (none without it).
preflight_site_dirs() {
  local python=${PYTHON:-python3}
  command -v "$python" >/dev/null 2>&1 || return 0
  "$python" -c '
import site, sys
dirs = []
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
try:
    import nvidia  # a namespace package: every directory it spans
    dirs += [p + "/.." for p in nvidia.__path__]
except Exception:
    pass
print("\n".join(dirs))
' 2>/dev/null
}

# The directories searched, in order: CUDA's, then pip's nvidia/*/lib.
preflight_search_dirs() {
  local cuda=${CUDA_HOME:-/usr/local/cuda} d sp
  local -a dirs
  if [ -n "${CUDA_DIRS+set}" ]; then
    read -r -a dirs <<<"$CUDA_DIRS"
  else
    dirs=("$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib")
  fi
  for d in "${dirs[@]}"; do
    [ -d "$d" ] && echo "$d"
  done
  while IFS= read -r sp; do
    if [ -z "$sp" ] || [ ! -d "$sp/nvidia" ]; then continue; fi
    for d in "$sp"/nvidia/*/lib "$sp"/nvidia/*/lib64; do
      [ -d "$d" ] && (cd "$d" && pwd)
    done
  done < <(preflight_site_dirs)
}

# The NCCL version of the library at $1 ("2.28.3"), or "".
preflight_nccl_version() {
  local python=${PYTHON:-python3}
  command -v "$python" >/dev/null 2>&1 || return 0
  "$python" -c '
import ctypes, sys
try:
    lib = ctypes.CDLL(sys.argv[1])
    v = ctypes.c_int(0)
    if lib.ncclGetVersion(ctypes.byref(v)) == 0 and v.value > 0:
        code = v.value
        # NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9,
        # major*1000 + minor*100 + patch before.
        if code >= 10000:
            print("%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100))
        else:
            print("%d.%d.%d" % (code // 1000, code // 100 % 10, code % 100))
except Exception:
    pass
' "$1" 2>/dev/null
}

# Whether version $1 ("2.27.3") is of an older major.minor than $2.
preflight_older_minor() {
  local a b
  IFS=. read -r -a a <<<"$1"
  IFS=. read -r -a b <<<"$2"
  [ "${a[0]:-0}" -lt "${b[0]:-0}" ] && return 0
  [ "${a[0]:-0}" -gt "${b[0]:-0}" ] && return 1
  [ "${a[1]:-0}" -lt "${b[1]:-0}" ]
}

# The binaries a session in BUILD_DIR runs.
preflight_binaries() {
  local build=$1 f
  for f in "$build/lib/liboverlap_runtime_cuda.so" \
           "$build/unittests/OverlapRuntimeCudaTests" \
           "$build/bin/overlap-bench" "$build/bin/overlap-calibrate" \
           "$build/bin/overlap-exec" "$build/bin/overlap-device-layer-check" \
           "$build"/gpu-programs/*.so "$build"/gpu-programs/device-layer/*.so; do
    [ -e "$f" ] && echo "$f"
  done
}

# preflight BUILD_DIR [BINARY...]: sets and exports LD_LIBRARY_PATH; returns
# 2 when a binary cannot load a library.
preflight() {
  local build=${1:?preflight: BUILD_DIR}
  shift
  local -a binaries dirs path
  if [ $# -gt 0 ]; then binaries=("$@"); else
    mapfile -t binaries < <(preflight_binaries "$build")
  fi
  mapfile -t dirs < <(preflight_search_dirs)
  echo "preflight: searching ${dirs[*]:-(no CUDA or pip library directory)}"
  # Absolute, so that a step that changes directory keeps it.
  path=("$(cd "$build" 2>/dev/null && pwd || echo "$build")/lib")
  local lib d found where
  for lib in $PREFLIGHT_LIBS; do
    found=""
    for d in "${dirs[@]}"; do
      if [ -e "$d/$lib" ]; then found=$d; break; fi
    done
    if [ -n "$found" ]; then
      where="$found"
      [[ " ${path[*]} " == *" $found "* ]] || path+=("$found")
    elif /sbin/ldconfig -p 2>/dev/null | grep "[[:space:]]$lib " >/dev/null; then
      where="the dynamic linker's cache"
    else
      where="NOT FOUND (not in the directories above nor the linker cache)"
    fi
    echo "preflight: $lib: $where"
  done
  export LD_LIBRARY_PATH
  LD_LIBRARY_PATH=$(IFS=:; echo "${path[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "preflight: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

  local bin missing bad=0 nccl=""
  if [ ${#binaries[@]} -eq 0 ]; then
    echo "preflight: no binary to check in $build (build it with scripts/gpu/prepare.sh)"
    return 2
  fi
  for bin in "${binaries[@]}"; do
    if [ ! -e "$bin" ]; then
      echo "preflight: *** $bin: missing (build it with scripts/gpu/prepare.sh)"
      bad=1
      continue
    fi
    missing=$(ldd "$bin" 2>&1 | sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | sort -u | tr '\n' ' ')
    if [ -n "$missing" ]; then
      echo "preflight: *** $bin cannot load: ${missing% } (not found)"
      bad=1
    fi
    [ -n "$nccl" ] ||
      nccl=$(ldd "$bin" 2>/dev/null | sed -n 's/^[[:space:]]*libnccl\.so\.2 => \(\/[^ ]*\).*/\1/p' | head -1)
  done
  echo "preflight: checked ${#binaries[@]} binaries with ldd"
  if [ "$bad" -ne 0 ]; then
    echo "preflight: *** stopping: a library above is not found; install it or add its directory to CUDA_DIRS or LD_LIBRARY_PATH"
    return 2
  fi
  for lib in $PREFLIGHT_LIBS; do
    for bin in "${binaries[@]}"; do
      d=$(ldd "$bin" 2>/dev/null | sed -n "s/^[[:space:]]*${lib//./\\.} => \\(\\/[^ ]*\\).*/\\1/p" | head -1)
      if [ -n "$d" ]; then echo "preflight: loads $lib from $d"; break; fi
    done
  done
  if [ -n "$nccl" ]; then
    local version
    version=$(preflight_nccl_version "$nccl")
    if [ -n "$version" ]; then
      # For run.sh's steps that need a newer NCCL (several ranks on one GPU).
      export PREFLIGHT_NCCL_VERSION=$version
      echo "preflight: NCCL $version ($nccl)"
      # An older minor version than the backend was built against lacks
      # calls it makes (ncclAlltoAll since 2.28): every program would die
      # at its first such call with "symbol lookup error" (exit 127).
      local built=""
      [ -f "$build/lib/overlap_runtime_cuda.nccl" ] &&
        built=$(head -1 "$build/lib/overlap_runtime_cuda.nccl")
      if [ -n "$built" ] && preflight_older_minor "$version" "$built"; then
        echo "preflight: *** stopping: NCCL $version is loaded but the CUDA backend was built against NCCL $built (a $(echo "$built" | cut -d. -f1,2) or later is needed: calls such as ncclAlltoAll are missing before); put a newer libnccl.so.2 first (pip install nvidia-nccl-cu13, or CUDA_DIRS / LD_LIBRARY_PATH)"
        return 2
      fi
    else
      echo "preflight: NCCL of unknown version ($(readlink -f "$nccl"))"
    fi
  fi
  return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  [ $# -ge 1 ] || {
    echo "usage: $0 BUILD_DIR [BINARY...]" >&2
    exit 1
  }
  preflight "$@" || exit $?
  echo "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi
