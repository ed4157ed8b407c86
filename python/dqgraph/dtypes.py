"""dqgraph's data types in NumPy terms.

Every dqgraph type is held in a NumPy array of a fixed storage type, with the
tensor's bytes exactly as dqgraph lays them out:

    f32 float32   f16 float16   bf16 uint16 (bit patterns)
    s8 int8   u8 uint8   s16 int16   u16 uint16   s32 int32   u32 uint32   s64 int64
    bool bool_ (one byte, 0 or 1)
    f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz: uint8 (bit patterns)
    s4, u4, f4e2m1: uint8, packed two per byte, low nibble first; an array of
        (n + 1) // 2 bytes for n elements

encode()/decode() convert float values to and from any type (rounding to
nearest even, as the library does); pack_int4()/unpack_int4() convert 4-bit
integer values to and from the packed bytes.
"""

import ctypes

import numpy as np

from . import _args, _native, errors

_lib = _native.lib

# dqg_dtype values (include/dqgraph.h), by name.
NAMES = (
    "undef", "f32", "f16", "bf16", "s4", "u4", "s8", "u8", "s16", "u16", "s32", "u32",
    "f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f4e2m1", "s64", "bool",
)
_CODE = {name: code for code, name in enumerate(NAMES)}

_STORAGE = {
    "f32": np.float32, "f16": np.float16, "bf16": np.uint16,
    "s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16,
    "s32": np.int32, "u32": np.uint32, "s64": np.int64,
    "f8e4m3fn": np.uint8, "f8e4m3fnuz": np.uint8, "f8e5m2": np.uint8, "f8e5m2fnuz": np.uint8,
    "s4": np.uint8, "u4": np.uint8, "f4e2m1": np.uint8, "bool": np.bool_,
}

# The dqgraph type a NumPy array is taken as when no type is given.
_FROM_NUMPY = {
    np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
    np.dtype(np.int8): "s8", np.dtype(np.uint8): "u8",
    np.dtype(np.int16): "s16", np.dtype(np.uint16): "u16",
    np.dtype(np.int32): "s32", np.dtype(np.uint32): "u32", np.dtype(np.int64): "s64",
    np.dtype(np.bool_): "bool",
}

PACKED = ("s4", "u4", "f4e2m1")
FLOAT8 = ("f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz")


def code(dtype):
    """The dqg_dtype value of a type name (or of a dqg_dtype value)."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        if 0 < int(dtype) < len(NAMES):
            return int(dtype)
    elif isinstance(dtype, str) and dtype in _CODE and dtype != "undef":
        return _CODE[dtype]
    raise errors.InvalidArgument(
        "unknown dqgraph data type %r; one of %s" % (dtype, ", ".join(NAMES[1:]))
    )


def name(dtype):
    """The name of a type given by name or dqg_dtype value."""
    return NAMES[code(dtype)]


def storage(dtype):
    """The NumPy type that holds elements of `dtype` (see the module's text)."""
    return np.dtype(_STORAGE[name(dtype)])


def from_numpy(np_dtype):
    """The dqgraph type a NumPy dtype stands for, or None (float64, ...)."""
    return _FROM_NUMPY.get(np.dtype(np_dtype))


def bits(dtype):
    return _lib.dqg_dtype_bits(code(dtype))


def storage_size(dtype, count):
    """Bytes taken by `count` elements (4-bit types packed)."""
    return _lib.dqg_dtype_storage_size(code(dtype), int(count))


def is_float(dtype):
    return _lib.dqg_dtype_is_float(code(dtype))


def is_integer(dtype):
    return _lib.dqg_dtype_is_integer(code(dtype))


def is_signed(dtype):
    return _lib.dqg_dtype_is_signed(code(dtype))


def storage_shape(dtype, shape):
    """The shape of the NumPy array that holds a tensor: the tensor's shape,
    except for packed 4-bit types, whose bytes are a flat array."""
    shape = tuple(int(d) for d in shape)
    if name(dtype) in PACKED:
        return ((int(np.prod(shape, dtype=np.int64)) + 1) // 2,)
    return shape


def empty(dtype, shape):
    """An uninitialized array able to hold a tensor of this type and shape."""
    return np.empty(storage_shape(dtype, shape), dtype=storage(dtype))


def encode(values, dtype, saturate=False):
    """Float values -> elements of `dtype`, as dqgraph stores them (rounding to
    nearest even; integers saturate; for float8 and float4, `saturate`
    selects ONNX's saturating conversion). Returns the storage array; packed
    types come back flat."""
    values = _args.c_array(values, np.float32)
    n = values.size
    out = empty(dtype, values.shape)
    out[...] = 0
    _lib.dqg_dtype_encode(code(dtype), values.ctypes.data, n, out.ctypes.data, 0, bool(saturate))
    return out


def decode(data, dtype, shape=None):
    """Elements of `dtype` held in a storage array -> float32 values. For
    packed types give the tensor's `shape` (the bytes do not say whether the
    last nibble is used); otherwise the array's shape is kept."""
    data = _args.c_array(data)
    if data.dtype != storage(dtype):
        raise errors.InvalidArgument(
            "decode: %s elements are held in %s arrays, not %s"
            % (name(dtype), storage(dtype), data.dtype)
        )
    if shape is None:
        if name(dtype) in PACKED:
            raise errors.InvalidArgument("decode: give the shape of packed %s data" % name(dtype))
        shape = data.shape
    shape = tuple(_args.integers("decode: shape", shape, lo=0))
    n = int(np.prod(shape, dtype=np.int64))
    if storage_size(dtype, n) != data.nbytes:
        raise errors.InvalidArgument(
            "decode: %d %s elements take %d bytes, the array has %d"
            % (n, name(dtype), storage_size(dtype, n), data.nbytes)
        )
    out = np.empty(shape, dtype=np.float32)
    _lib.dqg_dtype_decode(code(dtype), data.ctypes.data, 0, n, out.ctypes.data)
    return out


def pack_int4(values, signed=True):
    """4-bit integers (-8..7 if signed, else 0..15) -> packed bytes, two per
    byte, the element with the lower index in the low nibble."""
    v = np.asarray(values)
    if v.dtype.kind not in "iu":
        raise errors.InvalidArgument("pack_int4: values must be integers, not %s" % v.dtype)
    lo, hi = (-8, 7) if signed else (0, 15)
    if v.size and (v.min() < lo or v.max() > hi):
        raise errors.InvalidArgument(
            "pack_int4: values must lie in [%d, %d] for %s" % (lo, hi, "s4" if signed else "u4")
        )
    nib = (v.reshape(-1).astype(np.int64) & 0xF).astype(np.uint8)
    if nib.size % 2:
        nib = np.append(nib, np.uint8(0))
    return (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)


def unpack_int4(packed, count, signed=True):
    """Packed bytes -> `count` 4-bit integers (int8 array)."""
    count = _args.integer("unpack_int4: count", count, lo=0)
    p = np.asarray(packed, dtype=np.uint8).reshape(-1)
    if (count + 1) // 2 != p.size:
        raise errors.InvalidArgument(
            "unpack_int4: %d elements take %d bytes, got %d" % (count, (count + 1) // 2, p.size)
        )
    nib = np.empty(p.size * 2, dtype=np.uint8)
    nib[0::2] = p & 0xF
    nib[1::2] = p >> 4
    v = nib[:count].astype(np.int8)
    if signed:
        v = np.where(v >= 8, v - 16, v).astype(np.int8)
    return v


def to_bf16(values):
    """float values -> bf16 bit patterns (uint16), rounded to nearest even."""
    return encode(values, "bf16")


def from_bf16(bits_):
    """bf16 bit patterns (uint16) -> float32 values."""
    return decode(np.asarray(bits_, dtype=np.uint16), "bf16")


def as_buffer(array):
    """(pointer, bytes) of a C-contiguous array, for the C calls."""
    return ctypes.c_void_p(array.ctypes.data), array.nbytes
