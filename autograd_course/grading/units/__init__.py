"""What the tests of one unit use in the judge: checks and the grader's reference
computations (``uNN_name``). The student's kernel never sees them."""
