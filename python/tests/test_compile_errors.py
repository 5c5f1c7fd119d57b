"""overlap.compile's failures and warnings (issue 25): an output that
cannot be written raises CompileError and the interpreter lives; a library
without a signature says so; option values cannot splice passes into the
pipeline; names the signature cannot carry are refused."""

import warnings

import pytest

import overlap
from overlap import native

TWO = """
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""

ONE = """
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""




@pytest.mark.parametrize("emit", ["mlir", "llvm", "obj", "so"])
def test_full_disk_is_a_compile_error(compiler_api, emit):
    # /dev/full fails every write: before, LLVM's fatal "IO failure on
    # output stream" ended the interpreter.
    with pytest.raises(overlap.CompileError,
                       match="/dev/full|No space left on device"):
        overlap.compile(ONE, emit=emit, output="/dev/full")
    # Still alive, and the next compile works.
    assert overlap.compile(ONE, emit="mlir").path


def test_warnings_when_no_signature_is_embedded(compiler_api, tmp_path):
    with pytest.warns(overlap.CompileWarning,
                      match="no overlap_entry_signature embedded"):
        prog = overlap.compile(TWO, emit="obj", output=tmp_path / "two.o")
    assert len(prog.warnings) == 1
    assert "2 public functions with a body" in prog.warnings[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = overlap.compile(TWO, emit="obj", entry="a",
                              output=tmp_path / "one.o")
    assert one.warnings == []


@pytest.mark.parametrize("option", ["profile", "strategy", "target"])
def test_option_values_cannot_splice_passes(compiler_api, option, tmp_path):
    splice = 'x"}, symbol-privatize, symbol-dce, overlap-pipeline{profile="x'
    with pytest.raises(overlap.CompileError,
                       match=f"^{option}: the value contains '" + r'\\"' +
                       "', which would change the structure"):
        overlap.compile(ONE, emit="mlir", output=tmp_path / "m.mlir",
                        **{option: splice})
    with pytest.raises(overlap.CompileError,
                       match=f"^{option}: the value contains '" + r"\\n'"):
        overlap.compile(ONE, emit="mlir", output=tmp_path / "m.mlir",
                        **{option: "none\nx"})


def test_unrepresentable_names_are_refused(compiler_api, tmp_path):
    # A grid the entry uses (one it does not name is not in the signature).
    grid = ('shard.grid @"tp\\0Aarg arg9 4xf32"(shape = 2)\n' + ONE.replace(
        "  return %x", '  %r = shard.all_reduce %x on @"tp\\0Aarg arg9 4xf32" '
        'grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>\n  return %r'))
    with pytest.raises(overlap.CompileError,
                       match=r"stage 'signature': grid @\"tp\\0Aarg arg9"):
        overlap.compile(grid, output=tmp_path / "g.so")
    space = ONE.replace("@a", '@"has space"')
    with pytest.raises(overlap.CompileError,
                       match=r'function @"has space": the name holds a space'):
        overlap.compile(space, output=tmp_path / "s.so")


BAD = """
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<8xf32>
  return %y : tensor<4xf32>
}
"""


def test_errors_name_the_source(compiler_api, tmp_path):
    """A compile error locates its line in the file the module came from
    (a path given as a pathlib.Path), in source_name when given, and in
    the caller's file and line for text (issues 37, 52)."""
    path = tmp_path / "bad_layer.mlir"
    path.write_text(BAD)
    out = tmp_path / "m.mlir"
    with pytest.raises(overlap.CompileError) as info:
        overlap.compile(path, emit="mlir", output=out)
    assert f"{path}:3:" in str(info.value), info.value
    with pytest.raises(overlap.CompileError) as info:
        overlap.compile(BAD, emit="mlir", output=out, source_name="layer.mlir")
    assert "layer.mlir:3:" in str(info.value), info.value
    with pytest.raises(overlap.CompileError) as info:
        overlap.compile(BAD, emit="mlir", output=out)
    # Text is named after the caller's line (issue 52), not "input".
    assert "<overlap.compile text from test_compile_errors.py:" in str(
        info.value) and ">:3:" in str(info.value), info.value
    # A good module from a path compiles as its text does.
    good = tmp_path / "one.mlir"
    good.write_text(ONE)
    assert overlap.compile(good, emit="mlir", output=out).path == str(out)
    # source_name is no pipeline option.
    with pytest.raises(TypeError, match="unexpected option 'source-name'|"
                       "unexpected keyword"):
        overlap.compile(ONE, emit="mlir", output=out, **{"source-name": "x"})


# Inputs that crashed upstream's parser (SIGSEGV: recursion per bracket)
# or verifier (SIGFPE: a grid extent 0 under an all_to_all) inside the
# interpreter (issue 48, item 12): overlap.compile raises and the
# interpreter lives.
DEEP_ATTRIBUTE = ("func.func private @f() attributes {a = " + "[" * 50000 +
                  "]" * 50000 + "}")
DEEP_TYPE = ("func.func private @f(" + "tensor<" * 20000 + "f32" +
             ">" * 20000 + ")")
ZERO_EXTENT = """
shard.grid @g(shape = 2x0)
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = shard.all_to_all %x on @g grid_axes = [1] split_axis = 0 concat_axis = 1
    : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
"""


@pytest.mark.parametrize("source,message", [
    (DEEP_ATTRIBUTE, r":1:1039: error: brackets nest deeper than 1000 "
                     r"levels here \(this '\[' opens level 1001\)"),
    (DEEP_TYPE, r":1:7021: error: brackets nest deeper than 1000 "
                r"levels here \(this '<' opens level 1001\)"),
    (ZERO_EXTENT, r":2:1: error: 'shard.grid' op @g has extent 0 on "
                  r"axis 1 \(shape 2x0\)"),
])
def test_upstream_crashes_are_compile_errors(compiler_api, source, message):
    with pytest.raises(overlap.CompileError, match=message):
        overlap.compile(source, emit="mlir")
    assert overlap.compile(ONE, emit="mlir").path
