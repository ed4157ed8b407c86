"""dqgraph: a graph compiler and runtime for quantized inference on oneDNN.

    import numpy as np, dqgraph
    g = dqgraph.Graph()
    x = g.input("x", "u8", (4, 64))
    w = g.dequantize_linear(g.constant(w_s8), g.constant(w_scale), axis=1)
    y = g.matmul(g.dequantize_linear(x, g.constant(np.float32(0.02))), w)
    g.output(g.relu(y), "y")
    c = dqgraph.compile(g)                       # fusion on, oneDNN, all cores
    out = c.run({"x": x_u8})["y"]
    print("\\n".join(c.explain()))

Errors are exceptions carrying the library's status and message
(dqgraph.InvalidArgument, dqgraph.Unsupported, ...). The library is
libdqgraph.so: DQGRAPH_LIBRARY names it, else it is looked for next to the
package, in the source tree's build/ folder, and by the system's loader.
"""

from . import _native
from .compiled import Compiled, cache_capacity, cache_clear, cache_stats, compile, set_cache_capacity
from .dtypes import decode, encode, from_bf16, pack_int4, to_bf16, unpack_int4
from .errors import (
    BackendError,
    Error,
    InvalidArgument,
    InvalidArgumentType,
    InvalidGraph,
    IOError,
    OutOfMemory,
    ParseError,
    Unsupported,
)
from .graph import Graph, Op, Tensor
from .onnx import load_onnx, load_onnx_bytes, read_tensor, write_tensor

__version__ = _native.VERSION
library_path = _native.path


def version():
    """The version of the loaded libdqgraph (dqg_version())."""
    return _native.library_version()


def _check_version():
    lib_version = version()
    if lib_version.split(".")[:2] != __version__.split(".")[:2]:
        raise ImportError(
            "dqgraph %s cannot use libdqgraph %s (%s): the versions must agree up to the minor "
            "number; set DQGRAPH_LIBRARY to a matching library" % (__version__, lib_version, library_path)
        )
    if lib_version != __version__:
        import warnings

        warnings.warn("dqgraph %s runs with libdqgraph %s" % (__version__, lib_version))


_check_version()

__all__ = [
    "BackendError", "Compiled", "Error", "Graph", "IOError", "InvalidArgument",
    "InvalidArgumentType", "InvalidGraph",
    "Op", "OutOfMemory", "ParseError", "Tensor", "Unsupported", "cache_capacity", "cache_clear",
    "cache_stats", "compile", "decode", "encode", "from_bf16", "library_path", "load_onnx",
    "load_onnx_bytes", "pack_int4", "read_tensor", "set_cache_capacity", "to_bf16", "unpack_int4",
    "version", "write_tensor",
]
