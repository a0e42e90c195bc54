"""One backward pass gives the gradient for every weight.

Three weights, three inputs and one loss: L = (sum of w * x - 5) ** 2. A single call to
L.backward() fills w.grad with all three derivatives at once. The error is -2, so each
gradient is 2 * (-2) * x.
"""

import torch

w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
x = torch.tensor([3.0, 1.0, 4.0])
L = ((w * x).sum() - 5.0) ** 2   # one number from three weights
L.backward()
print(L.item())
print(w.grad)
