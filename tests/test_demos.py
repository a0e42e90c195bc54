"""The demos in demos/: each runs cleanly and prints exactly the lines the course shows.

Every demo runs as its own subprocess with a temporary working directory (so the plot
autodiff.py saves lands there). Memory addresses, such as the one in
``<AddBackward0 object at 0x...>``, vary between runs and are masked before comparing.
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ADDRESS = re.compile(r"0x[0-9a-f]+")

EXPECTED = {
    "gradients.py": [
        "",
        "Tensor t1 values, grad, grad_fn: ",
        "tensor([1., 2., 3.], requires_grad=True)",
        "None",
        "None",
        "",
        "Tensor t2 values, grad, grad_fn: ",
        "tensor([ 2.,  5., 10.], grad_fn=<AddBackward0>)",
        "None",
        "<AddBackward0 object at 0xADDR>",
        "",
        "Executing backward()",
        "",
        "Tensor t1 values, grad, grad_fn: ",
        "tensor([1., 2., 3.], requires_grad=True)",
        "tensor([2., 4., 6.])",
        "None",
        "",
        "Tensor t2 values, grad, grad_fn: ",
        "tensor([ 2.,  5., 10.], grad_fn=<AddBackward0>)",
        "tensor([1., 1., 1.])",
        "<AddBackward0 object at 0xADDR>",
    ],
    "one_weight.py": [
        "1.0 -4.0",
    ],
    "three_weights.py": [
        "4.0",
        "tensor([-12.,  -4., -16.])",
    ],
    "habits.py": [
        "after backward 1 w.grad = -4.0",
        "after backward 2 w.grad = -8.0",
        "False",
    ],
    "autodiff.py": [
        "tensor(12.6667, grad_fn=<MeanBackward0>)",
        "tensor([1.3333, 2.0000, 2.6667])",
        "tensor([2.6667, 4.0000, 5.3333])",
        "Does 'x' have a gradient? True",
        "Does 'a' have a gradient? True",
        "Does 'z' have a gradient? False",
        "Does 'a' have a gradient? True",
        "Does 'z' have a gradient? False",
        "Iteration  1: x = -0.500000, f(x) = -4.6875000",
        "Iteration  2: x = -0.925000, f(x) = -7.6622810",
        "Iteration  3: x = -1.174209, f(x) = -8.4623260",
        "Iteration  4: x = -1.232996, f(x) = -8.4984322",
        "Iteration  5: x = -1.234797, f(x) = -8.4984636",
        "Iteration  6: x = -1.234772, f(x) = -8.4984646",
        "Iteration  7: x = -1.234773, f(x) = -8.4984636",
        "Iteration  8: x = -1.234773, f(x) = -8.4984636",
        "Iteration  9: x = -1.234773, f(x) = -8.4984636",
        "Iteration 10: x = -1.234773, f(x) = -8.4984636",
    ],
}


def _mask(line: str) -> str:
    return ADDRESS.sub("0xADDR", line)


@pytest.fixture(scope="module")
def runs(root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Run every demo once, in parallel; each in its own empty working directory."""

    def run(name: str) -> tuple[subprocess.CompletedProcess, Path]:
        cwd = tmp_path_factory.mktemp(name.removesuffix(".py"))
        done = subprocess.run(
            [sys.executable, str(root / "demos" / name)],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done, cwd

    with ThreadPoolExecutor(max_workers=len(EXPECTED)) as pool:
        return dict(zip(EXPECTED, pool.map(run, EXPECTED), strict=True))


def test_every_demo_is_tested(root: Path) -> None:
    assert sorted(p.name for p in (root / "demos").glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_demo_prints_the_expected_lines(runs: dict, name: str) -> None:
    done, _ = runs[name]
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert [_mask(line) for line in done.stdout.splitlines()] == [
        _mask(line) for line in EXPECTED[name]
    ]


def test_autodiff_saves_its_plot(runs: dict) -> None:
    done, cwd = runs["autodiff.py"]
    assert done.returncode == 0, done.stderr
    png = cwd / "autodiff.png"
    assert png.is_file()
    assert png.stat().st_size > 0
    assert png.read_bytes().startswith(b"\x89PNG")
