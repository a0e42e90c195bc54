"""Lesson 10's measured tables at larger sizes: per-sample gradients, jacrev against jacfwd.

    .venv/bin/python benchmarks/functional_cost.py [--threads 1] [--repeats 5]

Prints, like ``notebooks/10_functional.ipynb`` but for more sizes: the median times of the
per-sample gradients of the lesson's model (``Linear(8, width)``, ``Tanh``,
``Linear(width, 1)``, MSE loss) by a Python loop and by ``vmap(grad(...))``, for batches of
8 to 2048 samples and two widths; then ``jacrev`` against ``jacfwd`` for
``f(x) = tanh(W x)``, ``W`` of shape ``(m, n)``, n and m in 4 to 2048. It runs in well
under a minute on one thread of a laptop CPU. Times vary from run to run.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.func import functional_call, grad, vmap

from autograd_course.kernel.lessons import seed
from autograd_course.lab import functional


def per_sample_rows(width: int, batch_sizes, repeats: int):
    model = torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.Tanh(),
                                torch.nn.Linear(width, 1))
    params = {name: p.detach() for name, p in model.named_parameters()}

    def sample_loss(params, x, y):
        return torch.nn.functional.mse_loss(functional_call(model, params, (x,)), y)

    per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))

    def loop(x, y):
        return [torch.autograd.grad(torch.nn.functional.mse_loss(model(x[i]), y[i]),
                                    list(model.parameters())) for i in range(len(x))]

    def make_batch(size):
        return torch.randn(size, 8), torch.randn(size, 1)

    return functional.per_sample_speed(loop, lambda x, y: per_sample(params, x, y),
                                       make_batch, batch_sizes, repeats=repeats)


def tanh_layer(n: int, m: int):
    W = torch.randn(m, n) / n**0.5
    return (lambda x: torch.tanh(W @ x)), torch.randn(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    seed(0)
    start = time.perf_counter()
    print(f"torch {torch.__version__}, cpu, {torch.get_num_threads()} thread(s), "
          f"medians of {args.repeats} rounds\n")
    for width in (32, 512):
        print(f"per-sample gradients, Linear(8, {width}), Tanh, Linear({width}, 1), MSE loss")
        rows = per_sample_rows(width, (8, 32, 128, 512, 2048), args.repeats)
        print(functional.speed_table(rows).data, "\n")
    print("jacrev ms / jacfwd ms for f(x) = tanh(W x), W of shape (m, n)")
    sweep = functional.jacobian_sweep(tanh_layer, (4, 16, 64, 256, 1024, 2048),
                                      repeats=args.repeats)
    print(functional.jacobian_table(sweep).data)
    print(f"\n{time.perf_counter() - start:.1f} s in all")


if __name__ == "__main__":
    main()
