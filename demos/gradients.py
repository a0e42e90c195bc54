"""Watch PyTorch fill in gradients.

t1 is a tensor we create ourselves with requires_grad=True (a leaf); t2 = t1 * t1 + 1 is
computed from it, and z adds up t2 to give one number. Before z.backward() neither tensor
has a gradient yet; afterwards t1.grad holds dz/dt1 = 2 * t1 and t2.grad holds dz/dt2 = 1.
Only t2 has a grad_fn, the function that made it, because t1 was not computed.
"""

# gradients.py

import numpy as np
import torch as T

x = np.array([1, 2, 3], dtype=np.float32)
t1 = T.tensor(x, dtype=T.float32, requires_grad=True)
t2 = t1 * t1 + 1
t2.retain_grad()  # t2 is not a leaf: keep its .grad
z = t2.sum()

print("\nTensor t1 values, grad, grad_fn: ")
print(t1)
print(t1.grad)
print(t1.grad_fn)

print("\nTensor t2 values, grad, grad_fn: ")
print(t2)
print(t2.grad)
print(t2.grad_fn)

print("\nExecuting backward()")
z.backward()

print("\nTensor t1 values, grad, grad_fn: ")
print(t1)
print(t1.grad)
print(t1.grad_fn)

print("\nTensor t2 values, grad, grad_fn: ")
print(t2)
print(t2.grad)
print(t2.grad_fn)
