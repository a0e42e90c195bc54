"""What a graded kernel may import: the only package folder the grading sandbox mounts.

Everything here is visible to students' code; nothing here imports the grader
(``grading``), the lesson tools (``lab``) or the answer catalogue (``testkit``).
"""
