"""A model with one weight, and the gradient of its loss.

The model predicts p = w * x for x = 2; the right answer is t = 7, the error is e = p - t
and the loss is L = e ** 2. With w = 3 the loss is 1. L.backward() works back from L to w
with the chain rule and stores dL/dw = 2 * e * x = -4 in w.grad.
"""

import torch

x, t = 2.0, 7.0
w = torch.tensor(3.0, requires_grad=True)
p = w * x          # prediction: 6
e = p - t          # error: -1
L = e ** 2         # loss: 1
L.backward()       # work backward from L
print(L.item(), w.grad.item())
