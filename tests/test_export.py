"""Grade exports read back with the csv module: names with commas, quotes, line breaks and
formula prefixes keep every row's columns, text cells are inert in a spreadsheet, numbers stay
numbers; nbgrader's `export` under the course's config writes the same file; Canvas's format."""

from __future__ import annotations

import csv
import shutil
import warnings

import pytest

from autograd_course.cli import main
from autograd_course.grading import export
from autograd_course.grading.course import Course
from autograd_course.testkit import classes

# (id, first name, last name, lms id, auto score, manual score)
STUDENTS = [
    ("ada", "Smith, Jr.", "Lovelace", "1001", 7.0, None),
    ("blaise", 'Blaise "B"', "Pascal", "1002", 3.0, None),
    ("carl", "Carl\nFriedrich", "Gauss", None, 5.0, None),
    ("dora", "=HYPERLINK(\"http://x\")", "+1+1", "1004", 2.0, None),
    ("emmy", "-2", "@SUM(A1)", "1005", 4.0, -1.0),  # a manual score below 0
    ("-fermat", "\tTab", "\rReturn", "1006", 1.0, None),
]
NEUTRAL = {"=", "+", "-", "@", "\t", "\r"}


@pytest.fixture
def course(tmp_path, root):
    shutil.copy2(root / "nbgrader_config.py", tmp_path)
    (tmp_path / "source" / "01_gradients").mkdir(parents=True)
    (tmp_path / "source" / "02_other").mkdir(parents=True)
    found = Course.load(tmp_path)
    with warnings.catch_warnings(), found.gradebook() as gb:
        warnings.simplefilter("ignore")
        for name, points in (("01_gradients", 7), ("02_other", 5)):
            gb.add_assignment(name)
            gb.add_notebook(name, name)
            gb.add_grade_cell("q1", name, name, max_score=points, cell_type="code")
        for sid, first, last, lms, auto, manual in STUDENTS:
            gb.add_student(sid, first_name=first, last_name=last, email=f"{sid}@x.org",
                           lms_user_id=lms)
            gb.add_submission("01_gradients", sid)
            grade = gb.find_grade("q1", "01_gradients", "01_gradients", sid)
            grade.auto_score, grade.manual_score = auto, manual
        gb.db.commit()
    return found


def read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def shown(text: str) -> str:
    """What a spreadsheet shows of a neutralised cell."""
    return text[1:] if text[:1] == "'" and text[1:2] in NEUTRAL else text


def test_cells_are_neutralised_and_numbers_kept():
    assert [export.cell(v) for v in ("=1", "+1", "-1", "@a", "\ta", "\ra", "a=", "")] == [
        "'=1", "'+1", "'-1", "'@a", "'\ta", "'\ra", "a=", ""]
    assert export.cell(-1.5) == -1.5 and export.cell(None) == ""


def test_nbgrader_export_reads_back_right(course):
    assert main(["--course", str(course.root), "export"]) == 0
    rows = read(course.root / "grades.csv")
    assert tuple(rows[0]) == export.NBGRADER_COLUMNS
    assert len(rows) == 1 + 2 * len(STUDENTS)
    by = {(row[0], shown(row[3])): dict(zip(rows[0], row, strict=True)) for row in rows[1:]}
    for sid, first, last, _, auto, manual in STUDENTS:
        row = by["01_gradients", sid]
        assert shown(row["first_name"]) == first and shown(row["last_name"]) == last
        expected = manual if manual is not None else auto
        assert float(row["raw_score"]) == expected
        assert float(row["score"]) == max(0.0, expected)
        assert row["max_score"] == "7.0"
        assert by["02_other", sid]["score"] == "0.0"
        for value in row.values():  # every text cell is inert in a spreadsheet
            assert value[:1] not in NEUTRAL or value == "-1.0", value
    assert by["01_gradients", "emmy"]["raw_score"] == "-1.0"  # a number, not text
    assert by["01_gradients", "-fermat"]["student_id"] == "'-fermat"


def test_nbgrader_export_under_the_course_config_uses_the_course_plugin(course):
    assert main(["--course", str(course.root), "export", "--to", str(course.root / "ours.csv")]
                ) == 0
    done = classes.nbgrader(course.root, "export", "--to", "theirs.csv")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "CsvExportPlugin" in done.stderr
    assert (course.root / "theirs.csv").read_text() == (course.root / "ours.csv").read_text()


def test_canvas_export(course):
    assert main(["--course", str(course.root), "export", "--format", "canvas"]) == 0
    rows = read(course.root / "canvas_grades.csv")
    assert rows[0] == [*export.CANVAS_COLUMNS, "01_gradients", "02_other"]
    assert rows[1] == ["Points Possible", "", "", "", "", "7.0", "5.0"]
    by = {shown(row[3]): row for row in rows[2:]}
    assert len(by) == len(STUDENTS)
    for sid, first, last, lms, auto, manual in STUDENTS:
        row = by[sid]
        assert row[1] == (lms or "")
        assert shown(row[0]) == f"{last}, {first}" or row[0].startswith("'")
        assert float(row[5]) == max(0.0, manual if manual is not None else auto)
        assert row[6] == "0.0"
        assert all(value[:1] not in NEUTRAL for value in row)
    assert by["ada"][0] == "Lovelace, Smith, Jr."


def test_export_of_one_assignment_and_unknown_format(course, capsys):
    assert main(["--course", str(course.root), "export", "02_other", "--to",
                 str(course.root / "o.csv")]) == 0
    assert {row[0] for row in read(course.root / "o.csv")[1:]} == {"02_other"}
    assert main(["--course", str(course.root), "export", "03_none"]) == 2
    assert "the gradebook has no assignment 03_none" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--course", str(course.root), "export", "--format", "excel"])
