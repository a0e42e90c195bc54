"""The course's nbgrader pipelines, derived from nbgrader's own defaults.

``nbgrader_config.py`` sets its preprocessor lists from these functions: a preprocessor that a
later nbgrader adds is kept, and an anchor that disappears upstream stops every nbgrader
command with a clear error. What each change does, and why:
docs/design.md#autograd_coursegradingpipelinepy. The changes:

- autograde, before running: :class:`~.preprocessors.RepairSubmission` just before nbgrader's
  ``DeduplicateIds``;
- autograde: nbgrader's ``Execute`` replaced by :class:`~.preprocessors.JudgedExecute`, then
  :class:`~.preprocessors.RecordResults` and :class:`~.preprocessors.MakeInert` appended;
- autograde, both lists: nbgrader's ``CheckCellMetadata`` replaced by the course's
  :class:`~.preprocessors.CheckCellMetadata` (the same checks, its schema checked once);
- feedback: :class:`~.preprocessors.HideHiddenTests`, :class:`~.preprocessors.ShowCommentsAsText`
  and :class:`~.preprocessors.ListOtherFiles` just after nbgrader's ``GetGrades``.

>>> [getattr(p, "__name__", p).rsplit(".", 1)[-1] for p in feedback_preprocessors()]
... # doctest: +NORMALIZE_WHITESPACE
['GetGrades', 'HideHiddenTests', 'ShowCommentsAsText', 'ListOtherFiles',
 'CSSHTMLHeaderPreprocessor']
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
    """``Autograde.sanitize_preprocessors``: nbgrader's, with RepairSubmission inserted and
    the course's CheckCellMetadata."""
    from nbgrader.converters import Autograde

    pipeline = _default(Autograde, "sanitize_preprocessors")
    pipeline.insert(_index(pipeline, "DeduplicateIds"), OURS + "RepairSubmission")
    pipeline[_index(pipeline, "CheckCellMetadata")] = OURS + "CheckCellMetadata"
    return pipeline


def autograde_preprocessors() -> list:
    """``Autograde.autograde_preprocessors``: nbgrader's, with the judge instead of Execute,
    the course's CheckCellMetadata and the grade record last."""
    from nbgrader.converters import Autograde

    pipeline = _default(Autograde, "autograde_preprocessors")
    pipeline[_index(pipeline, "Execute")] = OURS + "JudgedExecute"
    pipeline[_index(pipeline, "CheckCellMetadata")] = OURS + "CheckCellMetadata"
    return pipeline + [OURS + "RecordResults", OURS + "MakeInert"]


def feedback_preprocessors() -> list:
    """``GenerateFeedback.preprocessors``: nbgrader's, with hidden tests hidden, comments
    shown as text and the submission's files listed, not copied."""
    from nbgrader.converters import GenerateFeedback

    pipeline = _default(GenerateFeedback, "preprocessors")
    at = _index(pipeline, "GetGrades") + 1
    pipeline[at:at] = [OURS + "HideHiddenTests", OURS + "ShowCommentsAsText",
                       OURS + "ListOtherFiles"]
    return pipeline
