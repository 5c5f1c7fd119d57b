"""overlap.torch against the modules' own forward: plain torch.nn modules
(torch_modules.py) with the ColwiseParallel/RowwiseParallel plan a user
gives parallelize_module, exported, emitted per rank, compiled with Overlap
and run on 4 host ranks.

Tolerances, relative to the largest magnitude of torch's output (as
test_jax.py): f32 1e-4 (summation order, libm-level approximations); bf16
2**-6 and f16 2**-8, four ulps at the largest magnitude (both accumulate
contractions in f32 and round once, but a rounding near a boundary may go
either way, and the sharded program rounds each rank's partial product
before the all-reduce as torch's own tensor parallelism does).
"""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import overlap  # noqa: E402
import overlap.torch as otorch  # noqa: E402
from torch_modules import MODULES  # noqa: E402

pytestmark = pytest.mark.usefixtures("native_libraries")

TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 2.0 ** -6,
             torch.float16: 2.0 ** -8}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def build(name, dtype):
    torch.manual_seed(7)
    module, args, plan = MODULES[name]()
    module = module.to(dtype)
    return module, tuple(a.to(dtype) for a in args), plan


def rel_error(got, want):
    got, want = got.float(), want.float()
    return float((got - want).abs().max() / want.abs().max())


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_matches_its_forward(name, dtype):
    module, args, plan = build(name, DTYPES[dtype])
    with torch.no_grad():
        want = module(*args)
    res = otorch.run(module, *args, plan=plan, ranks=4, strategy="uniform:2")
    got = res.value
    assert got.shape == want.shape and got.dtype == want.dtype
    err = rel_error(got, want)
    assert err <= TOLERANCE[DTYPES[dtype]], \
        f"{name} ({dtype}): max error {err:.3g} relative to max |torch|"
    # The rowwise Linear's matmul and its all-reduce: planned, in 2 tiles.
    assert res.plans, f"{name}: no fused op was planned\n{res.mlir}"
    for p in res.plans:
        assert len(p["tiles"]) == 2 and sum(p["tiles"]) > 0, p


def test_weights_are_split_as_the_plan_says():
    """The per-rank program takes a quarter of each planned weight: a
    colwise weight's rows, a rowwise weight's columns; the others whole."""
    module, args, plan = build("megatron_mlp", torch.float32)
    low = otorch.lower_program(module, *args, plan=plan, ranks=4)
    shapes = {what: lay.local_shape(4)
              for (kind, what), lay in zip(low.sources, low.arg_layouts)}
    assert shapes["fc1.weight"] == (64, 64)      # [256, 64] by rows
    assert shapes["fc1.bias"] == (64,)
    assert shapes["fc2.weight"] == (64, 64)      # [64, 256] by columns
    assert shapes["fc2.bias"] == (64,)           # added after the all-reduce
    assert shapes[0] == (64, 64)                 # the input, replicated
    assert low.mlir.count("shard.all_reduce") == 1


def test_plan_keys_are_patterns_and_outputs_keep_their_structure():
    """A plan over a ModuleList by pattern ("blocks.*.fc1"), and a forward
    that returns a tuple with a colwise (split) activation in it: the
    activation comes back whole, in the module's own structure."""
    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = torch.nn.ModuleList(
                [MODULES["megatron_mlp"]()[0] for _ in range(2)])

        def forward(self, x):
            h = self.blocks[0].fc1(x)
            y = self.blocks[0].fc2(torch.tanh(h))
            return self.blocks[1](y), h

    torch.manual_seed(3)
    module, x = Two(), torch.randn(32, 64)
    plan = {"blocks.*.fc1": "colwise", "blocks.*.fc2": "rowwise"}
    with torch.no_grad():
        want_y, want_h = module(x)
    res = otorch.run(module, x, plan=plan, ranks=4, strategy="uniform:2")
    y, h = res.value
    assert rel_error(y, want_y) <= 1e-4 and rel_error(h, want_h) <= 1e-4
    assert len(res.plans) == 2


@pytest.mark.parametrize("name", ["megatron_mlp", "llama_mlp",
                                  "attention_sdpa"])
def test_module_compiles_for_cuda(name, tmp_path):
    """The per-rank program also compiles for the GPU target (kernels,
    cuBLASLt and NCCL calls; nothing runs here)."""
    if not any((d / "liboverlap_runtime_cuda.so").is_file()
               for d in overlap.native.library_dirs()):
        pytest.skip("the CUDA backend was not built "
                    "(no liboverlap_runtime_cuda.so)")
    for dtype in (torch.float32, torch.bfloat16):
        module, args, plan = build(name, dtype)
        prog = otorch.compile(module, *args, plan=plan, ranks=4,
                              target="cuda", strategy="uniform:2",
                              output=tmp_path / f"{name}.so")
        assert os.path.getsize(prog.path) > 0
        assert prog.plans and all(len(p["tiles"]) == 2
                                  for p in prog.plans), prog.plans


def test_unsupported_ops_are_refused_at_once_with_their_lines():
    class Odd(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)

        def forward(self, x):
            a = torch.cumsum(self.fc(x), dim=0)     # line A
            b = torch.sort(x, dim=-1).values        # line B
            return a + b

    with pytest.raises(otorch.UnsupportedError) as info:
        otorch.run(Odd(), torch.randn(8, 16), plan={"fc": "colwise"},
                   ranks=4)
    text = str(info.value)
    assert "2 reasons" in text, text
    assert "aten.cumsum.default" in text and "aten.sort" in text, text
    assert "test_torch_frontend.py" in text and "# line A" in text, text
    assert "# line B" in text and "does not translate it" in text, text
    assert len(info.value.refusals) == 2


def test_plans_it_does_not_take_are_refused_with_why():
    from torch.distributed.tensor.parallel import (RowwiseParallel,
                                                   SequenceParallel)
    from torch.distributed.tensor import Shard
    module, args, _ = build("llama_mlp", torch.float32)
    plan = {"down": RowwiseParallel(output_layouts=Shard(0)),
            "norm": SequenceParallel(sequence_dim=0),
            "nope": "colwise",
            "up": "diagonal"}
    with pytest.raises(otorch.UnsupportedError) as info:
        otorch.lower(module, *args, plan=plan, ranks=4)
    text = str(info.value)
    assert "4 reasons" in text, text
    assert "output_layouts=Shard(dim=0)" in text, text
    assert "SequenceParallel over Shard(dim=0)" in text, text
    assert "'nope'" in text and "gate, up, down" in text, text
    assert "'diagonal'" in text, text


def test_indivisible_and_non_linear_entries_are_refused():
    module, args, _ = build("megatron_mlp", torch.float32)
    with pytest.raises(otorch.UnsupportedError, match="not a multiple of "
                       "the 3 ranks"):
        otorch.lower(module, *args, plan={"fc1": "colwise"}, ranks=3)
    module, args, _ = build("llama_mlp", torch.float32)
    with pytest.raises(otorch.UnsupportedError, match="RMSNorm, not an "
                       "nn.Linear"):
        otorch.lower(module, *args, plan={"norm": "colwise"}, ranks=4)


@pytest.mark.parametrize("plan,fused", [
    ({"fc2": "rowwise"}, 1), ({"fc1": "colwise"}, 1),
    ({"fc1": "rowwise", "fc2": "rowwise"}, 2)])
def test_a_whole_operand_meeting_a_split_one_is_cut_locally(plan, fused):
    """A rowwise Linear of a whole input (torch's
    RowwiseParallel(input_layouts=Replicate())), or a whole weight after a
    colwise one: each rank takes its block of the whole operand (a slice at
    its rank's offset), so the contraction is still a partial sum and its
    all-reduce is overlapped; the result is the module's."""
    module, args, _ = build("megatron_mlp", torch.float32)
    with torch.no_grad():
        want = module(*args)
    res = otorch.run(module, *args, plan=plan, ranks=4, strategy="uniform:2")
    assert rel_error(res.value, want) <= 1e-4
    assert "shard.process_multi_index" in res.mlir
    assert "tensor.extract_slice" in res.mlir
    assert len(res.plans) == fused, res.plans
    assert all(len(p["tiles"]) == 2 for p in res.plans), res.plans


def test_a_gathered_colwise_output_and_a_whole_rowwise_input():
    """ColwiseParallel(output_layouts=Replicate()) (an LM head's): the
    product all-gathered on its last dim (Overlap does not overlap that
    gather: a missed remark says why); RowwiseParallel(input_layouts=
    Replicate()): the whole input cut to each rank's block."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import (ColwiseParallel,
                                                   RowwiseParallel)
    module, args, _ = build("megatron_mlp", torch.float32)
    plan = {"fc1": ColwiseParallel(output_layouts=Replicate()),
            "fc2": RowwiseParallel(input_layouts=Replicate())}
    with torch.no_grad():
        want = module(*args)
    res = otorch.run(module, *args, plan=plan, ranks=4, strategy="uniform:2")
    assert rel_error(res.value, want) <= 1e-4
    assert res.mlir.count("shard.all_gather") == 1
    assert len(res.plans) == 1 and len(res.plans[0]["tiles"]) == 2
    assert any("all-gather" in m["reason"] for m in res.missed), res.missed


def test_a_softmax_over_a_split_dim_is_refused_with_the_line():
    class Bad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 32)

        def forward(self, x):
            return torch.softmax(self.fc(x), dim=-1)   # over the split dim

    with pytest.raises(otorch.UnsupportedError) as info:
        otorch.lower(Bad(), torch.randn(8, 16), plan={"fc": "colwise"},
                     ranks=4)
    text = str(info.value)
    assert "a softmax over dim 1 of a value split on dim 1" in text, text
    assert "# over the split dim" in text, text


def test_missed_overlaps_carry_the_users_line():
    """A sum over a split dim is an all-reduce of a reduction: nothing to
    overlap it with; it comes back in missed with the module's line."""
    class Stats(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(64, 128)
            self.fc2 = torch.nn.Linear(128, 64)

        def forward(self, x):
            h = self.fc1(x)
            total = h.sum(dim=-1, keepdim=True)   # over the split dim
            return self.fc2(h) * total

    torch.manual_seed(1)
    module, x = Stats(), torch.randn(32, 64)
    with torch.no_grad():
        want = module(x)
    res = otorch.run(module, x, plan={"fc1": "colwise", "fc2": "rowwise"},
                     ranks=4, strategy="uniform:2")
    assert rel_error(res.value, want) <= 1e-4
    assert len(res.plans) == 1
    assert res.missed and any("test_torch_frontend.py" in m["location"]
                              for m in res.missed), res.missed


def test_unplanned_module_runs_replicated():
    """Without a plan every rank computes the whole module: no collective,
    no plan, the same result."""
    module, args, _ = build("attention_softmax", torch.float32)
    with torch.no_grad():
        want = module(*args)
    res = otorch.run(module, *args, ranks=2)
    assert rel_error(res.value, want) <= 1e-4
    assert not res.plans and "shard.all_reduce" not in res.mlir


def test_a_parse_error_names_the_aten_op_and_the_line(monkeypatch):
    """Text of the frontend's that does not parse (its bug, simulated
    here) is traced to the aten op that wrote it and the module's line."""
    from overlap.torch import _ops
    monkeypatch.setitem(_ops._UNARY, "aten.tanh.default",
                        lambda b, x: b(f"arith.no_such_op {x}, {x} : f32"))

    class Tanh(torch.nn.Module):
        def forward(self, x):
            return torch.tanh(x) * 2   # the line

    with pytest.raises(overlap.CompileError) as info:
        otorch.run(Tanh(), torch.randn(8, 8), ranks=2)
    text = str(info.value)
    assert "the frontend wrote MLIR that does not parse" in text, text
    assert "aten.tanh.default" in text and "# the line" in text, text


class _FFN(torch.nn.Module):
    def __init__(self, h=64, f=192):
        super().__init__()
        self.gate = torch.nn.Linear(h, f, bias=False)
        self.up = torch.nn.Linear(h, f, bias=False)
        self.down = torch.nn.Linear(f, h, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


class _SequenceParallelBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.RMSNorm(64)
        self.mlp = _FFN()

    def forward(self, x):
        return x + self.mlp(self.norm(x))


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("batch", [1, 2])
def test_sequence_parallel_plan(batch, dtype):
    """torch's sequence-parallel plan: the norm on each rank's tokens
    (SequenceParallel), the FFN's input all-gathered over the sequence
    (PrepareModuleInput), its output reduce-scattered back
    (RowwiseParallel(output_layouts=Shard(1))). The input comes split over
    the sequence, the output goes back whole. With b = 1 the gather and
    the scatter are both fused with their matmuls; with b = 2 the blocks
    are strided in the folded rows, which Overlap does not tile yet (its
    missed remarks say so), and the result is still the module's."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel,
                                                   PrepareModuleInput,
                                                   RowwiseParallel,
                                                   SequenceParallel)
    torch.manual_seed(4)
    dt = DTYPES[dtype]
    module = _SequenceParallelBlock().to(dt)
    x = torch.randn(batch, 32, 64).to(dt)
    plan = {"norm": SequenceParallel(),
            "mlp": PrepareModuleInput(input_layouts=(Shard(1),),
                                      desired_input_layouts=(Replicate(),)),
            "mlp.gate": ColwiseParallel(), "mlp.up": ColwiseParallel(),
            "mlp.down": RowwiseParallel(output_layouts=Shard(1))}
    with torch.no_grad():
        want = module(x)
    res = otorch.run(module, x, plan=plan, ranks=4, strategy="uniform:2")
    assert rel_error(res.value, want) <= TOLERANCE[dt]
    assert res.mlir.count("shard.all_gather") == 1
    assert res.mlir.count("shard.reduce_scatter") == 1
    ops = sorted(p["op"] for p in res.plans)
    if batch == 1:
        assert ops == ["overlap.all_gather_matmul",
                       "overlap.matmul_reduce_scatter"], res.plans
        assert all(len(p["tiles"]) == 2 for p in res.plans)
    else:
        assert len(res.missed) == 2, res.missed
    with pytest.raises(otorch.UnsupportedError, match="sequence-parallel"):
        otorch.jit(module, x, plan=plan, ranks=4).backward()
