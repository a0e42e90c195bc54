"""nbgrader's own autograde tests, run with the course's pipeline: ordinary nbgrader tests behave
in the judge as they do in nbgrader.

nbgrader ships its test suite inside the package (``nbgrader/tests``). Its autograde module
(``tests/apps/test_nbgrader_autograde.py``) is run here in a subprocess with a
``nbgrader_config.py`` in ``JUPYTER_CONFIG_DIR`` that sets only the course's exporter and its
three pipelines (the judge, the sandbox, the repairs, the inert notebook), as an instructor
who adds the course's grading to another course would. Every test must pass but the
intended differences (:data:`INTENDED`), which must fail: they show where the course grades
differently on purpose (the README lists them).
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbgrader
import pytest

pytestmark = pytest.mark.class_grading

SUITE = Path(nbgrader.__file__).parent / "tests"
CONFIG = '''\
from autograd_course.grading import pipeline

c = get_config()  # noqa: F821
c.Autograde.exporter_class = "autograd_course.grading.preprocessors.TolerantNotebookExporter"
c.Autograde.sanitize_preprocessors = pipeline.autograde_sanitizers()
c.Autograde.autograde_preprocessors = pipeline.autograde_preprocessors()
c.GenerateFeedback.preprocessors = pipeline.feedback_preprocessors()
'''
INTENDED = {
    # an unanswered cell's comment is the course's diagnosis, not nbgrader's "No response."
    "test_grade",
    # the course grades in its own kernel (the sandbox's), whatever kernelspec a notebook names
    "test_missing_source_kernelspec",
    "test_incorrect_source_kernelspec",
    # nbgrader metadata the course does not know is removed, and the notebook graded, where
    # nbgrader stops with an error (RepairSubmission)
    "test_handle_failure",
    "test_handle_failure_single_notebook",
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """The outcome of each of nbgrader's autograde tests under the course's pipeline."""
    folder = tmp_path_factory.mktemp("nbgrader-suite")
    (folder / "jupyter").mkdir()
    (folder / "jupyter" / "nbgrader_config.py").write_text(CONFIG)
    (folder / "pytest.ini").write_text("[pytest]\n")
    report = folder / "report.xml"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(folder / "jupyter"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
               PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(folder / "pytest.ini"), f"--rootdir={folder}",
         f"--confcutdir={SUITE}", "-p", "no:cacheprovider", "-n", "2", "-q",
         f"--junitxml={report}", str(SUITE / "apps" / "test_nbgrader_autograde.py")],
        cwd=folder, env=env, capture_output=True, text=True)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        kinds = {child.tag for child in case}
        outcomes[case.get("name")] = ("failed" if kinds & {"failure", "error"}
                                      else "skipped" if "skipped" in kinds else "passed")
    return outcomes, done.stdout


def test_every_test_but_the_intended_differences_passes(results):
    outcomes, log = results
    failed = {name for name, outcome in outcomes.items() if outcome == "failed"}
    assert failed == INTENDED, log[-4000:]
    assert sum(outcome == "passed" for outcome in outcomes.values()) >= 35
    # among those: exceptions of the student's own types, `del` of a student's name, and files
    # a notebook writes in its folder
    for name in ("test_grade_complex_autotest", "test_hidden_tests_single_notebook",
                 "test_side_effects"):
        assert outcomes[name] == "passed", name
