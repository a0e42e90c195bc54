"""nbgrader configuration of the autograd course (read by every nbgrader command run here)."""

import os
from pathlib import Path

from autograd_course.grading import pipeline

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

# The course's identifier, used by the gradebook and the exchange.
c.CourseDirectory.course_id = "autograd-course"
# nbgrader's exchange, where assignments are released, fetched, submitted and collected. It is
# course-local by default (exchange/, git-ignored), so that JupyterLab's Assignment List and
# formgrader work on one machine after `make lab`; a shared deployment points it elsewhere
# with the environment variable AUTOGRAD_COURSE_EXCHANGE (see docs/deploy.md).
if os.environ.get("AUTOGRAD_COURSE_EXCHANGE"):
    c.Exchange.root = os.environ["AUTOGRAD_COURSE_EXCHANGE"]
else:
    c.Exchange.root = str(Path(__file__).resolve().parent / "exchange")
    os.makedirs(c.Exchange.root, exist_ok=True)  # nbgrader lists courses only from an existing one
# Largest file (in kB) nbgrader copies from a submission; bigger ones are left out.
c.CourseDirectory.max_file_size = 10000
# Never copy these into release/ or submitted/ (caches and checkpoints).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# Seconds a single cell may run while validating or autograding before it is interrupted.
c.Execute.timeout = 60
# Interrupt (rather than kill) a cell that runs past the timeout, so later cells still run.
c.Execute.interrupt_on_timeout = True
# Do not retry a notebook whose kernel died: a crash is graded as it is, once.
c.Execute.execute_retries = 0

# The stub that replaces a solution in the student version.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# Only cells marked as solution cells are cleared (markers elsewhere are an error).
c.ClearSolutions.enforce_metadata = True

# Keep at most this many output lines per cell in graded notebooks (runaway prints).
c.LimitOutput.max_lines = 200
# Keep at most this many traceback lines per error in graded notebooks.
c.LimitOutput.max_traceback = 30

# --- Trusted autograding (autograd_course.grading; see the README's instructor section) ---
# Read a file that is not a valid notebook as an empty submission, with a reason.
c.Autograde.exporter_class = "autograd_course.grading.preprocessors.TolerantNotebookExporter"
# nbgrader's own pipelines with the course's changes (autograd_course/grading/pipeline.py):
# before running, put back deleted locked cells from release/ and note edited ones; run the
# student's cells in a sandboxed kernel and the test cells in the judge, outside it; then
# save the judge's grades and write the grade record.
c.Autograde.sanitize_preprocessors = pipeline.autograde_sanitizers()
c.Autograde.autograde_preprocessors = pipeline.autograde_preprocessors()
# Limits of a grading kernel: memory (MiB) and CPU seconds for the whole notebook.
c.JudgedExecute.memory_limit_mb = 4096
c.JudgedExecute.cpu_seconds = 1800
# Run the kernel in bubblewrap (no network, no view of the course); where bubblewrap cannot
# run, grading goes on unsandboxed and says so in every record, unless this is True.
c.JudgedExecute.require_sandbox = False
# Feedback shows results and diagnostics, never hidden-test code or its tracebacks.
c.GenerateFeedback.preprocessors = pipeline.feedback_preprocessors()
