"""The ONNX front end (include/dqgraph_onnx.h): models into graphs, and
TensorProto .pb files to and from NumPy arrays."""

import ctypes
import os
from collections import namedtuple

import numpy as np

from . import _args, _native, dtypes, errors
from .graph import Graph

_lib = _native.lib


def _options(dims, shapes, values, max_model_bytes, max_nodes, keep):
    """A dqg_onnx_options from the Python arguments; `keep` holds what the C
    structs point to for the duration of the call."""
    opts = _native.zeroed(_native.OnnxOptions)
    dims = _args.mapping("load_onnx: dims", dims)
    if dims:
        arr = (_native.OnnxDimParam * len(dims))()
        for i, (k, v) in enumerate(dims.items()):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
                raise errors.InvalidArgument(
                    "load_onnx: dimension %r = %r is not an integer >= 1" % (k, v))
            name = _args.text("load_onnx: dims", k, optional=False)
            keep.append(name)
            arr[i].name, arr[i].value = name, _args.integer("load_onnx: dims[%r]" % k, v)
        keep.append(arr)
        opts.dim_params, opts.n_dim_params = ctypes.addressof(arr), len(dims)
    hints = {}
    for k, shape in _args.mapping("load_onnx: shapes", shapes).items():
        hints.setdefault(k, {})["shape"] = tuple(_args.integers("load_onnx: shapes[%r]" % (k,), shape))
    for k, value in _args.mapping("load_onnx: values", values).items():
        hints.setdefault(k, {})["value"] = value
    if hints:
        arr = (_native.OnnxInputHint * len(hints))()
        for i, (k, h) in enumerate(hints.items()):
            if isinstance(k, str):
                name = _args.text("load_onnx: input", k)
                keep.append(name)
                arr[i].name = name
            else:
                # An int names the input by its position among the graph
                # inputs that are not initializers, as the C hint's index.
                arr[i].index = _args.integer("load_onnx: input position", k, *_args.UINT64)
            arr[i].rank = -1
            if "value" in h:
                v = h["value"]
                if not isinstance(v, (np.ndarray, np.generic)):
                    raise errors.InvalidArgumentType(
                        "load_onnx: the value of %r must be a numpy array" % k)
                dt = dtypes.from_numpy(v.dtype)
                if dt is None:
                    raise errors.InvalidArgument(
                        "load_onnx: %r: NumPy type %s has no dqgraph type" % (k, v.dtype))
                v = _args.c_array(v)
                keep.append(v)
                h.setdefault("shape", v.shape)
                arr[i].dtype, arr[i].data, arr[i].size = dtypes.code(dt), v.ctypes.data, v.nbytes
            if "shape" in h:
                shape = h["shape"]
                if len(shape) > _native.MAX_RANK:
                    raise errors.InvalidArgument(
                        "load_onnx: %r: rank %d is above %d" % (k, len(shape), _native.MAX_RANK))
                arr[i].rank = len(shape)
                for j, d in enumerate(shape):
                    arr[i].dims[j] = d
        keep.append(arr)
        opts.inputs, opts.n_inputs = ctypes.addressof(arr), len(hints)
    opts.max_model_bytes = _args.integer("load_onnx: max_model_bytes", max_model_bytes, *_args.UINT64)
    opts.max_nodes = _args.integer("load_onnx: max_nodes", max_nodes, *_args.UINT64)
    keep.append(opts)
    return opts


def _path(what, path):
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise errors.InvalidArgumentType(
            "%s: expected a path, got %r (%s)" % (what, path, type(path).__name__))
    p = os.fsencode(path)
    if b"\0" in p:
        raise errors.InvalidArgument("%s: %r contains a NUL character" % (what, path))
    return p


def load_onnx(path, dims=None, *, shapes=None, values=None, max_model_bytes=0, max_nodes=0):
    """Imports an ONNX model file into a finalized Graph.

    dims: values of symbolic dimensions, e.g. {"batch": 8}; shapes: shapes of
    inputs, e.g. {"x": (8, 3, 224, 224)}; values: input values needed while
    the graph is built (Reshape's shape, ...), as NumPy arrays: those inputs
    become constants. In shapes and values an input is named by its name, or
    by an int, its position among the inputs that are not initializers.
    max_model_bytes, max_nodes: 0 for the library's limits (2 GiB, and
    DQG_ONNX_DEFAULT_MAX_NODES). The GIL is released during the import."""
    keep = []
    cpath = _path("load_onnx", path)
    opts = _options(dims, shapes, values, max_model_bytes, max_nodes, keep)
    out = ctypes.c_void_p()
    _lib.dqg_onnx_load_file(cpath, ctypes.addressof(opts), ctypes.byref(out))
    return Graph(out.value)


def load_onnx_bytes(data, base_dir=None, dims=None, *, shapes=None, values=None, max_model_bytes=0,
                    max_nodes=0):
    """As load_onnx for a serialized model; external data is read from
    base_dir (None: the model may have none)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise errors.InvalidArgumentType(
            "load_onnx_bytes: expected bytes, got %s" % type(data).__name__)
    data = bytes(data)
    keep = []
    cdir = None if base_dir is None else _path("load_onnx_bytes: base_dir", base_dir)
    opts = _options(dims, shapes, values, max_model_bytes, max_nodes, keep)
    out = ctypes.c_void_p()
    _lib.dqg_onnx_load_memory(data, len(data), cdir, ctypes.addressof(opts), ctypes.byref(out))
    return Graph(out.value)


TensorFile = namedtuple("TensorFile", "name dtype shape array")


def read_tensor(path):
    """Reads a TensorProto file: (name, dtype, shape, array), the array in
    dqgraph's storage form (see dqgraph.dtypes; packed types flat)."""
    name, dt = ctypes.c_char_p(), ctypes.c_int()
    rank = ctypes.c_int()
    dims = (ctypes.c_int64 * _native.MAX_RANK)()
    data, size = ctypes.c_void_p(), ctypes.c_size_t()
    _lib.dqg_tensor_file_read(_path("read_tensor", path), ctypes.byref(name), ctypes.byref(dt), ctypes.byref(rank),
                              dims, ctypes.byref(data), ctypes.byref(size))
    try:
        shape = tuple(dims[i] for i in range(rank.value))
        dtype = dtypes.NAMES[dt.value]
        array = dtypes.empty(dtype, shape)
        ctypes.memmove(array.ctypes.data, data, size.value)
        tname = ctypes.string_at(name).decode() if name.value is not None else None
    finally:
        _native.free(data)
        _native.free(ctypes.cast(name, ctypes.c_void_p))
    return TensorFile(tname, dtype, shape, array)


def write_tensor(path, array, name=None, *, dtype=None, shape=None):
    """Writes a TensorProto file. Without dtype the array's NumPy type
    decides; with it, the array holds the type's storage (packed types flat,
    with shape given)."""
    cpath = _path("write_tensor", path)
    cname = _args.text("write_tensor: name", name)
    try:
        array = _args.c_array(array)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentType("write_tensor: not an array of numbers: %s" % e) from None
    dt = dtype if dtype is not None else dtypes.from_numpy(array.dtype)
    if dt is None:
        raise errors.InvalidArgument("write_tensor: NumPy type %s has no dqgraph type" % array.dtype)
    dt = dtypes.name(dt)
    if array.dtype != dtypes.storage(dt):
        raise errors.InvalidArgument(
            "write_tensor: %s is held in %s arrays, not %s" % (dt, dtypes.storage(dt), array.dtype))
    shape = tuple(array.shape) if shape is None else tuple(
        _args.integers("write_tensor: shape", shape, max_length=_native.MAX_RANK))
    if dtypes.storage_size(dt, int(np.prod(shape, dtype=np.int64))) != array.nbytes:
        raise errors.InvalidArgument(
            "write_tensor: %d bytes do not hold %s %s" % (array.nbytes, dt, shape))
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    _lib.dqg_tensor_file_write(cpath, cname, dtypes.code(dt),
                               len(shape), dims, array.ctypes.data)
