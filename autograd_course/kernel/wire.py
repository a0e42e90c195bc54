"""The plain data that crosses from a student's kernel to the judge: records, never pickles.

The kernel encodes each value the judge asks for as a *record*: JSON, with the raw bytes of
arrays in base64, and ``"t"`` naming its kind (record kinds and their fields:
docs/design.md#autograd_coursekernelwirepy). The judge decodes a record into fresh objects of
its own (a plain ``torch.Tensor``, a ``float``...): only values travel. Rules:

- every record of a kernel object carries ``h``, its handle: the judge can pass it back into a
  later call, where the kernel hands over the original;
- decoding (:meth:`Decoder.decode`) is a pure function of the data: it never imports, never
  calls what a record names, and looks names up only in :data:`TENSOR_DTYPES` and
  :data:`NUMPY_DTYPES`; every other name stays a string, and a ``handle`` record goes, its
  fields checked, to the judge's ``wrap``, which obeys the same rule;
- anything else is refused: a malformed record raises :class:`ReplyError`;
- decoding costs time linear in the reply: at most :data:`MAX_NODES` records, nested at most
  :data:`MAX_DEPTH` deep; the only keys it hashes are dict keys' strings and handles (integers
  below :data:`MAX_HANDLE`); a decoder given a deadline stops when it passes
  (:class:`ReplyTimeout`).
"""

from __future__ import annotations

import base64
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

TENSOR_DTYPES: dict[str, torch.dtype] = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
                  torch.complex128, torch.int8, torch.int16, torch.int32, torch.int64,
                  torch.uint8, torch.bool)
}
NUMPY_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(name)
    for name in ("float16", "float32", "float64", "complex64", "complex128", "int8", "int16",
                 "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")
}
MAX_NAME = 200  # characters of a name a record carries (a type's, a function's, a module's)
MAX_DEPTH = 32
MAX_NODES = 200_000  # records in one reply: a list of a million Nones is not an answer
MAX_HANDLE = 2**53  # handles are counters; distinct integers below this never share a hash


class ReplyError(ValueError):
    """A record the judge cannot read: malformed, too deep, too big or of an unknown kind."""


class ReplyTimeout(ReplyError):
    """Decoding a reply passed its deadline."""


@dataclass(frozen=True)
class TensorFacts:
    """What autograd knows about a tensor, as the kernel reported it (or read locally).

    ``storage`` identifies the memory the tensor views, so that two tensors from the same
    kernel share memory exactly when their ``storage`` is equal. ``grad`` is a tensor or None.
    """

    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    retains_grad: bool
    is_inference: bool
    storage: int
    grad: torch.Tensor | None = None
    handle: int | None = None


# --- kernel side: encoding ---------------------------------------------------------------


def _bytes_of(t: torch.Tensor) -> str:
    flat = t.detach().cpu().contiguous().reshape(-1)
    raw = flat.view(torch.uint8) if flat.numel() else flat.new_empty(0, dtype=torch.uint8)
    return base64.b64encode(raw.numpy().tobytes()).decode("ascii")


class Encoder:
    """Turn kernel objects into records; ``keep(obj) -> handle`` keeps each object alive.

    ``limit`` bounds the bytes of array data in one reply; past it, :class:`ReplyError`.
    """

    def __init__(self, keep: Callable[[object], int], limit: int):
        self.keep, self.limit, self.size = keep, limit, 0
        self.seen: set[int] = set()

    def _data(self, text: str) -> str:
        self.size += len(text)
        if self.size > self.limit:
            raise ReplyError(f"the answer is larger than {self.limit // 2**20} MiB")
        return text

    def encode(self, value, depth: int = 0) -> dict:
        if depth > MAX_DEPTH:
            raise ReplyError(f"the answer is nested more than {MAX_DEPTH} levels deep")
        if value is None:
            return {"t": "none"}
        if type(value) is bool or isinstance(value, np.bool_):
            return {"t": "bool", "v": bool(value)}
        if isinstance(value, np.generic) and value.dtype.name in NUMPY_DTYPES:
            data = base64.b64encode(value.tobytes()).decode("ascii")
            return {"t": "npscalar", "h": self.keep(value), "dtype": value.dtype.name,
                    "data": data}
        if isinstance(value, int) and not isinstance(value, bool):
            return {"t": "int", "v": str(int(value))}
        if isinstance(value, float):
            return {"t": "float", "v": float(value).hex()}
        if isinstance(value, complex):
            return {"t": "complex", "re": value.real.hex(), "im": value.imag.hex()}
        if isinstance(value, str):
            return {"t": "str", "v": self._data(str.__str__(value))}
        if isinstance(value, BaseException):
            return {"t": "exception", "type": type(value).__name__,
                    "message": str(value)[:2000]}
        handle = self.keep(value)
        if handle in self.seen:
            return {"t": "ref", "h": handle}
        self.seen.add(handle)
        if isinstance(value, torch.Tensor):
            return self._tensor(value, handle, depth)
        if isinstance(value, np.ndarray) and value.dtype.name in NUMPY_DTYPES:
            data = base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii")
            return {"t": "ndarray", "h": handle, "dtype": value.dtype.name,
                    "shape": list(value.shape), "data": self._data(data)}
        if isinstance(value, list | tuple):
            kind = "tuple" if isinstance(value, tuple) else "list"
            return {"t": kind, "h": handle,
                    "items": [self.encode(item, depth + 1) for item in value]}
        if isinstance(value, dict):
            return {"t": "dict", "h": handle,
                    "items": [[self.encode(k, depth + 1), self.encode(v, depth + 1)]
                              for k, v in value.items()]}
        return {"t": "handle", "h": handle, "type": type(value).__name__,
                "callable": callable(value), "name": str(getattr(value, "__name__", ""))[:100]}

    def _tensor(self, t: torch.Tensor, handle: int, depth: int) -> dict:
        dtype = str(t.dtype).removeprefix("torch.")
        if dtype not in TENSOR_DTYPES or t.layout != torch.strided or t.is_quantized:
            return {"t": "handle", "h": handle, "type": f"Tensor ({dtype}, {t.layout})",
                    "callable": False}
        with torch.no_grad():
            plain = torch.Tensor._make_subclass(torch.Tensor, t.detach()) if (
                type(t) is not torch.Tensor) else t.detach()
        grad = t.grad if (t.is_leaf or t.retains_grad) else None
        return {
            "t": "tensor", "h": handle, "dtype": dtype, "shape": list(t.shape),
            "data": self._data(_bytes_of(plain)),
            "requires_grad": bool(t.requires_grad), "is_leaf": bool(t.is_leaf),
            "grad_fn": None if t.grad_fn is None else type(t.grad_fn).__name__,
            "retains_grad": bool(t.retains_grad), "is_inference": bool(t.is_inference()),
            "storage": int(t.untyped_storage().data_ptr()) if t.numel() else 0,
            "grad": None if grad is None else self.encode(grad, depth + 1),
        }


# --- judge side: decoding ----------------------------------------------------------------


def _field(record: dict, key: str, kind: type | tuple[type, ...]):
    value = record.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ReplyError(f"a '{record.get('t')}' record has a bad '{key}'")
    return value


def _shape(record: dict) -> list[int]:
    shape = _field(record, "shape", list)
    if len(shape) > 16 or not all(type(n) is int and 0 <= n < 2**40 for n in shape):
        raise ReplyError("a bad shape")
    return shape


def _raw(record: dict, size: int) -> bytes:
    try:
        raw = base64.b64decode(_field(record, "data", str), validate=True)
    except ValueError as exc:
        raise ReplyError("array data that is not base64") from exc
    if len(raw) != size:
        raise ReplyError(f"{len(raw)} bytes of data where {size} were expected")
    return raw


def _name(record: dict, key: str) -> str:
    """A name a record carries (a type's, a function's): a string, kept as one, never looked
    up; cut to :data:`MAX_NAME` characters."""
    return str(_field(record, key, str))[:MAX_NAME]


def _shown(text: str) -> str:
    """A name the kernel sent, as an error message quotes it: short and printable."""
    return ascii(text[:40])


def _float(text) -> float:
    if not isinstance(text, str) or len(text) > 40:
        raise ReplyError("a bad float")
    try:
        return float.fromhex(text)
    except ValueError as exc:
        raise ReplyError("a bad float") from exc


class Decoder:
    """Turn records into judge-side values; ``wrap(record, handle)`` makes kernel handles.

    ``on_value(value, handle)`` is told of every decoded kernel object (tensor, array,
    container), so that the judge can send the original object back when the value is passed
    into a later call.
    """

    def __init__(self, wrap: Callable[[dict, int], object],
                 on_value: Callable[[object, int], None] = lambda value, handle: None,
                 deadline: float = math.inf):
        self.wrap, self.on_value, self.deadline = wrap, on_value, deadline
        self.memo: dict[int, object] = {}
        self.nodes = 0

    def decode(self, record, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ReplyError(f"a record nested more than {MAX_DEPTH} levels deep")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ReplyError(f"an answer of more than {MAX_NODES} values")
        if self.nodes % 1024 == 0 and time.monotonic() > self.deadline:
            raise ReplyTimeout("the answer took too long to read")
        if not isinstance(record, dict) or not isinstance(record.get("t"), str):
            raise ReplyError("a value that is not a record")
        kind = record["t"]
        simple = self._simple(kind, record)
        if simple is not _NOT_SIMPLE:
            return simple
        handle = _field(record, "h", int)
        if not 0 < handle < MAX_HANDLE:
            raise ReplyError("a bad handle")
        if kind == "ref":
            if handle not in self.memo:
                raise ReplyError("a reference to an object not sent before")
            return self.memo[handle]
        value = self._object(kind, record, handle, depth)
        self.memo[handle] = value
        if kind != "handle":
            self.on_value(value, handle)
        return value

    @staticmethod
    def _simple(kind: str, record: dict):
        if kind == "none":
            return None
        if kind == "bool":
            return bool(_field(record, "v", bool))
        if kind == "int":
            text = _field(record, "v", str)
            if len(text) > 4000:
                raise ReplyError("an integer with too many digits")
            try:
                return int(text)
            except ValueError as exc:
                raise ReplyError("a bad integer") from exc
        if kind == "float":
            return _float(record.get("v"))
        if kind == "complex":
            return complex(_float(record.get("re")), _float(record.get("im")))
        if kind == "str":
            return str(_field(record, "v", str))
        if kind == "exception":
            return RemoteException(_field(record, "type", str)[:MAX_NAME],
                                   _field(record, "message", str)[:2000])
        return _NOT_SIMPLE

    def _object(self, kind: str, record: dict, handle: int, depth: int):
        if kind == "tensor":
            return self._tensor(record, handle, depth)
        if kind in ("ndarray", "npscalar"):
            dtype = NUMPY_DTYPES.get(_field(record, "dtype", str))
            if dtype is None:
                raise ReplyError(f"an array of unknown dtype {_shown(record['dtype'])}")
            shape = _shape(record) if kind == "ndarray" else []
            size = math.prod(shape) * dtype.itemsize
            array = np.frombuffer(_raw(record, size), dtype=dtype).reshape(shape).copy()
            return array if kind == "ndarray" else array[()]
        if kind in ("list", "tuple"):
            items = [self.decode(item, depth + 1) for item in _field(record, "items", list)]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            result = {}
            for pair in _field(record, "items", list):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ReplyError("a bad dict item")
                if not isinstance(pair[0], dict) or pair[0].get("t") != "str":
                    raise ReplyError("a dict with a key that is not a string: the judge reads "
                                     "dicts with string keys only")
                result[self.decode(pair[0], depth + 1)] = self.decode(pair[1], depth + 1)
            return result
        if kind == "handle":
            checked = {"type": _name(record, "type"), "callable": _field(record, "callable", bool),
                       "name": _name(record, "name") if "name" in record else ""}
            return self.wrap(checked, handle)
        raise ReplyError(f"an unsupported answer type ({_shown(kind)})")

    def _tensor(self, record: dict, handle: int, depth: int) -> torch.Tensor:
        dtype = TENSOR_DTYPES.get(_field(record, "dtype", str))
        if dtype is None:
            raise ReplyError(f"a tensor of unknown dtype {_shown(record['dtype'])}")
        shape = _shape(record)
        itemsize = torch.empty((), dtype=dtype).element_size()
        raw = _raw(record, math.prod(shape) * itemsize)
        if raw:
            values = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype)
            values = values.reshape(shape)
        else:
            values = torch.empty(shape, dtype=dtype)
        grad = record.get("grad")
        grad = None if grad is None else self.decode(grad, depth + 1)
        if grad is not None and not isinstance(grad, torch.Tensor):
            raise ReplyError("a tensor whose .grad is not a tensor")
        grad_fn = record.get("grad_fn")
        if grad_fn is not None and (not isinstance(grad_fn, str) or len(grad_fn) > MAX_NAME):
            raise ReplyError("a bad grad_fn name")
        values.remote = TensorFacts(
            requires_grad=_field(record, "requires_grad", bool),
            is_leaf=_field(record, "is_leaf", bool), grad_fn=grad_fn,
            retains_grad=_field(record, "retains_grad", bool),
            is_inference=_field(record, "is_inference", bool),
            storage=_field(record, "storage", int), grad=grad, handle=handle)
        return values


_NOT_SIMPLE = object()


class Handle:
    """An object that stays in the student's kernel (judge side). Pass it to a student's
    function or to :func:`autograd_course.kernel.checks.in_kernel`; it cannot be read here."""

    def __init__(self, session, handle: int, type_name: str):
        self._session, self._handle, self.type_name = session, handle, type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} in the student's kernel>"


class RemoteFunction(Handle):
    """A function (or other callable) in the student's kernel; calling it runs it there."""

    def __init__(self, session, handle: int, type_name: str, name: str):
        super().__init__(session, handle, type_name)
        self.__name__ = name

    def remote_call(self, args, kwargs, *, label: str, no_grad: bool = False):
        """Call in the kernel; return ``(result, warnings)``; raise StudentError if it raised."""
        return self._session.call(self, args, kwargs, label=label, no_grad=no_grad)

    def __call__(self, *args, **kwargs):
        return self.remote_call(args, kwargs, label=f"{self.__name__}(...)")[0]


class RemoteException:
    """An exception object the kernel returned as a value (not raised): its type and message."""

    def __init__(self, type_name: str, message: str):
        self.type_name, self.message = type_name, message

    def __repr__(self) -> str:
        return f"<{self.type_name} from the kernel: {self.message}>"


def facts(t: torch.Tensor) -> TensorFacts:
    """The autograd facts of ``t``: as its kernel reported them, or read from ``t`` itself."""
    remote = getattr(t, "remote", None)
    if isinstance(remote, TensorFacts):
        return remote
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .grad of a non-leaf warns; here it is just None
        grad = t.grad
    return TensorFacts(
        requires_grad=t.requires_grad, is_leaf=t.is_leaf,
        grad_fn=None if t.grad_fn is None else type(t.grad_fn).__name__,
        retains_grad=t.retains_grad, is_inference=t.is_inference(),
        storage=t.untyped_storage().data_ptr() if t.numel() else 0, grad=grad)
