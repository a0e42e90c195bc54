"""nbgrader preprocessors that grade untrusted notebooks; the course's nbgrader_config.py uses them.

One class per module, as in nbgrader's own ``preprocessors`` package (their places in the
pipelines: :mod:`..pipeline`; each one's job in full:
docs/design.md#autograd_coursegradingpreprocessors__init__py):

- reading: :class:`TolerantNotebookExporter` (:mod:`.exporter`) grades a file that is not a
  valid notebook as an empty submission instead of stopping;
- sanitize: :class:`RepairSubmission` (:mod:`.repair`) puts back cells a student deleted and
  notes edited locked cells; :class:`CheckCellMetadata` (:mod:`.metadata`) is nbgrader's check
  of the cells' metadata, its schema checked once per process (also after the execution);
- autograde: :class:`JudgedExecute` (:mod:`.execute`) runs the student's cells in a sandboxed
  kernel and the test cells in the judge; :class:`RecordResults` (:mod:`.results`) writes the
  grade record; last, :class:`MakeInert` (:mod:`.inert`) keeps only inert content;
- feedback (:mod:`.feedback`): :class:`HideHiddenTests`, :class:`ShowCommentsAsText` and
  :class:`ListOtherFiles`; the page is written by :class:`FeedbackExporter` (:mod:`.exporter`),
  which compiles nbconvert's templates once per process.

The kernel's provisioning (started in the sandbox, logged, watched): :mod:`..boundary.provision`.
"""

from .cells import cell_role
from .execute import NOT_SANDBOXED, PASSED, JudgedExecute
from .exporter import FeedbackExporter, TolerantNotebookExporter
from .feedback import HideHiddenTests, ListOtherFiles, ShowCommentsAsText, strip_hidden_tests
from .inert import MakeInert
from .metadata import CheckCellMetadata
from .repair import RepairSubmission
from .results import RecordResults

__all__ = ["NOT_SANDBOXED", "PASSED", "CheckCellMetadata", "FeedbackExporter", "HideHiddenTests",
           "JudgedExecute", "ListOtherFiles", "MakeInert", "RecordResults", "RepairSubmission",
           "ShowCommentsAsText", "TolerantNotebookExporter", "cell_role", "strip_hidden_tests"]
