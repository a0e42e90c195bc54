"""nbgrader preprocessors that grade untrusted notebooks; the course's nbgrader_config.py uses them.

One class per module, as in nbgrader's own ``preprocessors`` package:

- reading (:mod:`.exporter`): :class:`TolerantNotebookExporter` grades a file that is not a
  valid notebook as an empty submission instead of stopping;
- sanitize stage (:mod:`.repair`): :class:`RepairSubmission` puts back cells a student deleted
  and notes edited locked cells;
- autograde stage: :class:`JudgedExecute` (:mod:`.execute`) runs the student's cells in a
  sandboxed kernel and the test cells in the judge, and writes each test cell's verdict as its
  outputs; :class:`RecordResults` (:mod:`.results`) writes the grade record and puts each
  diagnostic into the gradebook comment that the feedback shows; last, :class:`MakeInert`
  (:mod:`.inert`) keeps only inert content in the autograded notebook;
- feedback (:mod:`.feedback`): :class:`HideHiddenTests` removes hidden-test code and
  tracebacks; :class:`ShowCommentsAsText` shows the automatic diagnostic and the instructor's
  comment as text; :class:`ListOtherFiles` keeps the submission's files out of ``feedback/``
  and lists them as text; the page is written by :class:`FeedbackExporter` (:mod:`.exporter`),
  which compiles nbconvert's templates once per process.

The kernel's provisioning (started in the sandbox, logged, watched) is
:mod:`..boundary.provision`.
"""

from .cells import cell_role
from .execute import NOT_SANDBOXED, PASSED, JudgedExecute
from .exporter import FeedbackExporter, TolerantNotebookExporter
from .feedback import HideHiddenTests, ListOtherFiles, ShowCommentsAsText, strip_hidden_tests
from .inert import MakeInert
from .repair import RepairSubmission
from .results import RecordResults

__all__ = ["NOT_SANDBOXED", "PASSED", "FeedbackExporter", "HideHiddenTests", "JudgedExecute",
           "ListOtherFiles", "MakeInert", "RecordResults", "RepairSubmission", "ShowCommentsAsText",
           "TolerantNotebookExporter", "cell_role", "strip_hidden_tests"]
