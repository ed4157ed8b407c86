"""Every dqgraph data type through the binding: constants, run-time inputs
and outputs in their NumPy storage, and the conversion helpers."""

import numpy as np
import pytest

import dqgraph
from dqgraph import dtypes


def test_names_codes_and_storage():
    assert dtypes.NAMES[1:] == tuple(
        dqgraph._native.lib.dqg_dtype_name(i).decode() for i in range(1, len(dtypes.NAMES))
    )
    assert dtypes.storage("bf16") == np.uint16 and dtypes.storage("f8e5m2") == np.uint8
    assert dtypes.storage_shape("s4", (3, 3)) == (5,)
    assert dtypes.storage_size("u4", 9) == 5 and dtypes.storage_size("f16", 3) == 6
    assert dtypes.is_float("f4e2m1") and dtypes.is_integer("s64") and not dtypes.is_signed("u8")
    with pytest.raises(dqgraph.InvalidArgument, match="unknown dqgraph data type"):
        dtypes.code("f64")


def test_pack_unpack_int4():
    v = np.array([-8, 7, 0, -1, 3], np.int8)
    p = dqgraph.pack_int4(v)
    np.testing.assert_array_equal(p, np.array([0x78, 0xF0, 0x03], np.uint8))
    np.testing.assert_array_equal(dqgraph.unpack_int4(p, 5), v)
    u = np.array([15, 0, 9], np.uint8)
    np.testing.assert_array_equal(dqgraph.unpack_int4(dqgraph.pack_int4(u, signed=False), 3, signed=False), u)
    with pytest.raises(dqgraph.InvalidArgument, match=r"\[-8, 7\]"):
        dqgraph.pack_int4(np.array([8]))
    with pytest.raises(dqgraph.InvalidArgument, match="3 elements take 2 bytes"):
        dqgraph.unpack_int4(np.zeros(3, np.uint8), 3)


def test_bf16_and_float8_codecs():
    x = np.array([1.0, 1.00390625, -2.5, 3.0e38], np.float32)
    b = dqgraph.to_bf16(x)
    assert b.dtype == np.uint16
    # 1 + 2^-8 is halfway between two bf16 values: to even, 1.0.
    np.testing.assert_array_equal(dqgraph.from_bf16(b)[:3], np.float32([1.0, 1.0, -2.5]))
    e = dqgraph.encode(np.float32([1.0, 0.5, 448, 1000]), "f8e4m3fn", saturate=True)
    np.testing.assert_array_equal(e, np.array([0x38, 0x30, 0x7E, 0x7E], np.uint8))
    np.testing.assert_array_equal(dqgraph.decode(e, "f8e4m3fn"), np.float32([1, 0.5, 448, 448]))
    f4 = dqgraph.encode(np.float32([0.5, -6, 1.5]), "f4e2m1")
    assert f4.shape == (2,)
    np.testing.assert_array_equal(dqgraph.decode(f4, "f4e2m1", (3,)), np.float32([0.5, -6, 1.5]))


# (dtype, values given to constant(), the values they stand for)
CASES = [
    ("f16", np.float32([1.5, -2, 65504]), np.float32([1.5, -2, 65504])),
    ("bf16", np.float32([1.5, -2, 256]), np.float32([1.5, -2, 256])),
    ("s4", np.array([-8, 7, -1], np.int8), np.float32([-8, 7, -1])),
    ("u4", np.array([15, 0, 9], np.uint8), np.float32([15, 0, 9])),
    ("s8", np.array([-128, 127, 0], np.int8), np.float32([-128, 127, 0])),
    ("u8", np.array([255, 1, 0], np.uint8), np.float32([255, 1, 0])),
    ("s16", np.array([-32768, 5, 7], np.int16), np.float32([-32768, 5, 7])),
    ("u16", np.array([65535, 5, 7], np.uint16), np.float32([65535, 5, 7])),
    ("s32", np.array([-(2**20), 5, 7], np.int32), np.float32([-(2**20), 5, 7])),
    ("u32", np.array([2**20, 5, 7], np.uint32), np.float32([2**20, 5, 7])),
    ("f8e4m3fn", np.float32([0.5, -448, 2]), np.float32([0.5, -448, 2])),
    ("f8e4m3fnuz", np.float32([0.5, -240, 2]), np.float32([0.5, -240, 2])),
    ("f8e5m2", np.float32([0.5, -57344, 2]), np.float32([0.5, -57344, 2])),
    ("f8e5m2fnuz", np.float32([0.5, -57344, 2]), np.float32([0.5, -57344, 2])),
    ("f4e2m1", np.float32([0.5, -6, 3]), np.float32([0.5, -6, 3])),
]


@pytest.mark.parametrize("dt,given,values", CASES, ids=[c[0] for c in CASES])
def test_every_type_as_constant_and_as_input(dt, given, values):
    """DequantizeLinear (scale 1) reads each type; the same data given at run
    time as an input in the type's storage gives the same result."""
    g = dqgraph.Graph()
    c = g.constant(given, dt)
    x = g.input("x", dt, (3,))
    one = g.constant(np.float32(1))
    opset = 23 if dt == "f4e2m1" else 21
    if dt in ("f16", "bf16", "s32", "u32"):
        # Not DequantizeLinear inputs: a TypeCast reads them.
        yc, yx = g.typecast(c, "f32"), g.typecast(x, "f32")
    else:
        yc = g.dequantize_linear(c, one, opset=opset)
        yx = g.dequantize_linear(x, one, opset=opset)
    g.output(yc, "from_constant")
    g.output(yx, "from_input")
    raw = dtypes.encode(values, dt) if dtypes.is_float(dt) else np.asarray(given).astype(dtypes.storage(dt))
    if dt in ("s4", "u4"):
        raw = dqgraph.pack_int4(given, dt == "s4")
    ref = g.reference_run({"x": raw})
    got = dqgraph.compile(g).run({"x": raw})
    for out in (ref, got):
        np.testing.assert_array_equal(out["from_constant"], values)
        np.testing.assert_array_equal(out["from_input"], values)


@pytest.mark.parametrize("dt", ["bf16", "f16", "s8", "u16", "s32"])
def test_every_castable_type_as_output(dt):
    x = np.float32([1, -2, 3.5, 100])
    g = dqgraph.Graph()
    g.output(g.typecast(g.input("x", "f32", (4,)), dt), "y")
    out = dqgraph.compile(g).run(x=x)["y"]
    assert out.dtype == dtypes.storage(dt) and out.shape == (4,)
    want = dtypes.encode(x, dt) if dtypes.is_float(dt) else np.clip(np.round(x), *(
        (np.iinfo(dtypes.storage(dt)).min, np.iinfo(dtypes.storage(dt)).max))).astype(dtypes.storage(dt))
    np.testing.assert_array_equal(out, want)


def test_packed_constant_given_as_bytes_and_packed_output():
    g = dqgraph.Graph()
    packed = np.array([0x21, 0x03], np.uint8)  # s4 [1, 2, 3]
    c = g.constant(packed, "s4", shape=(3,))
    assert c.nbytes == 2 and c.shape == (3,)
    x = g.input("x", "f32", (3,))
    g.output(g.quantize_linear(x, g.constant(np.float32(1)), g.constant(np.zeros((), np.int8), "s4"),
                               opset=21), "q")
    g.output(g.dequantize_linear(c, g.constant(np.float32(1)), opset=21), "dq")
    out = dqgraph.compile(g).run(x=np.float32([1, -9, 7.5]))
    assert out["q"].dtype == np.uint8 and out["q"].shape == (2,)
    np.testing.assert_array_equal(dqgraph.unpack_int4(out["q"], 3), np.array([1, -8, 7], np.int8))
    np.testing.assert_array_equal(out["dq"], np.float32([1, 2, 3]))


@pytest.mark.parametrize("signed", [True, False], ids=["s4", "u4"])
def test_pack_unpack_int4_round_trip(signed):
    """Every 4-bit value in every nibble position, for odd and even counts
    and any input shape: unpack(pack(v)) == v, and the bytes are the C
    library's (dqg_dtype_decode reads them back as the same values)."""
    lo, hi = (-8, 7) if signed else (0, 15)
    every = np.arange(lo, hi + 1)
    dt = "s4" if signed else "u4"
    for n in (1, 2, 15, 16, 17, 33):
        v = np.resize(np.concatenate([every, every[::-1]]), n).astype(np.int8 if signed else np.uint8)
        p = dqgraph.pack_int4(v, signed)
        assert p.dtype == np.uint8 and p.shape == ((n + 1) // 2,)
        np.testing.assert_array_equal(dqgraph.unpack_int4(p, n, signed), v)
        np.testing.assert_array_equal(dqgraph.decode(p, dt, (n,)), v.astype(np.float32))
        if n % 2:
            assert p[-1] >> 4 == 0  # the unused high nibble is zero
    m = np.arange(24).reshape(2, 3, 4) % (hi - lo + 1) + lo
    np.testing.assert_array_equal(dqgraph.unpack_int4(dqgraph.pack_int4(m, signed), 24, signed),
                                  m.reshape(-1))
    # Low nibble first: [1, 2] is 0x21.
    assert dqgraph.pack_int4([1, 2], signed).tolist() == [0x21]


@pytest.mark.parametrize("dt", list(dtypes.FLOAT8) + ["f4e2m1"])
def test_every_float8_and_float4_code_round_trips(dt):
    """decode then encode gives back every code that is a number (NaN codes
    decode to NaN; -0 of the fnuz types is their NaN)."""
    n = 16 if dt == "f4e2m1" else 256
    codes = np.arange(n, dtype=np.uint8)
    storage = dqgraph.pack_int4(codes, signed=False) if dt == "f4e2m1" else codes
    values = dqgraph.decode(storage, dt, (n,))
    again = dqgraph.encode(values, dt)
    back = dqgraph.unpack_int4(again, n, signed=False) if dt == "f4e2m1" else again
    number = ~np.isnan(values)
    np.testing.assert_array_equal(back[number], codes[number])
    assert np.isnan(values).sum() == {"f8e4m3fn": 2, "f8e4m3fnuz": 1, "f8e5m2": 6,
                                      "f8e5m2fnuz": 1, "f4e2m1": 0}[dt]


def test_scalars_keep_shape_zero_d():
    assert dqgraph.to_bf16(np.float32(1.5)).shape == ()
    assert dqgraph.from_bf16(np.uint16(0x3FC0)).shape == () and dqgraph.from_bf16(0x3FC0) == 1.5
    assert dqgraph.decode(np.uint8(0x38), "f8e4m3fn").shape == ()
    g = dqgraph.Graph()
    assert g.constant(np.float32(2)).shape == () and g.constant(1.5, "bf16").shape == ()
