"""The grader: nbgrader, without trusting the student's kernel, at class scale.

nbgrader is the engine; the course adds nbgrader preprocessors named in the course's
``nbgrader_config.py`` (so plain ``nbgrader autograde`` grades exactly as
``autograd-course grade`` does), and what grading a class takes around them:

- the pipeline: :mod:`.pipeline` (the preprocessor lists), :mod:`.preprocessors`;
- the trust boundary, :mod:`.boundary`: :mod:`.boundary.sandbox` and :mod:`.boundary.provision`
  (the student's kernel, sandboxed, logged and watched), :mod:`.boundary.judge` (the test cells,
  in the grader's process, reading the kernel as data: :mod:`autograd_course.kernel.wire`; the
  kernel side is :mod:`autograd_course.kernel.agent`);
- judging: :mod:`.units` (what one unit's tests use), :mod:`.scan` (flags code for review);
- the course: :mod:`.record` (grade records), :mod:`.course` (folders, gradebook URL, secret),
  :mod:`.release` (the student versions, the one way);
- a class: :mod:`.intake` and :mod:`.zips` (submissions in), :mod:`.tasks`, :mod:`.runner` and
  :mod:`.gradebook` (graded in workers, merged resumably), :mod:`.prepared` (prepared courses),
  :mod:`.selfcheck` (one notebook, for a learner), :mod:`.report` (``templates/report.html``).

Every module, by where it runs: docs/authoring.md.
"""
