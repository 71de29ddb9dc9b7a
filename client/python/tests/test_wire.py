"""Conversions between wire messages and NumPy/Gymnasium values, without a server."""

from collections import OrderedDict

import numpy as np
import pytest
from gymnasium import spaces

from ale_client import wire
from ale_client._proto import types_pb2 as pb
from ale_client.errors import WireError


def box(shape, dtype, low, high):
    return pb.Space(box=pb.BoxSpace(shape=shape, dtype=dtype, low=low, high=high))


def test_tensors_round_trip_every_dtype_and_shape():
    for array in [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.array([1.5, -2.25]),
        np.array(7, dtype=np.int64),
        np.array([1, -2], dtype=np.int32),
        np.array([[0, 255]], dtype=np.uint8),
        np.array([True, False]),
    ]:
        back = wire.to_numpy(wire.from_numpy(array))
        assert back.dtype == array.dtype and back.shape == array.shape
        np.testing.assert_array_equal(back, array)


def test_a_tensor_whose_length_does_not_match_its_shape_is_refused():
    with pytest.raises(WireError, match="carries 2 elements, expected 3"):
        wire.to_numpy(pb.Tensor(dtype=pb.DTYPE_FLOAT32, shape=[3], f32=[1, 2]))
    with pytest.raises(TypeError, match="cannot travel"):
        wire.from_numpy(np.array([1], dtype=np.float16))


def test_spaces_become_the_matching_gymnasium_spaces():
    b = wire.space_from_wire(box([2], pb.DTYPE_FLOAT32, [-1, float("-inf")], [1, float("inf")]))
    assert isinstance(b, spaces.Box) and b.dtype == np.float32 and b.shape == (2,)
    assert b.low[0] == -1 and np.isinf(b.high[1])
    d = wire.space_from_wire(pb.Space(discrete=pb.DiscreteSpace(n=3, start=-1)))
    assert d == spaces.Discrete(3, start=-1)
    md = wire.space_from_wire(pb.Space(multi_discrete=pb.MultiDiscreteSpace(nvec=[2, 3], start=[0, 1])))
    assert isinstance(md, spaces.MultiDiscrete) and list(md.nvec) == [2, 3] and list(md.start) == [0, 1]
    mb = wire.space_from_wire(pb.Space(multi_binary=pb.MultiBinarySpace(shape=[2, 2])))
    assert mb == spaces.MultiBinary([2, 2])
    dict_space = pb.Space(
        dict=pb.DictSpace(
            entries=[
                pb.NamedSpace(name="z", space=box([2], pb.DTYPE_FLOAT64, [0, 0], [1, 1])),
                pb.NamedSpace(name="a", space=pb.Space(discrete=pb.DiscreteSpace(n=4))),
            ]
        )
    )
    dct = wire.space_from_wire(dict_space)
    assert list(dct.spaces) == ["z", "a"], "the wire's order is kept, not sorted"
    i = wire.space_from_wire(box([2], pb.DTYPE_INT64, [float("-inf"), 0], [5, float("inf")]))
    assert i.dtype == np.int64
    assert i.low.tolist() == [np.iinfo(np.int64).min, 0] and i.high.tolist() == [5, np.iinfo(np.int64).max]
    u = wire.space_from_wire(box([1], pb.DTYPE_UINT8, [0], [float("inf")]))
    assert u.high[0] == 255


def test_a_dict_observation_is_cut_from_its_flat_float64_tensor():
    # An OrderedDict keeps the entries in the wire's order (a plain dict would be sorted).
    space = spaces.Dict(OrderedDict(pos=spaces.Box(-1, 1, (2,), np.float32), mode=spaces.Discrete(3)))
    value = wire.observation_from_wire(wire.from_numpy(np.array([0.5, -0.5, 2.0])), space)
    assert list(value) == ["pos", "mode"]
    assert value["pos"].dtype == np.float32 and list(value["pos"]) == [0.5, -0.5]
    assert value["mode"] == 2
    assert space.contains(value)
    back = wire.to_numpy(wire.action_to_wire(value, space))
    np.testing.assert_array_equal(back, [0.5, -0.5, 2.0])
    with pytest.raises(KeyError, match="missing"):
        wire.action_to_wire({"pos": [0, 0]}, space)


def test_actions_are_cast_to_the_wire_dtype_as_gymnasium_users_expect():
    f32 = spaces.Box(-2, 2, (1,), np.float32)
    t = wire.action_to_wire(np.array([0.25], dtype=np.float64), f32)
    assert t.dtype == pb.DTYPE_FLOAT32 and list(t.f32) == [0.25]
    assert wire.action_to_wire([1], f32).dtype == pb.DTYPE_FLOAT32, "a Python int list is a number too"
    t = wire.action_to_wire(1, spaces.Discrete(2))
    assert t.dtype == pb.DTYPE_INT64 and list(t.shape) == [] and list(t.i64) == [1]
    t = wire.action_to_wire(np.int32(1), spaces.Discrete(2))
    assert t.dtype == pb.DTYPE_INT64
    # A float for a Discrete space is not silently truncated: it goes as it is, for the
    # server to refuse with a message naming the space.
    assert wire.action_to_wire(1.7, spaces.Discrete(2)).dtype == pb.DTYPE_FLOAT64
    t = wire.action_to_wire(np.array([1, 0], dtype=np.int8), spaces.MultiBinary(2))
    assert t.dtype == pb.DTYPE_UINT8 and t.u8 == b"\x01\x00"
    t = wire.action_to_wire([1, 2], spaces.MultiDiscrete([3, 3]))
    assert t.dtype == pb.DTYPE_INT64 and list(t.i64) == [1, 2]


def test_integers_that_do_not_fit_are_not_wrapped_into_valid_actions():
    # A cast would turn 256 into 0 and 300 into 44: valid actions the server would accept.
    t = wire.action_to_wire(np.array([256, -1]), spaces.MultiBinary(2))
    assert t.dtype == pb.DTYPE_INT64 and list(t.i64) == [256, -1]
    t = wire.action_to_wire(np.array([300]), spaces.Box(0, 255, (1,), np.uint8))
    assert t.dtype == pb.DTYPE_INT64 and list(t.i64) == [300]
    t = wire.action_to_wire(np.array([2**31]), spaces.Box(0, 10, (1,), np.int32))
    assert t.dtype == pb.DTYPE_INT64
    t = wire.action_to_wire(np.array([7]), spaces.Box(0, 10, (1,), np.int32))
    assert t.dtype == pb.DTYPE_INT32 and list(t.i32) == [7]


def test_info_values_become_python_values():
    info = {
        "n": pb.Value(number=1.5),
        "i": pb.Value(integer=3),
        "f": pb.Value(flag=True),
        "t": pb.Value(text="x"),
        "v": pb.Value(tensor=wire.from_numpy(np.array([1.0, 2.0]))),
    }
    out = wire.info_from_wire(info)
    assert out["n"] == 1.5 and out["i"] == 3 and out["f"] is True and out["t"] == "x"
    np.testing.assert_array_equal(out["v"], [1.0, 2.0])
    with pytest.raises(WireError, match="no kind"):
        wire.info_from_wire({"x": pb.Value()})
