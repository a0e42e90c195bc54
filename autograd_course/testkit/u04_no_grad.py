"""Typical wrong answers to assignment 04_no_grad (no_grad, detach, inference_mode)."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_EVAL = "def evaluate(w, b, x):"
_SNAP = "def snapshot(t):"
_PRED = "def predict(w, b, x):"


WRONG: dict[str, list[Wrong]] = {
    "q1_evaluate": [
        wrong(
            "records a graph", function(_EVAL, "return x @ w + b"), "graph", ["graph", "no_grad"]
        ),
        wrong(
            "elementwise product",
            function(_EVAL, """
                with torch.no_grad():
                    return x * w + b
                """),
            "shape",
            ["shape"],
        ),
    ],
    "q2_snapshot": [
        wrong(
            "detach() only", function(_SNAP, "return t.detach()"), "storage", ["detach().clone()"]
        ),
        wrong("clone() only", function(_SNAP, "return t.clone()"), "graph", ["graph"]),
        wrong("the tensor itself", function(_SNAP, "return t"), "graph", ["graph"]),
    ],
    "q3_inference": [
        wrong(
            "no_grad instead",
            function(_PRED, """
                with torch.no_grad():
                    return x @ w + b
                """),
            "inference_mode",
            ["inference_mode"],
        ),
        wrong("records a graph", function(_PRED, "return x @ w + b"), "graph", ["graph"]),
    ],
    "q4_predict_requires_grad": [
        wrong(
            "no_grad switches everything off",
            'predicted = {"a": False, "b": False, "c": False, "d": False}',
            "values",
            ["created with requires_grad=True"],
            hidden_only=True,
        ),
        wrong(
            "detach keeps recording",
            'predicted = {"a": False, "b": True, "c": True, "d": True}',
            "values",
            ["detach()"],
            hidden_only=True,
        ),
        wrong(
            "strings",
            'predicted = {"a": "False", "b": "True", "c": "False", "d": "True"}',
            "type",
            ["bool"],
        ),
    ],
}
