"""Grading the course with nbgrader, safely.

nbgrader is the engine; this package adds what a course that grades untrusted notebooks
needs, as nbgrader preprocessors named in the course's ``nbgrader_config.py`` (so plain
``nbgrader autograde`` gets the same protection as ``autograd-course grade``):

- :mod:`.guard` runs inside the grading kernel: it captures the comparison functions and
  the IPython machinery before any student code runs, and restores them before each test;
- :mod:`.scan` reads the student's code outside the kernel and names tampering attempts;
- :mod:`.preprocessors` instruments the notebook with grader cells whose outcome a
  tampered kernel cannot fake, survives hostile notebooks, writes the grade record, and
  keeps hidden tests out of the feedback;
- :mod:`.record` reads and writes the per-notebook grade records.
"""
