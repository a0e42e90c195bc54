"""CheckCellMetadata: nbgrader's check of the cells' nbgrader metadata, its schema checked once.

The course's preprocessor must pass and refuse exactly the notebooks nbgrader's own does, with
the same error logged (its message, and jsonschema's best match), on the course's notebooks and
on metadata broken every way the schema and nbgrader's checks look at.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import jsonschema
import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheck

from autograd_course.grading.preprocessors import CheckCellMetadata

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "source").glob("*/*.ipynb"))


def _graded(nb) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade"))


def _broken(change):
    """The first course notebook with ``change(nb, index of its first graded cell)`` made."""
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    change(nb, _graded(nb))
    return nb


BROKEN = {
    "points as text": lambda nb, i: nb.cells[i].metadata.nbgrader.update(points="two"),
    "no grade id": lambda nb, i: nb.cells[i].metadata.nbgrader.pop("grade_id"),
    "empty grade id": lambda nb, i: nb.cells[i].metadata.nbgrader.update(grade_id=""),
    "no points": lambda nb, i: nb.cells[i].metadata.nbgrader.pop("points"),
    "locked as text": lambda nb, i: nb.cells[i].metadata.nbgrader.update(locked="yes"),
    "an old schema": lambda nb, i: nb.cells[i].metadata.nbgrader.update(schema_version=1),
    "a newer schema": lambda nb, i: nb.cells[i].metadata.nbgrader.update(schema_version=9),
    "a duplicate id": lambda nb, i: nb.cells[i + 1].metadata.update(
        nbgrader=copy.deepcopy(nb.cells[i].metadata.nbgrader)),
    "a graded markdown cell": lambda nb, i: nb.cells[i].update(cell_type="markdown") and None,
    "a code task": lambda nb, i: nb.cells[i].metadata.nbgrader.update(task=True),
    "no grade flag": lambda nb, i: nb.cells[i].metadata.nbgrader.pop("grade"),
}


def _verdict(preprocessor, nb, caplog) -> tuple[str, list[str]]:
    """What checking ``nb`` raised (or "") and what it logged (the traceback's last line)."""
    caplog.clear()
    raised = ""
    try:
        preprocessor.preprocess(copy.deepcopy(nb), {})
    except Exception as exc:  # noqa: BLE001 - compared with nbgrader's
        raised = f"{type(exc).__name__}: {exc}"
    return raised, [r.getMessage().strip().splitlines()[-1] for r in caplog.records]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_the_course_notebooks_pass_both(path, caplog):
    nb = nbformat.read(path, as_version=4)
    assert _verdict(CheckCellMetadata(), nb, caplog) == ("", [])
    assert _verdict(NbgraderCheck(), nb, caplog) == ("", [])


@pytest.mark.parametrize("name", BROKEN)
def test_broken_metadata_is_refused_as_nbgrader_refuses_it(name, caplog):
    caplog.set_level(logging.ERROR)
    nb = _broken(BROKEN[name])
    ours, theirs = (_verdict(p, nb, caplog) for p in (CheckCellMetadata(), NbgraderCheck()))
    assert ours == theirs and ours[0], name


def test_the_schema_is_checked_once_whatever_the_notebooks(monkeypatch):
    schema = MetadataValidator().schema
    kind = jsonschema.validators.validator_for(schema)
    checked = []
    original = kind.check_schema
    monkeypatch.setattr(kind, "check_schema",
                        classmethod(lambda cls, s, *a, **k: checked.append(1) or original(s)))
    for path in NOTEBOOKS:
        CheckCellMetadata().preprocess(nbformat.read(path, as_version=4), {})
    assert len(checked) <= 1
    with pytest.raises(ValidationError):  # nbgrader's own error, still
        CheckCellMetadata().preprocess(_broken(BROKEN["points as text"]), {})
