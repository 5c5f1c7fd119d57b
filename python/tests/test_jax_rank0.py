"""Reshapes to and from rank 0 through overlap.jax, against jax.jit on 4
CPU devices (issue 48, item 13). Each was refused with an internal error:
the importer wrote them through a tensor<1x..> and an expand_shape to a
lower rank. The random family is test_jax_differential.py's
make_scalars."""

import numpy as np
import pytest

from conftest import require_jax, cpu_mesh

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ojax = pytest.importorskip("overlap.jax")

pytestmark = pytest.mark.usefixtures("native_libraries")

FORMS = {
    "element": lambda v: v * v[0, 0],
    "index_of_vector": lambda v: v + v[:, 1][lax.axis_index("x") % 2],
    "squeeze": lambda v: v - jnp.squeeze(v[1:2, 2:3]),
    "reshape_to_scalar": lambda v: v + v[:1, 3:].reshape(()),
    "expand_dims_of_scalar": lambda v: v * jnp.expand_dims(jnp.sum(v), 0),
    "scalar_to_matrix": lambda v: v + jnp.max(v).reshape(1, 1),
    "dynamic_slice_scalar": lambda v: v + lax.dynamic_slice(
        v, (lax.axis_index("x") - 1, 5), (1, 1)).reshape(()),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_rank0_form_matches_jax(name):
    mesh = cpu_mesh("x")
    f = jax.shard_map(FORMS[name], mesh=mesh, in_specs=P("x"),
                      out_specs=P("x"))
    x = np.random.default_rng(13).standard_normal((8, 4)).astype(np.float32)
    want = np.asarray(jax.jit(f)(x))
    res = ojax.run(f, x, strategy="none")
    np.testing.assert_allclose(res.outputs[0], want, rtol=1e-6, atol=1e-6)
