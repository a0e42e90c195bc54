"""Typical wrong answers to assignment 06 What autograd costs: the tensors saved for backward."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_BYTES = "def saved_bytes(fn, *inputs):"


def _saved_bytes(pack: str = "saved.append(t)", total: str = "", key: str = "") -> str:
    """saved_bytes that records with ``pack`` into ``saved`` and returns ``total``."""
    return function(
        _BYTES,
        f"""
        saved = []

        def pack(t):
            {pack}
            return t

        with saved_tensors_hooks(pack, lambda t: t):
            fn(*inputs)
        {key}
        return {total}
        """,
    )


_UNIQUE = "unique = {t.untyped_storage().data_ptr(): t for t in saved}"

#: Words that would say which name of question 2 is on the wrong side, or why: its message says
#: how many are, never which.
_NAMES_A_NAME = ["'x'", '"x"', "'c'", '"c"', "x * w", "a + 1", ".exp()", "of exp", "c * k",
                 "d ** 2", "mean", "its output", "factor", "2d", "constant", "every intermediate",
                 "save nothing", "leaves", "tensors you created"]

#: Words that would say which pair of question 3 is wrong, or why.
_NAMES_A_PAIR = ["cheaper[", "pair 1", "pair 2", "pair 3", "first pair", "one storage",
                 "every step", "only its input", "checkpoint", "sigmoid", "tanh", "x * x", "pow"]

WRONG: dict[str, list[Wrong]] = {
    "q1_saved_bytes": [
        wrong(
            "no dedupe: bytes summed per save",
            _saved_bytes(total="sum(t.untyped_storage().nbytes() for t in saved)"),
            "counted_twice",
            ["more than once", "data_ptr"],
            breaks='each storage once',
        ),
        wrong(
            "dedupe by id(t), not by storage",
            _saved_bytes(key="unique = {id(t): t for t in saved}",
                         total="sum(t.untyped_storage().nbytes() for t in unique.values())"),
            "counted_twice",
            ["not by id(t)"],
            breaks='each storage once',
        ),
        wrong(
            "dedupe by t.data_ptr() (the first element), not by the storage",
            _saved_bytes(key="unique = {t.data_ptr(): t for t in saved}",
                         total="sum(t.untyped_storage().nbytes() for t in unique.values())"),
            ("first_element", "counted_twice"),
            ["t.data_ptr()", "untyped_storage"],
            breaks='each storage once',
        ),
        wrong(
            "element counts instead of bytes",
            _saved_bytes(key=_UNIQUE, total="sum(t.numel() for t in unique.values())"),
            "elements",
            ["elements, not bytes"],
            breaks='the number of **bytes**',
        ),
        wrong(
            "four bytes per element",
            _saved_bytes(key=_UNIQUE, total="sum(t.numel() * 4 for t in unique.values())"),
            "four_bytes",
            ["float64"],
        ),
        wrong(
            "the tensor's own bytes, not its storage's",
            _saved_bytes(key=_UNIQUE,
                         total="sum(t.numel() * t.element_size() for t in unique.values())"),
            "view_bytes",
            ["whole storage"],
            breaks='and whole',
        ),
        wrong(
            "counts the inputs",
            function(_BYTES, """
                fn(*inputs)
                unique = {t.untyped_storage().data_ptr(): t for t in inputs}
                return sum(t.untyped_storage().nbytes() for t in unique.values())
                """),
            "inputs",
            ["counts the inputs", "outputs"],
        ),
        wrong(
            "returns the saved tensors",
            _saved_bytes(total="saved"),
            "type",
            ["not the saved tensors"],
            breaks='as an `int`',
        ),
        wrong(
            "blank",
            "# YOUR CODE HERE\nraise NotImplementedError()",
            "blank",
        ),
    ],
    "q2_saved_names": [
        wrong(
            "every intermediate result",
            'saved_names = {"a", "b", "c", "d", "e", "loss"}',
            "predictions",
            [
                "7 of the 9 predictions in saved_names are wrong",
                "does not say which",
                "saved, or not",
            ],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong(
            "every operation saves its inputs",
            'saved_names = {"x", "w", "a", "b", "c", "k", "d", "e"}',
            "predictions",
            ["3 of the 9 predictions in saved_names are wrong"],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong(
            "+ 1 and mean save their inputs",
            'saved_names = {"x", "w", "a", "c", "k", "d", "e"}',
            "predictions",
            ["2 of the 9 predictions in saved_names are wrong"],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong(
            "a product saves its result",
            'saved_names = {"a", "c", "k", "d"}',
            "predictions",
            ["3 of the 9 predictions in saved_names are wrong"],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong(
            "nothing is saved",
            "saved_names = set()",
            "predictions",
            ["5 of the 9 predictions in saved_names are wrong"],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong(
            "the power saves nothing",
            'saved_names = {"x", "w", "c", "k"}',
            "predictions",
            ["1 of the 9 predictions in saved_names is wrong"],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong(
            "exp saves its input",
            'saved_names = {"x", "w", "b", "k", "d"}',
            "predictions",
            ["2 of the 9 predictions in saved_names are wrong"],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong(
            "forgets the constant factor",
            'saved_names = {"x", "w", "c", "d"}',
            "predictions",
            ["1 of the 9 predictions in saved_names is wrong"],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong(
            "forgets the leaves",
            'saved_names = {"c", "k", "d"}',
            "predictions",
            ["2 of the 9 predictions in saved_names are wrong"],
            not_says=_NAMES_A_NAME,
            hidden_only="prediction",
        ),
        wrong("one string", 'saved_names = "x, w, c, k, d"', "type", ["set of names"]),
        wrong("an unknown name", 'saved_names = {"x", "W"}', "type", ["not one of the names"]),
        wrong("blank", "# YOUR CODE HERE\nraise NotImplementedError()", "blank"),
    ],
    "q3_cheaper": [
        wrong(
            "x * x counted as two storages",
            'cheaper = ["B", "A", "B"]',
            "predictions",
            ["1 of the 3 predictions in cheaper is wrong", "does not say which"],
            not_says=_NAMES_A_PAIR,
            hidden_only="prediction",
        ),
        wrong(
            "the steps of a formula cost nothing",
            'cheaper = ["same", "same", "B"]',
            "predictions",
            ["1 of the 3 predictions in cheaper is wrong"],
            not_says=_NAMES_A_PAIR,
            hidden_only="prediction",
        ),
        wrong(
            "checkpointing costs more",
            'cheaper = ["same", "A", "A"]',
            "predictions",
            ["1 of the 3 predictions in cheaper is wrong"],
            not_says=_NAMES_A_PAIR,
            hidden_only="prediction",
        ),
        wrong(
            "every formulation saves the same",
            'cheaper = ["same", "same", "same"]',
            "predictions",
            ["2 of the 3 predictions in cheaper are wrong"],
            not_says=_NAMES_A_PAIR,
            hidden_only="prediction",
        ),
        wrong("lower-case letters", 'cheaper = ["same", "a", "b"]', "type", ["capitals"]),
        wrong("two answers for three pairs", 'cheaper = ["same", "A"]', "shape", ["3 items"]),
        wrong("blank", "# YOUR CODE HERE\nraise NotImplementedError()", "blank"),
    ],
}
