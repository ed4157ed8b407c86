"""The C library: finding libdqgraph.so, its structs, and the signature of
every function the binding calls (one table, _FUNCTIONS).

Calls go through ctypes.CDLL, which releases the GIL for the duration of
every foreign call: compiling, executing and importing run in parallel with
other Python threads.
"""

import ctypes
import ctypes.util
import glob
import os

from . import errors

VERSION = "0.1.0"  # the C library's DQG_VERSION_STRING this binding is written for

# ---------------------------------------------------------------------------
# Finding the library
# ---------------------------------------------------------------------------


def _candidates():
    """Where libdqgraph.so is looked for, in order."""
    env = os.environ.get("DQGRAPH_LIBRARY")
    if env:
        # An explicit choice is the only one tried.
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    # A copy placed next to the package.
    yield from sorted(glob.glob(os.path.join(here, "libdqgraph.so*")))
    # The build tree, when the package is used from the source tree
    # (python/dqgraph -> build/).
    for build in ("build", "build-release"):
        yield os.path.join(here, "..", "..", build, "libdqgraph.so")
    # An installed library (cmake --install), through the system's loader:
    # by its SONAME first, which is the ABI this binding speaks.
    major, minor = VERSION.split(".")[:2]
    yield "libdqgraph.so.%s.%s" % (major, minor) if major == "0" else "libdqgraph.so.%s" % major
    found = ctypes.util.find_library("dqgraph")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
            continue
        try:
            return ctypes.CDLL(path), os.path.normpath(path) if os.sep in path else path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError(
        "dqgraph: cannot load libdqgraph.so; set DQGRAPH_LIBRARY to its path "
        "(e.g. build/libdqgraph.so) or install it with `cmake --install`. Tried: "
        + "; ".join(tried)
    )


lib, path = _load()

# ---------------------------------------------------------------------------
# Structs (include/dqgraph.h, include/dqgraph_onnx.h)
# ---------------------------------------------------------------------------

c_bool, c_int, c_int32, c_int64 = ctypes.c_bool, ctypes.c_int, ctypes.c_int32, ctypes.c_int64
c_size_t, c_uint64, c_double = ctypes.c_size_t, ctypes.c_uint64, ctypes.c_double
c_char_p, c_void_p = ctypes.c_char_p, ctypes.c_void_p
MAX_RANK = 8
NONE = -1  # DQG_NONE


class Buffer(ctypes.Structure):
    _fields_ = [("id", c_int32), ("name", c_char_p), ("data", c_void_p), ("size", c_size_t)]


class MatmulAttrs(ctypes.Structure):
    _fields_ = [("transpose_a", c_bool), ("transpose_b", c_bool)]


class ConvAttrs(ctypes.Structure):
    _fields_ = [
        ("spatial_rank", c_int),
        ("strides", c_int64 * 3),
        ("pads_begin", c_int64 * 3),
        ("pads_end", c_int64 * 3),
        ("dilations", c_int64 * 3),
        ("groups", c_int64),
        ("data_format", c_int),
    ]


class ConvTransposeAttrs(ctypes.Structure):
    _fields_ = [
        ("spatial_rank", c_int),
        ("strides", c_int64 * 3),
        ("pads_begin", c_int64 * 3),
        ("pads_end", c_int64 * 3),
        ("dilations", c_int64 * 3),
        ("output_padding", c_int64 * 3),
        ("groups", c_int64),
    ]


class PoolAttrs(ctypes.Structure):
    _fields_ = [
        ("algorithm", c_int),
        ("global_", ctypes.c_bool),
        ("spatial_rank", c_int),
        ("kernel", c_int64 * 3),
        ("strides", c_int64 * 3),
        ("pads_begin", c_int64 * 3),
        ("pads_end", c_int64 * 3),
        ("dilations", c_int64 * 3),
        ("ceil_mode", ctypes.c_bool),
    ]


class RnnAttrs(ctypes.Structure):
    _fields_ = [
        ("cell", c_int),
        ("direction", c_int),
        ("hidden_size", c_int64),
        ("batch_first", c_bool),
        ("linear_before_reset", c_bool),
        ("clip", ctypes.c_float),
        ("activation", (c_int * 3) * 2),
        ("alpha", (ctypes.c_float * 3) * 2),
        ("beta", (ctypes.c_float * 3) * 2),
    ]


class ResizeAttrs(ctypes.Structure):
    _fields_ = [
        ("mode", c_int),
        ("coord", c_int),
        ("nearest", c_int),
        ("cubic_a", ctypes.c_float),
        ("exclude_outside", ctypes.c_bool),
        ("sizes", c_int64 * MAX_RANK),
        ("scales", ctypes.c_float * MAX_RANK),
    ]


class DequantizeLinearAttrs(ctypes.Structure):
    _fields_ = [
        ("opset", c_int),
        ("has_axis", c_bool),
        ("axis", c_int64),
        ("block_size", c_int64),
        ("output_dtype", c_int),
    ]


class QuantizeLinearAttrs(ctypes.Structure):
    _fields_ = [
        ("opset", c_int),
        ("has_axis", c_bool),
        ("axis", c_int64),
        ("block_size", c_int64),
        ("output_dtype", c_int),
        ("no_saturate", c_bool),
    ]


class CompileOptions(ctypes.Structure):
    _fields_ = [
        ("disable_fusion", c_bool),
        ("backend", c_int),
        ("threads", c_int),
        ("fpmath", c_int),
    ]


class CacheStats(ctypes.Structure):
    _fields_ = [
        ("hits", c_uint64),
        ("misses", c_uint64),
        ("evictions", c_uint64),
        ("entries", c_size_t),
        ("capacity", c_size_t),
        ("bytes", c_size_t),
        ("compile_ms", c_double),
        ("plan_hits", c_uint64),
        ("plan_misses", c_uint64),
        ("plans", c_size_t),
        ("passes_ms", c_double),
        ("hash_ms", c_double),
        ("constant_transforms", c_uint64),
    ]


class OnnxDimParam(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("value", c_int64)]


class OnnxInputHint(ctypes.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("index", c_size_t),
        ("rank", c_int),
        ("dims", c_int64 * MAX_RANK),
        ("dtype", c_int),
        ("data", c_void_p),
        ("size", c_size_t),
    ]


class OnnxOptions(ctypes.Structure):
    _fields_ = [
        ("dim_params", c_void_p),
        ("n_dim_params", c_size_t),
        ("inputs", c_void_p),
        ("n_inputs", c_size_t),
        ("max_model_bytes", c_uint64),
        ("max_nodes", c_uint64),
    ]


# The C structs that dqgraph reads through a pointer are zero-initialized by
# convention, and new fields are appended with zero meaning "as before". A
# library newer than this binding may therefore read past the fields known
# here: every such struct is allocated with zeroed room to spare, so that
# those reads see zeros.
_SPARE = 256


def zeroed(cls):
    """A zero-initialized instance of cls with zeroed bytes after it."""
    buf = (ctypes.c_ubyte * (ctypes.sizeof(cls) + _SPARE))()
    return cls.from_buffer(buf)  # keeps buf alive


# ---------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------

_STATUS = "status"  # a dqg_status result: checked, raising on failure
_ID = c_int32
_G = c_void_p  # dqg_graph *
_C = c_void_p  # dqg_compiled *
_P = c_void_p  # any other pointer

# name: (result, [arguments])
_FUNCTIONS = {
    "dqg_version": (c_char_p, []),
    "dqg_status_name": (c_char_p, [c_int]),
    "dqg_last_error": (c_char_p, []),
    "dqg_dtype_name": (c_char_p, [c_int]),
    "dqg_dtype_from_name": (c_int, [c_char_p]),
    "dqg_dtype_bits": (c_int, [c_int]),
    "dqg_dtype_storage_size": (c_size_t, [c_int, c_int64]),
    "dqg_dtype_is_float": (c_bool, [c_int]),
    "dqg_dtype_is_integer": (c_bool, [c_int]),
    "dqg_dtype_is_signed": (c_bool, [c_int]),
    "dqg_dtype_decode": (None, [c_int, _P, c_int64, c_int64, _P]),
    "dqg_dtype_encode": (None, [c_int, _P, c_int64, _P, c_int64, c_bool]),
    "dqg_op_kind_name": (c_char_p, [c_int]),
    "dqg_unary_op_name": (c_char_p, [c_int]),
    "dqg_rnn_cell_name": (c_char_p, [c_int]),
    "dqg_rnn_activation_name": (c_char_p, [c_int]),
    "dqg_pad_mode_name": (c_char_p, [c_int]),
    "dqg_compare_op_name": (c_char_p, [c_int]),
    "dqg_logical_op_name": (c_char_p, [c_int]),
    "dqg_graph_create": (_STATUS, [_P]),
    "dqg_graph_destroy": (None, [_G]),
    "dqg_input": (_ID, [_G, c_char_p, c_int, c_int, _P]),
    "dqg_constant": (_ID, [_G, c_char_p, c_int, c_int, _P, _P, c_size_t]),
    "dqg_output": (c_int, [_G, _ID, c_char_p]),
    "dqg_graph_finalize": (c_int, [_G]),
    "dqg_graph_is_finalized": (c_bool, [_G]),
    "dqg_graph_warning_count": (c_size_t, [_G]),
    "dqg_graph_warning": (c_char_p, [_G, c_size_t]),
    "dqg_graph_op_count": (c_size_t, [_G]),
    "dqg_graph_op_kind": (c_int, [_G, c_size_t]),
    "dqg_graph_op_name": (c_char_p, [_G, c_size_t]),
    "dqg_graph_op_input_count": (c_size_t, [_G, c_size_t]),
    "dqg_graph_op_input": (_ID, [_G, c_size_t, c_size_t]),
    "dqg_graph_op_output_count": (c_size_t, [_G, c_size_t]),
    "dqg_graph_op_output": (_ID, [_G, c_size_t, c_size_t]),
    "dqg_graph_tensor_count": (c_size_t, [_G]),
    "dqg_graph_input_count": (c_size_t, [_G]),
    "dqg_graph_input_id": (_ID, [_G, c_size_t]),
    "dqg_graph_output_count": (c_size_t, [_G]),
    "dqg_graph_output_id": (_ID, [_G, c_size_t]),
    "dqg_graph_find_tensor": (_ID, [_G, c_char_p]),
    "dqg_tensor_name": (c_char_p, [_G, _ID]),
    "dqg_tensor_dtype": (c_int, [_G, _ID]),
    "dqg_tensor_rank": (c_int, [_G, _ID]),
    "dqg_tensor_dims": (c_int, [_G, _ID, _P]),
    "dqg_tensor_element_count": (c_int64, [_G, _ID]),
    "dqg_tensor_byte_size": (c_size_t, [_G, _ID]),
    "dqg_tensor_is_constant": (c_bool, [_G, _ID]),
    "dqg_graph_dump": (_STATUS, [_G, c_int, _P]),
    "dqg_reference_run": (_STATUS, [_G, _P, c_size_t, _P, c_size_t]),
    "dqg_compile_options_default": (CompileOptions, []),
    "dqg_compile": (_STATUS, [_G, _P, _P]),
    "dqg_compiled_destroy": (None, [_C]),
    "dqg_execute": (_STATUS, [_C, _P, c_size_t, _P, c_size_t]),
    "dqg_compiled_partition_count": (c_size_t, [_C]),
    "dqg_compiled_partition_info": (c_char_p, [_C, c_size_t]),
    "dqg_compiled_fused_count": (c_size_t, [_C]),
    "dqg_compiled_peak_memory": (c_size_t, [_C]),
    "dqg_compiled_cache_hits": (c_size_t, [_C]),
    "dqg_compiled_dump": (_STATUS, [_C, c_int, _P]),
    "dqg_compiled_explain_count": (c_size_t, [_C]),
    "dqg_compiled_explain": (c_char_p, [_C, c_size_t]),
    "dqg_cache_get_stats": (None, [_P]),
    "dqg_cache_set_capacity": (None, [c_size_t]),
    "dqg_cache_capacity": (c_size_t, []),
    "dqg_cache_clear": (None, []),
    "dqg_onnx_load_file": (_STATUS, [c_char_p, _P, _P]),
    "dqg_onnx_load_memory": (_STATUS, [_P, c_size_t, c_char_p, _P, _P]),
    "dqg_tensor_file_read": (_STATUS, [c_char_p, _P, _P, _P, _P, _P, _P]),
    "dqg_tensor_file_write": (_STATUS, [c_char_p, c_char_p, c_int, c_int, _P, _P]),
}


def last_error():
    return lib.dqg_last_error().decode("utf-8", "replace")


def _check_status(result, func, args):
    if result != 0:
        raise errors.from_status(result, last_error())
    return result


def bind(name, restype, argtypes):
    """Declares one C function; returns it, or None if this library lacks it."""
    f = getattr(lib, name, None)
    if f is None:
        return None
    if restype == _STATUS:
        f.restype = c_int
        f.errcheck = _check_status
    else:
        f.restype = restype
    f.argtypes = argtypes
    return f


for _name, (_res, _args) in _FUNCTIONS.items():
    if bind(_name, _res, _args) is None:
        raise ImportError("dqgraph: %s lacks %s; it is older than this binding" % (path, _name))


def library_version():
    return lib.dqg_version().decode()


# ---------------------------------------------------------------------------
# C streams for the dump functions: open_memstream from the C library
# ---------------------------------------------------------------------------

_libc = ctypes.CDLL(None)
_libc.open_memstream.restype = c_void_p
_libc.open_memstream.argtypes = [ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t)]
_libc.fclose.argtypes = [c_void_p]
_libc.free.argtypes = [c_void_p]


def capture(write):
    """Calls write(FILE *) on an in-memory stream; returns what it wrote."""
    buf, size = c_void_p(), c_size_t()
    stream = _libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not stream:
        raise MemoryError("open_memstream failed")
    try:
        write(stream)
    finally:
        _libc.fclose(stream)
        text = ctypes.string_at(buf, size.value).decode("utf-8", "replace") if buf else ""
        _libc.free(buf)
    return text


def free(ptr):
    _libc.free(ptr)
