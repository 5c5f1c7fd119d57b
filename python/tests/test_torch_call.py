"""overlap.torch.jit: a module compiled by Overlap, called from torch
through the custom op overlap::layer, differentiated by torch.autograd
through its compiled backward (the module's vjp, emitted per rank under the
same plan), trained for 3 SGD steps beside a copy trained by plain torch:
the losses, every parameter's gradient and the input's gradient agree at
each step (f32 1e-4, relative to the largest gradient of the module)."""

import copy

import pytest

torch = pytest.importorskip("torch")

import overlap.torch as otorch  # noqa: E402
from torch_modules import MODULES  # noqa: E402

pytestmark = pytest.mark.usefixtures("native_libraries")


def _max_rel(got, want):
    scale = max(float(w.abs().max()) for w in want)
    return max(float((g - w).abs().max()) for g, w in zip(got, want)) / scale


@pytest.mark.parametrize("name", ["megatron_mlp", "llama_mlp",
                                  "attention_softmax", "attention_sdpa"])
def test_three_training_steps_match_plain_torch(name):
    torch.manual_seed(11)
    module, args, plan = MODULES[name]()
    ref = copy.deepcopy(module)
    layer = otorch.jit(module, *args, plan=plan, ranks=4,
                       strategy="uniform:2")
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    x = args[0].clone().requires_grad_(True)
    x_ref = args[0].clone().requires_grad_(True)
    for step in range(3):
        loss = (layer(x) ** 2).mean()
        loss_ref = (ref(x_ref) ** 2).mean()
        for o in (opt, opt_ref):
            o.zero_grad()
        x.grad = x_ref.grad = None
        loss.backward()
        loss_ref.backward()
        assert abs(loss.item() - loss_ref.item()) <= 1e-4 * loss_ref.item()
        grads = [p.grad for p in module.parameters()]
        want = [p.grad for p in ref.parameters()]
        assert all(g is not None for g in grads), name
        err = _max_rel(grads, want)
        assert err <= 1e-4, f"{name} step {step}: parameter gradients " \
            f"off by {err:.3g}"
        assert _max_rel([x.grad], [x_ref.grad]) <= 1e-4
        opt.step()
        opt_ref.step()
    # The backward has the input's gradient (a contraction over the split
    # dim, then its all-reduce): planned in 2 tiles too.
    back = layer.backward()
    assert back.plans and all(len(p["tiles"]) == 2 for p in back.plans)
    assert "shard.all_reduce" in back.mlir


def test_the_layer_is_a_custom_op_inside_torch_code():
    """The layer composes with torch ops around it and under no_grad; its
    forward alone never compiles a backward."""
    torch.manual_seed(2)
    module, args, plan = MODULES["megatron_mlp"]()
    layer = otorch.jit(module, *args, plan=plan, ranks=4)
    with torch.no_grad():
        y = torch.tanh(layer(args[0] * 2)) + 1
        want = torch.tanh(module(args[0] * 2)) + 1
    assert float((y - want).abs().max()) <= 1e-4 * float(want.abs().max())
    assert layer.backward_program is None
    assert hasattr(torch.ops.overlap, "layer")


def test_gradients_with_a_gathered_colwise_and_a_whole_rowwise_input():
    """The backward of ColwiseParallel(output_layouts=Replicate()) and
    RowwiseParallel(input_layouts=Replicate()): the forward's gather
    recomputed, the whole cotangent cut to each rank's block where it meets
    the split weight."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import (ColwiseParallel,
                                                   RowwiseParallel)
    torch.manual_seed(5)
    module, args, _ = MODULES["megatron_mlp"]()
    ref = copy.deepcopy(module)
    plan = {"fc1": ColwiseParallel(output_layouts=Replicate()),
            "fc2": RowwiseParallel(input_layouts=Replicate())}
    layer = otorch.jit(module, *args, plan=plan, ranks=4)
    x = args[0].clone().requires_grad_(True)
    x_ref = args[0].clone().requires_grad_(True)
    (layer(x) ** 2).mean().backward()
    (ref(x_ref) ** 2).mean().backward()
    got = [p.grad for p in module.parameters()] + [x.grad]
    want = [p.grad for p in ref.parameters()] + [x_ref.grad]
    assert _max_rel(got, want) <= 1e-4
