"""The class report, from grade records built here (no nbgrader run)."""

from __future__ import annotations

import csv

import pytest

from autograd_course.grading import report
from autograd_course.grading.record import GradeRecord
from autograd_course.grading.report import (
    NO_MESSAGE,
    NOT_ANSWERED,
    normalise_message,
    question_summary,
    write_report,
)

SHAPE_3 = "CheckError: x.grad has the wrong shape: (3,) instead of (2, 3). Check your sum."
SHAPE_4 = "CheckError: x.grad has the wrong shape: (4,) instead of (2, 4). Check your sum."
TWICE = (
    "CheckError: x.grad is twice the right value: the gradient was accumulated over 2 "
    "backward() calls. .grad adds up, it is not replaced."
)
SCRIPT = "ValueError: <script>alert('x')</script>"


def question(name, passed, message="", points=1):
    """One test cell's result, as the grader records it."""
    return dict(
        question=name, points=points, score=points if passed else 0, passed=passed, message=message
    )


def grade(student, *questions, notebook="01_gradients", **extra):
    """The record of one student's notebook."""
    return GradeRecord(student, notebook, notebook, list(questions), **extra)


@pytest.fixture
def klass():
    """Five students on two questions: q1 passed by all, q2 by one; flags, a failure, repairs."""
    return [
        grade("ann", question("q1", True), question("q2", False, SHAPE_3)),
        grade("bob", question("q1", True), question("q2", False, SHAPE_4)),
        grade("cid", question("q1", True), question("q2", False, "NotImplementedError")),
        grade(
            "dee",
            question("q1", True),
            question("q2", False, SCRIPT),
            flags=["replaced torch.allclose: found before <b>q2</b>"],
        ),
        grade(
            "eve",
            question("q1", True),
            question("q2", True),
            notes=["deleted cell q2 restored"],
            failure="the kernel died (a crash, os._exit or a signal)",
        ),
    ]


@pytest.fixture
def written(klass, tmp_path):
    return write_report(klass, tmp_path / "out", title="Autograd <class> report")


# --- grouping messages --------------------------------------------------------------------


@pytest.mark.parametrize(
    "message, expected",
    [
        (SHAPE_3,
         "CheckError: x.grad has the wrong shape: (#,) instead of (#, #). Check your sum."),
        (
            TWICE,
            "CheckError: x.grad is twice the right value: the gradient was accumulated "
            "over # backward() calls. .grad adds up, it is not replaced.",
        ),
        (
            "CheckError: x has dtype torch.int64 instead of torch.float32.",
            "CheckError: x has dtype torch.int64 instead of torch.float32.",
        ),
        (
            "AssertionError: got tensor([[1.0, 2.5],\n [3.0, -4e-05]], grad_fn=<AddBackward0>) no",
            "AssertionError: got tensor(…) no",
        ),
        (
            "CheckError: w is wrong. Expected [1.0, -2.5e-05], got [[0.5, 1]].",
            "CheckError: w is wrong. Expected […], got […].",
        ),
        ("CheckError: got [1.0, 2.0] for w2", "CheckError: got […] for w2"),
        ("\x1b[0;31mValueError\x1b[0m: bad value -3.5", "ValueError: bad value #"),
        (
            "CellTimeoutError: the cell ran longer than 60 s and was stopped (an endless loop?)",
            "CellTimeoutError: the cell ran longer than # s and was stopped (an endless loop?)",
        ),
        ("NotImplementedError", NOT_ANSWERED),
        ("\x1b[31mNotImplementedError\x1b[0m: ", NOT_ANSWERED),
        ("", NO_MESSAGE),
        (None, NO_MESSAGE),
    ],
)
def test_normalise_message(message, expected):
    assert normalise_message(message) == expected


# --- the summary --------------------------------------------------------------------------


def test_shares_counts_and_grouping(klass):
    q1, q2 = question_summary(klass)
    assert (q1.question, q1.n_students, q1.n_passed, q1.share_passed) == ("q1", 5, 5, 1.0)
    assert q1.top_messages == []
    assert (q2.question, q2.n_students, q2.n_passed) == ("q2", 5, 1)
    assert q2.share_passed == pytest.approx(0.2)
    # The two shape mistakes (different numbers) are one message, counted twice, first.
    shape = normalise_message(SHAPE_3)
    assert q2.top_messages[0] == (shape, 2)
    assert len(q2.top_messages) == 3
    assert {m for m, _ in q2.top_messages[1:]} <= {NOT_ANSWERED, normalise_message(SCRIPT)}


def test_at_most_three_messages_most_frequent_first():
    messages = ["A: one."] * 1 + ["B: two."] * 4 + ["C: three."] * 2 + ["D: four."] * 3
    records = [grade(f"s{i}", question("q", False, m)) for i, m in enumerate(messages)]
    [summary] = question_summary(records)
    assert summary.top_messages == [("B: two.", 4), ("D: four.", 3), ("C: three.", 2)]


def test_ties_are_ordered_and_independent_of_record_order():
    records = [grade(s, question("q", False, m)) for s, m in [("a", "Z: z."), ("b", "Y: y.")]]
    assert question_summary(records) == question_summary(records[::-1])
    assert [m for m, _ in question_summary(records)[0].top_messages] == ["Y: y.", "Z: z."]


def test_nobody_passed_and_empty_message():
    records = [grade(s, question("q", False, "")) for s in ("a", "b")]
    [summary] = question_summary(records)
    assert (summary.n_passed, summary.share_passed) == (0, 0.0)
    assert summary.top_messages == [(NO_MESSAGE, 2)]


def test_questions_keep_notebook_order_across_notebooks():
    records = [
        grade("b", question("q2", True), question("q1", True), notebook="02_three_weights"),
        grade("a", question("q2", True), question("q1", False), notebook="02_three_weights"),
        grade("a", question("q9", True), notebook="01_gradients"),
    ]
    summaries = question_summary(records)
    assert [(s.notebook, s.question) for s in summaries] == [
        ("01_gradients", "q9"),
        ("02_three_weights", "q2"),
        ("02_three_weights", "q1"),
    ]
    assert summaries[2].n_passed == 1


# --- the files ----------------------------------------------------------------------------


def test_write_report_paths(written, tmp_path):
    assert set(written) == {"csv", "png", "html"}
    assert written["csv"] == tmp_path / "out" / "report.csv"
    assert all(path.is_file() for path in written.values())


def test_csv_reads_back(written):
    with open(written["csv"], newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert [r["question"] for r in rows] == ["q1", "q2"]
    q1, q2 = rows
    assert (q1["students"], q1["passed"], q1["share_passed"], q1["message_1"]) == (
        "5",
        "5",
        "1.000",
        "",
    )
    assert (q2["points"], q2["students"], q2["passed"], q2["share_passed"]) == (
        "1",
        "5",
        "1",
        "0.200",
    )
    assert (q2["message_1"], q2["count_1"]) == (normalise_message(SHAPE_3), "2")
    assert q2["count_3"] == "1"
    assert list(rows[0]) == report.CSV_HEADER


def test_png_is_a_deterministic_png(written, klass, tmp_path):
    data = written["png"].read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert b"Matplotlib" not in data
    again = write_report(klass, tmp_path / "again", title="Autograd <class> report")
    assert again["png"].read_bytes() == data


def test_html_lists_questions_messages_and_flags(written):
    page = written["html"].read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<h3>01_gradients: q1</h3>" in page and "<h3>01_gradients: q2</h3>" in page
    assert normalise_message(SHAPE_3) in page
    assert "Autograd &lt;class&gt; report" in page
    assert "data:image/png;base64,iVBORw0KGgo" in page
    for count in ("students: 5", "flagged for tampering: 1", "grading failures: 1"):
        assert count in page
    flagged = page.split("<h2>Flagged submissions</h2>")[1].split("<h2>")[0]
    assert "dee" in flagged and "ann" not in flagged
    assert "found before &lt;b&gt;q2&lt;/b&gt;" in flagged
    troubled = page.split("<h2>Failed or repaired submissions</h2>")[1]
    assert "eve" in troubled and "the kernel died" in troubled and "deleted cell q2" in troubled


def test_html_escapes_student_text(written):
    page = written["html"].read_text(encoding="utf-8")
    assert "<script>" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page


def test_everyone_passed(tmp_path):
    records = [grade(s, question("q", True)) for s in ("a", "b")]
    paths = write_report(records, tmp_path, title="All good")
    page = paths["html"].read_text(encoding="utf-8")
    assert "Everyone passed." in page
    assert "Flagged submissions</h2>\n<p>None.</p>" in page
    assert paths["png"].read_bytes().startswith(b"\x89PNG")


def test_no_records(tmp_path):
    assert question_summary([]) == []
    paths = write_report([], tmp_path / "empty", title="Nobody")
    with open(paths["csv"], newline="", encoding="utf-8") as file:
        assert list(csv.reader(file)) == [report.CSV_HEADER]
    assert paths["png"].read_bytes().startswith(b"\x89PNG")
    assert "No submissions." in paths["html"].read_text(encoding="utf-8")


def test_a_record_too_large_to_read_is_never_written(tmp_path):
    from autograd_course.grading.record import RecordError, store

    records = store(tmp_path)
    fine = grade("ann", dict(question("q1", False, "m" * 4000), diagnosis="shape"))
    assert records.read("01_gradients", "ann") == ([], [])
    records.write(fine)
    assert records.read("01_gradients", "ann") == ([fine], [])
    with pytest.raises(RecordError, match="larger than 1 MiB"):
        records.write(grade("bob", dict(question("q1", False, "m" * 2**21), diagnosis="")))
    assert not records.folder("01_gradients", "bob").exists()
