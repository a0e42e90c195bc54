"""Two habits: clear old gradients, and switch recording off when you do not need it.

Calling .backward() twice adds the second gradient to the first (-4, then -8), so training
code clears .grad before each step. Inside torch.no_grad() PyTorch records nothing, so the
loss computed there does not require a gradient.
"""

import torch

w = torch.tensor(3.0, requires_grad=True)
for step in range(2):
    L = (w * 2.0 - 7.0) ** 2
    L.backward()
    print("after backward", step + 1, "w.grad =", w.grad.item())
w.grad = None                  # clear it before the next step

with torch.no_grad():          # no recording inside this block
    L = (w * 2.0 - 7.0) ** 2
print(L.requires_grad)
