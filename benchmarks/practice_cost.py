"""Lesson 12's measured claims at more sizes, each next to the counts that explain it.

    .venv/bin/python benchmarks/practice_cost.py [--threads 1] [--repeats 5] [--quick]

Prints, like ``notebooks/12_gradients_in_practice.ipynb`` but for more sizes:

1. **low precision**: one training step (forward and backward) of ``cost.mlp(4, width)``
   with ``ReLU``, on a batch of ``batch`` rows, in float32, under bfloat16 autocast and under
   float16 autocast: median times, next to the multiply-adds (the same in all three) and
   the bytes saved for backward (counted with saved-tensor hooks, the input and parameters
   left out); then the same step with oneDNN switched off
   (``torch.backends.mkldnn.flags(enabled=False)``), where low-precision products fall back
   to PyTorch's generic kernels;
2. **checking every gradient**: a plain training step against the same step in anomaly mode
   and under :func:`autograd_course.lab.practice.first_nonfinite` (a hook on every node),
   for deep narrow and shallow wide networks: median times next to the number of nodes of
   the graph, which is what both checks pay for;
3. **depth** (no timing): the norm of the gradient reaching block 1 against block ``depth``
   of :func:`autograd_course.lab.practice.deep_net` for depths 10 to 100 and the lesson's
   initialisations (PyTorch's gain for ``tanh``, ``calculate_gain("tanh")`` = 5/3, among
   them), and the ratio per block it implies (exact for a given seed and build).

A claim about times holds where the counts differ by a large factor, or where the hardware
differs (bfloat16 instructions); the CPU's features are printed first. ``--quick`` runs
smaller sizes with 2 rounds (seconds); the full run takes about a minute on one thread of a
recent CPU, most of it the generic kernels of section 1.
"""

from __future__ import annotations

import math
import warnings

import torch

from autograd_course.kernel.lessons import seed
from autograd_course.lab import cost, functional, practice

DTYPES = {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}


def step_of(model: torch.nn.Module, x: torch.Tensor, dtype: torch.dtype | None):
    """The loss of one training step of ``model`` on ``x``, under autocast to ``dtype``."""
    if dtype is None:
        return model(x).pow(2).mean()
    with torch.autocast("cpu", dtype=dtype):
        return model(x).float().pow(2).mean()


def precision_section(shapes, repeats: int, *, onednn: bool) -> None:
    state = "on" if onednn else "off (generic kernels)"
    print(f"one training step of mlp(4, width), ReLU; oneDNN {state}")
    for width, batch in shapes:
        model = cost.mlp(4, width, activation=torch.nn.ReLU)
        x = torch.randn(batch, width)
        existing = [x, *model.parameters()]
        fns = {label: (lambda m=model, x=x, d=dtype: step_of(m, x, d).backward())
               for label, dtype in DTYPES.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mkldnn.flags warns about TF32 on Intel GPUs
            with torch.backends.mkldnn.flags(enabled=onednn):
                times = cost.compare_times(fns, repeats=repeats)
        print(f"  width {width:5d}, batch {batch:5d}")
        for label, dtype in DTYPES.items():
            model.zero_grad()
            work = functional.count_work(lambda: step_of(model, x, dtype).backward())  # noqa: B023
            saved = practice.saved_bytes_by_dtype(
                lambda: step_of(model, x, dtype), exclude=existing)  # noqa: B023 - called here
            print(f"    {label:<9} {1e3 * times[label]:9.2f} ms "
                  f"(x{times[label] / times['float32']:5.2f}) | {work.multiply_adds:,} "
                  f"multiply-adds, saved for backward {sum(saved.values()):>12,} bytes")
        model.zero_grad()
    print()


def plain_step(model: torch.nn.Module, x: torch.Tensor) -> None:
    model(x).sum().backward()


def anomaly_step(model: torch.nn.Module, x: torch.Tensor) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled..."
        with torch.autograd.detect_anomaly():
            model(x).sum().backward()


def hooked_step(model: torch.nn.Module, x: torch.Tensor) -> None:
    practice.first_nonfinite(lambda: model(x).sum())


def checking_section(shapes, repeats: int) -> None:
    print("a training step, plain / in anomaly mode / with a hook on every node")
    for depth, width in shapes:
        model = cost.mlp(depth, width)
        x = torch.randn(64, width)
        nodes = len(practice.graph_nodes(model(x).sum().grad_fn))

        times = cost.compare_times({"plain": lambda m=model, x=x: plain_step(m, x),
                                    "anomaly": lambda m=model, x=x: anomaly_step(m, x),
                                    "hooks": lambda m=model, x=x: hooked_step(m, x)},
                                   repeats=repeats)
        print(f"  depth {depth:3d}, width {width:5d}: {nodes:4d} nodes | plain "
              f"{1e3 * times['plain']:8.2f} ms, anomaly x{times['anomaly'] / times['plain']:5.1f}, "
              f"hooks x{times['hooks'] / times['plain']:5.1f}")
    print()


INITIALISATIONS = {
    "tanh, PyTorch default": dict(activation=torch.nn.Tanh),
    "tanh, σ = 1": dict(activation=torch.nn.Tanh, std=1.0),
    "tanh, σ = 5/3 (calculate_gain)": dict(activation=torch.nn.Tanh, std=5 / 3),
    "relu, PyTorch default": dict(activation=torch.nn.ReLU),
    "relu, σ = √2": dict(activation=torch.nn.ReLU, std=math.sqrt(2)),
    "relu, σ = 1.5·√2": dict(activation=torch.nn.ReLU, std=1.5 * math.sqrt(2)),
    "relu, σ = 1.5·√2, pre-norm residual": dict(activation=torch.nn.ReLU,
                                                 std=1.5 * math.sqrt(2), residual=True,
                                                 norm=True),
}


def depth_section(depths, width: int = 64) -> None:
    print(f"gradient at block 1 / at the last block, width {width}, batch 128 "
          "(the ratio per block in brackets; 0 or inf: float32 underflowed or overflowed)")
    seed(1)
    x, y = torch.randn(128, width), torch.randn(128, width)
    for label, options in INITIALISATIONS.items():
        entries = []
        for depth in depths:
            norms = practice.gradient_norms(practice.deep_net(depth, width, **options), x, y)
            ratio = norms.signal[0] / norms.signal[-1]
            if ratio == 0 or not math.isfinite(ratio):  # float32 underflowed or overflowed
                entries.append(f"{ratio:9.1e} (  - )")
            else:
                entries.append(f"{ratio:9.1e} ({ratio ** (1 / (depth - 1)):4.2f})")
        print(f"  {label:<36} " + "  ".join(entries))
    print(f"  {'depths':<36} " + "  ".join(f"{d:>16d}" for d in depths))
    print()


def main() -> None:
    with cost.benchmark(__doc__, repeats=5, quick_repeats=2,
                        quick="smaller sizes",
                        about=practice.cpu_features()) as args:
        repeats = args.repeats
        shapes = ((256, 256),) if args.quick else ((256, 256), (512, 512), (1024, 256),
                                                   (1024, 2048), (2048, 512))
        precision_section(shapes, repeats, onednn=True)
        precision_section(((128, 128),) if args.quick else ((256, 256), (512, 512)), repeats,
                          onednn=False)
        checking_section(((10, 32),) if args.quick
                         else ((10, 32), (40, 32), (160, 32), (4, 1024)), repeats)
        depth_section((10, 30) if args.quick else (10, 30, 100))

if __name__ == "__main__":
    main()
