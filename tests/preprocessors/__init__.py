"""Unit tests of the course's nbgrader preprocessors (autograd_course/grading/preprocessors/):
one module per preprocessor module, on small notebooks built in the test (:mod:`.course`),
``preprocess`` called directly, as in nbgrader's own ``nbgrader/tests/preprocessors``.

Not here: JudgedExecute (``execute.py``) needs a real kernel and the judge; it is covered
where kernels run (test_sandbox.py, test_grader_failures.py, test_containment.py,
test_zygote.py, with tests/support/judged.py) and by the class-grading tests.
"""
