"""Typical wrong answers to assignment 04_no_grad (no_grad, detach, inference_mode)."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_EVAL = "def evaluate(W1, b1, w2, b2, x):"
_SNAP = "def snapshots(w, updates):"
_FORWARD = "torch.tanh(x @ W1 + b1) @ w2 + b2"

#: Words that would say which prediction of question 3 is wrong, or why: its message says how
#: many are wrong, never which.
_NAMES_A_SNIPPET = ['raises["', "snippet a", "snippet b", "snippet c", "snippet d", "w + y",
                    "w / y", "y * 2", "detach", "exp", "nothing saved", "normal tensor",
                    "cannot be saved"]

#: The same for question 4.
_NAMES_A_TENSOR = ['predicted["', "snippet a", "snippet b", "snippet c", "snippet d",
                   "layer", "weight", "parameter", "detach", "torch.zeros",
                   "created with requires_grad=True", "computed inside"]


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
            "predictions",
            ["2 of the 4 predictions in predicted are wrong", "does not say which"],
            not_says=_NAMES_A_TENSOR,
            hidden_only="prediction",
        ),
        wrong(
            "detach keeps recording",
            'predicted = {"a": False, "b": True, "c": True, "d": True}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_TENSOR,
            hidden_only="prediction",
        ),
        wrong(
            "a Parameter made in no_grad does not require grad",
            'predicted = {"a": False, "b": True, "c": False, "d": False}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_TENSOR,
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
            "predictions",
            ["2 of the 4 predictions in raises are wrong", "does not say which"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "detach() makes a normal tensor",
            'raises = {"a": False, "b": True, "c": False, "d": False}',
            "predictions",
            ["1 of the 4 predictions in raises is wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "a result of an inference tensor is one too",
            'raises = {"a": False, "b": True, "c": True, "d": True}',
            "predictions",
            ["1 of the 4 predictions in raises is wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong("strings", 'raises = {"a": "no", "b": "yes", "c": "no", "d": "yes"}', "type",
              ["bool"]),
    ],
}
