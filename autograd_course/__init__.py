"""autograd_course: helpers for an auto-graded Jupyter course on torch.autograd.

Its folders say where their code runs: ``kernel/`` is all a graded kernel may import (the
checks, hints and lesson helpers the notebooks use; the sandbox mounts only it and this file),
``lab/`` the learner's JupyterLab tools, ``grading/`` the grader, ``testkit/`` what only tests
use. The map: docs/authoring.md.
"""

__version__ = "0.1.0"

#: The environment variable that tells ``autograd-course check`` it reports to JupyterLab (set to
#: "jupyterlab" by the notebook's check cell and nbgrader's Validate button, where no
#: command-line option can be given): it then says where the student id came from without naming
#: ``--student``. Here, so that the command line (``cli``) and ``lab.selfstudy`` share it
#: without importing each other's modules.
CHECKED_FROM = "AUTOGRAD_COURSE_CHECKED_FROM"
