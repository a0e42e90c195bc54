"""The records that cross from a student's kernel to the judge: plain data, nothing else."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import torch

from autograd_course.kernel.wire import Decoder, Encoder, Handle, ReplyError, facts


class Kept:
    """A kernel's handle registry, as the agent keeps it."""

    def __init__(self):
        self.objects: dict[int, object] = {}

    def __call__(self, value) -> int:
        for handle, kept in self.objects.items():
            if kept is value:
                return handle
        self.objects[len(self.objects) + 1] = value
        return len(self.objects)


def roundtrip(value, limit: int = 2**20):
    record = Encoder(Kept(), limit).encode(value)
    record = json.loads(json.dumps(record))  # as it travels
    return Decoder(lambda rec, handle: Handle(None, handle, rec["type"])).decode(record)


@pytest.mark.parametrize("value", [
    None, True, False, 0, -3, 2**80, 1.5, float("inf"), -0.0, 1e-310, complex(1, -2), "héllo",
    [1, [2.5, "x"]], (1, (None, True)), {"a": 1, "2": [3]},
])
def test_plain_values_come_back_equal_and_of_the_plain_type(value):
    back = roundtrip(value)
    assert back == value and type(back) is type(value)


def test_nan_survives():
    assert np.isnan(roundtrip(float("nan")))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                   torch.complex64, torch.int64, torch.uint8, torch.bool])
def test_tensors_come_back_exactly(dtype):
    t = (torch.arange(12) % 5).reshape(3, 4).to(dtype)
    back = roundtrip(t)
    assert type(back) is torch.Tensor and back.dtype == dtype and back.shape == t.shape
    assert torch.equal(back, t)


def test_a_tensor_brings_its_autograd_facts():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = w * 3
    y.retain_grad()
    y.sum().backward()
    known = facts(roundtrip(y))
    assert known.requires_grad and not known.is_leaf and known.grad_fn == "MulBackward0"
    assert known.retains_grad and torch.equal(known.grad, torch.ones(2))
    leaf = facts(roundtrip(w))
    assert leaf.is_leaf and leaf.grad_fn is None and torch.equal(leaf.grad, torch.full((2,), 3.0))
    with torch.inference_mode():
        z = torch.ones(2) * 2
    assert facts(roundtrip(z)).is_inference
    assert type(roundtrip(w)) is torch.Tensor and not roundtrip(w).requires_grad


def test_shared_memory_is_visible_through_storage():
    t = torch.ones(3)
    a, b, c = roundtrip((t, t.detach(), t.clone()))
    assert facts(a).storage == facts(b).storage != facts(c).storage


def test_numpy_arrays_and_scalars():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    back = roundtrip(array)
    assert isinstance(back, np.ndarray) and back.dtype == np.float32 and (back == array).all()
    scalar = roundtrip(np.float64(2.5))
    assert scalar == 2.5 and scalar.dtype == np.float64


def test_lying_objects_arrive_as_plain_values():
    class Always(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    class Agreeable(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is torch.allclose:
                return True
            return super().__torch_function__(func, types, args, kwargs or {})

    word, tensor = roundtrip((Always("KeyError"), torch.zeros(2).as_subclass(Agreeable)))
    assert type(word) is str and word != "RuntimeError"
    assert type(tensor) is torch.Tensor and not torch.allclose(tensor, torch.ones(2))


def test_other_objects_stay_in_the_kernel_as_handles():
    module = torch.nn.Linear(2, 1)
    back = roundtrip([module, len])
    assert isinstance(back[0], Handle) and back[0].type_name == "Linear"
    assert "kernel" in repr(back[0])


def test_the_same_object_twice_is_one_object():
    t = torch.ones(2)
    a, b = roundtrip([t, t])
    assert a is b


@pytest.mark.parametrize(("record", "says"), [
    ({"t": "tensor", "h": 1, "dtype": "float32", "shape": [2], "data": "AAAA"}, "bytes"),
    ({"t": "tensor", "h": 1, "dtype": "object", "shape": [], "data": ""}, "dtype"),
    ({"t": "tensor", "h": 1, "dtype": "float32", "shape": [-1], "data": ""}, "shape"),
    ({"t": "pickle", "h": 1, "data": "gASV"}, "unsupported answer type"),
    ({"t": "ref", "h": 7}, "not sent before"),
    ({"t": "int", "v": "1" * 5000}, "digits"),
    ({"t": "float", "v": "__import__('os')"}, "float"),
    ({"t": "dict", "h": 1, "items": [[{"t": "list", "h": 2, "items": []}, {"t": "none"}]]},
     "key"),
    ({"t": "dict", "h": 1, "items": [[{"t": "int", "v": "1"}, {"t": "none"}]]}, "string"),
    ({"t": "list", "h": 2**61 - 1, "items": []}, "handle"),
    ({"t": "list", "h": 0, "items": []}, "handle"),
    ("not a record", "not a record"),
])
def test_malformed_records_are_refused(record, says):
    with pytest.raises(ReplyError, match=says):
        Decoder(lambda rec, handle: None).decode(record)


def test_deep_nesting_is_refused_on_both_sides():
    value: list = []
    for _ in range(100):
        value = [value]
    with pytest.raises(ReplyError, match="levels deep"):
        Encoder(Kept(), 2**20).encode(value)
    record: dict = {"t": "none"}
    for _ in range(100):
        record = {"t": "list", "h": 1, "items": [record]}
    with pytest.raises(ReplyError, match="levels deep"):
        Decoder(lambda rec, handle: None).decode(record)


def test_the_reply_size_is_limited():
    with pytest.raises(ReplyError, match="larger than"):
        Encoder(Kept(), 2**20).encode(torch.zeros(2**19))


def _colliding(n: int) -> dict:
    """A forged reply: a dict of ``n`` integer keys that all share one hash (multiples of
    2**61 - 1), which would make building it quadratic, and handles that collide the same way."""
    modulus = 2**61 - 1
    return {"t": "dict", "h": 1, "items": [
        [{"t": "int", "v": str(k * modulus)}, {"t": "list", "h": k * modulus, "items": []}]
        for k in range(1, n)]}


def test_a_forged_reply_with_colliding_keys_is_refused_at_its_first_key():
    decoder = Decoder(lambda rec, handle: None)
    with pytest.raises(ReplyError, match="not a string"):
        decoder.decode(json.loads(json.dumps(_colliding(99_999))))
    assert decoder.nodes == 1  # refused before a single key was hashed


def test_decoding_stops_at_its_deadline():
    import time

    record = {"t": "list", "h": 1, "items": [{"t": "float", "v": "0x1p+0"}] * 150_000}
    with pytest.raises(ReplyError, match="too long"):
        Decoder(lambda rec, handle: None, deadline=time.monotonic() - 1).decode(record)


# -- decoding is a pure function of the data ------------------------------------------------

HOSTILE_NAMES = ["__class__", "__import__", "os.system", "builtins.eval", "object", "O",
                 "float64.__class__", "torch.float32", "float32\x00", "", "é" * 300,
                 "a" * 100_000, "..", "venv.__main__"]


def _spied_decode(record, wrap=lambda rec, handle: ("wrapped", rec, handle)):
    """Decode ``record``; return the value or the exception, and the imports it looked for."""
    import sys

    class Spy:  # an import hook that sees every import the decoder might attempt
        def __init__(self):
            self.asked = []

        def find_spec(self, name, path=None, target=None):
            self.asked.append(name)

    spy, before = Spy(), set(sys.modules)
    sys.meta_path.insert(0, spy)
    try:
        try:
            result = Decoder(wrap).decode(json.loads(json.dumps(record)))
        except ReplyError as exc:
            result = exc
    finally:
        sys.meta_path.remove(spy)
    assert set(sys.modules) == before and spy.asked == []
    return result


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_name_in_a_record_is_never_looked_up_but_in_the_judges_tables(name):
    data = base64.b64encode(b"\0" * 8).decode()
    for kind in ("tensor", "ndarray", "npscalar"):
        record = {"t": kind, "h": 1, "dtype": name, "shape": [1], "data": data,
                  "requires_grad": False, "is_leaf": True, "grad_fn": None,
                  "retains_grad": False, "is_inference": False, "storage": 0}
        refused = _spied_decode(record)
        assert isinstance(refused, ReplyError) and "unknown dtype" in str(refused)
        assert len(str(refused)) < 200  # a hostile name is not copied whole into a message
    unknown = _spied_decode({"t": name, "h": 1})
    assert isinstance(unknown, ReplyError) and len(str(unknown)) < 200
    # names that are only names stay strings: a type, a grad_fn, an exception's type
    wrapped = _spied_decode({"t": "handle", "h": 3, "type": name, "callable": True,
                             "name": name})
    assert wrapped[0] == "wrapped" and wrapped[1] == {
        "type": name[:200], "callable": True, "name": name[:200]}
    error = _spied_decode({"t": "exception", "type": name, "message": name})
    assert type(error).__name__ == "RemoteException" and error.type_name == name[:200]
    tensor = _spied_decode({"t": "tensor", "h": 2, "dtype": "float64", "shape": [1],
                            "data": data, "requires_grad": True, "is_leaf": False,
                            "grad_fn": name[:200], "retains_grad": False,
                            "is_inference": False, "storage": 0})
    assert type(tensor) is torch.Tensor and facts(tensor).grad_fn == name[:200]


def test_a_handle_record_reaches_wrap_only_with_checked_fields():
    for bad in ({"type": ["module"], "callable": False}, {"type": "module", "callable": 1},
                {"type": "module", "callable": False, "name": {"t": "str", "v": "os"}},
                {"type": "module", "callable": False, "name": None}):
        assert isinstance(_spied_decode({"t": "handle", "h": 1, **bad}), ReplyError), bad
    assert _spied_decode({"t": "handle", "h": 1, "type": "module", "callable": False})[1] == {
        "type": "module", "callable": False, "name": ""}


def test_array_dtypes_come_from_a_fixed_table():
    from autograd_course.kernel.wire import NUMPY_DTYPES, TENSOR_DTYPES

    assert all(isinstance(v, np.dtype) and v.name == k for k, v in NUMPY_DTYPES.items())
    assert all(isinstance(v, torch.dtype) for v in TENSOR_DTYPES.values())
    assert "object" not in NUMPY_DTYPES and np.dtype("O").name not in NUMPY_DTYPES
