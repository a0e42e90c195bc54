"""Grading the course with nbgrader, without trusting the student's kernel.

nbgrader is the engine; this package adds what a course that grades untrusted notebooks
needs, as nbgrader preprocessors named in the course's ``nbgrader_config.py`` (so plain
``nbgrader autograde`` grades exactly as ``autograd-course grade`` does):

- :mod:`.sandbox` starts the student's kernel in bubblewrap, with limits;
- :mod:`.judge` runs the test cells in the grader's process, reading the kernel as data;
- :mod:`.scan` reads the student's code outside the kernel and flags it for review;
- :mod:`.preprocessors` ties them into nbgrader, survives hostile notebooks, writes the grade
  record, and keeps hidden tests out of the feedback;
- :mod:`.record` reads and writes the per-notebook grade records.
"""
