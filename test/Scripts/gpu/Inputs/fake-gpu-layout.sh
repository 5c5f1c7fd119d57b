#!/usr/bin/env bash
# Makes, under DIR, what scripts/gpu/preflight.sh and run.sh see on a GPU
# machine, with stand-in libraries and programs (no CUDA needed):
#   DIR/cuda/lib64/libcudart.so.13                the CUDA toolkit's
#   DIR/site/nvidia/cu13/lib/libcublasLt.so.13    pip wheels' (and a decoy
#   DIR/site/nvidia/cu13/lib/libcudart.so.13       cudart the CUDA one beats)
#   DIR/site/nvidia/nccl/lib/libnccl.so.2         ncclGetVersion: 2.28.5,
#                                                  or $FAKE_NCCL_VERSION
#   DIR/site/nvidia/fake/lib/libfakecomm.so.1     a fourth library to remove
#   DIR/bin/python3      prints DIR/site as its site-packages, else runs
#                        the real python3 (ctypes for the NCCL version)
#   DIR/build/lib/liboverlap_runtime_cuda.so      needs all four
#   DIR/build/lib/overlap_runtime_cuda.nccl       the NCCL it was built
#                        against: 2.28.9, or $FAKE_NCCL_BUILT
#   DIR/build/{bin,unittests}/...  the programs run.sh runs, each printing
#                        its name (and OVERLAP_RANK/OVERLAP_WORLD_SIZE and
#                        NCCL_MULTI_RANK_GPU_ENABLE when set), sleeping
#                        $FAKE_SLEEP_<name> seconds and exiting with
#                        $FAKE_RC_<name> (- as _), writing a profile
#                        to the path after --out; with FAKE_TIMES=FILE
#                        (lines "command seconds", run.sh's command names)
#                        also, once per command (a mark in $FAKE_MARKS),
#                        the seconds FILE gives $OVERLAP_STEP divided by
#                        $FAKE_SCALE (default 1), less what passed since
#                        $OVERLAP_STEP_START: a dry run of a session
#                        replaying its measured times
#   DIR/bin/nvidia-smi   -L lists $FAKE_GPUS GPUs (default 1)
set -eu
DIR=$1
REAL_PYTHON=$(command -v python3)
mkdir -p "$DIR/cuda/lib64" "$DIR/site/nvidia/cu13/lib" \
  "$DIR/site/nvidia/nccl/lib" "$DIR/site/nvidia/fake/lib" "$DIR/bin" \
  "$DIR/build/lib" "$DIR/build/bin" "$DIR/build/unittests" "$DIR/src"
echo "${FAKE_NCCL_BUILT:-2.28.9}" >"$DIR/build/lib/overlap_runtime_cuda.nccl"
cd "$DIR/src"
echo 'int fake_symbol;' >empty.c
echo "int ncclGetVersion(int *v) { *v = ${FAKE_NCCL_VERSION:-22805}; return 0; }" >nccl.c
cat >main.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
static const char *var(const char *prefix, const char *base) {
  static char name[256];
  snprintf(name, sizeof name, "%s%s", prefix, base);
  for (char *p = name; *p; ++p)
    if (*p == '-')
      *p = '_';
  return getenv(name);
}
int main(int argc, char **argv) {
  const char *base = strrchr(argv[0], '/');
  base = base ? base + 1 : argv[0];
  if (getenv("OVERLAP_RANK"))
    printf("fake %s rank %s of %s multi-rank-gpu %s\n", base,
           getenv("OVERLAP_RANK"), getenv("OVERLAP_WORLD_SIZE"),
           getenv("NCCL_MULTI_RANK_GPU_ENABLE") ? "on" : "off");
  else
    printf("fake %s\n", base);
  fflush(stdout);
  if (var("FAKE_SLEEP_", base))
    sleep(atoi(var("FAKE_SLEEP_", base)));
  // A profile where overlap-calibrate writes one (rank 0 of a job).
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--out") &&
        (!getenv("OVERLAP_RANK") || !strcmp(getenv("OVERLAP_RANK"), "0"))) {
      FILE *out = fopen(argv[i + 1], "w");
      if (out) {
        fputs("{\"name\": \"fake\", \"device\": {\"comm_sms\": 16}}\n", out);
        fclose(out);
      }
    }
  const char *times = getenv("FAKE_TIMES"), *step = getenv("OVERLAP_STEP");
  FILE *f = times && step ? fopen(times, "r") : NULL;
  char line[512], name[256], mark[1024];
  double seconds = -1, s;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "%255s %lf", name, &s) == 2 && !strcmp(name, step))
      seconds = s;
  if (f)
    fclose(f);
  snprintf(mark, sizeof mark, "%s/%s", getenv("FAKE_MARKS") ? getenv("FAKE_MARKS") : "/tmp", step ? step : "");
  if (seconds > 0 && access(mark, F_OK) != 0) {
    FILE *m = fopen(mark, "w");
    if (m)
      fclose(m);
    double scale = getenv("FAKE_SCALE") ? atof(getenv("FAKE_SCALE")) : 1;
    double wait = seconds * 1e6 / scale;
    // Less what the command's wrappers (programs.sh, torchrun.py) took.
    if (getenv("OVERLAP_STEP_START")) {
      struct timeval tv;
      gettimeofday(&tv, NULL);
      wait -= (tv.tv_sec * 1e6 + tv.tv_usec) - atof(getenv("OVERLAP_STEP_START"));
    }
    if (wait > 0)
      usleep((useconds_t)wait);
  }
  return var("FAKE_RC_", base) ? atoi(var("FAKE_RC_", base)) : 0;
}
C
lib() { # path soname source
  cc -shared -fPIC -Wl,-soname,"$2" "$3" -o "$1"
}
lib "$DIR/cuda/lib64/libcudart.so.13" libcudart.so.13 empty.c
lib "$DIR/site/nvidia/cu13/lib/libcudart.so.13" libcudart.so.13 empty.c
lib "$DIR/site/nvidia/cu13/lib/libcublasLt.so.13" libcublasLt.so.13 empty.c
lib "$DIR/site/nvidia/nccl/lib/libnccl.so.2" libnccl.so.2 nccl.c
lib "$DIR/site/nvidia/fake/lib/libfakecomm.so.1" libfakecomm.so.1 empty.c
cc -shared -fPIC -Wl,-soname,liboverlap_runtime_cuda.so empty.c \
  -o "$DIR/build/lib/liboverlap_runtime_cuda.so" -Wl,--no-as-needed \
  "$DIR/cuda/lib64/libcudart.so.13" \
  "$DIR/site/nvidia/cu13/lib/libcublasLt.so.13" \
  "$DIR/site/nvidia/nccl/lib/libnccl.so.2" \
  "$DIR/site/nvidia/fake/lib/libfakecomm.so.1"
links="$DIR/cuda/lib64:$DIR/site/nvidia/cu13/lib:$DIR/site/nvidia/nccl/lib:$DIR/site/nvidia/fake/lib"
for p in bin/overlap-bench bin/overlap-calibrate bin/overlap-exec \
  bin/overlap-device-layer-check unittests/OverlapRuntimeCudaTests; do
  cc main.c -o "$DIR/build/$p" -Wl,-rpath-link,"$links" -Wl,--no-as-needed \
    "$DIR/build/lib/liboverlap_runtime_cuda.so"
done
cat >"$DIR/bin/python3" <<PY
#!/bin/sh
case "\$*" in
*getsitepackages*) echo "$DIR/site" ;;
*) exec "$REAL_PYTHON" "\$@" ;;
esac
PY
chmod +x "$DIR/bin/python3"
cat >"$DIR/bin/nvidia-smi" <<'SMI'
#!/bin/sh
i=0
while [ "$i" -lt "${FAKE_GPUS:-1}" ]; do
  [ "$1" = -L ] && echo "GPU $i: NVIDIA H200 (UUID: GPU-fake-$i)"
  i=$((i + 1))
done
SMI
chmod +x "$DIR/bin/nvidia-smi"
