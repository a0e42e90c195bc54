"""Typical wrong answers to assignment 11, backpropagation by hand: a small network's backward,
a scale and a bias that broadcast, an embedding with repeats and padding, a prediction of what a
chain saves.

:data:`WRONG` holds the wrong answers with the diagnosis each must get; :data:`RIGHT` correct
answers in other styles than the reference (einsum, layer norm's backward step by step,
``sum_to_size``, ``index_add_``, one-hot products, ``scatter_add_``, loops...), each worth
full marks; :data:`FLAGGED` answers that get right values with the autograd that questions 1
to 3 forbid: they keep the points, and the code scan flags them for a reviewer
(tests/test_flagged_answers.py).
"""

from __future__ import annotations

import textwrap

from autograd_course.testkit.answers import Wrong, function, wrong

_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
_MLP = "def mlp_backward(params, x, y, act, act_grad):"
_BROADCAST = "def broadcast_backward(x, g, b, grad_y):"
_EMBEDDING = "def embedding_backward(indices, weight_shape, grad_out, padding_idx):"

_RESULT = {"W1": "d_z.T @ x", "b1": "d_z.sum(dim=0)", "W2": "d_r.T @ h", "b2": "d_r.sum(dim=0)",
           "gamma": "(d_u * normed).sum(dim=0)", "beta": "d_u.sum(dim=0)",
           "W3": "d_logits.T @ u", "b3": "d_logits.sum(dim=0)"}
_LN = ("inv_std * (d_normed - d_normed.mean(dim=1, keepdim=True) "
       "- normed * (d_normed * normed).mean(dim=1, keepdim=True))")


def _mlp(h: str = "act(z)",
         std: str = "torch.sqrt(centred.pow(2).mean(dim=1, keepdim=True) + 1e-5)",
         onehot: str = "torch.nn.functional.one_hot(y, num_classes=logits.shape[1])",
         d_logits: str = "(torch.softmax(logits, dim=1) - onehot) / x.shape[0]",
         d_normed: str = "d_u * gamma", d_r: str = _LN,
         d_z: str = "d_r + (d_r @ W2) * act_grad(z)", dtype: str = "", **result: str) -> str:
    """The reference of question 1 with one of its steps replaced: the activation, the
    standard deviation, the one-hot, the gradients of the logits, of n, of r, of z, or an
    entry of the result (``W1="x.T @ d_z"``); ``dtype`` is added to every entry."""
    entries = ", ".join(f'"{k}": ({result.get(k, v)}){dtype}' for k, v in _RESULT.items())
    return function(
        _MLP,
        f"""
        W1, W2, W3, gamma = params["W1"], params["W2"], params["W3"], params["gamma"]
        z = x @ W1.T + params["b1"]
        h = {h}
        r = z + h @ W2.T + params["b2"]
        centred = r - r.mean(dim=1, keepdim=True)
        inv_std = 1 / {std}
        normed = centred * inv_std
        u = gamma * normed + params["beta"]
        logits = u @ W3.T + params["b3"]
        onehot = {onehot}
        d_logits = {d_logits}
        d_u = d_logits @ W3
        d_normed = {d_normed}
        d_r = {d_r}
        d_z = {d_z}
        return {{{entries}}}
        """,
    )


def _broadcast(back_to: str, result: str = "back_to(grad_y * g, x), back_to(grad_y * x, g), "
               "back_to(grad_y, b)") -> str:
    """Question 2 with the body of its ``back_to(grad, like)`` (summing back to a shape) or its
    result replaced."""
    body = textwrap.indent(textwrap.dedent(back_to).strip("\n"), "        ")
    return f"{_BROADCAST}\n    def back_to(grad, like):\n{body}\n\n    return {result}"


_SUM_BACK = """
while grad.dim() > like.dim():
    grad = grad.sum(dim=0)
stretched = [i for i, size in enumerate(like.shape) if size == 1 and grad.shape[i] > 1]
return grad.sum(dim=stretched, keepdim=True) if stretched else grad
"""


def _embedding(keep: str = "rows != padding_idx % weight_shape[0]",
               check: str = "padding_idx is not None",
               zeros: str = "grad_out.new_zeros(weight_shape)",
               add: str = "grad_weight.index_put_((rows,), grads, accumulate=True)") -> str:
    """The reference of question 3 with its padding test, its mask, its zeros or its
    accumulation replaced."""
    return function(_EMBEDDING, f"""
        rows = indices.reshape(-1)
        grads = grad_out.reshape(rows.numel(), weight_shape[1])
        if {check}:
            used = {keep}
            rows, grads = rows[used], grads[used]
        grad_weight = {zeros}
        return {add}
        """)


_SAVED = ('saved = {{"x": {x}, "Wt": {Wt}, "z": {z}, "h": {h}, "s": {s}, "q": {q}, "e": {e}, '
          '"t": {t}}}')
_RIGHT_SAVED = {"x": True, "Wt": False, "z": False, "h": True, "s": True, "q": False,
                "e": True, "t": True}


def _predict(**saved: object) -> str:
    """Question 4's answer with some predictions changed."""
    return _SAVED.format(**{**_RIGHT_SAVED, **saved})


def _shapes(shapes: str = '{"Wt": (5, 3), "s": (8, 1), "b": (3,)}') -> str:
    """Question 5's answer."""
    return f"grad_shapes = {shapes}"


#: Words that would name one of the predictions of questions 4 and 5 in the judge's message.
_NAMES_A_PREDICTION = ["'x'", "'Wt'", "'h'", "'e'", "'s'", "'b'", "(5, 3)", "(8, 1)", "(3,)"]

_AUTOGRAD = function(_MLP, """
    p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    mlp_loss(p, x, y, act).backward()
    return {k: v.grad for k, v in p.items()}
    """)

#: The visible examples' gradients of question 1, by the label y[2] (a hard-coded answer
#: types them in).
_KNOWN = {
    3: {'W1': [[-0.147295625051, -0.248523711863],
                [-0.0720028339941, 0.572142084046],
                [0.183677027216, -0.236120630344]],
         'b1': [0.111510412257, -0.0546440894628, 0.0133012181915],
         'W2': [[0.0077412612269, -0.108010097178, 0.0219668768647],
                [-0.0686587482239, 0.0978473407373, 0.0597201620365],
                [0.060917486997, 0.0101627564408, -0.0816870389012]],
         'b2': [0.0841313842202, -0.0513120862747, -0.0328192979455],
         'gamma': [0.277449219849, 0.926954486102, 0.373175798342],
         'beta': [-0.221709066136, 0.600209172766, -0.309544113372],
         'W3': [[0.00341306425712, -0.123469429788, 0.369130235627],
                [-0.17266159039, 0.0630744125771, 0.067320850535],
                [-0.0771961183668, 0.21530016954, -0.544235723061],
                [0.2464446445, -0.154905152329, 0.107784636899]],
         'b3': [-0.0768308529705, 0.0489659463774, 0.282587839842, -0.254722933249]},
     1: {'W1': [[0.478439415916, 0.511092481731],
                [-0.394994791362, 0.159539100818],
                [-0.220609503199, -0.880229179383]],
         'b1': [0.342389824235, -0.564206318726, 0.0910017489639],
         'W2': [[0.287866561823, 0.411479136355, 0.0931337421448],
                [-0.322758406036, -0.147105286723, -0.128877539981],
                [0.0348918442133, -0.264373849632, 0.0357437978357]],
         'b2': [0.301316724223, -0.30066693465, -0.000649789572322],
         'gamma': [-0.0279042366526, 0.45562308514, 0.318681331225],
         'beta': [-0.0304539170263, 0.128764133147, -0.259776675402],
         'W3': [[0.0901877086255, -0.0329541674126, -0.0234178311394],
                [0.150751185876, -0.155116533041, 0.24489403962],
                [-0.269884853667, 0.238481712919, -0.321340683458],
                [0.0289459591657, -0.0504110124655, 0.0998644749778]],
         'b3': [-0.260024591222, -0.11342438625, 0.214456504066, 0.158992473406]}}

WRONG: dict[str, list[Wrong]] = {
    "q1_mlp_backward": [
        wrong("left blank", function(_MLP, _STUB), "blank", ["NotImplementedError"]),
        wrong(
            "loss.backward() on mlp_loss",
            _AUTOGRAD,
            "autograd",
            ["uses autograd", "by hand"],
            breaks="do not call autograd in your function: no `backward()`",
        ),
        wrong(
            "autograd switched back on with torch.enable_grad()",
            function(_MLP, """
                with torch.enable_grad():
                    p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
                    mlp_loss(p, x, y, act).backward()
                return {k: v.grad for k, v in p.items()}
                """),
            "slope_one",
            ["slope was taken as 1", "act_grad(z)"],
            breaks="plain autograd through `act` sees a slope of 1 and gets wrong gradients",
        ),
        wrong(
            "torch.func.grad of mlp_loss",
            function(_MLP, """
                return torch.func.grad(lambda p: mlp_loss(p, x, y, act))(dict(params))
                """),
            "slope_one",
            ["slope was taken as 1"],
            breaks="plain autograd through `act` sees a slope of 1 and gets wrong gradients",
        ),
        wrong(
            "the loss summed, not averaged: no 1/N",
            _mlp(d_logits="torch.softmax(logits, dim=1) - onehot"),
            "no_mean",
            ["N times", "MEAN"],
        ),
        wrong(
            "the softmax alone as the logits' gradient",
            _mlp(d_logits="torch.softmax(logits, dim=1) / x.shape[0]"),
            "no_onehot",
            ["one-hot of the labels"],
        ),
        wrong(
            "gamma's gradient from r, not from the normalised rows",
            _mlp(gamma="(d_u * r).sum(dim=0)"),
            "gamma_from_r",
            ["grad_u * n"],
        ),
        wrong(
            "gamma left out of n's gradient",
            _mlp(d_normed="d_u"),
            "gamma_missing",
            ["grad_n = grad_u * gamma"],
        ),
        wrong(
            "layer norm's mean and variance taken as constants",
            _mlp(d_r="inv_std * d_normed"),
            "ln_scale_only",
            ["as if the row's mean and variance were constants"],
        ),
        wrong(
            "layer norm without the variance's term",
            _mlp(d_r="inv_std * (d_normed - d_normed.mean(dim=1, keepdim=True))"),
            "ln_no_variance",
            ["variance's term"],
        ),
        wrong(
            "layer norm without the mean's term",
            _mlp(d_r="inv_std * (d_normed - normed * (d_normed * normed).mean(dim=1, "
                 "keepdim=True))"),
            "ln_no_mean",
            ["mean's term"],
        ),
        wrong(
            "W2's gradient transposed (square: the shape is right)",
            _mlp(W2="h.T @ d_r"),
            "w2_transposed",
            ["transposed", "grad_out.T @ inp"],
        ),
        wrong(
            "W1's gradient transposed",
            _mlp(W1="x.T @ d_z"),
            "transposed",
            ["the transpose of the weight's", "grad_out.T @ inp"],
            breaks="each a float64 tensor of the parameter's shape",
        ),
        wrong(
            "the biases' gradients not summed over the batch",
            _mlp(b1="d_z", b2="d_r", b3="d_logits"),
            "bias_not_summed",
            ["one row per sample", "sum over the batch"],
            breaks="each a float64 tensor of the parameter's shape",
        ),
        wrong(
            "the biases' gradients averaged over the batch",
            _mlp(b1="d_z.mean(dim=0)", b2="d_r.mean(dim=0)", beta="d_u.mean(dim=0)",
                 b3="d_logits.mean(dim=0)"),
            "bias_mean",
            ["averaged over the batch", "SUM over the rows"],
        ),
        wrong(
            "the activation's slope left out (as if act were the identity)",
            _mlp(d_z="d_r + d_r @ W2"),
            "slope_one",
            ["slope was taken as 1"],
        ),
        wrong(
            "act_grad of the activation's output",
            _mlp(d_z="d_r + (d_r @ W2) * act_grad(h)"),
            "slope_of_output",
            ["act_grad(z)"],
        ),
        wrong(
            "the residual path forgotten",
            _mlp(d_z="(d_r @ W2) * act_grad(z)"),
            "no_residual",
            ["residual path is missing"],
        ),
        wrong(
            "softsign written in, the act and act_grad given ignored",
            _mlp(h="z / (1 + z.abs())", d_z="d_r + (d_r @ W2) / (1 + z.abs()) ** 2"),
            "fixed_act",
            ["gradients for softsign"],
            breaks="call them, as the tests pass other activations than `softsign`",
        ),
        wrong(
            "one_hot without num_classes",
            _mlp(onehot="torch.nn.functional.one_hot(y)"),
            "broadcast",
            ["num_classes=logits.shape[1]"],
            breaks="a batch may lack some of the classes",
        ),
        wrong(
            "layer norm with torch.var, which divides by H - 1",
            _mlp(std="torch.sqrt(r.var(dim=1, keepdim=True) + 1e-5)"),
            "ln_unbiased",
            ["divides by H - 1", "unbiased=False", "correction=0"],
            breaks="the variance divides by $H$",
        ),
        wrong(
            "layer norm's variance over H - 1, its backward derived step by step for it",
            function(_MLP, """
                p = params
                H = p["W1"].shape[0]
                z = x @ p["W1"].T + p["b1"]
                h = act(z)
                r = z + h @ p["W2"].T + p["b2"]
                diff = r - r.mean(1, keepdim=True)
                var = (diff ** 2).sum(1, keepdim=True) / (H - 1)
                std = (var + 1e-5) ** 0.5
                normed = diff / std
                u = p["gamma"] * normed + p["beta"]
                logits = u @ p["W3"].T + p["b3"]
                d_logits = torch.softmax(logits, 1)
                d_logits[torch.arange(x.shape[0]), y] -= 1
                d_logits = d_logits / x.shape[0]
                d_u = d_logits @ p["W3"]
                d_normed = d_u * p["gamma"]
                d_std = -(d_normed * diff / std ** 2).sum(1, keepdim=True)
                d_diff = d_normed / std + d_std / (2 * std) * 2 * diff / (H - 1)
                d_r = d_diff - d_diff.mean(1, keepdim=True)
                d_z = d_r + (d_r @ p["W2"]) * act_grad(z)
                return {"W1": d_z.T @ x, "b1": d_z.sum(0), "W2": d_r.T @ h, "b2": d_r.sum(0),
                        "gamma": (d_u * normed).sum(0), "beta": d_u.sum(0),
                        "W3": d_logits.T @ u, "b3": d_logits.sum(0)}
                """),
            "ln_unbiased",
            ["divides by H - 1", "unbiased=False"],
            breaks="the variance divides by $H$",
        ),
        wrong(
            "float32 gradients",
            _mlp(dtype=".float()"),
            "dtype",
            ["float32 instead of torch.float64"],
            breaks="each a float64 tensor of the parameter's shape",
        ),
        wrong(
            "beta left out",
            _mlp().replace('"beta": (d_u.sum(dim=0)), ', ""),
            "missing",
            ["no entry 'beta'"],
        ),
        wrong("no return", _mlp().replace("    return {", "    _ = {"), "none",
              ["did your function return"]),
        wrong(
            "a list of gradients",
            _mlp().replace("return {", "return list({").replace(")}", ")}.values())"),
            "type",
            ["should be a dict"],
        ),
        wrong(
            "the visible examples' gradients, typed in",
            function(_MLP, """
                known = KNOWN[int(y[2])]
                return {k: torch.tensor(v, dtype=torch.float64) for k, v in known.items()}
                """).replace("KNOWN", repr(_KNOWN)),
            ("values", "fixed_act", "no_mean", "shape", "transposed", "bias_not_summed",
             "raised"),
            hidden_only="hard-coded",
        ),
    ],
    "q2_broadcast_backward": [
        wrong("left blank", function(_BROADCAST, _STUB), "blank", ["NotImplementedError"]),
        wrong(
            "autograd",
            function(_BROADCAST, """
                leaves = [t.detach().clone().requires_grad_(True) for t in (x, g, b)]
                (leaves[0] * leaves[1] + leaves[2]).backward(grad_y)
                return tuple(t.grad for t in leaves)
                """),
            "autograd",
            ["uses autograd"],
            breaks="Write it by hand, without autograd",
        ),
        wrong(
            "sum(dim=()) where nothing is to be summed: it sums everything",
            _broadcast("""
lead = tuple(range(grad.dim() - like.dim()))
grad = grad.sum(dim=lead)
stretched = [i for i, size in enumerate(like.shape) if size == 1 and grad.shape[i] > 1]
return grad.sum(dim=stretched, keepdim=True) if stretched else grad
"""),
            "dim_out_of_range",
            ["sums over every dimension"],
        ),
        wrong(
            "sum(dim=[], keepdim=True) where there is nothing to sum: a single number",
            _broadcast("""
while grad.dim() > like.dim():
    grad = grad.sum(dim=0)
stretched = [i for i, size in enumerate(like.shape) if size == 1 and grad.shape[i] > 1]
return grad.sum(dim=stretched, keepdim=True)
"""),
            "summed_all",
            ["summed over every dimension", "dim=()"],
        ),
        wrong(
            "sum(dim=[], keepdim=True) then reshape: a single number to reshape",
            function(_BROADCAST, """
                def reduce(grad, shape):
                    lead = grad.dim() - len(shape)
                    dims = list(range(lead)) + [lead + i for i, n in enumerate(shape)
                                                if n == 1 and grad.shape[lead + i] != 1]
                    return grad.sum(dim=dims, keepdim=True).reshape(shape)

                return reduce(grad_y * g, x.shape), reduce(grad_y * x, g.shape), reduce(
                    grad_y, b.shape)
                """),
            "summed_all",
            ["sums over EVERY dimension", "t.sum(dim=[])", "keep the tensor as it is"],
        ),
        wrong(
            "keepdim lost",
            _broadcast("""
while grad.dim() > like.dim():
    grad = grad.sum(dim=0)
stretched = [i for i, size in enumerate(like.shape) if size == 1 and grad.shape[i] > 1]
return grad.sum(dim=stretched) if stretched else grad
"""),
            "keepdim",
            ["keepdim=True"],
            breaks="each of its tensor's shape and dtype",
        ),
        wrong(
            "nothing summed: y's shape",
            _broadcast("return grad"),
            "not_reduced",
            ["it has y's shape"],
            breaks="each of its tensor's shape and dtype",
        ),
        wrong(
            "the mean over the broadcast dimensions",
            _broadcast("""
while grad.dim() > like.dim():
    grad = grad.mean(dim=0)
stretched = [i for i, size in enumerate(like.shape) if size == 1 and grad.shape[i] > 1]
return grad.mean(dim=stretched, keepdim=True) if stretched else grad
"""),
            "mean",
            ["MEAN", "SUM"],
        ),
        wrong(
            "the mean over the dimensions lacking at the front, the sum over those of size 1",
            _broadcast("""
while grad.dim() > like.dim():
    grad = grad.mean(dim=0)
stretched = [i for i, size in enumerate(like.shape) if size == 1 and grad.shape[i] > 1]
return grad.sum(dim=stretched, keepdim=True) if stretched else grad
"""),
            "mean_leading",
            ["MEAN over the dimensions the tensor lacks at the front", "SUMS"],
        ),
        wrong(
            "the sum over the dimensions lacking at the front, the mean over those of size 1",
            _broadcast("""
while grad.dim() > like.dim():
    grad = grad.sum(dim=0)
stretched = [i for i, size in enumerate(like.shape) if size == 1 and grad.shape[i] > 1]
return grad.mean(dim=stretched, keepdim=True) if stretched else grad
"""),
            "mean",
            ["MEAN over the dimensions along which the tensor was repeated", "SUM"],
        ),
        wrong(
            "the shapes lined up from the left: a tensor's missing dimensions taken at the end",
            function(_BROADCAST, """
                def reduce(grad, shape):
                    padded = tuple(shape) + (1,) * (grad.dim() - len(shape))
                    for dim, size in enumerate(padded):
                        if size == 1 and grad.shape[dim] != 1:
                            grad = grad.sum(dim, keepdim=True)
                    return grad.reshape(shape)

                return reduce(grad_y * g, x.shape), reduce(grad_y * x, g.shape), reduce(
                    grad_y, b.shape)
                """),
            "left_aligned",
            ["lined up from the LEFT", "lines them up from the right", "FIRST dimensions"],
            breaks="their shapes are lined up from the right",
        ),
        wrong(
            "g's gradient without its factor x",
            _broadcast(_SUM_BACK, "back_to(grad_y * g, x), back_to(grad_y, g), "
                       "back_to(grad_y, b)"),
            "no_x",
            ["without the factor x"],
        ),
        wrong(
            "x's gradient without its factor g",
            _broadcast(_SUM_BACK, "back_to(grad_y, x), back_to(grad_y * x, g), "
                       "back_to(grad_y, b)"),
            "no_g",
            ["without the factor g"],
        ),
        wrong(
            "only the size-1 dimensions summed, not the missing leading ones",
            _broadcast("""
stretched = [i for i, size in enumerate(like.shape) if size == 1 and grad.shape[i] > 1]
return grad.sum(dim=stretched, keepdim=True) if stretched else grad
"""),
            "wrong_dims",
            ["other dimensions", "lacks at the front"],
            breaks="may have fewer dimensions than `y`",
        ),
        wrong(
            "x taken to have y's shape",
            _broadcast(_SUM_BACK, "grad_y * g, back_to(grad_y * x, g), "
                       "back_to(grad_y, b)"),
            "not_reduced",
            ["it has y's shape"],
            breaks="`x` too",
        ),
        wrong(
            "the dimensions of the first example written in",
            function(_BROADCAST, """
                return (grad_y * g, (grad_y * x).sum(dim=(0, 2), keepdim=True),
                        grad_y.sum(dim=1, keepdim=True))
                """),
            ("not_reduced", "wrong_dims", "keepdim", "values", "summed_all", "raised"),
            breaks="Your function gets the shapes from the tensors",
        ),
        wrong(
            "computed in float64 whatever the inputs' dtype",
            _broadcast(_SUM_BACK, "back_to(grad_y.double() * g.double(), x), "
                       "back_to(grad_y.double() * x.double(), g), back_to(grad_y.double(), "
                       "b)"),
            "dtype",
            ["must have the inputs' dtype, torch.float32 here", ".double()"],
            not_says=["default"],
            breaks="each of its tensor's shape and dtype",
        ),
        wrong(
            "float32 zeros added into, for float64 inputs",
            _broadcast("""
out = torch.zeros(like.shape)
out += grad.sum_to_size(like.shape)
return out
"""),
            "dtype",
            ["must have the inputs' dtype, torch.float64 here", "PyTorch's default",
             "dtype=grad_y.dtype"],
            breaks="each of its tensor's shape and dtype",
        ),
        wrong("a list of two", _broadcast(_SUM_BACK, "[back_to(grad_y * g, x), "
                                          "back_to(grad_y * x, g)]"), "shape", ["3 items"]),
        wrong(
            "the visible examples' answers, typed in",
            function(_BROADCAST, """
                if x.dtype == torch.float32:
                    return (grad_y * g, torch.tensor([[[6.5], [4.5], [-9.0]]]),
                            torch.tensor([[[0.0, -2.0]], [[-2.0, 1.0]]]))
                d = torch.float64
                return (torch.tensor([[-3.5], [-2.25], [0.75]], dtype=d),
                        torch.tensor([[[-0.25, -0.5]], [[3.5, -0.25]]], dtype=d),
                        torch.tensor([-2.5], dtype=d))
                """),
            ("shape", "values", "not_reduced", "wrong_dims", "keepdim", "summed_all", "mean",
             "no_x", "no_g", "dtype", "zero", "sign", "factor", "fraction"),
            hidden_only="hard-coded",
        ),
    ],
    "q3_embedding_backward": [
        wrong("left blank", function(_EMBEDDING, _STUB), "blank", ["NotImplementedError"]),
        wrong(
            "autograd through F.embedding",
            function(_EMBEDDING, """
                weight = torch.zeros(weight_shape, dtype=grad_out.dtype, requires_grad=True)
                out = torch.nn.functional.embedding(indices, weight, padding_idx=padding_idx)
                out.backward(grad_out)
                return weight.grad
                """),
            "autograd",
            ["uses autograd"],
            breaks="Write it by hand, without autograd",
        ),
        wrong(
            "an assignment: repeated indices keep one gradient",
            _embedding(add="grad_weight.index_put_((rows,), grads)"),
            "assignment",
            ["add up", "index_add_"],
            breaks="a row used at several positions gets the sum of those positions' "
            "gradients",
        ),
        wrong(
            "dW[rows] += grads: the repeats are lost too",
            function(_EMBEDDING, """
                rows = indices.reshape(-1)
                grads = grad_out.reshape(rows.numel(), weight_shape[1])
                grad_weight = grad_out.new_zeros(weight_shape)
                grad_weight[rows] += grads
                if padding_idx is not None:
                    grad_weight[padding_idx] = 0
                return grad_weight
                """),
            "assignment",
            ["add up"],
            breaks="a row used at several positions gets the sum of those positions' "
            "gradients",
        ),
        wrong(
            "the padding row not zeroed",
            _embedding(check="False"),
            "padding_kept",
            ["padding row only", "never set to 0"],
            not_says=["if padding_idx:"],
            breaks="the row `padding_idx` gets 0",
        ),
        wrong(
            "the padding row zeroed before the rows are added: they land in it again",
            function(_EMBEDDING, """
                rows = indices.reshape(-1)
                grads = grad_out.reshape(rows.numel(), weight_shape[1])
                grad_weight = grad_out.new_zeros(weight_shape)
                if padding_idx is not None:
                    grad_weight[padding_idx] = 0
                return grad_weight.index_add_(0, rows, grads)
                """),
            "padding_kept",
            ["set to 0 before the rows were added", "put the padding positions' gradients back"],
            not_says=["if padding_idx:"],
            breaks="the row `padding_idx` gets 0",
        ),
        wrong(
            "if padding_idx: skips the padding index 0",
            _embedding(check="padding_idx"),
            "padding_zero",
            ["padding_idx = 0 is a padding index too", "is not None"],
            breaks="the row `padding_idx` gets 0",
        ),
        wrong(
            "a negative padding_idx compared with the indices as it is",
            _embedding(keep="rows != padding_idx"),
            "padding_negative",
            ["counts from the end"],
            breaks="a negative `padding_idx` counts from the end",
        ),
        wrong(
            "a negative padding_idx taken as the row V + padding_idx - 1",
            _embedding(keep="rows != (padding_idx if padding_idx >= 0 "
                       "else weight_shape[0] + padding_idx - 1)"),
            "padding_negative",
            ["counts from the end", "the row V + padding_idx", "right with padding_idx="],
            breaks="a negative `padding_idx` counts from the end",
        ),
        wrong(
            "any negative padding_idx taken as the last row, V - 1",
            _embedding(keep="rows != (padding_idx if padding_idx >= 0 "
                       "else weight_shape[0] - 1)"),
            "padding_negative",
            ["counts from the end", "the row V + padding_idx", "-2 the row V - 2"],
            breaks="a negative `padding_idx` counts from the end",
        ),
        wrong(
            "only the first position of each row of indices: indices[:, 0]",
            function(_EMBEDDING, """
                grad_weight = grad_out.new_zeros(weight_shape)
                grad_weight.index_add_(0, indices[:, 0], grad_out[:, 0])
                if padding_idx is not None:
                    grad_weight[padding_idx] = 0
                return grad_weight
                """),
            "values",
            ["wrong values", "flatten indices to one long vector"],
            not_says=["add up", "assignment"],
        ),
        wrong(
            "dW[padding_idx] = 0 with padding_idx None",
            function(_EMBEDDING, """
                rows = indices.reshape(-1)
                grads = grad_out.reshape(rows.numel(), weight_shape[1])
                grad_weight = grad_out.new_zeros(weight_shape).index_add_(0, rows, grads)
                grad_weight[padding_idx] = 0
                return grad_weight
                """),
            "none_padding",
            ["no row is padding", "dW[None]"],
            breaks="`None` means that no row is padding",
        ),
        wrong(
            "float32 zeros for float64 gradients",
            _embedding(zeros="torch.zeros(weight_shape)"),
            "dtype",
            ["grad_out.new_zeros"],
            breaks="of grad_out's dtype",
        ),
        wrong(
            "float64 zeros whatever grad_out's dtype",
            _embedding(zeros="torch.zeros(weight_shape, dtype=torch.float64)",
                       add="grad_weight.index_put_((rows,), grads.double(), accumulate=True)"),
            "dtype",
            ["has dtype torch.float64, grad_out has torch.float32", "grad_out.new_zeros"],
            breaks="of grad_out's dtype",
        ),
        wrong(
            "one_hot without num_classes: too few rows",
            function(_EMBEDDING, """
                rows = indices.reshape(-1)
                grads = grad_out.reshape(rows.numel(), -1)
                if padding_idx is not None:
                    grads = grads * (rows != padding_idx % weight_shape[0]).unsqueeze(1)
                return torch.nn.functional.one_hot(rows).T.to(grad_out.dtype) @ grads
                """),
            "too_few_rows",
            ["rows that no position uses", "minlength"],
            breaks="a row never used gets 0",
        ),
        wrong(
            "one row per position",
            function(_EMBEDDING, """
                return grad_out.reshape(-1, weight_shape[1])
                """),
            "per_position",
            ["one row per position"],
        ),
        wrong(
            "each row the mean of its positions' gradients",
            function(_EMBEDDING, """
                rows = indices.reshape(-1)
                grads = grad_out.reshape(rows.numel(), weight_shape[1])
                total = grad_out.new_zeros(weight_shape).index_add_(0, rows, grads)
                count = torch.bincount(rows, minlength=weight_shape[0]).clamp(min=1)
                total = total / count.unsqueeze(1).to(total.dtype)
                if padding_idx is not None:
                    total[padding_idx] = 0
                return total
                """),
            "mean",
            ["mean of its positions' gradients", "SUM"],
        ),
        wrong(
            "the visible examples' answers, typed in",
            function(_EMBEDDING, """
                known = {0: [[0.0, 0.0, 0.0], [-1.0, -3.0, -1.5], [0.0, 0.0, 0.0],
                             [-1.5, -0.5, 0.5], [1.0, 1.5, -1.5]],
                         -1: [[-0.5, 0.0], [0.0, 0.0], [-2.0, -0.5], [0.0, 0.0]],
                         -2: [[0.0, 0.5], [0.5, 1.0], [0.0, 0.0], [0.0, 0.0], [-2.5, -1.5]],
                         None: [[-1.0, -0.25], [0.25, 0.5], [0.75, -0.75], [0.0, 0.0]]}
                answer = torch.zeros(weight_shape, dtype=grad_out.dtype)
                value = torch.tensor(known.get(padding_idx, [[0.0]]), dtype=grad_out.dtype)
                if value.shape == answer.shape:
                    answer = value
                return answer
                """),
            ("values", "padding", "padding_kept", "padding_zero", "padding_negative",
             "assignment", "mean", "zero", "none_padding", "sign",
             "factor", "fraction"),
            hidden_only="hard-coded",
        ),
    ],
    "q4_predict_saved": [
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
        wrong(
            "the matrix product thought to save both factors",
            _predict(Wt=True),
            "predictions",
            ["1 of the 8 predictions in saved is wrong", "does not say which"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "tanh and exp thought to save their inputs",
            _predict(z=True, q=True, e=False),
            "predictions",
            ["3 of the 8 predictions"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "the product with a constant thought to save e, not t",
            _predict(t=False),
            "predictions",
            ["1 of the 8 predictions"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "everything saved",
            _predict(Wt=True, z=True, q=True),
            "predictions",
            ["3 of the 8 predictions"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong("a key missing", _predict().replace(', "t": True', ""), "shape",
              ["the keys"]),
        wrong("a list", 'saved = [True, False, False, True, True, False, True, True]', "shape",
              ["should be a dict"]),
        wrong("yes and no", _predict(x='"yes"'), "type", ["True or False"]),
    ],
    "q5_predict_shapes": [
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
        wrong(
            "s's gradient thought to have the broadcast shape, b's the batch's",
            _shapes('{"Wt": (5, 3), "s": (8, 3), "b": (8, 3)}'),
            "predictions",
            ["2 of the 3 predictions in grad_shapes are wrong", "does not say which"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "Wt's gradient given W's shape",
            _shapes('{"Wt": (3, 5), "s": (8, 1), "b": (3,)}'),
            "predictions",
            ["1 of the 3 predictions"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "s's summed dimension dropped",
            _shapes('{"Wt": (5, 3), "s": (8,), "b": (3,)}'),
            "predictions",
            ["1 of the 3 predictions"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong("shapes as lists", _shapes('{"Wt": [5, 3], "s": [8, 1], "b": [3]}'), "type",
              ["tuple of ints"]),
        wrong("a key missing", _shapes('{"Wt": (5, 3), "s": (8, 1)}'), "shape", ["the keys"]),
    ],
}

RIGHT: dict[str, list[tuple[str, str]]] = {
    "q1_mlp_backward": [
        (
            "layer norm's backward step by step (variance, std, mean), einsum for the layers",
            """\
def mlp_backward(params, x, y, act, act_grad):
    p = params
    n, H = x.shape[0], p["W1"].shape[0]
    z = torch.einsum("nd,hd->nh", x, p["W1"]) + p["b1"]
    h = act(z)
    r = z + torch.einsum("nk,hk->nh", h, p["W2"]) + p["b2"]
    mu = r.sum(1, keepdim=True) / H
    diff = r - mu
    var = (diff ** 2).sum(1, keepdim=True) / H
    std = (var + 1e-5) ** 0.5
    normed = diff / std
    u = p["gamma"] * normed + p["beta"]
    logits = torch.einsum("nh,ch->nc", u, p["W3"]) + p["b3"]
    logits = logits - logits.max(1, keepdim=True).values
    probs = logits.exp() / logits.exp().sum(1, keepdim=True)
    d_logits = probs.clone()
    d_logits[torch.arange(n), y] -= 1
    d_logits /= n
    d_u = torch.einsum("nc,ch->nh", d_logits, p["W3"])
    d_normed = d_u * p["gamma"]
    d_diff = d_normed / std
    d_std = -(d_normed * diff / std ** 2).sum(1, keepdim=True)
    d_var = d_std * 0.5 / std
    d_diff = d_diff + d_var * 2 * diff / H
    d_r = d_diff - d_diff.sum(1, keepdim=True) / H
    d_h = torch.einsum("nh,hk->nk", d_r, p["W2"])
    d_z = d_r + d_h * act_grad(z)
    return {
        "W1": torch.einsum("nh,nd->hd", d_z, x), "b1": d_z.sum(0),
        "W2": torch.einsum("nh,nk->hk", d_r, h), "b2": d_r.sum(0),
        "gamma": (d_u * normed).sum(0), "beta": d_u.sum(0),
        "W3": torch.einsum("nc,nh->ch", d_logits, u), "b3": d_logits.sum(0),
    }
""",
        ),
    ],
    "q2_broadcast_backward": [
        (
            "Tensor.sum_to_size",
            """\
def broadcast_backward(x, g, b, grad_y):
    return ((grad_y * g).sum_to_size(x.shape), (grad_y * x).sum_to_size(g.shape),
            grad_y.sum_to_size(b.shape))
""",
        ),
        (
            "the tensor's shape padded with 1s at the front, then sum and reshape",
            """\
def broadcast_backward(x, g, b, grad_y):
    def reduce(grad, shape):
        padded = (1,) * (grad.dim() - len(shape)) + tuple(shape)
        for dim, size in enumerate(padded):
            if size == 1 and grad.shape[dim] != 1:
                grad = grad.sum(dim, keepdim=True)
        return grad.reshape(shape)

    return reduce(grad_y * g, x.shape), reduce(grad_y * x, g.shape), reduce(grad_y, b.shape)
""",
        ),
        (
            "expand to y's shape and einsum-free sums, dims listed at once",
            """\
def broadcast_backward(x, g, b, grad_y):
    out = []
    for t, factor in ((x, g), (g, x), (b, None)):
        full = grad_y if factor is None else grad_y * factor.expand_as(grad_y)
        lead = full.dim() - t.dim()
        dims = list(range(lead)) + [lead + i for i, n in enumerate(t.shape)
                                    if n == 1 and full.shape[lead + i] != 1]
        if dims:
            full = full.sum(dim=dims)
        out.append(full.reshape(t.shape))
    return tuple(out)
""",
        ),
    ],
    "q3_embedding_backward": [
        (
            "index_add_, then the padding row set to 0",
            """\
def embedding_backward(indices, weight_shape, grad_out, padding_idx):
    dW = torch.zeros(weight_shape, dtype=grad_out.dtype)
    dW.index_add_(0, indices.flatten(), grad_out.reshape(-1, weight_shape[1]))
    if padding_idx is not None:
        dW[padding_idx] = 0.0
    return dW
""",
        ),
        (
            "a one-hot matrix times the gradients",
            """\
def embedding_backward(indices, weight_shape, grad_out, padding_idx):
    V, E = weight_shape
    onehot = torch.nn.functional.one_hot(indices.reshape(-1), num_classes=V)
    dW = onehot.to(grad_out.dtype).T @ grad_out.reshape(-1, E)
    if padding_idx is not None:
        dW[padding_idx % V] = 0
    return dW
""",
        ),
        (
            "scatter_add_ with the index expanded over the columns",
            """\
def embedding_backward(indices, weight_shape, grad_out, padding_idx):
    V, E = weight_shape
    flat = indices.reshape(-1, 1).expand(-1, E)
    dW = grad_out.new_zeros(V, E).scatter_add_(0, flat, grad_out.reshape(-1, E))
    if padding_idx is not None:
        dW[padding_idx] = torch.zeros(E, dtype=grad_out.dtype)
    return dW
""",
        ),
        (
            "a loop over the positions",
            """\
def embedding_backward(indices, weight_shape, grad_out, padding_idx):
    V = weight_shape[0]
    pad = None if padding_idx is None else (padding_idx + V) % V
    dW = grad_out.new_zeros(weight_shape)
    for index, row in zip(indices.reshape(-1).tolist(), grad_out.reshape(-1, weight_shape[1])):
        if index != pad:
            dW[index] += row
    return dW
""",
        ),
    ],
    "q5_predict_shapes": [
        (
            "shapes as torch.Size",
            'grad_shapes = {"Wt": torch.Size([5, 3]), "s": torch.Size([8, 1]), '
            '"b": torch.Size([3])}',
        ),
    ],
}

#: Answers that get right values with the autograd that questions 1 to 3 forbid ("do not call
#: autograd"): no test of values tells them apart, so each gets the question's points from the
#: judge, and the code scan flags its answer cell for a reviewer (grading/scan.py).
FLAGGED: dict[str, list[tuple[str, str]]] = {
    "q1_mlp_backward": [
        (
            "autograd switched back on, with an activation whose autograd slope is act_grad",
            """\
def mlp_backward(params, x, y, act, act_grad):
    def true_act(z):  # act's value, and act_grad as its slope for autograd
        return act(z).detach() + (z - z.detach()) * act_grad(z).detach()

    with torch.enable_grad():
        p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
        mlp_loss(p, x, y, true_act).backward()
    return {k: v.grad for k, v in p.items()}
""",
        ),
        (
            "an autograd Function of its own for the activation, and torch.autograd.grad",
            """\
class TrueAct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, act, act_grad):
        ctx.save_for_backward(z)
        ctx.act_grad = act_grad
        return act(z)

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * ctx.act_grad(z), None, None


def mlp_backward(params, x, y, act, act_grad):
    with torch.set_grad_enabled(True):
        p = {k: torch.nn.Parameter(v.detach().clone()) for k, v in params.items()}
        loss = mlp_loss(p, x, y, lambda z: TrueAct.apply(z, act, act_grad))
        grads = torch.autograd.grad(loss, list(p.values()))
    return dict(zip(p, grads))
""",
        ),
        (
            "torch.func.vjp of each step, the activation's step by act_grad (torch.func)",
            """\
def mlp_backward(params, x, y, act, act_grad):
    # no autograd through act: each step's vjp from torch.func, except the activation's
    from torch.func import vjp
    F = torch.nn.functional
    z, back1 = vjp(lambda W, b: x @ W.T + b, params["W1"], params["b1"])
    h = act(z)
    r, back2 = vjp(lambda z_, h_, W, b: z_ + h_ @ W.T + b, z, h, params["W2"], params["b2"])
    u, back3 = vjp(lambda r_, g, b: F.layer_norm(r_, r_.shape[-1:], g, b, eps=1e-5), r,
                   params["gamma"], params["beta"])
    loss, back4 = vjp(lambda u_, W, b: F.cross_entropy(u_ @ W.T + b, y), u, params["W3"],
                      params["b3"])
    d_u, d_W3, d_b3 = back4(torch.ones_like(loss))
    d_r, d_gamma, d_beta = back3(d_u)
    d_z, d_h, d_W2, d_b2 = back2(d_r)
    d_W1, d_b1 = back1(d_z + d_h * act_grad(z))
    return {"W1": d_W1, "b1": d_b1, "W2": d_W2, "b2": d_b2, "gamma": d_gamma,
            "beta": d_beta, "W3": d_W3, "b3": d_b3}
""",
        ),
    ],
    "q2_broadcast_backward": [
        (
            "autograd switched back on, leaves made with requires_grad=True",
            """\
def broadcast_backward(x, g, b, grad_y):
    with torch.enable_grad():
        leaves = [torch.tensor(t.tolist(), dtype=t.dtype, requires_grad=True)
                  for t in (x, g, b)]
        (leaves[0] * leaves[1] + leaves[2]).backward(grad_y)
    return tuple(t.grad for t in leaves)
""",
        ),
    ],
    "q3_embedding_backward": [
        (
            "F.embedding's backward, autograd switched back on by torch.func.vjp",
            """\
def embedding_backward(indices, weight_shape, grad_out, padding_idx):
    from torch.func import vjp

    weight = grad_out.new_zeros(weight_shape)
    _, back = vjp(lambda w: torch.nn.functional.embedding(indices, w, padding_idx), weight)
    return back(grad_out)[0]
""",
        ),
    ],
}
