"""The graded exercises' notebooks as files: structure, hints, release/, what learners read.

Each source/ notebook has the course's layout (intro, locked imports, then prompt, solution
and test cell per question, grade ids ``qN_*``/``qN_*_test``, one hidden block), no test cell
rebinds a name the notebook provides, no reference solution copies a lesson cell, each question
has hints, and release/ holds no solution or hidden test. Fast: reads files only (``nbgrader
validate`` and release/'s regeneration are test_nbgrader_validate.py).
"""

from __future__ import annotations

import re

import nbformat
import pytest
from support import nearcopy
from support.exercises import (
    ALL_QUESTIONS,
    HIDDEN,
    ROOT,
    bound_names,
    cell_of,
    load,
    nbgrader_meta,
    questions,
    release_path,
)
from support.units import UNITS

from autograd_course.kernel import hints

GRADE_ID = re.compile(r"q(\d+)_[a-z0-9_]+")


# --- structure --------------------------------------------------------------------------------


@pytest.mark.parametrize("unit", UNITS)
def test_no_test_cell_rebinds_a_name_the_notebook_provides(unit):
    # e.g. `hint = "..."` in a test cell replaced the notebook's hint() by a string, and
    # hint("q3") then failed, just when a learner wanted it
    nb = load(unit)
    provided = bound_names(nb.cells[1].source)  # the imports cell
    assert "hint" in provided
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade") and cell.cell_type == "code":
            rebound = bound_names(cell.source) & provided
            assert not rebound, f"{nbgrader_meta(cell)['grade_id']} rebinds {sorted(rebound)}"


@pytest.mark.parametrize("unit", UNITS)
def test_notebook_structure(unit):
    nb = load(unit)
    assert (nb.nbformat, nb.nbformat_minor) >= (4, 5)
    assert nb.metadata.kernelspec.name == "python3"
    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    intro, imports = nb.cells[0], nb.cells[1]
    assert intro.cell_type == "markdown" and nbgrader_meta(intro).get("locked")
    assert imports.cell_type == "code" and nbgrader_meta(imports).get("locked")
    assert "import torch" in imports.source
    assert "from autograd_course.kernel.checks import" in imports.source
    grade_ids = [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c)]
    assert len(grade_ids) == len(set(grade_ids)), "grade_ids must be unique"
    qids = questions(unit)
    assert len(qids) >= 3, "at least three questions"
    for number, qid in enumerate(qids, start=1):
        assert GRADE_ID.fullmatch(qid) and qid.startswith(f"q{number}_"), qid
        index = next(i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("grade_id") == qid)
        text, solution, test = nb.cells[index - 1], nb.cells[index], nb.cells[index + 1]
        assert text.cell_type == "markdown", f"{qid}: an instruction precedes the solution"
        assert nbgrader_meta(solution) | {"grade": False} == nbgrader_meta(solution)
        assert "### BEGIN SOLUTION" in solution.source and "### END SOLUTION" in solution.source
        meta = nbgrader_meta(test)
        assert meta["grade_id"] == f"{qid}_test"
        assert meta["grade"] and meta["locked"] and not meta["solution"]
        assert isinstance(meta["points"], int) and meta["points"] > 0
        assert test.source.count(HIDDEN) == 1 and "### END HIDDEN TESTS" in test.source
        visible = test.source.split(HIDDEN)[0]
        assert "check_" in visible, f"{qid}: the visible part checks something"
        assert "torch.allclose" not in test.source, "compare through autograd_course.kernel.checks"
    assert len([c for c in nb.cells if nbgrader_meta(c).get("grade")]) == len(qids)


@pytest.mark.parametrize("unit", UNITS)
def test_assignments_carry_the_kernels_language_info(unit):
    """JupyterLab fills in a notebook's language_info from the kernel and marks the notebook
    modified if it changed: an assignment carries what the lessons' kernel wrote."""
    lesson = nbformat.read(ROOT / "notebooks" / f"{unit}.ipynb", as_version=4)
    for notebook in (load(unit), nbformat.read(release_path(unit), as_version=4)):
        assert notebook.metadata.language_info == lesson.metadata.language_info
        assert notebook.metadata.kernelspec == lesson.metadata.kernelspec


def lesson_code_cells(unit: str) -> list[str]:
    lesson = nbformat.read(ROOT / "notebooks" / f"{unit}.ipynb", as_version=4)
    return [c.source for c in lesson.cells if c.cell_type == "code"]


@pytest.mark.parametrize(("unit", "qid"), ALL_QUESTIONS, ids=[f"{u}-{q}" for u, q in ALL_QUESTIONS])
def test_no_reference_solution_is_a_near_copy_of_a_lesson_cell(unit, qid):
    """A question applies the lesson to a case it did not show: typing a lesson cell in
    again does not answer it."""
    cell = cell_of(unit, qid)
    if len(nearcopy.tokens(nearcopy.solution_code(cell.source))) < nearcopy.SHORTEST:
        return  # a one-line fix: too short for any comparison to mean something
    share, at = nearcopy.near_copy_share(cell.source, lesson_code_cells(unit))
    assert share < nearcopy.THRESHOLD, f"{qid}: {share:.0%} of it is lesson code cell {at}"


def test_the_near_copy_test_finds_a_copy_renamed_and_commented():
    """The detector flags the lesson's own walk, renamed, commented and in a solution
    cell, and tells a short answer's scattered tokens apart from a copy."""
    lesson = lesson_code_cells("07_engine")
    walk = next(c for c in lesson if c.startswith("def topological_order"))
    body = walk.split("\n\n\nprint(")[0].replace("visited", "seen").replace("order", "nodes")
    copy = body.replace('    """', '    ### BEGIN SOLUTION\n    # my own walk\n    """', 1)
    copy += "\n    ### END SOLUTION"
    assert nearcopy.near_copy_share(copy, lesson)[0] >= nearcopy.THRESHOLD
    # rules in several regions of a given class, as 07 Q1 had: the lesson's own class with
    # each rule's line as a solution region
    rules = re.sub(r"\n( +)(return .*)\n", r"\n\1### BEGIN SOLUTION\n\1\2\n\1### END SOLUTION\n",
                   next(c for c in lesson if "class Value" in c))
    assert rules.count("BEGIN SOLUTION") >= 6
    assert nearcopy.near_copy_share(rules, lesson)[0] >= nearcopy.THRESHOLD
    # 08 Q2's few tokens are all in a long lesson cell, in order but far apart: the stretch
    # tells that apart from a copy
    freeze = cell_of("08_training", "q2_freeze").source
    solution = nearcopy.tokens(nearcopy.solution_code(freeze))
    lesson = lesson_code_cells("08_training")
    assert max(nearcopy.share_in_order(solution, nearcopy.tokens(c)) for c in lesson) >= (
        nearcopy.THRESHOLD)
    assert nearcopy.near_copy_share(freeze, lesson)[0] < nearcopy.THRESHOLD


def test_no_visible_test_imports_the_grader():
    """The visible part of a test cell runs in the learner's kernel, which has no grader
    (autograd_course.grading is not in the sandbox): only hidden parts may import it."""
    for unit in UNITS:
        for cell in load(unit).cells:
            if nbgrader_meta(cell).get("grade"):
                assert "autograd_course.grading" not in cell.source.split(HIDDEN)[0], (
                    unit, nbgrader_meta(cell)["grade_id"])


@pytest.mark.parametrize(("unit", "qid"), ALL_QUESTIONS, ids=[f"{u}-{q}" for u, q in ALL_QUESTIONS])
def test_every_question_has_hints_of_two_levels_at_least(unit, qid, capsys):
    number = qid.split("_")[0]
    texts = hints.texts_of(unit)[number]
    assert len(texts) >= 2 and all(len(t) > 20 for t in texts)
    hint = hints.hints_for(unit)
    for level in range(1, len(texts) + 2):  # one more: the last hint again
        hint(number)
        shown = capsys.readouterr().out
        assert shown.startswith(f"Hint {min(level, len(texts))}/{len(texts)} for {number}:")
    assert f'hint = hints_for("{unit}")' in load(unit).cells[1].source  # the locked imports
    assert 'hint("q1")' in load(unit).cells[0].source  # the introduction says how


def test_hints_name_only_existing_questions(capsys):
    for unit in UNITS:
        numbers = {qid.split("_")[0] for qid in questions(unit)}
        assert set(hints.texts_of(unit)) == numbers, unit
    hints.hints_for("01_gradients")("q9")
    assert "No hints for 'q9'" in capsys.readouterr().out


# --- what learners read ------------------------------------------------------------------------

DOCUMENT_WORDS = re.compile(
    r"seed (?:0\d\d|demo)|\bthe seeds?\b|seed's|\(seed|original demo|seed_table", re.I)


def learner_texts():
    for folder in ("notebooks", "source", "release"):
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            yield path, "\n".join(c.source for c in nb.cells)
    for path in sorted((ROOT / "demos").glob("*")):
        yield path, path.read_text()
    for path in sorted((ROOT / "autograd_course" / "hints").glob("*.py")):
        yield path, path.read_text()


LEARNER_TEXTS = list(learner_texts())


@pytest.mark.parametrize(("path", "text"), LEARNER_TEXTS, ids=[p.name for p, _ in LEARNER_TEXTS])
def test_learners_read_of_demos_by_their_names_never_of_seed_documents(path, text):
    assert not DOCUMENT_WORDS.search(text), DOCUMENT_WORDS.search(text).group(0)


# --- release/ ------------------------------------------------------------------------------------


@pytest.mark.parametrize("unit", UNITS)
def test_release_has_no_solutions_or_hidden_tests(unit):
    text = release_path(unit).read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text
    release = nbformat.reads(text, as_version=4)
    release_lines = {
        line.strip()
        for c in release.cells
        if c.cell_type == "code"
        for line in c.source.splitlines()
    }
    secret, public = [], []
    for cell in load(unit).cells:
        meta, source = nbgrader_meta(cell), cell.source
        for begin, end in (
            ("### BEGIN SOLUTION", "### END SOLUTION"),
            (HIDDEN, "### END HIDDEN TESTS"),
        ):
            if meta.get("solution" if begin != HIDDEN else "grade") and begin in source:
                before, rest = source.split(begin, 1)
                hidden, after = rest.split(end, 1)
                secret.append(hidden)
                source = before + after
        public.append(source)
    public_lines = {line.strip() for line in "\n".join(public).splitlines()}
    for line in "\n".join(secret).splitlines():
        line = line.strip()
        if len(line) > 8 and line not in public_lines:
            assert line not in release_lines, f"{unit}: {line!r} is in release/"
