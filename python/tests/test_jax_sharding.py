"""Sharded JAX arrays over several devices (batchlin/_jax.py, "Sharded arrays").

A batch sharded along its batch axes is decomposed shard by shard, each on the device
holding it: the compiled HLO has no collective, the custom call runs on one shard's
shape, the results are sharded as the input and equal the single-device call (and
numpy.linalg in float64), under jit, eagerly, in shard_map, under vmap and grad; a
sharding that splits a matrix axis gives the right results with one warning.

The checks run in a process of their own (sharded_jax_checks.py) with 8 CPU devices:
JAX fixes its number of host devices when it starts, and this process's JAX has
started already. Once with Shardy (JAX's default partitioner), once with GSPMD.
"""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("jax", reason="jax is not installed")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sharded_jax_checks.py")
CHECKS = ["check_1d_mesh", "check_2d_mesh_two_batch_axes",
          "check_2d_mesh_one_batch_axis_over_both", "check_eager", "check_shard_map",
          "check_vmap_and_grad", "check_matrix_axis_split_warns_once"]

_runs = {}


def _results(partitioner):
    """The checks' results in a fresh process (run once per partitioner)."""
    if partitioner not in _runs:
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        args = [sys.executable, SCRIPT] + (["--gspmd"] if partitioner == "gspmd" else [])
        p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
        assert p.returncode == 0, f"the checks' process failed:\n{p.stdout}\n{p.stderr}"
        _runs[partitioner] = json.loads(p.stdout.strip().splitlines()[-1])
    return _runs[partitioner]


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
@pytest.mark.parametrize("check", CHECKS)
def test_sharded(partitioner, check):
    results = _results(partitioner)
    assert check in results, f"{check} did not run (ran: {sorted(results)})"
    assert results[check] is None, results[check]


def test_every_check_is_listed():
    assert sorted(_results("shardy")) == sorted(CHECKS)
