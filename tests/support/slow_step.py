"""A grader step that outlives any budget, for one student: imported by the forkserver that
grading children fork from (a test appends this module to ``tasks.PRELOAD`` or
``selfcheck.PRELOAD`` in a process of its own), so the patch holds in the children only.

- the feedback page of ``slow_feedback`` (nbconvert's exporter) sleeps for an hour;
- making ``slow_check``'s autograded notebook inert (MakeInert) sleeps for an hour, and
  starts a process that would sleep as long (it must die with the grading child).
"""

from __future__ import annotations

import subprocess
import time

from autograd_course.grading.preprocessors import FeedbackExporter, MakeInert

HOUR = 3600


def _student(resources) -> str:
    return (resources or {}).get("nbgrader", {}).get("student", "")


_page = FeedbackExporter.from_notebook_node
_inert = MakeInert.preprocess


def _slow_page(self, nb, resources=None, **kw):
    if _student(resources) == "slow_feedback":
        time.sleep(HOUR)
    return _page(self, nb, resources, **kw)


def _slow_inert(self, nb, resources):
    if _student(resources) == "slow_check":
        subprocess.Popen(["sleep", str(HOUR + 1)])
        time.sleep(HOUR)
    return _inert(self, nb, resources)


FeedbackExporter.from_notebook_node = _slow_page
MakeInert.preprocess = _slow_inert
