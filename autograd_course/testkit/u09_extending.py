"""Typical wrong answers to assignment 09 Extending autograd, and correct ones that differ
from the reference.

Questions 1 and 3 answer with a class: :func:`_sinc` and :func:`_fixed` write it with the
reference's bodies except those given, so that each wrong answer changes one thing.
:data:`RIGHT` holds correct answers in other styles the prompts and PyTorch's Extending note
allow (setup_context, a forward-mode jvp, vjp, once_differentiable, attributes of ctx): each
must get full marks (tests/test_alternative_answers.py).
"""

from __future__ import annotations

import textwrap

from autograd_course.testkit.answers import Wrong, function, wrong

_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"

_SINC_FORWARD = """
ctx.save_for_backward(x)
nonzero = torch.where(x == 0, 1.0, x)
return torch.where(x == 0, 1.0, torch.sin(nonzero) / nonzero)
"""

_SINC_BACKWARD = """
(x,) = ctx.saved_tensors
near = x.abs() < 1e-2
far = torch.where(near, 1.0, x)
formula = (far * torch.cos(far) - torch.sin(far)) / far**2
x2 = x * x
series = -x / 3 * (1 - x2 / 10 * (1 - x2 / 28))
return grad_output * {result}
"""


def _body(text: str) -> str:
    return textwrap.indent(textwrap.dedent(text).strip("\n"), " " * 8)


#: Sinc.apply by plain autograd, as a method of a class: the masking trick and the value's
#: series near 0, no backward of its own.
_PLAIN_APPLY = """
    @staticmethod
    def apply(x):
        small = x.abs() < 1e-2
        safe = torch.where(small, 1.0, x)
        series = 1 - x**2 / 6 + x**4 / 120 - x**6 / 5040
        return torch.where(small, series, torch.sin(safe) / safe)
"""


def _sinc(forward: str = _SINC_FORWARD, backward: str | None = None,
          result: str = "torch.where(near, series, formula)") -> str:
    """The class of question 1 with the reference's forward and backward, except those given
    (``result`` replaces what the reference backward multiplies grad_output by)."""
    backward = (_SINC_BACKWARD if backward is None else backward).replace("{result}", result)
    return (
        "class Sinc(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        f"{_body(forward)}\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad_output):\n"
        f"{_body(backward)}\n"
    )


def _fixed(body: str) -> str:
    """The class of question 3 with ``body`` after ``x, w, y = ctx.saved_tensors``."""
    return (
        "class Fixed(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x, w):\n"
        "        y = w * torch.exp(-w * x**2)\n"
        "        ctx.save_for_backward(x, w, y)\n"
        "        return y\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad):\n"
        "        x, w, y = ctx.saved_tensors\n"
        f"{_body(body)}\n"
    )


#: Question 1 with setup_context and a jvp (right as it is): forward mode's rule is checked too.
_SETUP_JVP = """
class Sinc(torch.autograd.Function):
    @staticmethod
    def forward(x):
        nonzero = torch.where(x == 0, 1.0, x)
        return torch.where(x == 0, 1.0, torch.sin(nonzero) / nonzero)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def _slope(x):
        near = x.abs() < 1e-2
        far = torch.where(near, 1.0, x)
        formula = (far * torch.cos(far) - torch.sin(far)) / far**2
        x2 = x * x
        series = -x / 3 * (1 - x2 / 10 * (1 - x2 / 28))
        return torch.where(near, series, formula)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * Sinc._slope(x)

    @staticmethod
    def jvp(ctx, x_t):
        (x,) = ctx.saved_tensors
        return x_t * Sinc._slope(x)
""".strip("\n")

_WRONG_INPUTS = "def wrong_inputs(function, inputs):"


def _per_input(copies: str = "t.detach().clone().requires_grad_(j == i)",
               check: str = "torch.autograd.gradcheck(function.apply, args, "
               "raise_exception=False)", verdict: str = "not right") -> str:
    """The reference answer of question 2 with one of its lines replaced."""
    return function(_WRONG_INPUTS, f"""
        verdicts = []
        for i in range(len(inputs)):
            args = [{copies} for j, t in enumerate(inputs)]
            right = {check}
            verdicts.append({verdict})
        return tuple(verdicts)
        """)


#: Words that would say which prediction of question 5 is wrong: its message says how many.
_NAMES_A_SNIPPET = ["snippet", "raises[", "sigmoid", "cos", "relu", "tanh", "pow", "divid"]

_HOOK = "def row_clip_hook(max_norm):"


def _hook(body: str) -> str:
    """A row_clip_hook whose inner hook(grad) has ``body``."""
    inner = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return function(_HOOK, f"def hook(grad):\n{inner}\n\nreturn hook")


WRONG: dict[str, list[Wrong]] = {
    "q1_sinc": [
        wrong(
            "plain autograd of torch.where",
            """
            class Sinc:
                @staticmethod
                def apply(x):
                    return torch.where(x == 0, 1.0, torch.sin(x) / x)
            """,
            "nan_at_zero",
            ["nan where x is 0", "0 * nan"],
        ),
        wrong(
            "plain autograd, with the safe torch.where",
            """
            class Sinc:
                @staticmethod
                def apply(x):
                    nonzero = torch.where(x == 0, 1.0, x)
                    return torch.where(x == 0, 1.0, torch.sin(nonzero) / nonzero)
            """,
            "digits",
            ["tiny x", "Taylor series"],
            breaks="right at tiny `x` such as $10^{-8}$ too",
        ),
        wrong(
            "the formula alone in backward",
            _sinc(backward="""
                (x,) = ctx.saved_tensors
                return grad_output * (x * torch.cos(x) - torch.sin(x)) / x**2
                """),
            "nan_at_zero",
            ["divides 0 by 0", "Sinc's backward"],
            not_says=["other branch"],
            breaks="0 where `x` is exactly 0",
        ),
        wrong(
            "a first attempt: where in forward, the plain 0 / 0 formula in backward",
            """
            class Sinc(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return torch.where(x == 0, torch.ones_like(x), torch.sin(x) / x)

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return grad_output * (x * torch.cos(x) - torch.sin(x)) / x**2
            """,
            "nan_at_zero",
            ["divides 0 by 0", "use the series"],
            not_says=["other branch", "0 * nan"],
            breaks="0 where `x` is exactly 0",
        ),
        wrong(
            "the formula with 0 at 0, no series",
            _sinc(result="torch.where(x == 0, 0.0, (far * torch.cos(far) - torch.sin(far)) "
                  "/ far**2)").replace("x.abs() < 1e-2", "x == 0"),
            "digits",
            ["lost its digits", "-x/3 + x**3/30"],
            breaks="right at tiny `x` such as $10^{-8}$ too",
        ),
        wrong(
            "one term of the series, used up to 0.1",
            _sinc(result="torch.where(near, -x / 3, formula)").replace("x.abs() < 1e-2",
                                                                       "x.abs() < 0.1"),
            "series_too_far",
            ["too far from 0", "cut after 1 term", "x**3/30"],
            breaks="right to 6 significant digits\nat every `x`",
        ),
        wrong(
            "one term of the series, used up to 0.045",
            _sinc(result="torch.where(near, -x / 3, formula)").replace("x.abs() < 1e-2",
                                                                       "x.abs() < 0.045"),
            "series_too_far",
            ["too far from 0", "cut after 1 term"],
            breaks="right to 6 significant digits\nat every `x`",
        ),
        wrong(
            "one term of the series, used up to 1e-2",
            _sinc(result="torch.where(near, -x / 3, formula)"),
            "series_too_far",
            ["cut after 1 term", "add terms"],
            breaks="as far from 0 as its terms are right to 6 digits",
        ),
        wrong(
            "three terms of the series, used up to |x| < 1",
            _sinc(backward=_SINC_BACKWARD.replace("x.abs() < 1e-2", "x.abs() < 1")),
            "series_too_far",
            ["cut after 3 terms", "x**7/45360"],
            not_says=["1e-2, say"],
            breaks="right to 6 significant digits\nat every `x`",
        ),
        wrong(
            "the series with the wrong sign, the formula right",
            _sinc(result="torch.where(near, -series, formula)"),
            "sign",
            ["wrong sign", "near 0", "-x/3"],
            not_says=["too far from 0"],
        ),
        wrong(
            "the series branch without grad_output",
            _sinc(backward=_SINC_BACKWARD.replace(
                "grad_output * {result}", "torch.where(near, series, grad_output * formula)")),
            "no_grad_output",
            ["series alone", "grad_output"],
            not_says=["too far from 0"],
            breaks="its\nbackward returns `grad_output` times",
        ),
        wrong(
            "backward in float32 (x.float())",
            _sinc(backward=_SINC_BACKWARD.replace("(x,) = ctx.saved_tensors",
                                                  "(x,) = ctx.saved_tensors\nx = x.float()")),
            "float32",
            ["float32"],
            not_says=["too far from 0"],
            breaks="right to 6 significant digits\nat every `x`",
        ),
        wrong(
            "backward in float32, grad_output too",
            _sinc(backward=_SINC_BACKWARD.replace(
                "(x,) = ctx.saved_tensors",
                "(x,) = ctx.saved_tensors\nx, grad_output = x.float(), grad_output.float()")),
            "float32",
            ["float32", "x's dtype"],
            breaks="right to 6 significant digits\nat every `x`",
        ),
        wrong(
            "x kept as ctx.x, not saved with save_for_backward",
            _sinc(forward=_SINC_FORWARD.replace("ctx.save_for_backward(x)", "ctx.x = x"),
                  backward=_SINC_BACKWARD.replace("(x,) = ctx.saved_tensors", "x = ctx.x")),
            "not_saved",
            ["ran without error", "ctx.save_for_backward(x)", "in-place change"],
            breaks="Save `x` for backward with\n`ctx.save_for_backward` (not as an attribute of "
            "`ctx`)",
        ),
        wrong(
            "a copy of x saved",
            _sinc(forward=_SINC_FORWARD.replace("ctx.save_for_backward(x)",
                                                "ctx.save_for_backward(x.clone())")),
            "not_saved",
            ["ran without error", "ctx.save_for_backward(x)"],
            breaks="Save `x` for backward with\n`ctx.save_for_backward`",
        ),
        wrong(
            "x saved, but backward reads the attribute ctx.x",
            _sinc(forward=_SINC_FORWARD.replace("ctx.save_for_backward(x)",
                                                "ctx.save_for_backward(x)\nctx.x = x"),
                  backward=_SINC_BACKWARD.replace("(x,) = ctx.saved_tensors", "x = ctx.x")),
            "not_saved",
            ["read it from ctx.saved_tensors"],
            breaks="Save `x` for backward with\n`ctx.save_for_backward`",
        ),
        wrong(
            "a plain class: autograd of the masking trick and a series, no backward",
            "class Sinc:" + _PLAIN_APPLY,
            "no_backward",
            ["no backward of its own", "torch.autograd.Function"],
            breaks="Write `class Sinc(torch.autograd.Function)`",
        ),
        wrong(
            "a decorative backward that is wrong, apply by plain autograd",
            textwrap.dedent("""
                class Sinc(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        ctx.save_for_backward(x)
                        return torch.ones_like(x)

                    @staticmethod
                    def backward(ctx, grad_output):
                        return grad_output
                """) + _PLAIN_APPLY,
            "not_own",
            ["Sinc's own forward and backward", "does not use them"],
            breaks="its\nbackward returns `grad_output` times",
        ),
        wrong(
            "no grad_output",
            _sinc(backward=_SINC_BACKWARD.replace("grad_output * {result}",
                                                  "torch.where(near, series, formula)")),
            "no_grad_output",
            ["grad_output * sinc'(x)"],
            breaks="its\nbackward returns `grad_output` times",
        ),
        wrong(
            "the derivative's sign flipped",
            _sinc(result="torch.where(near, -series, -formula)"),
            "sign",
            ["wrong sign", "quotient rule"],
        ),
        wrong(
            "cos(x) / x, the quotient rule's second term left out",
            _sinc(result="torch.where(near, series, torch.cos(far) / far)"),
            "quotient_rule",
            ["quotient rule"],
        ),
        wrong(
            "the derivative computed from the saved output",
            _sinc(forward="""
                nonzero = torch.where(x == 0, 1.0, x)
                y = torch.where(x == 0, 1.0, torch.sin(nonzero) / nonzero)
                ctx.save_for_backward(y)
                return y
                """),
            "saved_output",
            ["saved output", "ctx.save_for_backward(x)"],
        ),
        wrong(
            "the derivative at 0 not 0",
            _sinc(result="torch.where(x == 0, -1 / 3, torch.where(near, series, formula))"),
            "grad_at_zero",
            ["derivative is 0"],
            breaks="0 where `x` is exactly 0",
        ),
        wrong(
            "sin(x) / x in forward, nan at 0",
            _sinc(forward="""
                ctx.save_for_backward(x)
                return torch.sin(x) / x
                """),
            "value_at_zero",
            ["sinc(0) is 1"],
            breaks="(1 where `x` is 0)",
        ),
        wrong(
            "0 at 0 in forward",
            _sinc(forward=_SINC_FORWARD.replace("torch.where(x == 0, 1.0, torch.sin",
                                                "torch.where(x == 0, 0.0, torch.sin")),
            "value_at_zero",
            ["sinc(0) is 1"],
            breaks="(1 where `x` is 0)",
        ),
        wrong(
            "a flat result",
            _sinc(forward=_SINC_FORWARD.replace("torch.sin(nonzero) / nonzero)",
                                                "torch.sin(nonzero) / nonzero).reshape(-1)")),
            "shape",
            ["shape"],
            breaks="for a float64 tensor `x` of any shape",
        ),
        wrong(
            "one term of the series below 1e-5 only, the formula above",
            _sinc(result="torch.where(near, -x / 3, formula)").replace("x.abs() < 1e-2",
                                                                       "x.abs() < 1e-5"),
            "digits",
            ["tiny x", "lost its digits", "Taylor series"],
            breaks="right to 6 significant digits\nat every `x`",
        ),
        wrong(
            "the threshold on x, not |x|: every negative x gets the series",
            _sinc().replace("x.abs() < 1e-2", "x < 1e-2"),
            "one_sided",
            ["every negative x", "x.abs() < 1e-2"],
            not_says=["used too far from 0 for its terms"],
            breaks="right to 6 significant digits\nat every `x`",
        ),
        wrong(
            "grad_output.mul_(...) returned: grad_output changed in place",
            _sinc(result="torch.where(near, series, formula)").replace(
                "return grad_output * torch.where(near, series, formula)",
                "return grad_output.mul_(torch.where(near, series, formula))"),
            "grad_in_place",
            ["changed grad_output in place", "Never modify grad_output in place"],
            breaks="never modify `grad_output` in place",
        ),
        wrong(
            "the series computed in place in the saved x",
            _sinc(backward="""
                (x,) = ctx.saved_tensors
                near = x.abs() < 1e-2
                far = torch.where(near, 1.0, x)
                formula = (far * torch.cos(far) - torch.sin(far)) / far**2
                x2 = x * x
                series = x.mul_(-1 / 3).mul_(1 - x2 / 10 * (1 - x2 / 28))
                return grad_output * torch.where(near, series, formula)
                """),
            "saved_in_place",
            ["changed a tensor it read from ctx.saved_tensors in place"],
        ),
        wrong(
            "a jvp that returns sinc'(x) alone, not times x_t",
            _SETUP_JVP.replace("return x_t * Sinc._slope(x)", "return Sinc._slope(x)"),
            "jvp",
            ["sinc'(x) alone", "times the tangent x_t"],
            breaks="it must return\n$\\operatorname{sinc}'(x)$ times the tangent `x_t`",
        ),
        wrong(
            "a jvp that reads what save_for_backward saved",
            _SETUP_JVP.replace("        ctx.save_for_forward(x)\n", ""),
            "jvp_saved",
            ["ctx.save_for_forward"],
        ),
        wrong(
            "left blank",
            _sinc(forward=_STUB, backward=_STUB),
            "blank",
            ["NotImplementedError"],
        ),
    ],
    "q2_wrong_inputs": [
        wrong(
            "one gradcheck of all the inputs together",
            function(_WRONG_INPUTS, """
                args = [t.detach().clone().requires_grad_(True) for t in inputs]
                right = torch.autograd.gradcheck(function.apply, args, raise_exception=False)
                return (not right,) * len(inputs)
                """),
            "together",
            ["on its own"],
            breaks="for that input is wrong",
        ),
        wrong(
            "each input checked with all of them requiring grad",
            _per_input(copies="t.detach().clone().requires_grad_(True)"),
            "together",
            ["only that input"],
            breaks="for that input is wrong",
        ),
        wrong(
            "gradcheck's own answer, not its opposite",
            _per_input(verdict="right"),
            "inverted",
            ["opposite"],
            breaks="`True` where the gradient",
        ),
        wrong(
            "gradcheck left to raise",
            _per_input(check="torch.autograd.gradcheck(function.apply, args)"),
            "raised",
            ["raise_exception=False"],
        ),
        wrong(
            "inputs as given, none requiring grad",
            _per_input(copies="t"),
            "no_requires_grad",
            ["requires_grad_(True)"],
        ),
        wrong(
            "float32 copies",
            _per_input(copies="t.detach().float().requires_grad_(j == i)"),
            "false_alarm",
            ["float64"],
            breaks="a correct Function gives all `False`",
        ),
        wrong(
            "one backward with grad_output all ones against finite differences of the sum",
            function(_WRONG_INPUTS, """
                verdicts = []
                for i in range(len(inputs)):
                    args = [t.detach().clone() for t in inputs]
                    args[i].requires_grad_(True)
                    function.apply(*args).sum().backward()
                    numeric = torch.zeros_like(args[i]).reshape(-1)
                    for k in range(numeric.numel()):
                        up = [a.detach().clone() for a in args]
                        down = [a.detach().clone() for a in args]
                        up[i].view(-1)[k] += 1e-6
                        down[i].view(-1)[k] -= 1e-6
                        change = function.apply(*up).sum() - function.apply(*down).sum()
                        numeric[k] = change / 2e-6
                    same = torch.allclose(args[i].grad.reshape(-1), numeric, atol=1e-5, rtol=1e-3)
                    verdicts.append(not same)
                return tuple(verdicts)
                """),
            "missed",
            ["whole Jacobian"],
            breaks="Find out with `torch.autograd.gradcheck`",
        ),
        wrong(
            "gradcheck of function.apply(*a).sum() per input: a vjp with grad_output all ones",
            _per_input(check="torch.autograd.gradcheck(lambda *a: function.apply(*a).sum(), "
                       "args, raise_exception=False)"),
            "missed",
            ["grad_output's entries from the wrong places", ".sum()", "whole Jacobian"],
            breaks="for some\n`grad_output`: a backward can be right for `grad_output` all ones "
            "and wrong for others",
        ),
        wrong(
            "the mask inverted: every input but the i-th requires grad",
            _per_input(copies="t.detach().clone().requires_grad_(j != i)"),
            "mask_inverted",
            ["every input but the i-th requires grad", "requires_grad_(j == i)"],
            not_says=["float64"],
            breaks="for that input is wrong",
        ),
        wrong(
            "requires_grad switched on input by input, never off: copies made once",
            function(_WRONG_INPUTS, """
                copies = [t.detach().clone() for t in inputs]
                verdicts = []
                for i in range(len(copies)):
                    copies[i].requires_grad_(True)
                    verdicts.append(not torch.autograd.gradcheck(function.apply, copies,
                                                                 raise_exception=False))
                return tuple(verdicts)
                """),
            "accumulated",
            ["covers the inputs before it", "never off again", "requires_grad_(j == i)"],
            not_says=["float64"],
            breaks="for that input is wrong",
        ),
        *(wrong(
            f"one row of the Jacobian: a vjp with grad_output the {which} unit vector against "
            "finite differences of that output entry",
            function(_WRONG_INPUTS, f"""
                verdicts = []
                for i in range(len(inputs)):
                    args = [t.detach().clone().requires_grad_(j == i) for j, t in enumerate(inputs)]
                    y = function.apply(*args)
                    unit = torch.zeros(y.numel(), dtype=y.dtype)
                    unit[{place}] = 1.0
                    (got,) = torch.autograd.grad(y, args[i], unit.reshape(y.shape))
                    numeric = torch.zeros(args[i].numel(), dtype=torch.float64)
                    for k in range(numeric.numel()):
                        up = [t.detach().clone() for t in inputs]
                        down = [t.detach().clone() for t in inputs]
                        up[i].view(-1)[k] += 1e-6
                        down[i].view(-1)[k] -= 1e-6
                        change = function.apply(*up).reshape(-1)[{place}] - function.apply(
                            *down).reshape(-1)[{place}]
                        numeric[k] = change / 2e-6
                    verdicts.append(not torch.allclose(got.reshape(-1), numeric, atol=1e-5,
                                                       rtol=1e-3))
                return tuple(verdicts)
                """),
            "missed",
            ["wrong at some entries only", "one row", "whole Jacobian"],
            breaks="Find out with `torch.autograd.gradcheck`",
        ) for which, place in (("first", 0), ("last", -1))),
        wrong(
            "all False",
            function(_WRONG_INPUTS, "return (False,) * len(inputs)"),
            "missed",
            ["reported right"],
        ),
        wrong(
            "all True",
            function(_WRONG_INPUTS, "return (True,) * len(inputs)"),
            "false_alarm",
            ["is reported wrong"],
        ),
        wrong(
            "a tuple of one",
            function(_WRONG_INPUTS, """
                args = [t.detach().clone().requires_grad_(True) for t in inputs]
                return (not torch.autograd.gradcheck(function.apply, args, raise_exception=False),)
                """),
            "shape",
            ["items"],
            breaks="a tuple of booleans, one per input",
        ),
        wrong(
            "strings",
            _per_input(verdict='"wrong" if not right else "right"'),
            "type",
            ["True or False"],
            breaks="a tuple of booleans",
        ),
        wrong(
            "the verdict for input i from input (i + 1) % n",
            _per_input(copies="t.detach().clone().requires_grad_(j == (i + 1) % len(inputs))"),
            "order",
            ["about another input"],
            breaks="in the order of `inputs`",
        ),
        wrong(
            "gradcheck's tolerances loosened",
            _per_input(check="torch.autograd.gradcheck(function.apply, args, "
                       "raise_exception=False, atol=0.5, rtol=0.5)"),
            "missed",
            ["tolerances", "defaults"],
            breaks="Find out with `torch.autograd.gradcheck`",
        ),
        wrong(
            "the class passed to gradcheck, not function.apply",
            _per_input(check="torch.autograd.gradcheck(function, args, raise_exception=False)"),
            "class_passed",
            ["pass function.apply, not the class"],
            breaks="(called as `function.apply(*inputs)`)",
        ),
        wrong(
            "hard-codes the notebook's function x*exp(-y) instead of running gradcheck",
            function(_WRONG_INPUTS, """
                args = [t.detach().clone().requires_grad_(True) for t in inputs]
                out = function.apply(*args)
                g = torch.rand_like(out) + 0.5
                got = torch.autograd.grad(out, args, g)
                x, y = inputs[:2]
                true = [g * torch.exp(-y), -g * x * torch.exp(-y)]
                if len(inputs) == 3:
                    z = inputs[2]
                    true = [true[0], true[1] + g * z**2, g * 2 * y * z]
                return tuple(not torch.allclose(a, b) for a, b in zip(got, true))
                """),
            "false_alarm",
            ["is reported wrong"],
            breaks="Find out with `torch.autograd.gradcheck`",
        ),
        wrong(
            "reads the bug from the Function's closure",
            function(_WRONG_INPUTS, """
                import inspect
                found = inspect.getclosurevars(function.backward).nonlocals
                bug, at = found["bug"], found["at"]
                return tuple(bool(bug) and i == at for i in range(len(inputs)))
                """),
            "raised",
            ["KeyError"],
            breaks="Find out with `torch.autograd.gradcheck`",
        ),
        wrong(
            "reads the drawn bug (scale, order, power, moved, patched) from the Function's "
            "closure",
            function(_WRONG_INPUTS, """
                import inspect
                found = inspect.getclosurevars(function.backward).nonlocals
                scale, order, power = found["scale"], found["order"], found["power"]
                moved = found["moved"]
                patched = inspect.getclosurevars(found["entries"]).nonlocals["patched"]
                return tuple(scale[i] != 1 or order[i] != i or power[i] != 1 or i in moved
                             or i in patched for i in range(len(inputs)))
                """),
            "raised",
            ["KeyError"],
            hidden_only="gaming",  # the grader's Function is a stand-in: nothing to read
        ),
        wrong("left blank", function(_WRONG_INPUTS, _STUB), "blank", ["NotImplementedError"]),
    ],
    "q3_fixed": [
        wrong(
            "the given backward, unchanged",
            _fixed("""
                dx = -2 * w * x * y
                dw = -x**2 * y
                return dw, dx
                """),
            "swapped",
            ["other input", "order of forward's arguments"],
        ),
        wrong(
            "the order fixed, nothing else",
            _fixed("""
                dx = -2 * w * x * y
                dw = -x**2 * y
                return dx, dw
                """),
            "no_grad_output",
            ["multiply it by grad"],
        ),
        wrong(
            "grad and order fixed, the product rule missing",
            _fixed("""
                dx = -2 * w * x * y
                dw = -x**2 * y
                return grad * dx, grad * dw
                """),
            "product_rule",
            ["product rule"],
        ),
        wrong(
            "the product rule fixed, no grad",
            _fixed("""
                dx = -2 * w * x * y
                dw = torch.exp(-w * x**2) - x**2 * y
                return dx, dw
                """),
            "no_grad_output",
            ["chain rule"],
        ),
        wrong(
            "y * (1 - w x**2) for dw",
            _fixed("""
                dx = -2 * w * x * y
                dw = y * (1 - w * x**2)
                return grad * dx, grad * dw
                """),
            "factor_w",
            ["w times the right gradient"],
        ),
        wrong(
            "dx with the wrong sign",
            _fixed("""
                dx = 2 * w * x * y
                dw = torch.exp(-w * x**2) - x**2 * y
                return grad * dx, grad * dw
                """),
            "sign",
            ["wrong sign"],
        ),
        wrong(
            "needs_input_grad read in the wrong order",
            _fixed("""
                dx = -2 * w * x * y
                dw = torch.exp(-w * x**2) - x**2 * y
                return (grad * dx if ctx.needs_input_grad[1] else None,
                        grad * dw if ctx.needs_input_grad[0] else None)
                """),
            "none",
            ["needs_input_grad[i]"],
            breaks="also with only one of `x` and `w` requiring grad",
        ),
        wrong(
            "dw negated",
            _fixed("""
                dx = -2 * w * x * y
                dw = x**2 * y - torch.exp(-w * x**2)
                return grad * dx, grad * dw
                """),
            "sign",
            ["wrong sign", "df/dw"],
        ),
        wrong(
            "dx without the factor w",
            _fixed("""
                dx = -2 * x * y
                dw = torch.exp(-w * x**2) - x**2 * y
                return grad * dx, grad * dw
                """),
            "factor_w_missing",
            ["lacks a factor w"],
        ),
        wrong(
            "a plain class: autograd of the forward's operations, no backward",
            """
            class Fixed:
                @staticmethod
                def apply(x, w):
                    return w * torch.exp(-w * x**2)
            """,
            "no_backward",
            ["no backward of its own", "torch.autograd.Function"],
            breaks="write its backward",
        ),
        wrong(
            "a forward returning zeros, with a right backward",
            """
            class Fixed(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward(x, w)
                    return torch.zeros_like(x)

                @staticmethod
                def backward(ctx, grad):
                    x, w = ctx.saved_tensors
                    e = torch.exp(-w * x**2)
                    return grad * (-2 * w * w * x * e), grad * (1 - w * x**2) * e
            """,
            "zero",
            ["Fixed.apply(x, w)", "all zeros"],
            breaks="`Fixed` has the same forward",
        ),
        wrong(
            "grad.mul_(...) in place for dx, then dw from the changed grad",
            _fixed("""
                dx = grad.mul_(-2 * w * x * y)
                dw = grad * (torch.exp(-w * x**2) - x**2 * y)
                return dx, dw
                """),
            "grad_in_place",
            ["changed grad in place", "never modify grad"],
            breaks="never modify `grad`",
        ),
        wrong(
            "grad.mul_(...) in place, last, the values right",
            _fixed("""
                dx = grad * (-2 * w * x * y)
                return dx, grad.mul_(torch.exp(-w * x**2) - x**2 * y)
                """),
            "grad_in_place",
            ["came back changed", "never modify grad"],
            breaks="never modify `grad`",
        ),
        wrong(
            "grad *= ... in place",
            _fixed("""
                dw = grad * (torch.exp(-w * x**2) - x**2 * y)
                grad *= -2 * w * x * y
                return grad, dw
                """),
            "grad_in_place",
            ["never modify grad"],
            breaks="never modify `grad`",
        ),
        wrong(
            "the saved output y overwritten in place for dx (to save memory)",
            _fixed("""
                dw = grad * (torch.exp(-w * x**2) - x**2 * y)
                dx = y.mul_(-2 * w * x).mul_(grad)
                return dx, dw
                """),
            "saved_in_place",
            ["ctx.saved_tensors[2]", "Never modify a saved tensor in place"],
            not_says=["forward must compute"],
            breaks="or a tensor read from\n`ctx.saved_tensors`, in place",
        ),
        wrong("left blank", _fixed(_STUB), "blank", ["NotImplementedError"]),
    ],
    "q4_row_clip_hook": [
        wrong(
            "the whole gradient's norm",
            _hook("""
                total = torch.linalg.vector_norm(grad)
                return grad * torch.clamp(max_norm / total, max=1.0)
                """),
            "whole",
            ["each row is clipped on its own"],
            breaks="every row whose Euclidean norm is larger than `max_norm` is scaled down",
        ),
        wrong(
            "clamped entry by entry",
            _hook("return grad.clamp(-max_norm, max_norm)"),
            "elementwise",
            ["directions"],
            breaks="keeping its direction",
        ),
        wrong(
            "the columns",
            _hook("""
                lengths = torch.linalg.vector_norm(grad, dim=0, keepdim=True)
                return grad * torch.clamp(max_norm / lengths, max=1.0)
                """),
            "columns",
            ["dim=1"],
            breaks="every row whose Euclidean norm is larger than `max_norm` is scaled down",
        ),
        wrong(
            "every row scaled to max_norm",
            _hook("""
                lengths = torch.linalg.vector_norm(grad, dim=1, keepdim=True)
                return grad * max_norm / lengths
                """),
            "all_rows",
            ["the short ones too"],
            breaks="every other row (a row of zeros too) is as it\nwas",
        ),
        wrong(
            "squared norms",
            _hook("""
                lengths = (grad**2).sum(dim=1, keepdim=True)
                return grad * torch.clamp(max_norm / lengths, max=1.0)
                """),
            "squared",
            ["square root"],
            breaks="Euclidean norm",
        ),
        wrong(
            "the squared norm compared with max_norm",
            _hook("""
                squares = (grad * grad).sum(dim=1, keepdim=True)
                return torch.where(squares > max_norm, grad * (max_norm / squares.sqrt()), grad)
                """),
            "threshold",
            ["compare the row's norm, not its square", "max_norm is 1"],
            not_says=["did the hook return"],
            breaks="every row whose Euclidean norm is larger than `max_norm` is scaled down",
        ),
        wrong(
            "the norm compared with max_norm**2",
            _hook("""
                lengths = grad.norm(dim=1, keepdim=True)
                return torch.where(lengths > max_norm**2, grad * (max_norm / lengths), grad)
                """),
            "threshold",
            ["compare the row's norm, not its square"],
            breaks="every row whose Euclidean norm is larger than `max_norm` is scaled down",
        ),
        wrong(
            "0 / 0 for a row of zeros",
            _hook("""
                lengths = torch.linalg.vector_norm(grad, dim=1, keepdim=True)
                return grad / lengths * torch.clamp(lengths, max=max_norm)
                """),
            "zero_row",
            ["row of zeros"],
            breaks="(a row of zeros too)",
        ),
        wrong(
            "in place, returning None",
            _hook("""
                lengths = torch.linalg.vector_norm(grad, dim=1, keepdim=True)
                grad.mul_(torch.clamp(max_norm / lengths, max=1.0))
                """),
            "returned_none",
            ["changed grad in place", "return the clipped gradient"],
            breaks="leave `grad` unchanged",
        ),
        wrong(
            "in place, returning grad",
            _hook("""
                lengths = torch.linalg.vector_norm(grad, dim=1, keepdim=True)
                return grad.mul_(torch.clamp(max_norm / lengths, max=1.0))
                """),
            "in_place",
            ["must not modify its argument"],
            breaks="leave `grad` unchanged",
        ),
        wrong(
            "the result never returned",
            _hook("""
                lengths = torch.linalg.vector_norm(grad, dim=1, keepdim=True)
                clipped = grad * torch.clamp(max_norm / lengths, max=1.0)
                """),
            "returned_none",
            ["returned None"],
            not_says=["in place"],
        ),
        wrong("grad unchanged", _hook("return grad"), "unchanged", ["unchanged"]),
        wrong("left blank", function(_HOOK, _STUB), "blank", ["NotImplementedError"]),
    ],
    "q5_predict_inplace": [
        wrong(
            "every in-place change breaks backward",
            "raises = (True, True, True, True, True, True)",
            "predictions",
            ["4 of the 6 predictions in raises are wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "no in-place change breaks backward",
            "raises = (False, False, False, False, False, False)",
            "predictions",
            ["2 of the 6 predictions in raises are wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "relu_ thought to break its own gradient",
            "raises = (True, False, True, False, True, False)",
            "predictions",
            ["1 of the 6 predictions in raises is wrong", "does not say which"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "tanh thought to save its input",
            "raises = (True, False, False, True, True, False)",
            "predictions",
            ["1 of the 6 predictions in raises is wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "pow(2) thought to save nothing of y",
            "raises = (True, False, False, False, False, False)",
            "predictions",
            ["1 of the 6 predictions in raises is wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "dividing by a number thought to save y",
            "raises = (True, False, False, False, True, True)",
            "predictions",
            ["1 of the 6 predictions in raises is wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "sigmoid and pow(2) both missed",
            "raises = (False, False, False, False, False, True)",
            "predictions",
            ["3 of the 6 predictions in raises are wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong("a list of five", "raises = [True, False, False, False, True]", "shape",
              ["6 items"]),
        wrong("ones and zeros", "raises = (1, 0, 0, 0, 1, 0)", "type", ["True or False"]),
        wrong("left blank", "", "blank", ["not defined"]),
    ],
}


def _right(label: str, code: str) -> tuple[str, str]:
    return label, textwrap.dedent(code).strip("\n")


#: Correct answers other than the reference, by grade id: (label, code), full marks each.
RIGHT: dict[str, list[tuple[str, str]]] = {
    "q1_sinc": [
        _right("setup_context, with a forward-mode jvp from ctx.save_for_forward", _SETUP_JVP),
        _right("setup_context, forward(x, small=1e-2) with an optional argument", """
class Sinc(torch.autograd.Function):
    @staticmethod
    def forward(x, small=1e-2):
        nonzero = torch.where(x == 0, 1.0, x)
        return torch.where(x == 0, 1.0, torch.sin(nonzero) / nonzero)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, small = inputs
        ctx.save_for_backward(x)
        ctx.small = small

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        near = x.abs() < ctx.small
        far = torch.where(near, 1.0, x)
        formula = (far * torch.cos(far) - torch.sin(far)) / far**2
        x2 = x * x
        series = -x / 3 * (1 - x2 / 10 * (1 - x2 / 28))
        return grad_output * torch.where(near, series, formula), None
"""),
        _right("once_differentiable, set_materialize_grads(False), needs_input_grad, four "
               "terms up to 0.05", """
from torch.autograd.function import once_differentiable


class Sinc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        safe = torch.where(x == 0, 1.0, x)
        return torch.where(x == 0, 1.0, torch.sin(safe) / safe)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        if grad_output is None or not ctx.needs_input_grad[0]:
            return None
        (x,) = ctx.saved_tensors
        small = x.abs() < 0.05
        ctx.small = small  # an attribute: not a tensor autograd must track
        series = -x / 3 + x**3 / 30 - x**5 / 840 + x**7 / 45360
        t = torch.where(small, 1.0, x)
        formula = (t * torch.cos(t) - torch.sin(t)) / t**2
        return grad_output * torch.where(small, series, formula)
"""),
        _right("vjp in place of backward, the output saved beside x", """
class Sinc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.where(x == 0, 1.0, torch.sin(x) / torch.where(x == 0, 1.0, x))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def vjp(ctx, grad_output):
        x, y = ctx.saved_tensors
        small = x.abs() < 1e-2
        safe = torch.where(small, 1.0, x)
        x2 = x * x
        series = x * (-1 / 3 + x2 / 30 - x2 * x2 / 840)
        return grad_output * torch.where(small, series, (torch.cos(safe) - y) / safe)
"""),
    ],
    "q2_wrong_inputs": [
        _right("gradcheck's fast mode", """
def wrong_inputs(function, inputs):
    answers = []
    for i in range(len(inputs)):
        copies = [t.detach().clone().requires_grad_(j == i) for j, t in enumerate(inputs)]
        answers.append(not torch.autograd.gradcheck(function.apply, copies, fast_mode=True,
                                                    raise_exception=False))
    return tuple(answers)
"""),
        _right("gradcheck left to raise, GradcheckError caught", """
from torch.autograd import gradcheck
from torch.autograd.gradcheck import GradcheckError


def wrong_inputs(function, inputs):
    verdicts = []
    for i in range(len(inputs)):
        args = tuple(t.clone().detach().requires_grad_(j == i) for j, t in enumerate(inputs))
        try:
            gradcheck(function.apply, args)
            verdicts.append(False)
        except GradcheckError:
            verdicts.append(True)
    return tuple(verdicts)
"""),
    ],
    "q3_fixed": [
        _right("forward keeps an intermediate on ctx as an attribute", """
class Fixed(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        e = torch.exp(-w * x**2)
        y = w * e
        ctx.save_for_backward(x, w, y)
        ctx.e = e
        return y

    @staticmethod
    def backward(ctx, grad):
        x, w, y = ctx.saved_tensors
        return grad * (-2 * w * x * y), grad * (ctx.e - x**2 * y)
"""),
        _right("setup_context, once_differentiable and needs_input_grad", """
from torch.autograd.function import once_differentiable


class Fixed(torch.autograd.Function):
    @staticmethod
    def forward(x, w):
        return w * torch.exp(-w * x**2)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w = inputs
        ctx.save_for_backward(x, w, output)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, w, y = ctx.saved_tensors
        dx = dw = None
        if ctx.needs_input_grad[0]:
            dx = grad * (-2 * w * x * y)
        if ctx.needs_input_grad[1]:
            dw = grad * (1 - w * x * x) * y / w
        return dx, dw
"""),
    ],
}
