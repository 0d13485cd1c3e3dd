"""Checks of batchlin on sharded JAX arrays, over 8 CPU devices of one process.

Run as a script by test_jax_sharding.py, in a process of its own: the number of host
devices (XLA_FLAGS=--xla_force_host_platform_device_count=8) is fixed when JAX first
starts, and the test process has started it already. Prints one JSON object: check name
-> null (passed) or the traceback. `--gspmd` runs the checks under GSPMD (Shardy off).
"""

import json
import os
import sys
import traceback
import warnings

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import batchlin  # noqa: E402
from conftest import OPS, check_op, check_qr, rng, same_output  # noqa: E402

jax.config.update("jax_enable_x64", True)
if "--gspmd" in sys.argv:
    jax.config.update("jax_use_shardy_partitioner", False)

# Collectives XLA would insert to bring shards together; none may appear where only
# batch axes are split.
COLLECTIVES = ("all-gather", "all-to-all", "all-reduce", "collective-permute",
               "reduce-scatter")

DEVICES = jax.devices()
MESH_1D = Mesh(np.array(DEVICES), ("x",))
MESH_2D = Mesh(np.array(DEVICES).reshape(4, 2), ("x", "y"))
ONE = DEVICES[0]


def leaves(res):
    return [x for x in jax.tree_util.tree_leaves(res) if x is not None]


def hlo(f, a):
    return jax.jit(f).lower(a).compile().as_text()


def no_collectives(text):
    found = [c for c in COLLECTIVES if c in text]
    assert not found, f"collectives in the compiled HLO: {found}"


def equal_to_unsharded(f, x, res):
    """The sharded call's results are the single-device call's, output by output."""
    ref = f(jax.device_put(x, ONE))
    got, want = leaves(res), leaves(ref)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert same_output(g, w, *x.shape[-2:]), \
            float(np.max(np.abs(np.asarray(g, float) - np.asarray(w, float))))


def shard_per_device(res, sharding, batch_ndim):
    """Every output is sharded as the input along the batch axes, each device holding
    its own part."""
    spec = tuple(sharding.spec) + (None,) * (batch_ndim - len(sharding.spec))
    for out in leaves(res):
        got = tuple(out.sharding.spec) + (None,) * (out.ndim - len(out.sharding.spec))
        assert got[:batch_ndim] == spec[:batch_ndim], (out.sharding.spec, sharding.spec)
        assert all(s is None for s in got[batch_ndim:]), out.sharding.spec
        assert len({s.device for s in out.addressable_shards}) == len(DEVICES)


def check_batch_sharded(mesh, spec, shape):
    """Every operation under jit on an input sharded along batch axes only."""
    sharding = NamedSharding(mesh, spec)
    nb = len(shape) - 2
    for name, f, square in OPS:
        x = rng(len(name)).standard_normal(shape if not square else (*shape[:-1], shape[-2]))
        a = jax.device_put(x, sharding)
        text = hlo(f, a)
        no_collectives(text)
        # the custom call runs on one shard's shape: [batch / devices, ...]
        local = sharding.shard_shape(a.shape)
        assert f"f64[{','.join(map(str, local))}]" in text, f"{name}: no call on {local}"
        res = jax.jit(f)(a)
        shard_per_device(res, sharding, nb)
        equal_to_unsharded(f, x, res)
        check_op(name, x, res)


def check_1d_mesh():
    check_batch_sharded(MESH_1D, P("x"), (16, 6, 5))


def check_2d_mesh_two_batch_axes():
    check_batch_sharded(MESH_2D, P("x", "y"), (4, 6, 5, 7))


def check_2d_mesh_one_batch_axis_over_both():
    check_batch_sharded(MESH_2D, P(("x", "y"), None, None), (8, 3, 4, 4))


def check_eager():
    """Outside jit: each device's shard computed on it, results sharded as the input."""
    x = rng(5).standard_normal((16, 5, 5))
    sharding = NamedSharding(MESH_1D, P("x"))
    a = jax.device_put(x, sharding)
    for name, f, _ in OPS:
        res = f(a)
        shard_per_device(res, sharding, 1)
        equal_to_unsharded(f, x, res)


def check_shard_map():
    x = rng(6).standard_normal((16, 6, 6))
    a = jax.device_put(x, NamedSharding(MESH_1D, P("x")))
    for name, f, _ in OPS:
        out_specs = jax.tree_util.tree_map(lambda _: P("x"), jax.eval_shape(f, a))
        g = jax.shard_map(f, mesh=MESH_1D, in_specs=P("x"), out_specs=out_specs)
        no_collectives(hlo(g, a))
        res = jax.jit(g)(a)
        equal_to_unsharded(f, x, res)
        check_op(name, x, res)


def check_vmap_and_grad():
    """vmap over a sharded batch axis, and gradients, stay shard-local."""
    x = rng(7).standard_normal((8, 3, 6, 4))
    a = jax.device_put(x, NamedSharding(MESH_1D, P("x")))
    f = jax.vmap(batchlin.svdvals)
    no_collectives(hlo(f, a))
    equal_to_unsharded(f, x, jax.jit(f)(a))
    g = jax.grad(lambda t: (batchlin.qr(t).R ** 2).sum())
    text = hlo(g, a)
    assert "all-gather" not in text and "all-to-all" not in text
    want = jax.grad(lambda t: (jax.numpy.linalg.qr(t)[1] ** 2).sum())(x)
    assert np.allclose(np.asarray(jax.jit(g)(a)), np.asarray(want), atol=1e-10)


def check_matrix_axis_split_warns_once():
    """A sharding that splits a matrix axis: the call still gives the right results
    (XLA gathers those axes first) and says so, once per process."""
    x = rng(8).standard_normal((8, 8, 8))
    a = jax.device_put(x, NamedSharding(MESH_1D, P(None, "x")))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        q, r = jax.jit(batchlin.qr)(a)
        w = jax.jit(batchlin.eigvalsh)(a)
    ours = [str(m.message) for m in seen if "splits a matrix axis" in str(m.message)]
    assert len(ours) == 1, ours
    check_qr(x, q, r, 1e-12)
    assert np.allclose(np.asarray(w), np.linalg.eigvalsh(x), atol=1e-12)
    b = jax.device_put(x, NamedSharding(MESH_2D, P("x", None, "y")))
    equal_to_unsharded(batchlin.svd, x, jax.jit(batchlin.svd)(b))


CHECKS = [check_1d_mesh, check_2d_mesh_two_batch_axes,
          check_2d_mesh_one_batch_axis_over_both, check_eager, check_shard_map,
          check_vmap_and_grad, check_matrix_axis_split_warns_once]


def main():
    assert len(DEVICES) == 8, DEVICES
    results = {}
    for check in CHECKS:
        try:
            check()
            results[check.__name__] = None
        except Exception:
            results[check.__name__] = traceback.format_exc()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
