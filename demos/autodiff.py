"""Automatic differentiation, from the computation graph to an optimiser.

PyTorch records the operations on x as a computation graph while it computes
f(x) = mean((x + 2) ** 2 + 3); y.backward() then fills x.grad with the gradient of f.
A second backward pass adds to x.grad instead of replacing it. torch.no_grad() and
detach() give results that PyTorch does not record. Finally, torch.optim.SGD walks
downhill on f(x) = x ** 4 + x ** 2 + 10 * x, and the plot autodiff.png shows the
minimum it found.
"""

import matplotlib
import numpy as np
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Computational graph
x = torch.tensor([0., 1, 2], requires_grad=True)

a = x + 2
b = a ** 2
c = b + 3
y = c.mean()  # f(x) evaluated at the values stored in x

print(y)

# Backpropagation
y.backward()

print(x.grad)  # df/dx evaluated at the values stored in x

expected_grad = 2 * (x.detach() + 2) / x.numel()

assert torch.allclose(x.grad, expected_grad)

# A second backward pass adds to x.grad
a = x + 2
b = a ** 2
c = b + 3
y = c.mean()

y.backward()

print(x.grad)

# Disabling gradient tracking
x = torch.randn(5, requires_grad=True)

# Gradient is tracked
a = x * 2

# Tracking is stopped in the block
with torch.no_grad():
    z = x * 2

print("Does 'x' have a gradient?", x.requires_grad)
print("Does 'a' have a gradient?", a.requires_grad)
print("Does 'z' have a gradient?", z.requires_grad)

a = x * 2
z = a.detach()

print("Does 'a' have a gradient?", a.requires_grad)
print("Does 'z' have a gradient?", z.requires_grad)


# Optimization
def function(x):
    return x ** 4 + x ** 2 + 10 * x


x = torch.tensor(0.0, requires_grad=True)

optimizer = torch.optim.SGD([x], lr=0.05)

for i in range(10):
    optimizer.zero_grad()
    loss = function(x)
    loss.backward()
    optimizer.step()

    with torch.no_grad():
        print(f"Iteration {i+1:2d}: x = {x.item():.6f}, f(x) = {function(x).item():.7f}")

# Visualizing the result
t = np.linspace(-2.5, 1.5, 100)
f = function(torch.tensor(t)).numpy()
plt.plot(t, f, label="f(x) = x^4 + x^2 + 10x")
plt.plot(x.item(), function(x).item(), 'ro', label="minimum found by SGD")
plt.xlabel("x")
plt.ylabel("f(x)")
plt.title("Gradient descent on f(x)")
plt.legend()
plt.savefig("autodiff.png")
