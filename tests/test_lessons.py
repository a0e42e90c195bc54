"""The lesson notebooks: committed outputs are the executed truth, and they reproduce the seeds.

``test_lesson_reexecutes_to_its_committed_outputs`` runs each lesson in a fresh kernel and
compares every output with the committed one, masking only what varies from run to run:
memory addresses, the random model ids of widgets, and the numbers of cells tagged "measured"
(times measured on the machine). An image is compared by what a viewer needs of it: a PNG, and
whether it fits the output area (its pixels differ with the FreeType and Graphviz builds); a
graph's labels are in its text alternative, compared exactly. The other tests read the
committed notebooks only.
"""

from __future__ import annotations

import base64
import math
import re
from pathlib import Path

import matplotlib
import nbformat
import pytest
import torch

from autograd_course.kernel import graphs, lessons, plots
from autograd_course.testkit import lessons as lessons_run

matplotlib.use("Agg")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
LESSONS = [
    "01_gradients",
    "02_three_weights",
    "03_accumulation",
    "04_no_grad",
    "05_sgd",
    "06_cost",
    "07_engine",
    "08_training",
    "09_extending",
    "10_functional",
    "11_backprop_by_hand",
    "12_gradients_in_practice",
]
# The venv's own kernelspec: JupyterLab then leaves the metadata alone (no "unsaved" on open).
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
WIDGET = "application/vnd.jupyter.widget-view+json"
#: JupyterLab's output area, in pixels: no committed image is wider.
OUTPUT_AREA = 968
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

ADDRESS = re.compile(r"0x[0-9a-f]+")


def read(name: str):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


#: A difference at rounding level, printed in scientific notation (1e-12 and below, or zero):
#: its digits depend on the CPU's instruction set (which kernels BLAS and torch's reductions
#: pick, and so the order they add in), not on the lesson. Lesson 11's "max |by hand -
#: autograd| 4.2e-17" was 1.1e-16 on another CPU, with the same torch and seed.
ROUNDING = re.compile(r"\b(?:\d(?:\.\d+)?e-(?:1[2-9]|[2-9]\d|\d{3})|0(?:\.0+)?e[+-]00)\b")


def mask(text: str) -> str:
    """Hide memory addresses (``<AddBackward0 object at 0x7f...>``) and the digits of a
    difference at rounding level (:data:`ROUNDING`)."""
    return ROUNDING.sub("≈0", ADDRESS.sub("0x…", text))


def png_bytes(value: str) -> bytes:
    """The bytes of an ``image/png`` output (base64 in the notebook)."""
    return base64.b64decode(value)


def image_width(output, mime: str = "image/png") -> int:
    """The width an image is shown at: its metadata's width, else its pixels'."""
    shown = output.get("metadata", {}).get(mime, {}).get("width")
    return shown or graphs.png_width(png_bytes(output.data[mime]))


def is_graph(output) -> bool:
    """Whether an output is a graph picture: a PNG whose plain text is the graph as text."""
    data = output.get("data", {})
    return "image/png" in data and "└─" in data.get("text/plain", "")


def output_texts(nb) -> list[str]:
    """The text of every output: streams and ``text/plain``, one string per output."""
    texts = []
    for cell in code_cells(nb):
        for output in cell.outputs:
            if output.output_type == "stream":
                texts.append(output.text)
            elif "data" in output and "text/plain" in output.data:
                texts.append(output.data["text/plain"])
    return texts


def contains_lines(text: str, block: str) -> bool:
    """Whether ``block``'s lines appear in ``text`` as a run of whole lines."""
    lines = mask(text).split("\n")
    wanted = mask(block).split("\n")
    return any(lines[i : i + len(wanted)] == wanted for i in range(len(lines) - len(wanted) + 1))


NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def mask_measured(text: str) -> str:
    """Hide the numbers of a cell tagged "measured": timings that vary from run to run, and
    counts of a machine's own kernels; and the padding that aligns them, whose width follows
    the number's."""
    return re.sub(r" {2,}", " ", NUMBER.sub("N", text))


def normalise(output, measured: bool = False):
    """An output as a comparable value, with only the varying parts masked.

    A cell tagged "measured" prints measurements (times) that vary between runs: its numbers
    are masked, its words and layout are still compared.
    """
    kind = output.output_type
    if kind == "stream" and measured:
        return (kind, output.name, mask_measured(mask(output.text)))
    if kind == "stream":
        return (kind, output.name, mask(output.text))
    if kind == "error":
        return (kind, output.ename, mask(output.evalue))
    data = {}
    for mime, value in output.data.items():
        if mime in ("text/plain", "text/html", "text/markdown"):
            data[mime] = mask_measured(mask(value)) if measured else mask(value)
        elif mime == WIDGET:
            data[mime] = {k: v for k, v in value.items() if k != "model_id"}
        elif mime == "image/png":  # the pixels differ with the FreeType and Graphviz builds
            raw = png_bytes(value)
            data[mime] = (raw.startswith(PNG_SIGNATURE),
                          graphs.png_width(raw) <= OUTPUT_AREA, image_width(output) <= OUTPUT_AREA)
        else:
            data[mime] = value
    return (kind, data)


def coalesce(outputs):
    """Outputs with consecutive stream outputs of one stream merged: when a kernel flushes a
    print in two parts is not the notebook's business."""
    merged = []
    for output in outputs:
        if (merged and output.output_type == "stream" and merged[-1].output_type == "stream"
                and merged[-1].name == output.name):
            merged[-1] = nbformat.v4.new_output("stream", name=output.name,
                                                text=merged[-1].text + output.text)
        else:
            merged.append(output)
    return merged


def execute(name: str):
    return lessons_run.execute(NOTEBOOKS / f"{name}.ipynb")


@pytest.mark.lesson_run
@pytest.mark.parametrize("name", LESSONS)
def test_lesson_reexecutes_to_its_committed_outputs(name):
    committed = read(name)
    fresh = execute(name)
    old_cells, new_cells = code_cells(committed), code_cells(fresh)
    assert [c.source for c in old_cells] == [c.source for c in new_cells]
    for index, (old, new) in enumerate(zip(old_cells, new_cells, strict=True)):
        if any(is_graph(o) for o in old.outputs) and not graphs.dot_available():
            # Without dot the lesson shows the text rendering and the install hint instead.
            assert any(graphs.INSTALL_HINT in o.get("text", "") for o in new.outputs)
            continue
        measured = "measured" in old.metadata.get("tags", [])
        expected = [normalise(o, measured) for o in coalesce(old.outputs)]
        actual = [normalise(o, measured) for o in coalesce(new.outputs)]
        assert actual == expected, f"{name}, code cell {index}:\n{old.source}"


# Every output the seed demos print, and the lesson that prints it (checked as whole lines).
def seed_000_block(t1_grad: str, t2_grad: str) -> str:
    """What gradients.py prints before or after ``z.backward()`` (note the spaces after ':')."""
    return "\n".join(
        [
            "",
            "Tensor t1 values, grad, grad_fn: ",
            "tensor([1., 2., 3.], requires_grad=True)",
            t1_grad,
            "None",
            "",
            "Tensor t2 values, grad, grad_fn: ",
            "tensor([ 2.,  5., 10.], grad_fn=<AddBackward0>)",
            t2_grad,
            "<AddBackward0 object at 0x7f0000000000>",  # the address is masked
        ]
    )


SEED_000_BEFORE = seed_000_block("None", "None")
SEED_000_AFTER = seed_000_block("tensor([2., 4., 6.])", "tensor([1., 1., 1.])")
SGD_TABLE = """\
Iteration  1: x = -0.500000, f(x) = -4.6875000
Iteration  2: x = -0.925000, f(x) = -7.6622810
Iteration  3: x = -1.174209, f(x) = -8.4623260
Iteration  4: x = -1.232996, f(x) = -8.4984322
Iteration  5: x = -1.234797, f(x) = -8.4984636
Iteration  6: x = -1.234772, f(x) = -8.4984646
Iteration  7: x = -1.234773, f(x) = -8.4984636
Iteration  8: x = -1.234773, f(x) = -8.4984636
Iteration  9: x = -1.234773, f(x) = -8.4984636
Iteration 10: x = -1.234773, f(x) = -8.4984636"""
SEED_OUTPUTS = [
    # (seed output, the lesson that reproduces it)
    (SEED_000_BEFORE, "01_gradients"),
    ("\nExecuting backward()", "01_gradients"),
    (SEED_000_AFTER, "01_gradients"),
    ("1.0 -4.0", "02_three_weights"),
    ("4.0\ntensor([-12.,  -4., -16.])", "02_three_weights"),
    ("tensor(12.6667, grad_fn=<MeanBackward0>)", "02_three_weights"),
    ("tensor([1.3333, 2.0000, 2.6667])", "02_three_weights"),
    ("after backward 1 w.grad = -4.0\nafter backward 2 w.grad = -8.0", "03_accumulation"),
    ("tensor([1.3333, 2.0000, 2.6667])", "03_accumulation"),
    ("tensor([2.6667, 4.0000, 5.3333])", "03_accumulation"),
    ("False", "04_no_grad"),
    (
        "Does 'x' have a gradient? True\n"
        "Does 'a' have a gradient? True\n"
        "Does 'z' have a gradient? False",
        "04_no_grad",
    ),
    ("Does 'a' have a gradient? True\nDoes 'z' have a gradient? False", "04_no_grad"),
    (SGD_TABLE, "05_sgd"),
]


@pytest.mark.parametrize(("seed_output", "name"), SEED_OUTPUTS)
def test_lesson_prints_the_seed_output(seed_output, name):
    texts = output_texts(read(name))
    assert any(contains_lines(text, seed_output) for text in texts), (
        f"{name} does not print:\n{seed_output}"
    )


@pytest.mark.parametrize("name", LESSONS)
def test_no_stderr_warning_or_error_in_outputs(name):
    nb = read(name)
    assert nb.metadata.kernelspec == KERNELSPEC
    for cell in code_cells(nb):
        for output in cell.outputs:
            assert output.output_type != "error", cell.source
            assert not (output.output_type == "stream" and output.name == "stderr"), cell.source
    for text in output_texts(nb):
        assert "Warning" not in text


@pytest.mark.parametrize("name", LESSONS)
def test_lesson_ends_with_common_mistakes_then_exercises_and_documentation(name):
    headings = [
        line
        for cell in read(name).cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith("## ")
    ]
    assert headings[-2:] == ["## Common mistakes", "## Exercises (ungraded) and further reading"]
    last = read(name).cells[-1].source
    assert len(re.findall(r"^\d\. ", last, re.M)) >= 3, "a few ungraded exercises"
    assert len(re.findall(r"\]\(https://pytorch\.org/", last)) >= 3, "links to the docs"
    assert f"release/{name}/{name}.ipynb" in last


@pytest.mark.parametrize("name", LESSONS)
def test_lesson_says_how_long_and_what_it_needs(name):
    intro = read(name).cells[0].source
    assert re.search(r"\*About \d+ minutes with the assignment\.", intro)


# Statements the lessons correct, each shown by running it.
CORRECTIONS = [
    ("01_gradients", "t1.is_leaf: True\nt2.is_leaf: False"),
    ("01_gradients", "RuntimeError: can't retain_grad on Tensor that has requires_grad=False"),
    ("01_gradients", "AddBackward0\nTrue"),  # type(t2.grad_fn).__name__, taught for 01 Q2
    ("03_accumulation", "x.grad = 7.0\nwrites into x.grad: [7.0]"),  # paths sum, written once
    ("03_accumulation", "AttributeError: 'NoneType' object has no attribute 'zero_'"),
    ("04_no_grad", "True True False"),  # created with requires_grad / Parameter / computed
    ("04_no_grad", "RuntimeError: Inplace update to inference tensor outside InferenceMode"),
    # what the units past the demos state, each shown by running it
    ("06_cost", "1 tensor saved: tensor([2., 3., 4.], grad_fn=<AddBackward0>)\nis it a? True"),
    ("06_cost", "x + 2              saves nothing               0 bytes"),
    ("06_cost", "0 tensors saved under no_grad"),
    ("06_cost", "segments of 16 modules   same gradients: True"),
    ("07_engine", "after backward 1 w.grad = -4.0\nafter backward 2 w.grad = -8.0"),
    ("08_training", "step 1: x = -5.000000, f(x) =  600.0000"),
    ("08_training", "      0.0 | 8 steps   | 6 steps"),
    # freezing after creating the optimizer, case by case: what .grad holds, and LBFGS
    ("08_training", "   Adam                           frozen layer changed: False\n"
                    "   AdamW (weight decay 0.01)      frozen layer changed: False\n"),
    ("08_training", "2. .grad is zeros (zero_grad(set_to_none=False))\n"
                    "   SGD                            frozen layer changed: False\n"
                    "   SGD, momentum                  frozen layer changed: True\n"),
    ("08_training", "3. frozen between backward() and step(): the real gradient is in .grad\n"
                    "   SGD                            frozen layer changed: True\n"),
    ("08_training", "   frozen before its first step   frozen layer changed: False\n"
                    "   frozen after 3 steps           frozen layer changed: True\n"),
    # where plain autograd fails, and what a custom Function, gradcheck and hooks fix
    ("09_extending", "value:      tensor([ 0.6931, 10.0000, 50.0000,     inf])\n"
                     "gradient:   tensor([0.5000, 1.0000, 1.0000,    nan])"),
    ("09_extending", "value:    tensor([0., 0., 2.])\ngradient: tensor([   nan,    nan, 0.2500])"),
    ("09_extending", "value:    tensor([0., 0., 2.])\ngradient: tensor([0.0000, 0.0000, 0.2500])"),
    ("09_extending", "value:    tensor([  0.6931,  10.0000,  50.0000, 100.0000])\n"
                     "gradient: tensor([0.5000, 1.0000, 1.0000, 1.0000])"),
    ("09_extending", "needs_input_grad=(False, True): computed grad_x False, grad_w True"),
    ("09_extending", "60 entries, fast_mode=True : passed True, {'forward': 4, 'backward': 4}"),
    ("09_extending", "exp, its input changed:\nx.grad: tensor([1.0000, 2.7183, 7.3891])"),
    ("09_extending", "sin, its output changed:\nx.grad: tensor([ 2.0000,  1.0806, -0.8323])"),
    ("09_extending", "kept on ctx:\nx.grad: tensor([0.5000, 1.0000, 1.0000])"),
    ("09_extending", "returns grad * 0:    tensor([ 6., 12., 18.])\n"
                     "does grad.mul_(0):   tensor([0., 0., 0.])"),
    ("09_extending", "PyTorch warns: Error detected in ExpBackward0. Traceback of forward call "
                     "that caused the error:\n    y = torch.log(1 + torch.exp(x))"),
    # mark_non_differentiable matters for floating outputs; integral ones never require grad
    ("09_extending", "torch.float32, marked False: sign.requires_grad = True\n"
                     "   x.grad: tensor([-0., 0.])"),
    ("09_extending", "torch.int64, marked False: sign.requires_grad = False"),
    ("09_extending", "backward receives for the indices: None"),  # set_materialize_grads(False)
    # gradcheck checks only the inputs that require grad; fast mode's failure, in full
    ("09_extending", "data without requires_grad: True\n"
                     "GradcheckError: Jacobian mismatch for output 0 with respect to input 0,"),
    ("09_extending", "Below, we recompute numerical and analytical jacobians in slow mode:"),
    # a second derivative through a backward autograd cannot see is silently wrong
    ("09_extending", "Softplus:           tensor([0.2678, 0.8466, 1.9982])\n"
                     "DetachingSoftplus:  tensor([0.1447, 0.5000, 1.5516])\n"
                     "2σ² alone:          tensor([0.1447, 0.5000, 1.5516])"),
    ("09_extending", "first.grad_fn: torch::autograd::Error"),
    # forward-mode rules, checked; which torch.func transform needs which rule
    ("09_extending", "tangent agrees with the finite difference: True"),
    ("09_extending", "LinearFwdForgetsW, backward only: True"),
    ("09_extending", "jacfwd equals jacrev: [True, True]"),
    ("09_extending", "SoftplusNew     yes           no  no        | "
                     "yes  yes    (2)  (2)    (3) (2)\n"
                     "SoftplusNewVmap yes           no  yes       | "
                     "yes  yes    yes  (3)    (3) (3)\n"
                     "LinearFwd       yes           yes no        | "
                     "yes  yes    (4)  (4)    yes (4)\n"
                     "LinearFwdVmap   yes           yes yes       | "
                     "yes  yes    yes  yes    yes yes"),
    # saved attributes follow the operation's argument names (mm saves _saved_mat2)
    ("09_extending", "a[None] @ m:   ['_saved_mat2', "),
    ("09_extending", "a.sum(dim=0):  {'_saved_dim': (0,), '_saved_keepdim': False, "
                     "'_saved_self_sym_sizes': (3,)}"),
    # mark_dirty, and grad_output changed in place
    ("09_extending", "ExpInPlaceUnmarked a.grad_fn: CloneBackward0       "
                     "x.grad: tensor([1., 2., 3.])"),
    ("09_extending", "SoftplusGradInPlace  x.grad: tensor([-0.7388,  1.3863, 14.5399])"),
    # the order hooks run in
    ("09_extending", "tensor hook on y -> pre-hook of ExpBackward0 -> hook of ExpBackward0 -> "
                     "tensor hook on x -> post-accumulate hook on x"),
    ("09_extending", "tensor hook on y -> module pre-hook -> pre-hook of AddmmBackward0 -> "
                     "hook of AddmmBackward0 -> module hook -> tensor hook on x"),
    ("09_extending", "x.grad: tensor([1.0000, 0.5403])   cos(x): tensor([1.0000, 0.5403])"),
    # torch.func's answers, each against a second method
    ("10_functional", "inside the function, v has shape (3,)\ntensor([ 3., 12., 21., 30.])"),
    ("10_functional", "grad(grad(f))(1.5) = 29.0; 12x² + 2 = 29.0"),
    ("10_functional", "functional_call(model, params, ...) is model(...): True"),
    ("10_functional", "vmap(grad(...)) equals the loop: True"),
    ("10_functional", "mean of the per-sample gradients is the batch gradient: True"),
    ("10_functional", "tangent is J v: True | the value is f(x): True"),
    ("10_functional", "jvp gives J v:   True\nvjp gives u^T J: True True"),
    ("10_functional", "jacrev is J: True\njacfwd is J: True"),
    ("10_functional", "hessian(chain) is the closed form: True"),
    ("10_functional", "both equal H @ v: True True"),
    # has_aux returns tensors; .item() outside
    ("10_functional", "fraction within 0.01 of y: 1.00 (.item() outside grad)"),
    # randomness= and chunk_size of vmap
    ("10_functional", 'randomness="same": one mask for all'),
    ("10_functional", "all rows equal: True"),
    ("10_functional", "chunk_size=None: the function ran 1 time(s), largest tensor 30\n"
                      "chunk_size=4: the function ran 3 time(s), largest tensor 12\n"
                      "same results: True"),
    # per-sample gradients without vmap: one weight copy per sample, one backward()
    ("10_functional", "copies share the parameters' memory: True\n"
                      "one backward() through the copies equals vmap(grad(...)): True"),
    # the counts behind the timings: operations, multiply-adds, numbers written
    ("10_functional", "batch 512: operations: loop 17412, vmap 49 | multiply-adds: loop 311,296, "
                      "vmap 311,296"),
    ("10_functional", "multiply-adds: {'f(x)': 12, 'jvp': 36, 'vjp': 24}"),
    ("10_functional", "n =    4, m = 2048: jacrev 2048 vjps  16,785,408 multiply-adds "
                      "(13 operations) | jacfwd    4 jvps      49,152 (24 operations)"),
    ("10_functional", "numbers written: the Hessian, then H @ v 140,087,985 (102 operations); "
                      "jvp of grad 143,972 (119 operations)"),
    # BatchNorm under vmap, buffers in functional_call, an ensemble
    ("10_functional", "eval mode: True\nrunning_mean now: None\nbatch statistics per group: True\n"
                      "the same in eval mode: True"),
    ("10_functional", "models[1] with the parameters of models[0] is models[0]: False\n"
                      "... with its parameters and buffers: True"),
    ("10_functional", "5 models in one call: (5, 6, 1) | each model's own predictions: True"),
    # linearize against jvp; jacrev's chunk_size
    ("10_functional", "value is f(x): True | 100 directions, the same as jvp: True"),
    ("10_functional", "jvp(layer, (x,), (v,))  19 operations, 36 multiply-adds\n"
                      "jvp_fn(v)                5 operations, 12 multiply-adds"),
    ("10_functional", "chunk_size=256: largest tensor   524,288 numbers, 16,785,408 multiply-adds, "
                      "77 operations\nthe same Jacobian: True"),
    # a custom Function with a backward only: reverse mode works, forward mode needs rules
    ("10_functional", "jacrev is diag(3x²): True"),
    ("10_functional", "jvp: NotImplementedError: You must implement the jvp function for custom "
                      "autograd.Function"),
    ("10_functional", "jacfwd: RuntimeError: You tried to vmap over Cube, but it does not have "
                      "vmap support."),
    # backward passes by hand, each checked against autograd
    ("11_backprop_by_hand", "dX  shape (5, 3)  max |by hand - autograd| 0.0e+00  allclose: True\n"
                            "dW  shape (3, 4)  max |by hand - autograd| 0.0e+00  allclose: True"),
    ("11_backprop_by_hand", "G @ B:   dA  shape (3, 3)  max |by hand - autograd| 5.2e+00  "
                            "allclose: False"),  # square shapes hide a wrong product
    ("11_backprop_by_hand", "G.sum_to_size(b.shape) equals G.sum(0): True"),
    ("11_backprop_by_hand", "X.max(1):\n tensor([[0., 1., 0., 0.],\n        [2., 0., 0., 0.]]) \n"
                            "X.amax(1):\n tensor([[0.0000, 0.5000, 0.5000, 0.0000],\n"
                            "        [0.5000, 0.5000, 0.5000, 0.5000]])"),
    ("11_backprop_by_hand", "X.max():\n tensor([[0.0000, 0.5000, 0.5000, 0.0000],\n"
                            "        [0.0000, 0.0000, 0.0000, 0.0000]])"),
    ("11_backprop_by_hand", "naive            loss     inf   dZ tensor([[nan, nan, nan]], "
                            "dtype=torch.float32)\nlog(softmax)     loss     inf   dZ "
                            "tensor([[nan, nan, nan]], dtype=torch.float32)\n"
                            "F.cross_entropy  loss  200.00   dZ tensor([[-1.,  1.,  0.]], "
                            "dtype=torch.float32)"),
    ("11_backprop_by_hand", "each row of dX sums to 0: True"),  # layer norm
    ("11_backprop_by_hand", "dE[idx] = G                  rows wrong: [1, 4]\n"
                            "dE[idx] += G                 rows wrong: [1, 4]\n"
                            "index_put_(accumulate=True)  rows wrong: []"),
    # what autograd saves, and what a hand backward keeps, counted: a product saves, for each
    # factor that needs a gradient, the other factor (D, data, needs none: W is not saved)
    ("11_backprop_by_hand", "X @ W                            0   W (4, 5), X (6, 4)\n"
                            "D @ W                            0   D (6, 4)\n"),
    ("11_backprop_by_hand", "X.max(1)                         6   its output (6,) int64\n"
                            "X.amax(1)                        6   X (6, 4), its output (6,)"),
    ("11_backprop_by_hand", "F.layer_norm, autograd:    128 new numbers (mean and r)\n"
                            "written out, autograd:    4288 new numbers\n"
                            "section 6, by hand:       2112 new numbers (x_hat and r)"),
    ("11_backprop_by_hand", "new numbers kept: by hand 136,192 (h and p), autograd 136,193\n"
                            "by hand : 27 operations, 20,709,376 multiply-adds; 7 writes of "
                            "(512, 256): mm, add, tanh, mm, mul, rsub, mul\nautograd: 30 "
                            "operations, 20,709,376 multiply-adds; 5 writes of (512, 256): mm, "
                            "add, tanh, mm, tanh_backward"),
    ("11_backprop_by_hand", "and b - 0.1 * G, with no error, has shape (5, 4)"),
    ("11_backprop_by_hand", "without / N, divided by N = 6: True"),
    # non-differentiable points, nan and inf gradients, their fixes; depth, clipping, precision
    ("12_gradients_in_practice", "hardtanh(x, 0, 1)         0         0         1         0"
                                 "         0\nclamp(x, min=0)           0         1         1"
                                 "         1         1"),
    ("12_gradients_in_practice", "x.amax()             after one step: x = [1.0, 2.95, 2.95], "
                                 "max = 2.95\nx.max(dim=0).values  after one step: x = "
                                 "[1.0, 2.9, 3.0], max = 3.00"),
    ("12_gradients_in_practice", "relu:          w, last loss = ([0.0, 0.0], 14.0625)"),
    ("12_gradients_in_practice", "gradient descent on |w|: [0.15, 0.05, -0.05, 0.05, -0.05, 0.05]\n"
                                 "proximal steps:          [0.15, 0.05, 0.0, 0.0, 0.0, 0.0]"),
    ("12_gradients_in_practice", "y = 0.0, dy/dx = nan, dy/dgate = inf"),
    ("12_gradients_in_practice", "value:    tensor([1.0000e+30, 1.0000e+00])\n"
                                 "gradient: tensor([-inf, -1.])"),
    # anomaly mode lets an inf through; the hooks on every node name it
    ("12_gradients_in_practice", "should only be enabled for debugging.\n"
                                 "x.grad: tensor([-inf, -1.])"),
    ("12_gradients_in_practice", "DivBackward0 returned nan for its input 0, made by: relative = "
                                 "(prediction - target) / target\nReciprocalBackward0 returned inf "
                                 "for its input 0, made by: return (1 / x).sum()"),
    ("12_gradients_in_practice", "same loss: True\nparameters whose .grad is not finite: {}"),
    ("12_gradients_in_practice", "double where      values [1.0, 0.9983, 0.8415], gradients "
                                 "[0.0, -0.0333, -0.3012]"),
    ("12_gradients_in_practice", "sqrt(clamp(x, min=1e-10))         0         0         1"
                                 "      0.25"),
    ("12_gradients_in_practice", "clamp(sqrt(x), min=1e-5)        nan         0         1"
                                 "      0.25"),  # a clamp outside does not help
    ("12_gradients_in_practice", "value: tensor([0.0000, 0.5000])  gradient: tensor([    nan, "
                                 "-0.2500])"),  # nan_to_num on the value
    ("12_gradients_in_practice", "gradient after nan_to_num, norm: 0.0000\n"
                                 "gradient of the fixed loss, norm: 1.1127"),
    ("12_gradients_in_practice", "layer_norm(3h) == layer_norm(h): True\nits gradient with "
                                 "respect to 3h is a third of that with respect to h: True"),
    # PyTorch's gain for tanh: a steady forward spread, a gradient that grows downwards
    ("12_gradients_in_practice", "calculate_gain('tanh') = 1.6667 (5/3 = 1.6667); "
                                 "calculate_gain('relu') = 1.4142 (√2)"),
    ("12_gradients_in_practice", "tanh, σ = 1 (LeCun)            0.62, 0.17, 0.11               "
                                 "0.18 (x0.94 per block)\ntanh, σ = 5/3 (PyTorch's gain) 0.75, "
                                 "0.64, 0.65               17 (x1.10 per block)"),
    ("12_gradients_in_practice", "clip_grad_norm_(max_norm=1.0):  norm 1.0000, angle 0.00°"),
    # clip_grad_norm_ always multiplies (by 1 under the limit); an inf becomes nan
    ("12_gradients_in_practice", "under max_norm  returned 0.559  .grad tensor([ 0.2500, -0.5000,"
                                 "  0.0000]), written: True, values unchanged: True"),
    ("12_gradients_in_practice", "with an inf     returned inf    .grad tensor([nan, -0., 0.]), "
                                 "written: True, values unchanged: False"),
    ("12_gradients_in_practice", "clip_grad_value_(clip_value=1.0) of [inf, -4.0, nan]: "
                                 "tensor([ 1., -1., nan])"),
    ("12_gradients_in_practice", "clip_or_skip on [inf, -4.0, 0.0]: step False, "
                                 ".grad tensor([inf, -4.,  0.])"),
    ("12_gradients_in_practice", "0.4 x smallest subnormal  2.3842e-08 -> float16 0.0000e+00  "
                                 "(relative error 100.0%)"),
    ("12_gradients_in_practice", "softmax(out)                 bfloat16"),
    ("12_gradients_in_practice", "cross_entropy(out, labels)   float32"),
    ("12_gradients_in_practice", "0.weight  parameter torch.float32, .grad torch.float32"),
    ("12_gradients_in_practice", "computed under float16 autocast: 171 zeros that float32 has "
                                 "not, median relative error 10.8%"),
    ("12_gradients_in_practice", "float16   loss x 2^32:    0 zeros,  102 inf or nan"),
    ("12_gradients_in_practice", "parameters changed: True; scale now 65536.0"),
    ("12_gradients_in_practice", "scale 65536.0 -> 32768.0; parameters unchanged: True"),
    ("12_gradients_in_practice", "float32           1,476,395,008 multiply-adds; saved for "
                                 "backward: 4,194,304 bytes {'float32': 4194304}\nbfloat16 "
                                 "autocast 1,476,395,008 multiply-adds; saved for backward: "
                                 "5,242,880 bytes"),
]


@pytest.mark.parametrize(("name", "shown"), CORRECTIONS)
def test_each_correction_is_executed_in_its_lesson(name, shown):
    texts = "\n".join(output_texts(read(name)))
    assert shown in texts


@pytest.mark.parametrize("name", ["12_gradients_in_practice"])
def test_float16_median_error_is_about_a_tenth_and_a_loss_scale_cuts_it_a_hundredfold(name):
    """Lesson 12's words on its (measured) float16 gradients: "the median relative error is
    about 10% ... a hundred times and more what is left once the loss is scaled", with margin
    (a CPU's own float16 kernels move the numbers a little)."""
    texts = "\n".join(output_texts(read(name)))
    unscaled = re.search(r"float16 autocast: \d+ zeros that float32 has not, median relative "
                         r"error ([\d.]+)%", texts)
    scaled = re.search(r"float16   loss x 2\^16: .* median relative error ([\d.e+-]+)", texts)
    assert unscaled and scaled, "the lesson's lines moved"
    median = float(unscaled.group(1)) / 100
    assert 0.06 <= median <= 0.15, median
    assert median >= 150 * float(scaled.group(1)), (median, scaled.group(1))


def test_an_inference_tensor_joins_a_graph_where_it_need_not_be_saved():
    texts = output_texts(read("04_no_grad"))
    source = "\n".join(c.source for c in code_cells(read("04_no_grad")))
    assert "(w + y).sum().backward()" in source and "tensor([1., 1., 1.])\n" in texts


COMMON_MISTAKES = [
    ("01_gradients", "PyTorch warns: The .grad attribute of a Tensor that is not a leaf"),
    ("01_gradients", "RuntimeError: Can't call numpy() on Tensor that requires grad."),
    ("02_three_weights", "RuntimeError: grad can be implicitly created only for scalar outputs"),
    ("03_accumulation", "RuntimeError: Trying to backward through the graph a second time"),
    ("03_accumulation", "point (1.0, 2.0): w.grad = -2.0"),  # forgot to clear
    ("04_no_grad", "RuntimeError: a leaf Variable that requires grad is being used in an in-pl"),
    ("04_no_grad", "RuntimeError: Inference tensors cannot be saved for backward."),
    ("05_sgd", "ValueError: can't optimize a non-leaf Tensor"),
    ("06_cost", "RuntimeError: one of the variables needed for gradient computation has been "
                "modified by an inplace operation"),
    ("06_cost", "PyTorch warns: torch.utils.checkpoint: the use_reentrant parameter"),
    ("07_engine", "ValueError: zip() argument 2 is longer than argument 1"),
    ("08_training", "RuntimeError: element 0 of tensors does not require grad and does not have "
                    "a grad_fn"),
    ("08_training", "RuntimeError: Can't call numpy() on Tensor that requires grad."),
    ("09_extending", "RuntimeError: function LinearOneGradientBackward returned an incorrect "
                     "number of gradients (expected 2, got 1)"),
    ("09_extending", "PyTorch warns: Input #0 requires gradient and is not a double precision "
                     "floating point or complex."),
    ("09_extending", "AttributeError: 'Softplus' object has no attribute 'sum'"),
    ("09_extending", "RuntimeError: Function 'ExpBackward0' returned nan values in its 0th "
                     "output."),
    ("09_extending", "RuntimeError: In order to use an autograd.Function with functorch "
                     "transforms"),
    ("09_extending", "GradcheckError: Jacobian mismatch for output 0 with respect to input 0,"),
    ("09_extending", "RuntimeError: one of the variables needed for gradient computation has been "
                     "modified by an inplace operation"),
    ("09_extending", "RuntimeError: element 0 of tensors does not require grad and does not have "
                     "a grad_fn"),
    ("09_extending", "ValueError: gradcheck expects at least one input tensor to require "
                     "gradient"),
    ("09_extending", "RuntimeError: trying to differentiate twice a function that was marked "
                     "with @once_differentiable"),
    ("09_extending", "RuntimeError: The differentiated Tensor at index 0 appears to not have been "
                     "used in the graph."),
    ("09_extending", "GradcheckError: Jacobian computed with forward mode mismatch for output 0 "
                     "with respect to input 1,"),
    ("09_extending", "(2) RuntimeError: You tried to vmap over SoftplusNew, but it does not have "
                     "vmap support."),
    ("09_extending", "NotImplementedError: You must implement the jvp function for custom "
                     "autograd.Function to use it with forward mode AD."),
    ("09_extending", "RuntimeError: a leaf Variable that requires grad has been used in an "
                     "in-place operation."),
    ("09_extending", "RuntimeError: unsupported operation: more than one element of the "
                     "written-to tensor refers to a single memory location."),
    ("09_extending", "RuntimeError: Trying to backward through lesson09.numpy_sin.default but no "
                     "autograd formula was registered."),
    ("10_functional", "RuntimeError: grad_and_value(f)(*args): Expected f(*args) to return a "
                      "scalar Tensor"),
    ("10_functional", "RuntimeError: vmap: It looks like you're calling .item() on a Tensor."),
    ("10_functional", "ValueError: vmap: Expected all tensors to have the same size in the mapped "
                      "dimension"),
    ("10_functional", "RuntimeError: Expected tensors, got unsupported type <class 'float'>"),
    ("10_functional", "RuntimeError: vmap: called random operation while in randomness error "
                      "mode."),
    ("10_functional", "RuntimeError: Batch norm got a batched tensor as input while the "
                      "running_mean or running_var"),
    ("11_backprop_by_hand", "RuntimeError: mat1 and mat2 shapes cannot be multiplied (5x4 and "
                            "3x4)"),
    ("11_backprop_by_hand", "RuntimeError: attempting to assign a gradient of size '[5, 4]' to a "
                            "tensor of size '[4]'"),
    ("11_backprop_by_hand", "dE  shape (6, 3)  max |by hand - autograd| 1.7e+00  allclose: False"),
    ("11_backprop_by_hand", "RuntimeError: Mismatch in shape: grad_output[0] has a shape of "
                            "torch.Size([4, 5]) and output[0] has a shape of torch.Size([5, 4])."),
    ("11_backprop_by_hand", "RuntimeError: one of the variables needed for gradient computation "
                            "has been modified by an inplace operation: "
                            "[torch.DoubleTensor [4, 3]], which is output 0 of Tanh,"),
    ("11_backprop_by_hand", "dZ  shape (6, 4)  max |by hand - autograd| 7.6e-01  allclose: False"),
    ("12_gradients_in_practice", "RuntimeError: Function 'DivBackward0' returned nan values in "
                                 "its 0th output."),
    ("12_gradients_in_practice", "PyTorch warns: Error detected in DivBackward0. No forward pass "
                                 "information available."),
    ("12_gradients_in_practice", "norm after clipping then unscaling: 3.052e-09 (intended 1e-4, "
                                 "scale 32768.0)"),
    ("12_gradients_in_practice", "RuntimeError: unscale_() has already been called on this "
                                 "optimizer since the last update()."),
    ("12_gradients_in_practice", "ValueError: Attempting to unscale FP16 gradients."),
    ("12_gradients_in_practice", "returned: nan | p.grad: tensor([nan, nan, nan])"),
    ("12_gradients_in_practice", "RuntimeError: The total norm of order 2.0 for gradients from "
                                 "`parameters` is non-finite, so it cannot be clipped."),
]


@pytest.mark.parametrize(("name", "message"), COMMON_MISTAKES)
def test_common_mistake_shows_pytorchs_message(name, message):
    lines = [line for text in output_texts(read(name)) for line in text.splitlines()]
    assert any(line.startswith(message) for line in lines)


def graph_outputs(name: str) -> list:
    return [output for cell in code_cells(read(name)) for output in cell.outputs
            if is_graph(output)]


@pytest.mark.parametrize(("name", "pictures"), [("01_gradients", 1), ("02_three_weights", 2),
                                               ("07_engine", 4), ("09_extending", 1),
                                               ("11_backprop_by_hand", 1)])
def test_graphs_are_pictures_every_viewer_shows(name, pictures):
    # a PNG only (JupyterLab shows no SVG in a notebook it does not trust yet: a lesson just
    # opened), at most 960 px wide, and the graph as text where the plain text goes
    found = graph_outputs(name)
    assert len(found) == pictures
    for output in found:
        assert set(output.data) == {"image/png", "text/plain"}
        png = png_bytes(output.data["image/png"])
        assert png.startswith(PNG_SIGNATURE) and graphs.png_width(png) <= graphs.MAX_WIDTH
        assert 0 < output.metadata["image/png"]["width"] <= graphs.png_width(png)
        assert "Digraph" not in output.data["text/plain"]
    if name == "01_gradients":
        text = found[0].data["text/plain"]
        assert text.splitlines()[0] == "output z ()" and "AddBackward0 = t2.grad_fn" in text


@pytest.mark.parametrize("name", LESSONS)
def test_every_committed_image_is_a_png_that_fits_the_output_area(name):
    # JupyterLab shows no SVG or HTML of a notebook it does not trust yet (a lesson just
    # opened): each picture must be a PNG, no wider than the 968 px output area
    for cell in code_cells(read(name)):
        for output in cell.outputs:
            data = output.get("data", {})
            assert not {"image/svg+xml", "image/jpeg", "application/pdf"} & set(data), cell.source
            if "text/html" in data:
                assert "<svg" not in data["text/html"] and "<img" not in data["text/html"]
            if "image/png" in data:
                png = png_bytes(data["image/png"])
                assert png.startswith(PNG_SIGNATURE), cell.source
                assert graphs.png_width(png) <= OUTPUT_AREA, cell.source
                assert image_width(output) <= OUTPUT_AREA, cell.source


def test_engine_pictures_of_pytorch_and_of_the_learners_engine_agree():
    texts = [output.data["text/plain"] for output in graph_outputs("07_engine")]
    assert len(texts) == 4

    def leaves(text):  # each leaf's data and grad, as the picture labels them
        found = re.findall(r"\b(x1|w1|x2|w2|b)(?: \(leaf\))?  data (\S+)  grad (\S+)", text)
        return {name: (data, grad) for name, data, grad in found}

    torch_graph, own_graph = texts[2], texts[3]
    assert "TanhBackward0" in torch_graph
    assert leaves(torch_graph) == leaves(own_graph)
    assert leaves(own_graph)["x1"] == ("2.0000", "-1.5000") and len(leaves(own_graph)) == 5


def test_a_wide_graph_is_scaled_to_fit_and_stays_legible():
    # the widest graph of the lessons: 07's tanh neuron drawn by PyTorch, with its values
    from autograd_course.lab.engine_pictures import draw_torch

    if not graphs.dot_available():
        pytest.skip("Graphviz's dot is not installed")
    x1, x2, w1, w2, b = (torch.tensor(v, requires_grad=True) for v in (2.0, 0.0, -3.0, 1.0, 6.88))
    x1w1, x2w2 = x1 * w1, x2 * w2
    n = x1w1 + x2w2 + b
    o = n.tanh()
    o.backward()
    named = {"x1": x1, "x2": x2, "w1": w1, "w2": w2, "b": b, "x1w1": x1w1, "x2w2": x2w2,
             "n": n, "o": o}
    picture = draw_torch(o, named)
    png, metadata = picture._repr_png_()
    assert png.startswith(PNG_SIGNATURE) and graphs.png_width(png) <= graphs.MAX_WIDTH
    assert metadata == {"width": min(picture.natural_width(), graphs.MAX_WIDTH)}
    # its 12-point labels (16 px) are shown at 12 px or more
    assert metadata["width"] / picture.natural_width() >= 0.75
    small = graphs.draw_graph(x1 * w1, {"x1": x1, "w1": w1})
    png, metadata = small._repr_png_()  # a narrow graph: twice the pixels, for sharp screens
    assert graphs.png_width(png) >= 2 * metadata["width"] - 2


def test_sgd_lesson_has_its_plots_and_slider():
    mimes = [
        mime
        for cell in code_cells(read("05_sgd"))
        for output in cell.outputs
        for mime in output.get("data", {})
    ]
    assert mimes.count("image/png") == 3  # the seed's plot, the iterates, the lr comparison
    assert WIDGET in mimes


def test_draw_graph_without_dot_prints_hint_and_text(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` on this PATH
    assert not graphs.dot_available()
    t1 = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    t2 = t1 * t1 + 1
    z = t2.sum()
    drawing = graphs.draw_graph(z, {"t1": t1, "t2": t2, "z": z})
    assert isinstance(drawing, graphs.TextGraph)
    assert capsys.readouterr().out == graphs.INSTALL_HINT + "\n"
    text = str(drawing)
    assert text.splitlines()[0] == "output z ()"
    assert "AddBackward0 = t2.grad_fn" in text
    assert "AccumulateGrad -> t1 (3,) (leaf, .grad is filled)" in text


# The package helpers the lessons use.


def seed_function(x):
    return x**4 + x**2 + 10 * x


def test_sgd_trajectory_reproduces_the_seed():
    xs = plots.sgd_trajectory(seed_function, x0=0.0, lr=0.05, steps=10)
    expected = [line.split("x = ")[1].split(",")[0] for line in SGD_TABLE.splitlines()]
    assert [f"{x:.6f}" for x in xs[1:]] == expected
    assert xs[0] == 0.0


def test_sgd_trajectory_small_overshooting_and_diverging_rates():
    minimum = plots.sgd_trajectory(seed_function, lr=0.05, steps=30)[-1]
    slow = plots.sgd_trajectory(seed_function, lr=0.01, steps=10)
    assert all(a > b > minimum for a, b in zip(slow, slow[1:], strict=False))  # monotone, short
    zigzag = plots.sgd_trajectory(seed_function, lr=0.09, steps=10)
    sides = [x > minimum for x in zigzag[1:]]
    assert all(a != b for a, b in zip(sides, sides[1:], strict=False))  # crosses every step
    runaway = plots.sgd_trajectory(seed_function, lr=0.2, steps=10)
    assert abs(runaway[3]) > 10 and not math.isfinite(runaway[-1])


def test_plot_helpers_draw_without_errors(monkeypatch):
    import matplotlib.pyplot as plt

    fig = plots.plot_lr_comparison(seed_function, minimum=-1.234773)
    try:
        assert len(fig.axes) == 2 * len(plots.COMPARISON_LRS)
        assert "diverges" in fig.axes[len(plots.COMPARISON_LRS) - 1].get_title()
    finally:
        plt.close(fig)
    monkeypatch.setattr(plt, "show", lambda: None)  # Agg cannot show
    widget = plots.lr_slider(seed_function)
    assert widget.children[0].value == 0.05
    plt.close("all")


def test_show_error_prints_the_error_and_warnings(capsys):
    with lessons.show_error():
        torch.ones(2, requires_grad=True).sum(dim=0, keepdim=True).backward(torch.ones(3))
    assert capsys.readouterr().out.startswith("RuntimeError: Mismatch in shape")
    with lessons.show_error():
        x = torch.ones(2, requires_grad=True)
        assert (x * 2).grad is None
    out = capsys.readouterr().out
    assert out.startswith("PyTorch warns: The .grad attribute of a Tensor that is not a leaf")
    assert "Triggered internally" not in out
    with lessons.show_error():
        pass
    assert capsys.readouterr().out == "(no error and no warning)\n"


def test_seed_makes_randn_reproducible():
    lessons.seed(0)
    first = torch.randn(5)
    lessons.seed(0)
    assert torch.equal(first, torch.randn(5))
