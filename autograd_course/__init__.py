"""autograd_course: helpers for an auto-graded Jupyter course on torch.autograd.

Its folders say where their code runs: ``kernel/`` is all a graded kernel may import (the
checks, hints and lesson helpers the notebooks use; the sandbox mounts only it and this file),
``lab/`` the learner's JupyterLab tools, ``grading/`` the grader, ``testkit/`` what only tests
use. The map: docs/authoring.md.
"""

__version__ = "0.1.0"
