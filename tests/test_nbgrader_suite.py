"""nbgrader's own tests of the apps the course changes or relies on, run with the course's
pipeline and export plugin: ordinary nbgrader tests behave in the judge as they do in nbgrader.

nbgrader ships its test suite inside the package (``nbgrader/tests``). Its modules for
autograde, generate_feedback, release_feedback, export, zip_collect, release_assignment and
collect (:data:`MODULES`, under ``tests/apps/``) are run here in one subprocess with a
``nbgrader_config.py`` in ``JUPYTER_CONFIG_DIR`` that sets only the course's exporter, its
three pipelines (the judge, the sandbox, the repairs, the inert notebook, the feedback) and
its export plugin, as an instructor who adds the course's grading to another course would,
and gives nbgrader's own ``validate`` (not the course's) the time a loaded machine takes.
Every test must pass but the intended differences (:data:`INTENDED`), which must fail: they
show where the course grades differently on purpose (docs/security.md lists them). A test
that fails unexpectedly is shown with its report and the end of what it wrote to stderr,
where nbgrader's apps log (its failed command's log last).
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
c.ExportApp.plugin_class = "autograd_course.grading.export.CsvExportPlugin"
# nbgrader's validate: nbclient waits 4 s for a cell's last outputs, then nbgrader's Execute
# fails the command (exit 1); on a loaded machine a kernel's outputs can take longer
c.Validator.Execute.iopub_timeout = 60
c.Validator.Execute.startup_timeout = 300
'''
MODULES = ("autograde", "generate_feedback", "releasefeedback", "export", "zip_collect",
           "releaseassignment", "collect")
INTENDED = {
    # an unanswered cell's comment is the course's diagnosis, not nbgrader's "No response."
    "TestNbGraderAutograde.test_grade",
    # the course grades in its own kernel (the sandbox's), whatever kernelspec a notebook names
    "TestNbGraderAutograde.test_missing_source_kernelspec",
    "TestNbGraderAutograde.test_incorrect_source_kernelspec",
    # nbgrader metadata the course does not know is removed, and the notebook graded, where
    # nbgrader stops with an error (RepairSubmission)
    "TestNbGraderAutograde.test_handle_failure",
    "TestNbGraderAutograde.test_handle_failure_single_notebook",
    # generate_feedback: the submission's other files (data files, a student's .txt) are not
    # copied into feedback/, from where Jupyter would serve them; the page lists them as text
    # (ListOtherFiles)
    "TestNbGraderFeedback.test_force",
    "TestNbGraderFeedback.test_force_f",
    "TestNbGraderFeedback.test_filter_notebook",
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """The outcome of each of nbgrader's tests (class.test) under the course's config, what
    each failure reported, and pytest's output."""
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
         "-o", "junit_logging=system-err",
         f"--junitxml={report}",
         *(str(SUITE / "apps" / f"test_nbgrader_{name}.py") for name in MODULES)],
        cwd=folder, env=env, capture_output=True, text=True)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes, reports = {}, {}
    for case in ET.parse(report).iter("testcase"):
        test = f"{case.get('classname', '').rsplit('.', 1)[-1]}.{case.get('name')}"
        failures = [child for child in case if child.tag in ("failure", "error")]
        outcomes[test] = ("failed" if failures
                          else "skipped" if any(child.tag == "skipped" for child in case)
                          else "passed")
        if failures:
            stderr = "".join(child.text or "" for child in case if child.tag == "system-err")
            reports[test] = "\n".join([*((child.text or child.get("message", ""))[-3000:]
                                        for child in failures), "stderr:", stderr[-3000:]])
    return outcomes, reports, done.stdout


def test_every_test_but_the_intended_differences_passes(results):
    outcomes, reports, log = results
    failed = {name for name, outcome in outcomes.items() if outcome == "failed"}
    unexpected = "\n\n".join(f"{name}:\n{reports[name]}" for name in sorted(failed - INTENDED))
    assert failed == INTENDED, unexpected or log[-4000:]
    assert sum(outcome == "passed" for outcome in outcomes.values()) >= 35 + 70
    # among those: exceptions of the student's own types, `del` of a student's name, and files
    # a notebook writes in its folder
    for name in ("test_grade_complex_autotest", "test_hidden_tests_single_notebook",
                 "test_side_effects"):
        assert outcomes[f"TestNbGraderAutograde.{name}"] == "passed", name
    # release_feedback, export (the course's plugin, with nbgrader's columns), zip_collect
    for name in ("TestNbGraderReleaseFeedback.test_single_student",
                 "TestNbGraderExport.test_export", "TestNbGraderZipCollect.test_extract_archive",
                 "TestNbGraderRelease.test_force_release", "TestNbGraderCollect.test_collect"):
        assert outcomes[name] == "passed", name
