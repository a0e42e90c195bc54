"""Lesson 11's measured table at more sizes: a network's backward by hand against autograd,
each time next to the counts that explain it.

    .venv/bin/python benchmarks/by_hand_cost.py [--threads 1] [--repeats 7] [--quick]

Prints, like section 8 of ``notebooks/11_backprop_by_hand.ipynb`` but for more sizes:

1. the loss and the four parameters' gradients of ``tanh(x @ W1 + b1) @ W2 + b2`` with
   cross-entropy (float32, 64 inputs, 10 classes), by hand
   (:func:`autograd_course.lab.by_hand.two_layer_by_hand`) and by autograd
   (:func:`~autograd_course.lab.by_hand.two_layer_by_autograd`), for batches of 16 to 8192
   and hidden widths 64 and 1024: median times and their ratio, and the counts of each
   (:func:`autograd_course.lab.functional.count_work`: operations dispatched and
   multiply-adds; :func:`~autograd_course.lab.by_hand.tensors_written`: the passes over the
   hidden layer, tensors of shape (batch, hidden) written; and the new numbers each keeps
   for its backward);
2. layer norm: the new numbers autograd keeps for ``F.layer_norm`` and for the same formula
   written out step by step, against the ``x_hat`` and ``r`` a hand backward keeps, for
   several sizes (counts only).

What to look for: the multiply-adds are the same, so the times stay within a fraction of
each other. Where the hidden layer is large, the hand version's extra elementwise passes
(7 against autograd's 5: its ``G * (1 - h * h)`` is three kernels, autograd's
``tanh_backward`` one) make it slower; at small batches the fixed cost per operation and
autograd's recording weigh more, and the hand version tends to be faster. ``--quick`` runs
fewer sizes with 3 rounds (about a second); the full run takes about ten seconds on one thread
of a laptop CPU. Times vary from run to run; the counts do not.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from autograd_course.lab import by_hand, cost, functional

D_IN, CLASSES = 64, 10


def network_section(width: int, batches, repeats: int) -> None:
    print(f"tanh(x @ W1 + b1) @ W2 + b2, cross-entropy; {D_IN} inputs, {width} hidden, "
          f"{CLASSES} classes, float32")
    print("| batch | by hand (ms) | autograd (ms) | hand / autograd | operations hand / "
          "autograd | multiply-adds (both) | passes over (batch, hidden) hand / autograd | "
          "new numbers kept hand / autograd |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    params = by_hand.two_layer_params(D_IN, width, CLASSES, dtype=torch.float32)
    for batch in batches:
        x = torch.randn(batch, D_IN, dtype=torch.float32)
        target = torch.randint(0, CLASSES, (batch,))
        times = cost.compare_times({
            "hand": lambda x=x, t=target: by_hand.two_layer_by_hand(params, x, t),
            "autograd": lambda x=x, t=target: by_hand.two_layer_by_autograd(params, x, t)},
            repeats=repeats)
        work = functional.compare_work({"hand": by_hand.two_layer_by_hand,
                                        "autograd": by_hand.two_layer_by_autograd},
                                       params, x, target)
        _, _, kept = by_hand.two_layer_by_hand(params, x, target)
        log = by_hand.saved_log(lambda x=x, t=target: by_hand.two_layer_by_autograd(params, x, t),
                                {"x": x, "target": target, **params})
        hand, auto = work["hand"], work["autograd"]
        passes = {label: len(by_hand.tensors_written(fn, params, x, target, shape=(batch, width)))
                  for label, fn in (("hand", by_hand.two_layer_by_hand),
                                    ("autograd", by_hand.two_layer_by_autograd))}
        print(f"| {batch} | {1e3 * times['hand']:.3f} | {1e3 * times['autograd']:.3f} | "
              f"{times['hand'] / times['autograd']:.2f} | {hand.operations} / "
              f"{auto.operations} | {auto.multiply_adds:,} | {passes['hand']} / "
              f"{passes['autograd']} | {by_hand.numbers(kept['h'], kept['p']):,} / "
              f"{by_hand.new_numbers(log):,} |")
        assert hand.multiply_adds == auto.multiply_adds
    print()


def layer_norm_written_out(x, gamma, beta, eps=1e-5):
    r = 1 / torch.sqrt(x.var(1, correction=0, keepdim=True) + eps)
    return (x - x.mean(1, keepdim=True)) * r * gamma + beta


def layer_norm_kept(rows: int, d: int) -> tuple[int, int]:
    """New numbers autograd keeps for ``F.layer_norm`` and for the formula written out, on
    ``rows`` rows of ``d`` numbers."""
    x = torch.randn(rows, d, requires_grad=True)
    gamma, beta = torch.randn(d, requires_grad=True), torch.randn(d, requires_grad=True)
    names = {"x": x, "gamma": gamma, "beta": beta}
    fused = by_hand.saved_log(lambda: F.layer_norm(x, (d,), gamma, beta), names)
    written = by_hand.saved_log(lambda: layer_norm_written_out(x, gamma, beta), names)
    return by_hand.new_numbers(fused), by_hand.new_numbers(written)


def layer_norm_section(shapes) -> None:
    print("layer norm, new numbers kept for the backward (counted)")
    print("| rows x D | F.layer_norm (autograd) | written out (autograd) | by hand: x_hat, r |")
    print("|---:|---:|---:|---:|")
    for rows, d in shapes:
        fused, written = layer_norm_kept(rows, d)
        print(f"| {rows} x {d} | {fused:,} | {written:,} | {rows * d + rows:,} |")
    print()


def main() -> None:
    with cost.benchmark(__doc__, repeats=7, quick_repeats=3,
                        quick="fewer sizes") as args:
        repeats = args.repeats
        for width in (64,) if args.quick else (64, 1024):
            network_section(width, (16, 256) if args.quick else (16, 128, 512, 2048, 8192),
                            repeats)
        layer_norm_section([(64, 32), (512, 256)] if args.quick
                           else [(64, 32), (512, 256), (4096, 1024)])

if __name__ == "__main__":
    main()
