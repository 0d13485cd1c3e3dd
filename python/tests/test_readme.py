"""The README's Python examples, run as written, each skipped (saying why) where a
package it imports is missing."""

import pathlib
import re

import numpy as np
import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def imported(code):
    """The top-level modules a block imports."""
    names = set()
    for line in code.splitlines():
        code_part = line.split("#")[0].strip()
        m = re.match(r"(?:import|from)\s+([\w., ]+?)(?:\s+import\b.*)?$", code_part)
        if m:
            for part in m.group(1).split(","):
                names.add(part.split(" as ")[0].strip().split(".")[0])
    return names


def test_readme_has_python_examples():
    assert len(python_blocks()) >= 2, "README.md lost its Python examples"


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_example_runs(index):
    code = python_blocks()[index]
    for name in sorted(imported(code) - {"batchlin", "numpy"}):
        pytest.importorskip(name, reason=f"the README's example {index} uses {name}")
    env = {}
    exec(compile(code, str(README), "exec"), env)  # noqa: S102 - our own README
    # every example's results are there, and are numbers
    results = [env[k] for k in ("Q", "R", "S") if k in env]
    assert results, f"example {index} defines none of Q, R, S"
    for r in results:
        assert np.all(np.isfinite(np.asarray(r.cpu() if hasattr(r, "cpu") else r)))
