"""Conversions between the wire's messages and what a Gymnasium user holds.

Tensors become NumPy arrays of their declared dtype; spaces become `gymnasium.spaces`; info maps
become plain dicts. Actions go the other way, cast to the dtype the space declares the way
Gymnasium users expect (a float64 action for a float32 Box is sent as float32). Values are never
clipped or reshaped here: the server checks every action and answers `INVALID_ARGUMENT` naming
what it expected, so a wrong action is refused rather than silently changed.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np
from gymnasium import spaces

from ._proto import types_pb2 as pb
from .errors import WireError

_NUMPY_OF = {
    pb.DTYPE_FLOAT32: np.dtype(np.float32),
    pb.DTYPE_FLOAT64: np.dtype(np.float64),
    pb.DTYPE_INT64: np.dtype(np.int64),
    pb.DTYPE_INT32: np.dtype(np.int32),
    pb.DTYPE_UINT8: np.dtype(np.uint8),
    pb.DTYPE_BOOL: np.dtype(np.bool_),
}
_WIRE_OF = {dtype: wire for wire, dtype in _NUMPY_OF.items()}
# The Tensor field that carries each dtype's elements.
_FIELD_OF = {
    pb.DTYPE_FLOAT32: "f32",
    pb.DTYPE_FLOAT64: "f64",
    pb.DTYPE_INT64: "i64",
    pb.DTYPE_INT32: "i32",
    pb.DTYPE_UINT8: "u8",
    pb.DTYPE_BOOL: "bool",
}


def numpy_dtype(wire_dtype: int) -> np.dtype:
    """The NumPy dtype of a wire `DType`."""
    try:
        return _NUMPY_OF[wire_dtype]
    except KeyError:
        raise WireError(f"unknown tensor dtype {wire_dtype}") from None


def to_numpy(tensor: pb.Tensor) -> np.ndarray:
    """A wire tensor as a NumPy array of its dtype and shape (a 0-d array for a scalar)."""
    dtype = numpy_dtype(tensor.dtype)
    shape = tuple(tensor.shape)
    raw = tensor.raw  # read once: each read of a bytes field makes a new bytes object
    if raw:
        # Packed little-endian: read where it lies, without a copy (the array is read-only).
        if len(raw) % dtype.itemsize:
            raise WireError(f"a {dtype} tensor's raw field holds {len(raw)} bytes, not whole elements")
        flat = np.frombuffer(raw, dtype=dtype.newbyteorder("<"))
    elif tensor.dtype == pb.DTYPE_UINT8:
        flat = np.frombuffer(tensor.u8, dtype=np.uint8).copy()
    else:
        flat = np.asarray(getattr(tensor, _FIELD_OF[tensor.dtype]), dtype=dtype)
    expected = math.prod(shape)
    if flat.size != expected:
        raise WireError(f"tensor of shape {list(shape)} carries {flat.size} elements, expected {expected}")
    return flat.reshape(shape)


def _wire_dtype_of(array: np.ndarray) -> int:
    """The wire `DType` of an array, or `TypeError` naming the dtypes that travel."""
    try:
        return _WIRE_OF[array.dtype]
    except KeyError:
        supported = ", ".join(str(d) for d in _WIRE_OF)
        raise TypeError(f"dtype {array.dtype} cannot travel on the wire; use one of {supported}") from None


def raw_from_numpy(array: np.ndarray) -> pb.Tensor:
    """A NumPy array (of one of the wire's six dtypes) as a wire tensor with its elements packed
    in `raw`: one copy, little-endian, what a vector env's batched action travels as."""
    array = np.asarray(array)
    wire = _wire_dtype_of(array)
    return pb.Tensor(dtype=wire, shape=list(array.shape), raw=array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())


def from_numpy(array: np.ndarray) -> pb.Tensor:
    """A NumPy array (of one of the wire's six dtypes) as a wire tensor."""
    array = np.asarray(array)
    wire = _wire_dtype_of(array)
    tensor = pb.Tensor(dtype=wire, shape=list(array.shape))
    flat = array.reshape(-1)
    if wire == pb.DTYPE_UINT8:
        tensor.u8 = flat.tobytes()
    else:
        getattr(tensor, _FIELD_OF[wire]).extend(flat.tolist())
    return tensor


def space_from_wire(space: pb.Space) -> spaces.Space:
    """A wire space as the matching `gymnasium.spaces` space."""
    kind = space.WhichOneof("kind")
    if kind == "box":
        box = space.box
        dtype = numpy_dtype(box.dtype)
        shape = tuple(box.shape)
        low = np.asarray(box.low, dtype=np.float64).reshape(shape)
        high = np.asarray(box.high, dtype=np.float64).reshape(shape)
        if np.issubdtype(dtype, np.integer):
            # Gymnasium keeps integer bounds in the box's dtype; an infinite (or out of range)
            # bound is the dtype's limit. Clipping in float64 first would round int64's
            # maximum up to 2**63, which overflows.
            return spaces.Box(low=_integer_bound(low, dtype), high=_integer_bound(high, dtype), shape=shape, dtype=dtype)
        return spaces.Box(low=low.astype(dtype), high=high.astype(dtype), shape=shape, dtype=dtype)
    if kind == "discrete":
        return spaces.Discrete(space.discrete.n, start=space.discrete.start)
    if kind == "multi_discrete":
        md = space.multi_discrete
        start = list(md.start) if md.start else [0] * len(md.nvec)
        return spaces.MultiDiscrete(np.asarray(md.nvec, dtype=np.int64), start=np.asarray(start, dtype=np.int64))
    if kind == "multi_binary":
        shape = list(space.multi_binary.shape)
        # A 1-D one as Gymnasium writes it, MultiBinary(n) (which is not equal to MultiBinary([n])).
        return spaces.MultiBinary(shape[0] if len(shape) == 1 else shape)
    if kind == "dict":
        return spaces.Dict(OrderedDict((e.name, space_from_wire(e.space)) for e in space.dict.entries))
    raise WireError("a space with no kind set")


def space_to_wire(space: spaces.Space) -> pb.Space:
    """A `gymnasium.spaces` space as the wire space `space_from_wire` turns back into it.

    The wire carries Box (of a wire dtype other than bool: a bool box is a MultiBinary),
    Discrete, 1-D MultiDiscrete, MultiBinary and Dict spaces whose entries are none of them a
    Dict. Anything else raises TypeError naming the space and why it cannot travel.
    """
    why = _untravelling(space)
    if why is not None:
        raise TypeError(f"{space} cannot travel on the wire: {why}")
    return _space_to_wire(space)


# What the wire carries, for the messages that refuse everything else.
_WIRE_SPACES = "the wire carries Box, Discrete, MultiDiscrete (1-D), MultiBinary and Dict (of those) spaces"


def _untravelling(space: spaces.Space, entry: str | None = None) -> str | None:
    """Why `space` cannot travel on the wire, or None when it can."""
    where = "it " if entry is None else f"its entry {entry!r} "
    if isinstance(space, spaces.Dict):
        if entry is not None:
            return f"{where}is itself a Dict; Dict entries cannot nest"
        for name, sub in space.spaces.items():
            if not isinstance(name, str):
                return f"its key {name!r} is not a string"
            why = _untravelling(sub, name)
            if why is not None:
                return why
        return None
    if isinstance(space, spaces.Discrete):
        return None
    if isinstance(space, spaces.MultiDiscrete):
        if space.nvec.ndim != 1:
            return f"{where}is a MultiDiscrete of shape {space.nvec.shape}; the wire carries 1-D ones only"
        return None
    if isinstance(space, spaces.MultiBinary):
        return None
    if isinstance(space, spaces.Box):
        if space.dtype == np.bool_:
            return f"{where}is a Box of bool, which the wire does not carry; use MultiBinary"
        if space.dtype not in _WIRE_OF:
            supported = ", ".join(str(d) for d in _WIRE_OF if d != np.bool_)
            return f"{where}is a Box of {space.dtype}, which the wire does not carry; use one of {supported}"
        return None
    kind = type(space).__name__
    return f"{where}is a {kind} space; {_WIRE_SPACES}" if entry is not None else f"{_WIRE_SPACES}, not {kind}"


def _space_to_wire(space: spaces.Space) -> pb.Space:
    if isinstance(space, spaces.Box):
        return pb.Space(
            box=pb.BoxSpace(
                shape=list(space.shape),
                dtype=_WIRE_OF[space.dtype],
                low=np.asarray(space.low, dtype=np.float64).reshape(-1).tolist(),
                high=np.asarray(space.high, dtype=np.float64).reshape(-1).tolist(),
            )
        )
    if isinstance(space, spaces.Discrete):
        return pb.Space(discrete=pb.DiscreteSpace(n=int(space.n), start=int(space.start)))
    if isinstance(space, spaces.MultiDiscrete):
        return pb.Space(
            multi_discrete=pb.MultiDiscreteSpace(
                nvec=[int(n) for n in space.nvec.reshape(-1)], start=[int(s) for s in space.start.reshape(-1)]
            )
        )
    if isinstance(space, spaces.MultiBinary):
        return pb.Space(multi_binary=pb.MultiBinarySpace(shape=list(space.shape)))
    return pb.Space(
        dict=pb.DictSpace(
            entries=[pb.NamedSpace(name=name, space=_space_to_wire(sub)) for name, sub in space.spaces.items()]
        )
    )


def _integer_bound(bound: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    out = np.empty(bound.shape, dtype=dtype)
    flat, src = out.reshape(-1), bound.reshape(-1)
    for i, value in enumerate(src):
        if value >= info.max:
            flat[i] = info.max
        elif value <= info.min:
            flat[i] = info.min
        else:
            flat[i] = int(value)
    return out


def space_labels(space: pb.Space) -> list[str]:
    """The element labels a Box or the choice labels a Discrete space carries, if any."""
    kind = space.WhichOneof("kind")
    if kind == "box":
        return list(space.box.labels)
    if kind == "discrete":
        return list(space.discrete.labels)
    return []


def _flat_len(space: spaces.Space) -> int:
    if isinstance(space, spaces.Discrete):
        return 1
    if isinstance(space, spaces.Dict):
        return sum(_flat_len(s) for s in space.spaces.values())
    return int(np.prod(space.shape, dtype=np.int64))


def observation_from_wire(tensor: pb.Tensor, space: spaces.Space) -> Any:
    """A wire observation as an element of `space`.

    A Discrete value is a NumPy int64 scalar, a MultiBinary value int8 (Gymnasium's dtype), a
    Dict value an ordered dict of its entries, each cut from the flattened float64 tensor it
    travels as and cast to the entry's dtype.
    """
    array = to_numpy(tensor)
    return _value_of(array, space)


def _value_of(array: np.ndarray, space: spaces.Space) -> Any:
    if isinstance(space, spaces.Discrete):
        return np.int64(array.reshape(()))
    if isinstance(space, spaces.MultiBinary):
        return array.astype(np.int8).reshape(space.shape)
    if isinstance(space, spaces.MultiDiscrete):
        return array.astype(np.int64).reshape(space.shape)
    if isinstance(space, spaces.Dict):
        flat = array.reshape(-1)
        out: OrderedDict[str, Any] = OrderedDict()
        offset = 0
        for name, sub in space.spaces.items():
            n = _flat_len(sub)
            out[name] = _value_of(flat[offset : offset + n].astype(_dtype_of(sub)), sub)
            offset += n
        return out
    if isinstance(space, spaces.Box):
        return array.astype(space.dtype, copy=False).reshape(space.shape)
    return array


def flatten(value: Any) -> np.ndarray:
    """A value as one 1-D array: a Dict value's entries (float64) concatenated in order."""
    if isinstance(value, dict):
        parts = [np.asarray(v, dtype=np.float64).reshape(-1) for v in value.values()]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.asarray(value).reshape(-1)


def _dtype_of(space: spaces.Space) -> np.dtype:
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return np.dtype(np.int64)
    if isinstance(space, spaces.MultiBinary):
        return np.dtype(np.int8)
    return np.dtype(space.dtype)


def action_to_wire(action: Any, space: spaces.Space) -> pb.Tensor:
    """An action for `space` as the wire tensor the server expects.

    Numbers are cast to the space's wire dtype when that loses nothing a Gymnasium user would
    mind: any real number to a float Box, an integer that fits to an integer space. Anything
    else (a float for a Discrete space, 256 for a uint8 value) is sent as it is, for the server
    to refuse with a message naming the space.
    """
    array = np.asarray(action)
    if isinstance(space, spaces.Discrete):
        return from_numpy(_cast_integers(array, np.int64))
    if isinstance(space, spaces.MultiDiscrete):
        return from_numpy(_cast_integers(array, np.int64))
    if isinstance(space, spaces.MultiBinary):
        return from_numpy(_cast_integers(array, np.uint8) if array.dtype != np.bool_ else array.astype(np.uint8))
    if isinstance(space, spaces.Dict):
        if not isinstance(action, dict):
            raise TypeError(f"an action for a Dict space is a dict with keys {list(space.spaces)}")
        missing = [k for k in space.spaces if k not in action]
        extra = [k for k in action if k not in space.spaces]
        if missing or extra:
            raise KeyError(f"Dict action keys: missing {missing}, unknown {extra}")
        return from_numpy(flatten({name: action[name] for name in space.spaces}))
    if isinstance(space, spaces.Box):
        if np.issubdtype(space.dtype, np.floating) and (
            np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)
        ):
            return from_numpy(array.astype(space.dtype))
        if np.issubdtype(space.dtype, np.integer):
            return from_numpy(_cast_integers(array, space.dtype))
        return from_numpy(array)
    raise TypeError(f"no wire form for actions of {space}")


def _cast_integers(array: np.ndarray, dtype: Any) -> np.ndarray:
    """`array` as `dtype` when it holds integers that all fit; otherwise unchanged, so that the
    server refuses it (a narrowing cast would wrap 256 to 0, a valid but different action)."""
    if array.dtype == np.bool_:
        return array.astype(dtype)
    if not np.issubdtype(array.dtype, np.integer):
        return array
    info = np.iinfo(dtype)
    if array.size and (array.min() < info.min or array.max() > info.max):
        return array
    return array.astype(dtype)


def info_from_wire(info: Any) -> dict[str, Any]:
    """An info map (`map<string, Value>`) as a dict of Python numbers, strings and arrays."""
    out: dict[str, Any] = {}
    for key in sorted(info):
        value = info[key]
        kind = value.WhichOneof("kind")
        if kind == "number":
            out[key] = value.number
        elif kind == "integer":
            out[key] = value.integer
        elif kind == "flag":
            out[key] = value.flag
        elif kind == "text":
            out[key] = value.text
        elif kind == "tensor":
            out[key] = to_numpy(value.tensor)
        else:
            raise WireError(f"info value {key!r} has no kind set")
    return out
