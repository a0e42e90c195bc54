"""Lesson 10's measured tables at larger sizes, each next to the counts that explain it.

    .venv/bin/python benchmarks/functional_cost.py [--threads 1] [--repeats 5] [--quick]

Prints, like ``notebooks/10_functional.ipynb`` but for more sizes, three measurements, each
with its counts (:func:`autograd_course.lab.functional.count_work`: operations dispatched,
multiply-adds, numbers written; exact, the same on every machine):

1. per-sample gradients of the lesson's model (``Linear(8, width)``, ``Tanh``,
   ``Linear(width, 1)``, MSE loss) by a Python loop and by ``vmap(grad(...))``, for batches
   of 8 to 2048 samples and two widths: median times, and the operations and multiply-adds
   of each;
2. ``jacrev`` against ``jacfwd`` for ``f(x) = tanh(W x)``, ``W`` of shape ``(m, n)``, n and
   m in 4 to 2048: median times, and the multiply-adds of each (m vjps against n jvps);
3. forming the Hessian of the lesson's ``chain`` and multiplying by ``v``, against one
   Hessian-vector product (``jvp`` of ``grad``), for n = 500 to 4000: median times, and the
   numbers each writes (n² against n).

A claim about times holds where the counts differ by a large factor; where they are close,
the times are close too, and which comes out ahead changes from run to run. ``--quick``
runs smaller sizes with 2 rounds (a few seconds); the full run takes about a minute on one
thread of a laptop CPU. Times vary from run to run; the counts do not.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, grad, hessian, jvp, vmap

from autograd_course.lab import cost, functional


def per_sample_versions(width: int):
    """The lesson's loop and vmap versions of per-sample gradients, and a batch maker."""
    model = torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.Tanh(),
                                torch.nn.Linear(width, 1))
    params = {name: p.detach() for name, p in model.named_parameters()}

    def sample_loss(params, x, y):
        return torch.nn.functional.mse_loss(functional_call(model, params, (x,)), y)

    per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))

    def loop(x, y):
        return [torch.autograd.grad(torch.nn.functional.mse_loss(model(x[i]), y[i]),
                                    list(model.parameters())) for i in range(len(x))]

    def vectorised(x, y):
        return per_sample(params, x, y)

    def make_batch(size):
        return torch.randn(size, 8), torch.randn(size, 1)

    return loop, vectorised, make_batch


def per_sample_section(width: int, batch_sizes, repeats: int) -> None:
    print(f"per-sample gradients, Linear(8, {width}), Tanh, Linear({width}, 1), MSE loss")
    loop, vectorised, make_batch = per_sample_versions(width)
    rows = functional.per_sample_speed(loop, vectorised, make_batch, batch_sizes,
                                       repeats=repeats)
    print(functional.speed_table(rows).data)
    for size in batch_sizes:
        batch = make_batch(size)
        work = functional.compare_work({"loop": loop, "vmap": vectorised}, *batch)
        print(f"  counted, batch {size:4d}: operations loop {work['loop'].operations:6d}, "
              f"vmap {work['vmap'].operations:3d} | multiply-adds (both) "
              f"{work['vmap'].multiply_adds:,}")
    print()


def tanh_layer(n: int, m: int):
    W = torch.randn(m, n) / n**0.5
    return (lambda x: torch.tanh(W @ x)), torch.randn(n)


def jacobian_section(sizes, repeats: int) -> None:
    from torch.func import jacfwd, jacrev

    print("jacrev ms / jacfwd ms for f(x) = tanh(W x), W of shape (m, n)")
    sweep = functional.jacobian_sweep(tanh_layer, sizes, repeats=repeats)
    print(functional.jacobian_table(sweep).data)
    print("\ncounted: jacrev multiply-adds / jacfwd multiply-adds (m vjps against n jvps)")
    print("| n \\ m | " + " | ".join(str(m) for m in sizes) + " |")
    print("|---:|" + "---:|" * len(sizes))
    for n in sizes:
        entries = []
        for m in sizes:
            f, x = tanh_layer(n, m)
            work = functional.compare_work({"jacrev": jacrev(f), "jacfwd": jacfwd(f)}, x)
            entries.append(f"{work['jacrev'].multiply_adds:,} / {work['jacfwd'].multiply_adds:,}")
        print(f"| {n} | " + " | ".join(entries) + " |")
    print()


def chain(x):
    return (x**4).sum() + ((x[1:] - x[:-1]) ** 2).sum()


def hessian_section(sizes, repeats: int) -> None:
    print("forming the Hessian of chain, then H @ v, against one jvp of grad (H v)")
    for n in sizes:
        x, v = torch.randn(n), torch.randn(n)
        fns = {"hessian": lambda x=x, v=v: hessian(chain)(x) @ v,
               "jvp": lambda x=x, v=v: jvp(grad(chain), (x,), (v,))}
        times = cost.compare_times(fns, repeats=repeats)
        work = functional.compare_work(fns)
        print(f"  n = {n:4d}: hessian {1e3 * times['hessian']:8.2f} ms, "
              f"{work['hessian'].numbers_written:>12,} numbers written | jvp of grad "
              f"{1e3 * times['jvp']:6.2f} ms, {work['jvp'].numbers_written:>9,} numbers written")
    print()


def main() -> None:
    with cost.benchmark(__doc__, repeats=5, quick_repeats=2,
                        quick="smaller sizes") as args:
        repeats = args.repeats
        for width in (32,) if args.quick else (32, 512):
            per_sample_section(width, (8, 32) if args.quick else (8, 32, 128, 512, 2048),
                               repeats)
        jacobian_section((4, 64, 256) if args.quick else (4, 16, 64, 256, 1024, 2048), repeats)
        hessian_section((250, 500) if args.quick else (500, 1000, 2000, 4000), repeats)

if __name__ == "__main__":
    main()
