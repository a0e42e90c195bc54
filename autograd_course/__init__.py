"""autograd_course: helpers for an auto-graded Jupyter course on torch.autograd.

The lesson notebooks and graded exercises import this package for everything that is
not what a learner should read: drawing computation graphs, plotting, seeding, and the
checks that turn a wrong gradient into feedback that names the mistake.
"""

__version__ = "0.1.0"
