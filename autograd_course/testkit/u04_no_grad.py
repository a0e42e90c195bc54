"""Typical wrong answers to assignment 04_no_grad (no_grad, detach, inference_mode)."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_EVAL = "def evaluate(W1, b1, w2, b2, x):"
_SNAP = "def snapshots(w, updates):"
_FORWARD = "torch.tanh(x @ W1 + b1) @ w2 + b2"


def _snapshots(update: str, keep: str) -> str:
    return function(_SNAP, f"""
        kept = []
        for u in updates:
            {update}
            kept.append({keep})
        return kept
        """)


_IN_PLACE = "with torch.no_grad():\n                w -= u"

WRONG: dict[str, list[Wrong]] = {
    "q1_evaluate": [
        # the kernel reports the graph (a note in the judge); the memory it keeps is measured
        wrong("records a graph", function(_EVAL, f"return {_FORWARD}"), "memory",
              ["MiB", "no_grad"], breaks='**without recording a computation graph**'),
        # ballast allocated beforehand and freed during the call offsets what the graph keeps;
        # the graph is still measured when the kernel lets go of the result
        wrong("records a graph, frees ballast during the call",
              "_ballast = [torch.ones(60 * 2**20)]\n\n\n" + function(_EVAL, f"""
                  if x.shape[0] >= 100_000:
                      _ballast.clear()
                  return {_FORWARD}
                  """), "memory", ["freed when its result was let go"]),
        wrong(
            "no tanh",
            function(_EVAL, """
                with torch.no_grad():
                    return (x @ W1 + b1) @ w2 + b2
                """),
            "values",
            ["wrong values"],
        ),
    ],
    "q2_snapshots": [
        wrong("detach() only", _snapshots(_IN_PLACE, "w.detach()"), "storage",
              ["detach().clone()", "shares w's memory"],
                  breaks='Each\nsnapshot must keep the values of its moment'),
        wrong("the tensor itself", _snapshots(_IN_PLACE, "w"), "storage", ["detach().clone()"]),
        wrong("clone() only", _snapshots(_IN_PLACE, "w.clone()"), "graph", ["graph"],
              noted=True),
        wrong("not in place", _snapshots("w = (w - u).detach().requires_grad_(True)",
                                         "w.detach().clone()"), "in_place", ["in place"],
                                             breaks='**in place**'),
    ],
    "q4_predict_requires_grad": [
        wrong(
            "no_grad switches everything off",
            'predicted = {"a": False, "b": False, "c": False, "d": False}',
            "values",
            ["created with requires_grad=True"],
            hidden_only="prediction",
        ),
        wrong(
            "detach keeps recording",
            'predicted = {"a": False, "b": True, "c": True, "d": True}',
            "values",
            ["detach()"],
            hidden_only="prediction",
        ),
        wrong(
            "strings",
            'predicted = {"a": "False", "b": "True", "c": "False", "d": "True"}',
            "type",
            ["bool"],
        ),
    ],
    "q3_predict_raises": [
        wrong(
            "every use of an inference tensor raises",
            'raises = {"a": True, "b": True, "c": True, "d": True}',
            "values",
            ["needs nothing saved"],
            hidden_only="prediction",
        ),
        wrong(
            "detach() makes a normal tensor",
            'raises = {"a": False, "b": True, "c": False, "d": False}',
            "values",
            ["detach() of an inference tensor"],
            hidden_only="prediction",
        ),
        wrong(
            "a result of an inference tensor is one too",
            'raises = {"a": False, "b": True, "c": True, "d": True}',
            "values",
            ["normal tensor"],
            hidden_only="prediction",
        ),
        wrong("strings", 'raises = {"a": "no", "b": "yes", "c": "no", "d": "yes"}', "type",
              ["bool"]),
    ],
}
