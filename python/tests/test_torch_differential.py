"""overlap.torch on random modules (torch_programs.py) against their own
forward: 4 host ranks, 2 tiles, each module's plan as a user gives it.
Tolerances as test_torch_frontend.py (relative to torch's largest
magnitude: f32 1e-4, bf16 2**-6)."""

import pytest

torch = pytest.importorskip("torch")

import overlap.torch as otorch  # noqa: E402
import torch_programs  # noqa: E402

pytestmark = pytest.mark.usefixtures("native_libraries")

TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 2.0 ** -6}


@pytest.mark.parametrize("seed", range(16))
def test_random_module_matches_its_forward(seed):
    module, args, plan, what = torch_programs.make(seed)
    with torch.no_grad():
        want = module(*args)
    res = otorch.run(module, *args, plan=plan, ranks=4, strategy="uniform:2")
    got = res.value
    assert got.shape == want.shape and got.dtype == want.dtype, what
    err = float((got.float() - want.float()).abs().max() /
                want.float().abs().max())
    assert err <= TOLERANCE[want.dtype], f"{what}: max error {err:.3g}"
    rowwise = sum(1 for style in plan.values() if style == "rowwise")
    assert res.mlir.count("shard.all_reduce") >= rowwise, what
    if rowwise:
        assert res.plans and all(len(p["tiles"]) == 2 for p in res.plans), \
            f"{what}: {res.plans}"


@pytest.mark.parametrize("seed", range(8))
def test_random_module_gradients_match_torch(seed):
    """Through overlap.torch.jit (its compiled backward, f32): the input's
    and every parameter's gradient of a loss, as torch.autograd gives them
    for the module itself (ReLU's backward: a comparison and a select)."""
    import copy
    module, args, plan, what = torch_programs.make(seed)
    module, x = module.float(), args[0].float()
    ref = copy.deepcopy(module)
    layer = otorch.jit(module, x, plan=plan, ranks=4, strategy="uniform:2")
    xa, xb = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    (layer(xa) ** 2).mean().backward()
    (ref(xb) ** 2).mean().backward()
    got = [p.grad for p in module.parameters()] + [xa.grad]
    want = [p.grad for p in ref.parameters()] + [xb.grad]
    scale = max(float(w.abs().max()) for w in want)
    err = max(float((g - w).abs().max()) for g, w in zip(got, want)) / scale
    assert err <= 1e-4, f"{what}: gradients off by {err:.3g}"
