"""The README's Python example, run as written (its JAX lines need JAX)."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_example_runs():
    blocks = python_blocks()
    assert blocks, "README.md has no python example"
    pytest.importorskip("jax", reason="the README's example uses JAX")
    for code in blocks:
        env = {}
        exec(compile(code, str(README), "exec"), env)  # noqa: S102 - our own README
        assert env["Q"] is not None and env["S"] is not None
