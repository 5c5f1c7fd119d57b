# -*- Python -*-
# Lit configuration of the Overlap regression suite.

import os
import sys
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "OVERLAP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.overlap_obj_root, "test")
# scripts/test-sanitizers.sh runs the loader's hostile-input tests with the
# ASan+UBSan build's tools (lit's own --param overlap-exec=PATH) and keeps
# their temporaries apart from this build's: --param overlap_exec_root=DIR.
if lit_config.params.get("overlap_exec_root"):
    config.test_exec_root = lit_config.params["overlap_exec_root"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs", "downstream"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%overlap_src", config.overlap_src_root))
config.substitutions.append(
    ("%overlap_lib", os.path.join(config.overlap_obj_root, "lib")))
config.substitutions.append(
    ("%profiles", os.path.join(config.overlap_src_root, "profiles")))

# Debian's own mlir-opt, for the plugin test (not overlap-opt).
config.substitutions.append(
    ("%stock_mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))
config.substitutions.append(("%overlap_obj", config.overlap_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# Tests that need a GPU declare `REQUIRES: cuda-gpu`; they run only where a
# GPU is present and the CUDA backend was built (scripts/gpu/).
if config.overlap_have_cuda and os.environ.get("OVERLAP_CUDA_GPU") == "1":
    config.available_features.add("cuda-gpu")
# The CUDA backend was built (liboverlap_runtime_cuda.so exists), with or
# without a GPU: --target=cuda programs link, overlap-exec has --backend cuda.
if config.overlap_have_cuda:
    config.available_features.add("cuda-backend")
# The loader reads compressed .npz inputs (zlib found, OVERLAP_HAVE_ZLIB).
if config.overlap_have_zlib:
    config.available_features.add("zlib")
# Host ranks as processes: `mpirun` on the PATH and the MPI transport built
# (liboverlap_runtime_mpi.so, OVERLAP_HAVE_MPI). %mpirun is mpirun with what
# this machine and CI need: root may run it, and 4 ranks on 2 cores.
mpirun = shutil.which("mpirun")
if mpirun and config.overlap_have_mpi:
    config.available_features.add("mpirun")
    config.substitutions.append(
        ("%mpirun", mpirun + " --allow-run-as-root --oversubscribe"))

# %torchrun: a stand-in for `torchrun --standalone` (no PyTorch needed) that
# gives its workers torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
# MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, ...); their processes join
# over TCP (lib/Runtime/Process/TcpTransport.cpp).
config.substitutions.append(
    ("%torchrun", sys.executable + " " + os.path.join(
        config.overlap_src_root, "test", "Tools", "overlap-exec", "Inputs",
        "torchrun.py")))

tool_dirs = [config.overlap_tools_dir, config.llvm_tools_dir]
tools = ["overlap-opt", "overlap-plan", "overlap-compile", "overlap-run",
         "overlap-exec", "overlap-capi-test", "overlap-host-capi-test",
         "mlir-opt", "mlir-runner"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.overlap_tools_dir,
                             append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
