"""bf16 selects, masks and constants on host ranks (issue 51, item 4):
each form links at the default optimization level for the generic CPU
(it needed `__truncsfbf2` once) and equals jax.jit bit for bit (a select
rounds nothing)."""

import numpy as np
import pytest

from conftest import require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ojax = pytest.importorskip("overlap.jax")

pytestmark = pytest.mark.usefixtures("native_libraries")

# No subnormal inputs: XLA's CPU compares them as zero (1e-40 > 0 is
# false under its denormals-are-zero), Overlap as what they are; a
# subnormal constant selected into the result is kept by both ("subnormal").
_EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30,
                   3.0e38, 1.0, -1.0], np.float32)

FORMS = {
    "where_zero": lambda x, m: jnp.where(x > 0, x, 0),
    "relu": lambda x, m: jax.nn.relu(x),
    "maximum": lambda x, m: jnp.maximum(x, m),
    "causal_mask": lambda x, m: jnp.where(
        jnp.tril(jnp.ones(x.shape, bool)), x, jnp.finfo(x.dtype).min),
    "mask_neg_inf": lambda x, m: jnp.where(m > 0.5, x, -jnp.inf),
    "mask_nan": lambda x, m: jnp.where(m > 0.5, jnp.nan, x),
    "neg_zero": lambda x, m: jnp.where(m > 0, x, -0.0),
    "subnormal": lambda x, m: jnp.where(m < 0, jnp.asarray(1e-40, x.dtype),
                                        x),
    "clip": lambda x, m: jnp.clip(x, -0.5, 0.5),
    "select_of_selects": lambda x, m: jnp.where(
        x > m, jnp.where(m > 0, x, 2.5), jnp.inf),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_bf16_select_equals_jit(mesh, form):
    rng = np.random.default_rng(sorted(FORMS).index(form))
    x = rng.standard_normal((64 * 4, 64)).astype(np.float32)
    x.flat[:len(_EDGES)] = _EDGES
    m = rng.standard_normal((64 * 4, 64)).astype(np.float32)
    x, m = jnp.asarray(x, jnp.bfloat16), jnp.asarray(m, jnp.bfloat16)
    fn = FORMS[form]
    f = jax.shard_map(lambda a, b: fn(a, b), mesh=mesh,
                      in_specs=(P("tp"), P("tp")), out_specs=P("tp"))
    res = ojax.run(f, x, m, strategy="none")
    got = np.asarray(res.outputs[0]).view(np.uint16)
    want = np.asarray(jax.jit(f)(x, m)).view(np.uint16)
    nan = np.isnan(np.asarray(jax.jit(f)(x, m), np.float32))
    assert (np.isnan(np.asarray(res.outputs[0], np.float32)) == nan).all()
    # Bit for bit (the sign of zero and subnormals included), NaN for NaN.
    np.testing.assert_array_equal(got[~nan], want[~nan])
