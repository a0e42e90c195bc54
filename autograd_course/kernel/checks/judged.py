"""Calling the student's code from a test, in a kernel or from the judge.

``run_answer`` calls the student's function (in the judge: in the student's kernel) and names
the mistakes a call shows; ``in_kernel`` runs the test's own function where the student's
objects live; ``named_errors`` turns what the student's code raised in either into a named
mistake; ``bounded`` limits the time and memory of the student's function where it runs;
``proxy`` and ``current`` are what the student's code is given and how the test reads the
kernel's objects again; ``kernel_memory_use`` and ``check_memory`` measure memory from outside
the kernel when grading. Rules: in a kernel each of them is the plain operation; in the judge
they go through the judge contract (:mod:`.contract`) alone.

>>> run_answer(lambda x: 2 * x, 21, name="double(21)")
42
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from autograd_course.kernel import memory
from autograd_course.kernel.checks.contract import JUDGE
from autograd_course.kernel.checks.errors import (
    CheckError,
    StudentError,
    _fail,
    _is_the_stub,
    _not_implemented,
    _what_it_is,
)

_NONLEAF_WARNING = "not a leaf Tensor is being accessed"


def run_answer(fn, *args, name: str | None = None, autograd: bool = True, **kwargs):
    """Call the student's ``fn(*args, **kwargs)`` and return its result.

    Warnings raised inside are captured (a warning printed to stderr makes nbgrader give the
    test cell 0 points), and printed output is discarded. Reading ``.grad`` of a non-leaf
    tensor is reported as the mistake it is. With ``autograd=False`` the call runs under
    ``torch.no_grad()``, where ``backward()`` fails: for questions that ask for a gradient by
    hand. In the judge, ``fn`` runs in the student's kernel.
    """
    label = name or f"{getattr(fn, '__name__', 'your function')}(...)"
    if not callable(fn):
        _fail("type", f"{label}: expected a function, but {_what_it_is(fn)}.")
    try:
        if hasattr(fn, "remote_call"):
            result, caught = fn.remote_call(args, kwargs, label=label, no_grad=not autograd)
        else:
            result, caught = _call_here(fn, args, kwargs, no_grad=not autograd)
    except (StudentError, RuntimeError, AttributeError) as error:
        if not autograd and _is_no_grad_failure(error):
            _fail(
                "autograd",
                f"{label} uses autograd (backward() or torch.autograd), but this question asks "
                "for the derivative by hand. The tests call it with recording switched off "
                "(torch.no_grad()), where backward() fails: write the formula instead.",
            )
        if autograd and _is_no_grad_failure(error):
            _fail(
                "no_graph",
                f"{label} called backward() (or torch.autograd.grad) on a result that records "
                "no graph. Either nothing it was computed from requires grad: make a leaf copy "
                "of the input, x.detach().clone().requires_grad_(True), and compute from that "
                "copy. Or, for a second derivative, the first one was computed without "
                "create_graph=True, so it came back without a graph to differentiate.",
            )
        if "'NoneType' object has no attribute 'zero_'" in str(error):
            _fail(
                "zero_before_backward",
                f"{label} calls .grad.zero_() while .grad is still None: a tensor has no "
                ".grad until the first backward() fills it, so there is nothing to zero yet. "
                "Clear with x.grad = None (it always works), or with optimizer.zero_grad().",
            )
        if _is_the_stub(error) and JUDGE.get() is None:  # in the judge: judge._diagnose
            raise _not_implemented(label) from None
        raise
    for message in caught:
        if _NONLEAF_WARNING in message:
            _fail(
                "leaf",
                f"{label} reads .grad of a non-leaf tensor (the result of an operation). "
                "PyTorch fills .grad only for leaf tensors created with requires_grad=True, "
                "so that .grad is None. Read .grad of the leaf you created, or call "
                ".retain_grad() on the intermediate tensor before backward().",
            )
    return result


def _call_here(fn, args, kwargs, *, no_grad: bool):
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(
            io.StringIO()):
        warnings.simplefilter("always")
        with torch.no_grad() if no_grad else contextlib.nullcontext():
            result = fn(*args, **kwargs)
    return result, [str(w.message) for w in caught]


def _is_no_grad_failure(error: BaseException) -> bool:
    text = str(error)
    return "does not require grad" in text or "does not have a grad_fn" in text


def in_kernel(fn, *args, name: str | None = None):
    """Run the test's own ``fn(*args)`` where the student's objects live, and return its result.

    In a kernel this is just ``fn(*args)``. In the judge, ``fn`` is sent into the student's
    kernel and runs there: use it to build an input that must carry its graph (a tensor sent
    into the kernel arrives without one), or to drive an object that stays in the kernel (a
    ``Value`` node, an ``nn.Module``) and read numbers from it. ``fn`` must not close over an
    expected value: the kernel could read it.
    """
    judge = JUDGE.get()
    label = name or f"{getattr(fn, '__name__', 'a test function')}(...)"
    if judge is None:
        try:
            return fn(*args)
        except NotImplementedError as error:
            if _is_the_stub(error):  # a question not answered yet: one line, no traceback
                raise _not_implemented(label) from None
            raise
    return judge.call(fn, args, {}, label=label)[0]


@contextlib.contextmanager
def named_errors(label: str, known: Sequence[tuple[str | tuple[str, ...], str, str]]):
    """Name the mistake behind an exception that the student's code raised in the block (in
    :func:`run_answer` or :func:`in_kernel`): ``known`` lists ``(words, diagnosis, message)``,
    and the first entry whose words (a string, or a tuple of strings that must all be there)
    are in the exception's type name and message turns it into a :class:`CheckError`
    ``"{label}: {message}"`` with that diagnosis, shown alone (no traceback through PyTorch
    or the checks). Failed checks, a question not answered yet and any other exception pass
    through unchanged.

    >>> with named_errors("f(x)", [("same size in the mapped", "in_dims", "use in_dims.")]):
    ...     raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
    ...                      "dimension")
    Traceback (most recent call last):
    ...
    autograd_course.kernel.checks.CheckError: f(x): use in_dims.
    """
    try:
        yield
    except CheckError:
        raise
    except Exception as error:  # noqa: BLE001 - matched below, re-raised when unknown
        if _is_the_stub(error):
            raise
        kind = getattr(error, "type_name", type(error).__name__)
        text = f"{kind}: {getattr(error, 'message', str(error))}"
        for words, diagnosis, message in known:
            if all(w in text for w in ((words,) if isinstance(words, str) else words)):
                raise CheckError(f"{label}: {message}", diagnosis) from None
        raise


def _address_space_bytes() -> int | None:
    """This process's virtual memory (``VmSize`` of ``/proc/self/status``), or None."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def bounded(fn, *, seconds: float, memory: int, name: str | None = None):
    """The student's function ``fn``, bounded where it runs (the learner's kernel, or the
    student's kernel when grading): a call that takes more than ``seconds`` raises
    ``TimeoutError``, and one that asks for more than about ``memory`` bytes of address space
    beyond what the kernel holds fails with PyTorch's "can't allocate memory" (or a
    MemoryError). Call it with :func:`run_answer` and name those failures with
    :func:`named_errors`: an answer far too slow or too large (a whole Jacobian, row by row,
    where two passes would do) then fails in seconds, not after the test's whole time, and
    never fills the learner's machine.

    >>> import torch
    >>> take = bounded(lambda n: torch.empty(n, dtype=torch.uint8), seconds=5, memory=2**30)
    >>> take(2**31)
    Traceback (most recent call last):
    ...
    RuntimeError: ... can't allocate memory...
    >>> take(2**20).numel()
    1048576
    """
    label = name or f"{getattr(fn, '__name__', 'your function')}(...), bounded"
    return in_kernel(_bounded, fn, seconds, memory, name=label)


def _bounded(fn, seconds: float, memory: int):
    """Runs where the student's code runs: ``fn`` wrapped in the bounds of :func:`bounded`."""

    def call(*args, **kwargs):
        with _time_limit(seconds), _memory_cap(memory):
            return fn(*args, **kwargs)

    call.__name__ = getattr(fn, "__name__", "call")
    return call


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Raise TimeoutError in the block after ``seconds`` (an alarm signal: in the main thread
    only, between Python operations; elsewhere no limit)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "setitimer"):
        yield
        return

    def stop(signum, frame):
        raise TimeoutError(f"the call took more than {seconds:g} s, and was stopped")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _memory_cap(extra: int):
    """Let the block take at most about ``extra`` more bytes of address space: the process's
    soft ``RLIMIT_AS`` lowered for the block, restored after (nothing where Linux's limits
    cannot be read)."""
    used = _address_space_bytes()
    try:
        import resource
    except ImportError:  # not on Linux
        used = None
    if used is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = used + extra
    for bound in (soft, hard):
        if bound != resource.RLIM_INFINITY:
            limit = min(limit, bound)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def proxy(target):
    """What the student's code gets in place of the test's own ``target`` (a function, or a
    ``torch.autograd.Function`` class): in a kernel, ``target`` itself; in the judge, a stand-in
    that carries nothing but a token and ``target``'s name, whose calls (``forward`` and
    ``backward`` of a Function) run ``target`` in the judge. Use it for whatever the student's
    code must call but not read: a Function whose bug is drawn, a function with drawn
    parameters. What the stand-in returns, the student's code sees."""
    judge = JUDGE.get()
    return target if judge is None else judge.proxy(target)


@dataclass
class MemoryUse:
    """What the student's code used in a block of :func:`kernel_memory_use`, in bytes of
    private memory: ``kept`` is still in use after the block (while its results are held),
    ``released`` is what the kernel freed when it let go of the results it handed the judge
    (what they kept alive: a graph, say). Each can be offset on purpose (memory freed during
    the block, a result kept elsewhere); both together, only with both."""

    kept: int = 0
    released: int = 0


@contextlib.contextmanager
def kernel_memory_use():
    """Measure the memory the student's code uses in the block: from outside the student's
    kernel when grading (the kernel cannot forge what Linux reports of it), after which the
    kernel lets go of every object it handed the judge (use the block last in a test cell);
    in the learner's own kernel, of itself (``released`` stays 0 there: the test still holds
    the results)."""
    judge = JUDGE.get()
    use = MemoryUse()
    if judge is None:
        memory.trim()
        before = memory.own_private_bytes()
        yield use
        memory.trim()
        use.kept = memory.own_private_bytes() - before
        return
    before = judge.kernel_memory()
    yield use
    after = judge.kernel_memory()
    judge.forget_all()
    use.kept, use.released = after - before, after - judge.kernel_memory()


def check_memory(use: MemoryUse, limit: int, name: str, *, hint: str) -> None:
    """Check that the memory of :func:`kernel_memory_use` stays within ``limit`` bytes, kept
    and released: a measured fact, not the kernel's word."""
    for amount, what in ((use.kept, "stay in use after it returned, while its result is kept"),
                         (use.released, "were freed when its result was let go: the result "
                          "kept them alive")):
        if amount > limit:
            _fail("memory", f"{name}: about {amount / 2**20:.0f} MiB {what} (at most "
                  f"{limit / 2**20:.0f} MiB were expected). {hint}")


def current(value):
    """Return ``value`` as it is now where the student's code runs (itself, in a kernel).

    In the judge, a value that came from the kernel is a copy made when it arrived, and a
    test's own argument only ever travels as a copy that the student's code cannot change
    here: this reads the kernel's object again, e.g. the caller's tensor after the student's
    function ran (did it change it?), or a snapshot after another tensor changed in place.
    """
    judge = JUDGE.get()
    return value if judge is None else judge.current(value)


def visible_checks_passed(question: str, *, format_only: bool = False) -> None:
    """Say, in one line, that the visible checks of ``question`` passed (not in the judge)."""
    if JUDGE.get() is not None:
        return
    if format_only:
        print(f"{question}: your answer has the right format. This check covers only the "
              "format: whether it is right is checked when the notebook is graded.")
    else:
        print(f"{question}: visible checks passed; hidden tests run when the notebook is graded.")
