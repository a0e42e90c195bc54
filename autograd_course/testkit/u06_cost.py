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
            "every_intermediate",
            ["every intermediate"],
            hidden_only="prediction",
        ),
        wrong(
            "every operation saves its inputs",
            'saved_names = {"x", "w", "a", "b", "c", "k", "d", "e"}',
            "exp_output",
            ["its output, not its input"],
            hidden_only="prediction",
        ),
        wrong(
            "+ 1 and mean save their inputs",
            'saved_names = {"x", "w", "a", "c", "k", "d", "e"}',
            "nothing_needed",
            ["save nothing"],
            hidden_only="prediction",
        ),
        wrong(
            "a product saves its result",
            'saved_names = {"a", "c", "k", "d"}',
            "product_result",
            ["not its result", "x and w"],
            hidden_only="prediction",
        ),
        wrong(
            "nothing is saved",
            "saved_names = set()",
            "nothing_saved",
            ["saves something"],
            hidden_only="prediction",
        ),
        wrong(
            "the power saves nothing",
            'saved_names = {"x", "w", "c", "k"}',
            "power_input",
            ["2d"],
            hidden_only="prediction",
        ),
        wrong(
            "exp saves its input",
            'saved_names = {"x", "w", "b", "k", "d"}',
            "exp_output",
            ["its output"],
            hidden_only="prediction",
        ),
        wrong(
            "forgets the constant factor",
            'saved_names = {"x", "w", "c", "d"}',
            "constant_factor",
            ["even a constant"],
            hidden_only="prediction",
        ),
        wrong(
            "forgets the leaves",
            'saved_names = {"c", "k", "d"}',
            "leaves",
            ["both factors"],
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
            "counted_twice",
            ["one storage"],
            hidden_only="prediction",
        ),
        wrong(
            "the steps of a formula cost nothing",
            'cheaper = ["same", "same", "B"]',
            "more_steps",
            ["every step"],
            hidden_only="prediction",
        ),
        wrong(
            "checkpointing costs more",
            'cheaper = ["same", "A", "A"]',
            "checkpoint",
            ["only its input"],
            hidden_only="prediction",
        ),
        wrong("lower-case letters", 'cheaper = ["same", "a", "b"]', "type", ["capitals"]),
        wrong("two answers for three pairs", 'cheaper = ["same", "A"]', "shape", ["3 items"]),
        wrong("blank", "# YOUR CODE HERE\nraise NotImplementedError()", "blank"),
    ],
}
