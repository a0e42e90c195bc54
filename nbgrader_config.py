"""nbgrader configuration of the autograd course (read by every nbgrader command run here)."""

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

# The course's identifier, used by the gradebook and the exchange.
c.CourseDirectory.course_id = "autograd-course"
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
