"""The grader: nbgrader, without trusting the student's kernel, at class scale.

nbgrader is the engine; this package adds what a course that grades untrusted notebooks
needs, as nbgrader preprocessors named in the course's ``nbgrader_config.py`` (so plain
``nbgrader autograde`` grades exactly as ``autograd-course grade`` does), and what grading a
class takes around them:

- :mod:`.pipeline` derives the course's preprocessor lists from nbgrader's defaults;
- :mod:`.sandbox` starts the student's kernel in bubblewrap, with limits;
- :mod:`.judge` runs the test cells in the grader's process, reading the kernel as data
  (over :mod:`autograd_course.kernel.wire`; the kernel side is :mod:`autograd_course.kernel.agent`);
- :mod:`.units` holds what one unit's tests use in the judge: checks, reference computations;
- :mod:`.scan` reads the student's code outside the kernel and flags it for review;
- :mod:`.preprocessors` ties them into nbgrader, survives hostile notebooks, writes the grade
  record, and keeps hidden tests out of the feedback (one class per module);
- :mod:`.kernel` starts the grading kernel from the sandbox's command line, logs and watches it
  (the one module that relies on private parts of jupyter_client and nbclient);
- :mod:`.record` reads and writes the per-notebook grade records;
- :mod:`.course` is the course as nbgrader is configured for it (folders, gradebook URL,
  the grader's secret);
- :mod:`.release` makes the student versions, the one way;
- :mod:`.tasks`, :mod:`.runner` and :mod:`.gradebook` grade a class in worker processes or on a
  Dask cluster and merge the results into the gradebook, resumably;
- :mod:`.selfcheck` grades one notebook as the instructor would, for a learner;
- :mod:`.report` writes the class report (``templates/report.html``).
"""
