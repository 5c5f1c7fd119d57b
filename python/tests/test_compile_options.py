"""The compile options are declared once (CompileOptions.def): Python's
ctypes mirror of OverlapCompileOptions is built from the layout the library
reports, and every pipeline option is a keyword of overlap.compile named as
overlap-compile's flag (issue 24)."""

import ctypes
import json

import pytest

import overlap
from overlap import native

MAR = open(__file__.replace("tests/test_compile_options.py",
                            "../examples/mlp.mlir")).read()




def test_mirror_is_the_library_layout(compiler_api):
    layout = json.loads(compiler_api.overlapCompileOptionsLayout().decode())
    mirror = compiler_api.CompileOptions
    assert [name for name, _ in mirror._fields_] == \
        [f["field"] for f in layout["fields"]]
    assert ctypes.sizeof(mirror) == layout["size"]
    # Every row of CompileOptions.def, not the three the old mirror knew.
    for flag in ("profile", "strategy", "target", "testing-drop-waits",
                 "gpu-chip", "gpu-features", "gpu-format"):
        assert flag in mirror.flags
    defaults = compiler_api.overlapCompileOptionsDefault()
    assert defaults.size == layout["size"]
    assert defaults.gpuChip == b"sm_90a"
    assert defaults.testingDropWaits is False


def test_pipeline_options_by_flag_name(compiler_api, tmp_path):
    # target=cuda with another chip, and drop-waits on the host target.
    text = overlap.compile(MAR, target="cuda", emit="mlir", strategy="uniform:2",
                           gpu_chip="sm_80", gpu_format="isa",
                           output=tmp_path / "cuda.mlir").read_bytes().decode()
    assert "sm_80" in text
    dropped = overlap.compile(MAR, emit="mlir", strategy="uniform:2",
                              testing_drop_waits=True,
                              output=tmp_path / "host.mlir").read_bytes().decode()
    kept = overlap.compile(MAR, emit="mlir", strategy="uniform:2",
                           output=tmp_path / "kept.mlir").read_bytes().decode()
    assert dropped.count("overlap_wait") < kept.count("overlap_wait")


def test_unknown_or_mistyped_option(compiler_api):
    with pytest.raises(TypeError, match="'gpu_chp'.*gpu_chip"):
        overlap.compile(MAR, emit="mlir", gpu_chp="sm_80")
    with pytest.raises(TypeError, match="testing_drop_waits='yes'"):
        overlap.compile(MAR, emit="mlir", testing_drop_waits="yes")
