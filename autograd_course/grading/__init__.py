"""The grader: nbgrader, without trusting the student's kernel, at class scale.

nbgrader is the engine; the course adds nbgrader preprocessors named in the course's
``nbgrader_config.py`` (so plain ``nbgrader autograde`` grades exactly as
``autograd-course grade`` does), and what grading a class takes around them:

- :mod:`.pipeline` derives the course's preprocessor lists from nbgrader's defaults;
  :mod:`.preprocessors` (one class per module) ties the rest into nbgrader, survives hostile
  notebooks, writes the grade record, and keeps hidden tests out of the feedback;
- :mod:`.boundary`: :mod:`.boundary.sandbox` and :mod:`.boundary.provision` start the
  student's kernel in bubblewrap, with limits, and log and watch it; :mod:`.boundary.judge`
  runs the test cells in the grader's process, reading the kernel as data (over
  :mod:`autograd_course.kernel.wire`; the kernel side is :mod:`autograd_course.kernel.agent`);
- :mod:`.units`: what one unit's tests use in the judge (checks, reference computations);
  :mod:`.scan` reads the student's code outside the kernel and flags it for review;
- :mod:`.record`: the per-notebook grade records; :mod:`.course`: the course as nbgrader is
  configured for it (folders, gradebook URL, the grader's secret); :mod:`.release`: the
  student versions, the one way;
- :mod:`.intake` and :mod:`.zips` take submissions in (submitted/, zips of a course or an LMS);
  :mod:`.tasks`, :mod:`.runner` and :mod:`.gradebook` grade a class in worker processes or on
  a Dask cluster and merge the results into the gradebook, resumably; :mod:`.prepared` keeps
  the prepared courses they and :mod:`.selfcheck` grade in; :mod:`.selfcheck` grades one
  notebook as the instructor would, for a learner; :mod:`.report` writes the class
  report (``templates/report.html``).
"""
