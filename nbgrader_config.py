"""nbgrader configuration of the autograd course (read by every nbgrader command run here)."""

import os
from pathlib import Path

from autograd_course.grading import mathjax, pipeline

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
# Largest file (in kB) a submission may bring. nbgrader's exchange leaves bigger ones out when
# students submit; the course's grader applies it wherever a submission enters, before a file
# is read: a notebook larger than this is graded as not a notebook, other files are left out
# (with a note), and a zip with a bigger member is refused (autograd_course/grading/zips.py).
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

# nbgrader's log lines quote the names of a submission's files and notebooks: print them
# without control characters (an escape code in a file name can erase a line of the terminal).
c.Application.logging_config = {
    "filters": {"safe": {"()": "autograd_course.grading.terminal.SafeLog"}},
    "handlers": {"console": {"filters": ["safe"]}},
}

# --- Trusted autograding (autograd_course.grading; docs/instructors.md, docs/security.md) ---
# Read a file that is not a valid notebook as an empty submission, with a reason.
c.Autograde.exporter_class = "autograd_course.grading.preprocessors.TolerantNotebookExporter"
# nbgrader's own pipelines with the course's changes (autograd_course/grading/pipeline.py):
# before running, make the course's cells those of release/ (deleted ones put back, copies
# and unknown nbgrader metadata made ordinary cells, changed types restored); run the
# student's cells in a sandboxed kernel and the test cells in the judge, outside it; then
# save the judge's grades, write the grade record (records/, which only the grader writes),
# and keep only inert content (text, PNG and JPEG; the student's markdown as text) in the
# autograded notebook that formgrader and the feedback show.
c.Autograde.sanitize_preprocessors = pipeline.autograde_sanitizers()
c.Autograde.autograde_preprocessors = pipeline.autograde_preprocessors()
# Limits of a grading kernel: memory (MiB) and CPU seconds for the whole notebook.
c.JudgedExecute.memory_limit_mb = 4096
c.JudgedExecute.cpu_seconds = 1800
# --- What one submission may cost the grader (each a limit per notebook) ---
# Wall-clock seconds to grade a notebook, its kernel's start included; past it the kernel is
# stopped and the tests that had not run get 0, with the reason. Sleeping costs no CPU, so
# this, not cpu_seconds, bounds how long one notebook holds a worker: about 2 minutes with
# nbgrader's own work and the feedback. The slowest reference notebook (08_training) grades in
# about 19 s on a 2-core machine busy with the test suite (the others in 2 to 7 s), so an
# honest notebook has a margin of more than 5 times.
c.JudgedExecute.notebook_seconds = 110
# Wall-clock seconds of one whole submission, grading and feedback together, held from
# outside the work (autograd-course grade and check grade each submission in a child process
# that is killed when the time is spent). 0: notebook_seconds + 10 s a notebook + 60 s.
c.JudgedExecute.submission_seconds = 0
# Cells run per notebook: every answer and test cell, and the student's own cells while there
# is room. The assignments have 15 to 45 cells; a notebook of thousands would only cost time.
c.JudgedExecute.max_cells = 300
# MiB of outputs kept from one kernel (the rest is dropped as it arrives): the grader's memory.
c.JudgedExecute.max_output_mb = 32
# Processes and threads one kernel may run at once (torch's thread pools included); a fork
# flood stops there, and, with a user per kernel as root, harms no other kernel.
c.JudgedExecute.max_processes = 256
# MiB of each folder a kernel can write (its working folder, and its /tmp): in memory, so a
# notebook that fills its disk fills only these.
c.JudgedExecute.disk_mb = 128
# Run the kernel in bubblewrap (no network, no view of the course); where bubblewrap cannot
# run, grading goes on unsandboxed and says so in every record, unless this is True.
c.JudgedExecute.require_sandbox = False
# Fork each notebook's kernel from a warm zygote (one per grading process, torch imported
# once), in the same sandbox with its own namespaces, file systems, user, limits and seeds
# (autograd_course/kernel/zygote.py). Where it cannot run, kernels start cold and the log says why.
c.JudgedExecute.warm_kernels = True
# Feedback shows results and diagnostics (as text), never hidden-test code or its tracebacks.
c.GenerateFeedback.preprocessors = pipeline.feedback_preprocessors()
# nbconvert's HTML exporter with its templates compiled once per grading process, not once per
# feedback page (autograd_course/grading/preprocessors/exporter.py).
c.GenerateFeedback.exporter_class = "autograd_course.grading.preprocessors.FeedbackExporter"
# `nbgrader export` writes grades.csv as `autograd-course grade` does: nbgrader's columns,
# quoted as CSV readers expect, text cells that begin with = + - @ made inert for
# spreadsheets (autograd_course/grading/export.py). `--exporter` picks another, e.g.
# autograd_course.grading.export.CanvasExportPlugin (Canvas's gradebook import).
c.ExportApp.plugin_class = "autograd_course.grading.export.CsvExportPlugin"
# Formgrader and the feedback typeset math with MathJax from this machine (Debian's
# libjs-mathjax), never from a CDN: the course's templates replace nbconvert's mathjax() macro
# and leave nbgrader's templates as they are (autograd_course/grading/mathjax.py).
c.HTMLExporter.extra_template_basedirs = mathjax.template_basedirs()
