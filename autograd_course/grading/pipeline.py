"""The course's nbgrader pipelines, derived from nbgrader's own defaults.

``nbgrader_config.py`` sets its preprocessor lists from these functions, so a preprocessor
that a later nbgrader adds to its defaults is kept, and one that the course's changes are
anchored to and that disappears upstream stops every nbgrader command with a clear error
instead of being lost silently. The course's changes:

- autograde, before running: :class:`~.preprocessors.RepairSubmission` (deleted locked cells
  put back from release/, edited ones noted) just before nbgrader's ``OverwriteCells``;
- autograde: nbgrader's ``Execute`` replaced by :class:`~.preprocessors.JudgedExecute` (the
  student's cells in a sandboxed kernel, the test cells in the judge), and
  :class:`~.preprocessors.RecordResults` (the grade record) appended;
- feedback: :class:`~.preprocessors.HideHiddenTests` just after nbgrader's ``GetGrades``.

>>> [getattr(p, "__name__", p).rsplit(".", 1)[-1] for p in feedback_preprocessors()]
['GetGrades', 'HideHiddenTests', 'CSSHTMLHeaderPreprocessor']
"""

from __future__ import annotations

OURS = "autograd_course.grading.preprocessors."


def _default(cls, trait: str) -> list:
    return list(cls.class_traits()[trait].default())


def _index(pipeline: list, name: str) -> int:
    for i, step in enumerate(pipeline):
        if getattr(step, "__name__", str(step).rsplit(".", 1)[-1]) == name:
            return i
    raise RuntimeError(f"nbgrader's default pipeline has no {name} any more: "
                       "autograd_course/grading/pipeline.py must be updated for this nbgrader")


def autograde_sanitizers() -> list:
    """``Autograde.sanitize_preprocessors``: nbgrader's, with RepairSubmission inserted."""
    from nbgrader.converters import Autograde

    pipeline = _default(Autograde, "sanitize_preprocessors")
    pipeline.insert(_index(pipeline, "OverwriteCells"), OURS + "RepairSubmission")
    return pipeline


def autograde_preprocessors() -> list:
    """``Autograde.autograde_preprocessors``: nbgrader's, with the judge instead of Execute
    and the grade record last."""
    from nbgrader.converters import Autograde

    pipeline = _default(Autograde, "autograde_preprocessors")
    pipeline[_index(pipeline, "Execute")] = OURS + "JudgedExecute"
    return pipeline + [OURS + "RecordResults"]


def feedback_preprocessors() -> list:
    """``GenerateFeedback.preprocessors``: nbgrader's, with hidden tests hidden."""
    from nbgrader.converters import GenerateFeedback

    pipeline = _default(GenerateFeedback, "preprocessors")
    pipeline.insert(_index(pipeline, "GetGrades") + 1, OURS + "HideHiddenTests")
    return pipeline
