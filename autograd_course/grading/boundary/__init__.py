"""The grader's side of the trust boundary: the judge, the kernel's provisioning
(sandbox, cgroups, warm kernels). What crosses it is data, never code the grader runs."""
