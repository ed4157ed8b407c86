"""Graphs: building (one method per C builder, from the table _BUILDERS),
introspection, dumping and the reference interpreter."""

import ctypes
import inspect
import threading

import numpy as np

from . import _args, _native, dtypes, errors

_lib = _native.lib
_REQUIRED = inspect.Parameter.empty


class Tensor:
    """A tensor of a graph: what builder methods take and return. Its id is
    the C API's dqg_tensor_id."""

    __slots__ = ("graph", "id")

    def __init__(self, graph, tensor_id):
        self.graph = graph
        self.id = int(tensor_id)

    @property
    def name(self):
        return self.graph._call(_lib.dqg_tensor_name, self.id).decode()

    @property
    def dtype(self):
        """The data type's name ("f32", "u8", ...)."""
        return dtypes.NAMES[self.graph._call(_lib.dqg_tensor_dtype, self.id)]

    @property
    def shape(self):
        dims = (ctypes.c_int64 * _native.MAX_RANK)()
        rank = self.graph._call(_lib.dqg_tensor_dims, self.id, dims)
        return tuple(dims[i] for i in range(rank))

    @property
    def rank(self):
        return self.graph._call(_lib.dqg_tensor_rank, self.id)

    @property
    def size(self):
        """Number of elements."""
        return self.graph._call(_lib.dqg_tensor_element_count, self.id)

    @property
    def nbytes(self):
        """Bytes of the tensor's storage (4-bit types packed)."""
        return self.graph._call(_lib.dqg_tensor_byte_size, self.id)

    @property
    def is_constant(self):
        return self.graph._call(_lib.dqg_tensor_is_constant, self.id)

    def __repr__(self):
        return "Tensor(%r, %s, %s)" % (self.name, self.dtype, self.shape)

    def __eq__(self, other):
        return isinstance(other, Tensor) and other.graph is self.graph and other.id == self.id

    def __hash__(self):
        return hash((id(self.graph), self.id))

    def __index__(self):
        return self.id


class Op:
    """One op of a graph, as introspection reports it."""

    __slots__ = ("kind", "name", "inputs", "outputs")

    def __init__(self, kind, name, inputs, outputs):
        self.kind, self.name, self.inputs, self.outputs = kind, name, inputs, outputs

    def __repr__(self):
        return "Op(%s %r)" % (self.kind, self.name)


# ---------------------------------------------------------------------------
# Arguments of the builders. Each kind converts a Python value to the C
# argument(s) and declares the C types.
# ---------------------------------------------------------------------------


class Param:
    """One parameter of a builder: `kind` says how it is passed to C."""

    def __init__(self, name, kind, default=_REQUIRED, keyword_only=False):
        self.name, self.kind, self.default, self.keyword_only = name, kind, default, keyword_only


def _tensor_arg(graph, what, value, optional):
    if value is None:
        if optional:
            return _native.NONE
        raise errors.InvalidArgument("%s: a tensor is required" % what)
    if isinstance(value, Tensor):
        if value.graph is not graph:
            raise errors.InvalidArgument("%s: tensor %r belongs to another graph" % (what, value))
        return value.id
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        # A raw id (dqg_tensor_id, int32): the library checks that it exists.
        return _args.integer(what, value, *_args.INT32)
    raise errors.InvalidArgumentType(
        "%s: expected a dqgraph.Tensor, got %s" % (what, type(value).__name__))


def _int_list(what, value, length=None):
    return _args.integers(what, value, length=length, max_length=_native.MAX_RANK)


def _int64_array(items):
    return (ctypes.c_int64 * max(len(items), 1))(*items)


_FORMATS = {"ncx": 0, "nchw": 0, "ncw": 0, "ncdhw": 0, "nxc": 1, "nhwc": 1, "nwc": 1, "ndhwc": 1}


def _data_format(what, value):
    if isinstance(value, str) and value.lower() in _FORMATS:
        return _FORMATS[value.lower()]
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) \
            and value in (0, 1):
        return int(value)
    raise errors.InvalidArgument("%s: data_format %r is not 'ncx' or 'nxc'" % (what, value))


# kind: (C types, convert(graph, what, value, call) -> list of C values)
def _k_tensor(g, what, v, call):
    return [_tensor_arg(g, what, v, False)]


def _k_optional(g, what, v, call):
    return [_tensor_arg(g, what, v, True)]


def _k_float(g, what, v, call):
    return [_args.real(what, v)]


def _k_int(g, what, v, call):
    return [_args.integer(what, v)]


def _k_dtype(g, what, v, call):
    return [dtypes.code(v)]


def _k_str(g, what, v, call):
    return [_args.text(what, v)]


def _k_format(g, what, v, call):
    return [_data_format(what, v)]


def _k_shape(g, what, v, call):
    items = _int_list(what, v)
    arr = _int64_array(items)
    call.keep.append(arr)
    return [len(items), arr]


def _k_qaxis(g, what, v, call):
    # oneDNN Graph's axis defaults to 1; a per-tensor op does not use it, and
    # 0 is valid for any rank.
    if v is None:
        per_channel = any(x == "per_channel" for x in call.values if isinstance(x, str))
        return [1 if per_channel else 0]
    return [_args.integer(what, v)]


def _k_perm(g, what, v, call):
    if v is None:
        return [None]
    # The library reads as many entries as the input has dimensions: the
    # list must have that many, and the array never holds fewer than the
    # most a tensor can have (x given as a raw id the library may refuse).
    x = call.values[0]
    rank = _lib.dqg_tensor_rank(g._handle(), _tensor_arg(g, what, x, False))
    items = _int_list(what, v, rank if rank >= 0 else None)
    arr = _int64_array(items + [0] * (_native.MAX_RANK - len(items)))
    call.keep.append(arr)
    return [arr]


_UNARY_OPS = ["sigmoid", "tanh", "erf", "gelu", "gelu_tanh", "neg", "abs", "sqrt", "reciprocal",
              "exp", "log", "hard_sigmoid", "hard_swish", "leaky_relu", "elu", "swish", "pow",
              "cos", "sin", "floor", "ceil", "round", "sign", "softplus", "selu", "softsign",
              "thresholded_relu", "celu", "mish", "tan", "asin", "acos", "atan", "sinh", "cosh",
              "asinh", "acosh", "atanh"]


_RNN_CELLS = ["rnn", "gru", "lstm"]
_RNN_DIRECTIONS = ["forward", "reverse", "bidirectional"]
_RNN_ACTIVATIONS = ["default", "sigmoid", "tanh", "relu", "affine", "leaky_relu",
                    "thresholded_relu", "scaled_tanh", "hard_sigmoid", "elu", "softsign",
                    "softplus"]


def _choice(what, v, names):
    """The index of name v in names (case-insensitive), or an int the library checks."""
    if isinstance(v, str) and v.lower() in names:
        return names.index(v.lower())
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return _args.integer(what, v, *_args.INT32)
    raise errors.InvalidArgument("%s: %r is not one of %s" % (what, v, ", ".join(names)))


def _k_unary(g, what, v, call):
    if isinstance(v, str) and v.lower() in _UNARY_OPS:
        return [_UNARY_OPS.index(v.lower())]
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return [_args.integer(what, v, *_args.INT32)]  # the library checks the range
    raise errors.InvalidArgument("%s: %r is not one of %s" % (what, v, ", ".join(_UNARY_OPS)))


def _k_int32(g, what, v, call):
    return [_args.integer(what, v, *_args.INT32)]


def _k_bool(g, what, v, call):
    return [_args.flag(what, v)]


def _k_tensors(g, what, v, call):
    if isinstance(v, (Tensor, str, bytes)) or not isinstance(v, (list, tuple)):
        raise errors.InvalidArgumentType(
            "%s: expected a list of dqgraph.Tensor, got %s" % (what, type(v).__name__))
    ids = [_tensor_arg(g, "%s[%d]" % (what, i), t, False) for i, t in enumerate(v)]
    arr = (ctypes.c_int32 * max(len(ids), 1))(*ids)
    call.keep.append(arr)
    return [len(ids), arr]


_REDUCE_OPS = ["sum", "mean", "max", "min", "prod"]


def _k_reduce(g, what, v, call):
    if isinstance(v, str) and v.lower() in _REDUCE_OPS:
        return [_REDUCE_OPS.index(v.lower())]
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return [_args.integer(what, v, *_args.INT32)]  # the library checks the range
    raise errors.InvalidArgument("%s: %r is not one of %s" % (what, v, ", ".join(_REDUCE_OPS)))


_COMPARE_OPS = ["equal", "less", "less_equal", "greater", "greater_equal"]
_LOGICAL_OPS = ["and", "or", "xor", "not"]


def _k_compare(g, what, v, call):
    if isinstance(v, str) and v.lower() in _COMPARE_OPS:
        return [_COMPARE_OPS.index(v.lower())]
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return [int(v)]  # the library checks the range
    raise errors.InvalidArgument("%s: %r is not one of %s" % (what, v, ", ".join(_COMPARE_OPS)))


def _k_logical(g, what, v, call):
    if isinstance(v, str) and v.lower() in _LOGICAL_OPS:
        return [_LOGICAL_OPS.index(v.lower())]
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return [int(v)]  # the library checks the range
    raise errors.InvalidArgument("%s: %r is not one of %s" % (what, v, ", ".join(_LOGICAL_OPS)))


def _k_slices(g, what, v, call):
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)):
        raise errors.InvalidArgumentType(
            "%s: expected a list of (axis, start, end[, step]), got %r" % (what, v))
    rows = [tuple(_args.integers("%s[%d]" % (what, i), r)) for i, r in enumerate(v)]
    if any(len(r) not in (3, 4) for r in rows):
        raise errors.InvalidArgument("%s: each slice is (axis, start, end[, step])" % what)
    if len(rows) > _native.MAX_RANK:
        raise errors.InvalidArgument(
            "%s: %d slices; dqgraph's rank limit is %d" % (what, len(rows), _native.MAX_RANK))
    cols = [_int64_array([r[k] if k < len(r) else 1 for r in rows]) for k in range(4)]
    call.keep.extend(cols)
    return [len(rows)] + cols


_PAD_MODES = ["constant", "reflect", "edge", "wrap"]
_SCATTER_REDUCTIONS = ["none", "add", "mul", "max", "min"]


def _k_scatter_reduction(g, what, v, call):
    if isinstance(v, str) and v.lower() in _SCATTER_REDUCTIONS:
        return [_SCATTER_REDUCTIONS.index(v.lower())]
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return [_args.integer(what, v, *_args.INT32)]  # the library checks the range
    raise errors.InvalidArgument("%s: %r is not one of %s"
                                 % (what, v, ", ".join(_SCATTER_REDUCTIONS)))


def _k_pad_mode(g, what, v, call):
    if isinstance(v, str) and v.lower() in _PAD_MODES:
        return [_PAD_MODES.index(v.lower())]
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return [_args.integer(what, v, *_args.INT32)]  # the library checks the range
    raise errors.InvalidArgument("%s: %r is not one of %s" % (what, v, ", ".join(_PAD_MODES)))


def _k_pads(g, what, v, call):
    if v is None:
        return [None]
    # Two amounts per dimension of x: the library reads 2 * rank entries.
    x = call.values[0]
    rank = _lib.dqg_tensor_rank(g._handle(), _tensor_arg(g, what, x, False))
    items = _args.integers(what, v, length=2 * rank if rank >= 0 else None,
                           max_length=2 * _native.MAX_RANK)
    arr = _int64_array(items + [0] * (2 * _native.MAX_RANK - len(items)))
    call.keep.append(arr)
    return [arr]


KINDS = {
    "tensor": ([ctypes.c_int32], _k_tensor),
    "pad_mode": ([ctypes.c_int], _k_pad_mode),
    "scatter_reduction": ([ctypes.c_int], _k_scatter_reduction),
    "pads": ([ctypes.c_void_p], _k_pads),
    "double": ([ctypes.c_double], _k_float),
    "slices": ([ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p],
               _k_slices),
    "reduce": ([ctypes.c_int], _k_reduce),
    "compare": ([ctypes.c_int], _k_compare),
    "logical": ([ctypes.c_int], _k_logical),
    "tensors": ([ctypes.c_int, ctypes.c_void_p], _k_tensors),
    "unary": ([ctypes.c_int], _k_unary),
    "int32": ([ctypes.c_int], _k_int32),
    "bool": ([ctypes.c_bool], _k_bool),
    "optional": ([ctypes.c_int32], _k_optional),
    "float": ([ctypes.c_float], _k_float),
    "int": ([ctypes.c_int64], _k_int),
    "dtype": ([ctypes.c_int], _k_dtype),
    "str": ([ctypes.c_char_p], _k_str),
    "format": ([ctypes.c_int], _k_format),
    "shape": ([ctypes.c_int, ctypes.c_void_p], _k_shape),
    "perm": ([ctypes.c_void_p], _k_perm),
    "qaxis": ([ctypes.c_int64], _k_qaxis),
}


class Attrs:
    """An attribute struct passed by pointer: its keyword parameters, and
    fill(struct, values, call) setting the fields from them."""

    def __init__(self, struct, params, fill):
        self.struct, self.params, self.fill = struct, params, fill


def _fill_matmul(s, kw, call):
    s.transpose_a = _args.flag("MatMul: transpose_a", kw["transpose_a"])
    s.transpose_b = _args.flag("MatMul: transpose_b", kw["transpose_b"])


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _spatial(what, value, rank, default):
    if value is None:
        return [default] * rank
    if _is_int(value):
        return [_args.integer(what, value)] * rank
    return _int_list(what, value, rank)


def _fill_conv(s, kw, call):
    weights = call.values[1]
    given = [kw[k] for k in ("strides", "pads_begin", "pads_end", "dilations")]
    rank = next((len(_int_list("Convolution", v)) for v in given if v is not None and not _is_int(v)),
                None)
    if rank is None:
        rank = weights.rank - 2 if isinstance(weights, Tensor) and weights.rank >= 3 else 2
    if not 1 <= rank <= 3:
        raise errors.InvalidArgument("Convolution: spatial rank %d is not 1, 2 or 3" % rank)
    s.spatial_rank = rank
    for field, default in (("strides", 1), ("pads_begin", 0), ("pads_end", 0), ("dilations", 1)):
        values = _spatial("Convolution: " + field, kw[field], rank, default)
        arr = getattr(s, field)
        for i, v in enumerate(values):
            arr[i] = v
    s.groups = _args.integer("Convolution: groups", kw["groups"])
    s.data_format = _data_format("Convolution", kw["data_format"])


def _fill_conv_transpose(s, kw, call):
    weights = call.values[1]
    given = [kw[k] for k in ("strides", "pads_begin", "pads_end", "dilations", "output_padding")]
    rank = next((len(_int_list("ConvTranspose", v)) for v in given
                 if v is not None and not _is_int(v)), None)
    if rank is None:
        rank = weights.rank - 2 if isinstance(weights, Tensor) and weights.rank >= 3 else 2
    if not 1 <= rank <= 3:
        raise errors.InvalidArgument("ConvTranspose: spatial rank %d is not 1, 2 or 3" % rank)
    s.spatial_rank = rank
    for field, default in (("strides", 1), ("pads_begin", 0), ("pads_end", 0), ("dilations", 1),
                           ("output_padding", 0)):
        values = _spatial("ConvTranspose: " + field, kw[field], rank, default)
        arr = getattr(s, field)
        for i, v in enumerate(values):
            arr[i] = v
    s.groups = _args.integer("ConvTranspose: groups", kw["groups"])


_CONV_TRANSPOSE = Attrs(
    _native.ConvTransposeAttrs,
    [
        Param("strides", "kw", None),
        Param("pads_begin", "kw", None),
        Param("pads_end", "kw", None),
        Param("dilations", "kw", None),
        Param("output_padding", "kw", None),
        Param("groups", "kw", 1),
    ],
    _fill_conv_transpose,
)


_POOL_ALGORITHMS = {"max": 0, "avg_include_pad": 1, "avg_exclude_pad": 2}


def _fill_pool(s, kw, call):
    alg = kw["algorithm"]
    if not isinstance(alg, str) or alg not in _POOL_ALGORITHMS:
        raise errors.InvalidArgument(
            "Pool: algorithm %r is not one of %s" % (alg, ", ".join(_POOL_ALGORITHMS)))
    s.algorithm = _POOL_ALGORITHMS[alg]
    if _args.flag("Pool: global_pool", kw["global_pool"]):
        s.global_ = True
        return
    x = call.values[0]
    kernel = kw["kernel"]
    if kernel is None:
        raise errors.InvalidArgument("Pool: kernel is required unless global_pool")
    if _is_int(kernel):
        rank = x.rank - 2 if isinstance(x, Tensor) and x.rank >= 3 else 2
    else:
        rank = len(_int_list("Pool: kernel", kernel))
    if not 1 <= rank <= 3:
        raise errors.InvalidArgument("Pool: spatial rank %d is not 1, 2 or 3" % rank)
    s.spatial_rank = rank
    for field, default in (("kernel", 1), ("strides", 1), ("pads_begin", 0), ("pads_end", 0),
                           ("dilations", 1)):
        values = _spatial("Pool: " + field, kw[field], rank, default)
        arr = getattr(s, field)
        for i, v in enumerate(values):
            arr[i] = v
    s.ceil_mode = _args.flag("Pool: ceil_mode", kw["ceil_mode"])


def _fill_dequantize_linear(s, kw, call):
    s.opset = _args.integer("opset", kw["opset"], *_args.INT32)
    if kw["axis"] is not None:
        s.has_axis, s.axis = True, _args.integer("axis", kw["axis"])
    s.block_size = _args.integer("block_size", kw["block_size"])
    s.output_dtype = 0 if kw["output_dtype"] is None else dtypes.code(kw["output_dtype"])


def _fill_quantize_linear(s, kw, call):
    _fill_dequantize_linear(s, kw, call)
    s.no_saturate = not _args.flag("saturate", kw["saturate"])


_MATMUL = Attrs(
    _native.MatmulAttrs,
    [Param("transpose_a", "kw", False), Param("transpose_b", "kw", False)],
    _fill_matmul,
)
_CONV = Attrs(
    _native.ConvAttrs,
    [
        Param("strides", "kw", None),
        Param("pads_begin", "kw", None),
        Param("pads_end", "kw", None),
        Param("dilations", "kw", None),
        Param("groups", "kw", 1),
        Param("data_format", "kw", "ncx"),
    ],
    _fill_conv,
)
_POOL = Attrs(
    _native.PoolAttrs,
    [
        Param("algorithm", "kw", "max"),
        Param("kernel", "kw", None),
        Param("strides", "kw", None),
        Param("pads_begin", "kw", None),
        Param("pads_end", "kw", None),
        Param("dilations", "kw", None),
        Param("ceil_mode", "kw", False),
        Param("global_pool", "kw", False),
    ],
    _fill_pool,
)
_RESIZE_MODES = ["nearest", "linear", "cubic"]
_RESIZE_COORDS = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                  "tf_half_pixel_for_nn"]
_RESIZE_NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def _fill_resize(s, kw, call):
    for field, names in (("mode", _RESIZE_MODES), ("coord", _RESIZE_COORDS),
                         ("nearest", _RESIZE_NEAREST)):
        v = kw[field]
        if not isinstance(v, str) or v.lower() not in names:
            raise errors.InvalidArgument("Resize: %s %r is not one of %s"
                                         % (field, v, ", ".join(names)))
        setattr(s, field, names.index(v.lower()))
    s.cubic_a = _args.real("Resize: cubic_a", kw["cubic_a"])
    s.exclude_outside = _args.flag("Resize: exclude_outside", kw["exclude_outside"])
    sizes = _int_list("Resize: sizes", kw["sizes"])
    for i, v in enumerate(sizes):
        s.sizes[i] = v
    scales = kw["scales"]
    if scales is not None:
        if isinstance(scales, (str, bytes)) or not hasattr(scales, "__iter__") \
                or len(scales) != len(sizes):
            raise errors.InvalidArgument("Resize: scales must list one number per size")
        for i, v in enumerate(scales):
            s.scales[i] = _args.real("Resize: scales[%d]" % i, v)


_RESIZE = Attrs(
    _native.ResizeAttrs,
    [
        Param("sizes", "kw", ()),
        Param("mode", "kw", "nearest"),
        Param("coord", "kw", "half_pixel"),
        Param("nearest", "kw", "round_prefer_floor"),
        Param("cubic_a", "kw", -0.75),
        Param("exclude_outside", "kw", False),
        Param("scales", "kw", None),
    ],
    _fill_resize,
)
_DQL = Attrs(
    _native.DequantizeLinearAttrs,
    [
        Param("opset", "kw", 23),
        Param("axis", "kw", None),
        Param("block_size", "kw", 0),
        Param("output_dtype", "kw", None),
    ],
    _fill_dequantize_linear,
)
_QL = Attrs(
    _native.QuantizeLinearAttrs,
    [
        Param("opset", "kw", 21),
        Param("axis", "kw", None),
        Param("block_size", "kw", 0),
        Param("output_dtype", "kw", None),
        Param("saturate", "kw", True),
    ],
    _fill_quantize_linear,
)

# ---------------------------------------------------------------------------
# The builders: method name -> (C function, parameters after graph and name,
# documentation). A C builder added to include/dqgraph.h is one entry here:
# its parameters in C order, each a Param of a kind in KINDS (or an Attrs for
# a struct passed by pointer), with the C API's defaults. For example, a
# builder dqg_softmax(graph, name, x, int axis, bool log) is
#     "softmax": ("dqg_softmax", [Param("x", T), Param("axis", "int32", -1),
#                                 Param("log", "bool", False, True)], "..."),
# A C parameter type not in KINDS (e.g. a variadic list of tensors) is one
# more entry there: its ctypes types and its conversion.
# ---------------------------------------------------------------------------

T, O = "tensor", "optional"

_BUILDERS = {
    "matmul": ("dqg_matmul", [Param("a", T), Param("b", T), _MATMUL],
               "ONNX MatMul (NumPy broadcasting) with oneDNN Graph's transpose_a/transpose_b."),
    "convolution": ("dqg_convolution", [Param("src", T), Param("weights", T),
                                        Param("bias", O, None), _CONV],
                    "Convolution (cross-correlation); weights OIX; strides, pads and dilations "
                    "per spatial dimension (an int applies to all); data_format 'ncx' or 'nxc'."),
    "conv_transpose": ("dqg_conv_transpose", [Param("src", T), Param("weights", T),
                                              Param("bias", O, None), _CONV_TRANSPOSE],
                       "ONNX ConvTranspose of an NCX src; weights [C, M / groups, K...]; "
                       "strides, pads, dilations and output_padding per spatial dimension (an "
                       "int applies to all)."),
    "pool": ("dqg_pool", [Param("x", T), _POOL],
             "ONNX MaxPool / AveragePool / GlobalMaxPool / GlobalAveragePool over NCX x: "
             "algorithm 'max', 'avg_include_pad' or 'avg_exclude_pad'; kernel, strides, pads "
             "and dilations per spatial dimension (an int applies to all); ceil_mode; "
             "global_pool pools the whole spatial extent."),
    "bias_add": ("dqg_bias_add", [Param("x", T), Param("bias", T),
                                  Param("data_format", "format", "ncx")],
                 "x + bias along the channel axis (1 for 'ncx', the last for 'nxc')."),
    "add": ("dqg_add", [Param("a", T), Param("b", T)],
            "a + b with NumPy broadcasting; integers wrap around."),
    "mul": ("dqg_mul", [Param("a", T), Param("b", T)],
            "a * b with NumPy broadcasting; integers wrap around."),
    "sub": ("dqg_sub", [Param("a", T), Param("b", T)],
            "a - b with NumPy broadcasting; integers wrap around."),
    "div": ("dqg_div", [Param("a", T), Param("b", T)],
            "a / b with NumPy broadcasting; integers truncate toward zero."),
    "pow": ("dqg_pow", [Param("a", T), Param("b", T)], "a ** b with NumPy broadcasting (floats)."),
    "max": ("dqg_max", [Param("a", T), Param("b", T)],
            "The larger of a and b with NumPy broadcasting (NaN if either is NaN)."),
    "min": ("dqg_min", [Param("a", T), Param("b", T)],
            "The smaller of a and b with NumPy broadcasting (NaN if either is NaN)."),
    "gather_nd": ("dqg_gather_nd", [Param("data", T), Param("indices", T),
                                    Param("batch_dims", "int32", 0)],
                  "ONNX GatherND: slices of data at the index tuples of indices' last axis."),
    "scatter_nd": ("dqg_scatter_nd", [Param("data", T), Param("indices", T), Param("updates", T),
                                      Param("reduction", "scatter_reduction", "none")],
                   "ONNX ScatterND: data with updates written at the index tuples; reduction "
                   "one of: " + ", ".join(_SCATTER_REDUCTIONS) + "."),
    "scatter_elements": ("dqg_scatter_elements",
                         [Param("data", T), Param("indices", T), Param("updates", T),
                          Param("axis", "int32", 0),
                          Param("reduction", "scatter_reduction", "none")],
                         "ONNX ScatterElements: data with updates written along axis at "
                         "indices."),
    "mod": ("dqg_mod", [Param("a", T), Param("b", T), Param("fmod", "bool", False)],
            "ONNX Mod: a's remainder by b, with b's sign (Python's %, integers) or a's (fmod)."),
    "cumsum": ("dqg_cumsum", [Param("x", T), Param("axis", "int32", 0),
                              Param("exclusive", "bool", False), Param("reverse", "bool", False)],
               "ONNX CumSum: running sums along axis (exclusive: each leaves out its own "
               "element; reverse: from the end)."),
    "argmax": ("dqg_argmax", [Param("x", T), Param("axis", "int32", 0),
                              Param("keepdims", "bool", True),
                              Param("select_last", "bool", False)],
               "ONNX ArgMax: the s64 index of the largest element along axis (NaN wins)."),
    "argmin": ("dqg_argmin", [Param("x", T), Param("axis", "int32", 0),
                              Param("keepdims", "bool", True),
                              Param("select_last", "bool", False)],
               "ONNX ArgMin: the s64 index of the smallest element along axis (NaN wins)."),
    "resize": ("dqg_resize", [Param("x", T), _RESIZE],
               "ONNX Resize to `sizes` (one per axis): mode one of " + ", ".join(_RESIZE_MODES)
               + "; coord one of " + ", ".join(_RESIZE_COORDS) + "; nearest one of "
               + ", ".join(_RESIZE_NEAREST) + "; scales (per axis, 0 for sizes / x's) "
               "for the coordinate transform."),
    "pad": ("dqg_pad", [Param("x", T), Param("pads", "pads", None),
                        Param("mode", "pad_mode", "constant"), Param("value", "double", 0.0)],
            "ONNX Pad: pads lists the amounts before each axis, then after each (negative "
            "ones crop); mode one of: " + ", ".join(_PAD_MODES) + "; value for 'constant'."),
    "relu": ("dqg_relu", [Param("x", T)], "max(x, 0)."),
    "unary": ("dqg_unary", [Param("function", "unary"), Param("x", T),
                            Param("alpha", "float", 0.0), Param("beta", "float", 0.0)],
              "y = f(x) for f one of: " + ", ".join(_UNARY_OPS) + " (alpha, beta where used)."),
    "softmax": ("dqg_softmax", [Param("x", T), Param("axis", "int32", -1),
                                Param("log", "bool", False, True)],
                "Softmax along one axis (log=True: LogSoftmax)."),
    "concat": ("dqg_concat", [Param("inputs", "tensors"), Param("axis", "int32")],
               "Joins tensors of one type and rank along an axis."),
    "layer_norm": ("dqg_layer_norm", [Param("x", T), Param("scale", T), Param("bias", O, None),
                                      Param("axis", "int32", -1), Param("epsilon", "float", 1e-5)],
                   "Layer normalization over the dimensions from axis to the last."),
    "reduce": ("dqg_reduce", [Param("function", "reduce"), Param("x", T),
                              Param("axes", "shape", ()), Param("keepdims", "bool", True)],
               "Reduces x over axes (() for all) with one of: " + ", ".join(_REDUCE_OPS) + "."),
    "slice": ("dqg_slice", [Param("x", T), Param("slices", "slices")],
              "ONNX Slice: slices is a list of (axis, start, end[, step]); ends clamp as in "
              "ONNX (use sys.maxsize for 'to the end')."),
    "gather": ("dqg_gather", [Param("data", T), Param("indices", T), Param("axis", "int32", 0)],
               "ONNX Gather: slices of data along axis chosen by s32/s64 indices."),
    "gather_elements": ("dqg_gather_elements",
                        [Param("data", T), Param("indices", T), Param("axis", "int32", 0)],
                        "ONNX GatherElements: data read along axis at s32/s64 indices of "
                        "data's rank; the output has the indices' shape."),
    "compare": ("dqg_compare", [Param("function", "compare"), Param("a", T), Param("b", T)],
                "a OP b with NumPy broadcasting, a bool result, for OP one of: "
                + ", ".join(_COMPARE_OPS) + "."),
    "logical": ("dqg_logical", [Param("function", "logical"), Param("a", T),
                                Param("b", O, None)],
                "And, Or, Xor of two bool tensors (NumPy broadcasting), or Not of one (b None)."),
    "where": ("dqg_where", [Param("condition", T), Param("x", T), Param("y", T)],
              "condition ? x : y element-wise (condition bool), the three broadcast together."),
    "lrn": ("dqg_lrn", [Param("x", T), Param("size", "int32"), Param("alpha", "float", 1e-4),
                        Param("beta", "float", 0.75), Param("bias", "float", 1.0)],
            "Local response normalization across channels (ONNX LRN) of an NCX f32 tensor."),
    "clip": ("dqg_clip", [Param("x", T), Param("lo", "float"), Param("hi", "float")],
             "min(max(x, lo), hi)."),
    "reshape": ("dqg_reshape", [Param("x", T), Param("shape", "shape")],
                "ONNX Reshape (allowzero = 0): 0 copies a dimension, one -1 is inferred."),
    "transpose": ("dqg_transpose", [Param("x", T), Param("perm", "perm", None)],
                  "Permutes the dimensions; perm None reverses them."),
    "typecast": ("dqg_typecast", [Param("x", T), Param("to", "dtype")],
                 "Conversion to another type (rounding to nearest even, saturating integers)."),
    "dequantize_linear": ("dqg_dequantize_linear", [Param("x", T), Param("scale", T),
                                                    Param("zero_point", O, None), _DQL],
                          "ONNX DequantizeLinear; axis None is the default axis (1); "
                          "output_dtype None is the scale's type (opset 23)."),
    "dynamic_dequantize": ("dqg_dynamic_dequantize",
                           [Param("src", T), Param("scales", T), Param("zps", O, None),
                            Param("qtype", "str", "per_tensor", True),
                            Param("axis", "qaxis", None, True)],
                           "oneDNN Graph DynamicDequantize: scales and zero points at run time; "
                           "axis None is 1 for per_channel (oneDNN Graph's default)."),
    "dynamic_quantize": ("dqg_dynamic_quantize",
                         [Param("src", T), Param("scales", T), Param("zps", O, None),
                          Param("qtype", "str", "per_tensor", True),
                          Param("axis", "qaxis", None, True),
                          Param("dst_dtype", "dtype", "u8", True)],
                         "oneDNN Graph DynamicQuantize: f32 -> u8/s8 with run-time scales."),
    "extended_dequantize_linear": ("dqg_extended_dequantize_linear",
                                   [Param("x", T), Param("scale", T),
                                    Param("zero_point", O, None), Param("axis", "int", 1, True)],
                                   "AMD Quark ExtendedDequantizeLinear (com.amd.quark)."),
    "dml_dequantize": ("dqg_dml_dequantize", [Param("x", T), Param("scale", T),
                                              Param("zero_point", O, None)],
                       "DirectML element-wise dequantize: scale and zero point of x's shape."),
    "quantize_linear": ("dqg_quantize_linear", [Param("x", T), Param("scale", T),
                                                Param("zero_point", O, None), _QL],
                        "ONNX QuantizeLinear: round half to even, saturate; saturate=False "
                        "only for float8 outputs (opset 19+)."),
}


class _Call:
    """Arguments of one builder call, and the ctypes objects to keep alive."""

    def __init__(self, values):
        self.values = values
        self.keep = []


def _make_builder(method, cname, params, doc):
    argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    sig = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    positional, attrs = [], None
    for p in params:
        if isinstance(p, Attrs):
            attrs = p
            argtypes.append(ctypes.c_void_p)
            for a in p.params:
                sig.append(inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY, default=a.default))
        else:
            positional.append(p)
            argtypes += KINDS[p.kind][0]
            kind = (inspect.Parameter.KEYWORD_ONLY if p.keyword_only
                    else inspect.Parameter.POSITIONAL_OR_KEYWORD)
            sig.append(inspect.Parameter(p.name, kind, default=p.default))
    sig.append(inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None))
    signature = inspect.Signature(sig)
    cfunc = _native.bind(cname, ctypes.c_int32, argtypes)

    def builder(self, *args, **kwargs):
        if cfunc is None:
            raise errors.Unsupported("%s: this libdqgraph has no %s" % (method, cname))
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as e:  # a missing, extra or unknown argument
            raise errors.InvalidArgumentType("%s: %s" % (method, e)) from None
        bound.apply_defaults()
        values = bound.arguments
        call = _Call([values[p.name] for p in positional])
        c_args = []
        for p, v in zip(positional, call.values):
            c_args += KINDS[p.kind][1](self, "%s: %s" % (method, p.name), v, call)
        if attrs is not None:
            # The struct's pointer goes where the table puts it, in C's order.
            s = _native.zeroed(attrs.struct)
            attrs.fill(s, {a.name: values[a.name] for a in attrs.params}, call)
            at = params.index(attrs)
            n_before = sum(len(KINDS[p.kind][0]) for p in params[:at])
            c_args.insert(n_before, ctypes.addressof(s))
            call.keep.append(s)
        return self._built(cfunc(self._handle(), _name_arg(values["name"]), *c_args))

    builder.__name__ = method
    builder.__qualname__ = "Graph." + method
    builder.__signature__ = signature
    builder.__doc__ = "%s\n\nC: %s. Returns the output Tensor." % (doc, cname)
    return builder


def _name_arg(name):
    return _args.text("name", name)


def _out_name(name):
    return name.decode() if name is not None else None


class Owned:
    """A C handle freed by close() (or when the object is collected). Calls
    that release the GIL for long (compile, execute, reference run) hold the
    handle through enter()/leave(), and close() waits for them."""

    _destroy = None  # the C function that frees the handle
    _what = "object"

    def __init__(self, handle):
        self._h = handle
        self._cond = threading.Condition()
        self._active = 0

    def close(self):
        cond = getattr(self, "_cond", None)
        if cond is None:  # __init__ did not get that far
            return
        with cond:
            while self._active:
                cond.wait()
            h, self._h = self._h, None
        if h:
            type(self)._destroy(h)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._h:
            raise errors.InvalidArgument("the %s is closed" % self._what)
        return self._h

    def _enter(self):
        with self._cond:
            h = self._handle()
            self._active += 1
            return h

    def _leave(self):
        with self._cond:
            self._active -= 1
            if not self._active:
                self._cond.notify_all()


class Graph(Owned):
    """An operation graph (dqg_graph). Build it with the methods, mark outputs
    with output(), then finalize(), compile() or reference_run() it.

    Building is not thread-safe (one thread per graph); a finalized graph may
    be compiled and run from any number of threads."""

    _destroy = _lib.dqg_graph_destroy
    _what = "graph"

    def __init__(self, _handle=None):
        if _handle is None:
            h = ctypes.c_void_p()
            _lib.dqg_graph_create(ctypes.byref(h))
            _handle = h.value
        super().__init__(_handle)

    def _call(self, func, *args):
        return func(self._handle(), *args)

    def _built(self, tensor_id):
        """A builder's result: the Tensor, or the graph's (sticky) error."""
        if tensor_id >= 0:
            return Tensor(self, tensor_id)
        self._raise_sticky()

    def _raise_sticky(self):
        # A failed builder call leaves the graph sticky-failed: finalize
        # then returns that error and changes nothing.
        status = _lib.dqg_graph_finalize(self._handle())
        raise errors.from_status(status or errors.INVALID_ARGUMENT, _native.last_error())

    # -- building -----------------------------------------------------------

    def input(self, name, dtype, shape):
        """A graph input of a static shape; dtype a name such as "u8"."""
        cname = _args.text("input: name", name, optional=False)
        dims = _int_list("input %r: shape" % (name,), shape)
        arr = _int64_array(dims)
        return self._built(
            _lib.dqg_input(self._handle(), cname, dtypes.code(dtype), len(dims), arr)
        )

    def constant(self, value, dtype=None, *, name=None, shape=None):
        """A constant, copied into the graph.

        `value` is a NumPy array (or anything np.asarray takes). Without
        `dtype`, its NumPy type decides (float32 -> f32, int8 -> s8, ...).
        With `dtype`:
        - an array of the type's storage (see dqgraph.dtypes), holding the
          elements as dqgraph stores them; for packed 4-bit types a flat
          uint8 array of packed bytes, with `shape` given;
        - float values for a float type other than f32 (f16, bf16, float8,
          f4e2m1), encoded rounding to nearest even;
        - integer values for s4/u4, packed here.
        """
        cname = _name_arg(name)
        if shape is not None:
            shape = tuple(_int_list("constant: shape", shape))
        data, dt, shp = _constant_data(value, dtype, shape)
        dims = _int64_array(list(shp))
        return self._built(
            _lib.dqg_constant(self._handle(), cname, dtypes.code(dt), len(shp), dims,
                              data.ctypes.data, data.nbytes)
        )

    def output(self, tensor, name=None):
        """Marks `tensor` as a graph output, renamed to `name` if given."""
        tid = _tensor_arg(self, "output", tensor, False)
        status = _lib.dqg_output(self._handle(), tid, _name_arg(name))
        if status != 0:
            raise errors.from_status(status, _native.last_error())
        return Tensor(self, tid)

    def dynamic_quantize_linear(self, x, *, name=None):
        """ONNX DynamicQuantizeLinear: returns (y u8, y_scale f32, y_zero_point u8)."""
        s, z = ctypes.c_int32(_native.NONE), ctypes.c_int32(_native.NONE)
        y = self._built(
            _dql(self._handle(), _name_arg(name), _tensor_arg(self, "dynamic_quantize_linear", x,
                                                             False), ctypes.byref(s), ctypes.byref(z))
        )
        return y, Tensor(self, s.value), Tensor(self, z.value)

    def topk(self, x, k, axis=-1, largest=True, *, name=None):
        """ONNX TopK: returns (values, s64 indices) of the k largest (or smallest) elements
        along axis, in order; equal elements keep their order, NaN counts as the largest."""
        i = ctypes.c_int32(_native.NONE)
        v = self._built(
            _topk(self._handle(), _name_arg(name), _tensor_arg(self, "topk", x, False),
                  _args.integer("TopK: k", k), _args.integer("TopK: axis", axis, *_args.INT32),
                  _args.flag("TopK: largest", largest), ctypes.byref(i))
        )
        return v, Tensor(self, i.value)

    def rnn(self, cell, x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None,
            p=None, *, hidden_size=None, direction="forward", batch_first=False,
            linear_before_reset=False, clip=0.0, activations=None, alpha=None, beta=None,
            name=None):
        """ONNX RNN, GRU or LSTM (cell "rnn", "gru", "lstm"): returns (Y, Y_h), and Y_c
        last for LSTM. hidden_size defaults to r's last dimension; activations lists the
        cell's functions per direction in ONNX's order (None: the cell's defaults), alpha
        and beta their parameters in the same order (None: 0)."""
        what = "rnn"
        a = _native.zeroed(_native.RnnAttrs)
        a.cell = _choice(what + ": cell", cell, _RNN_CELLS)
        a.direction = _choice(what + ": direction", direction, _RNN_DIRECTIONS)
        if hidden_size is None:
            shape = r.shape if isinstance(r, Tensor) else ()
            hidden_size = shape[-1] if shape else 0
        a.hidden_size = _args.integer(what + ": hidden_size", hidden_size)
        a.batch_first = _args.flag(what + ": batch_first", batch_first)
        a.linear_before_reset = _args.flag(what + ": linear_before_reset", linear_before_reset)
        a.clip = _args.real(what + ": clip", clip)
        dirs = 2 if a.direction == 2 else 1
        per_dir = (1, 2, 3)[a.cell]
        for key, values, conv in (("activations", activations,
                                   lambda v: _choice(what + ": activation", v, _RNN_ACTIVATIONS)),
                                  ("alpha", alpha, lambda v: _args.real(what + ": alpha", v)),
                                  ("beta", beta, lambda v: _args.real(what + ": beta", v))):
            if values is None:
                continue
            values = list(values)
            if len(values) != dirs * per_dir:
                raise errors.InvalidArgument("%s: %s lists %d values; this cell takes %d per "
                                             "direction, %d in all"
                                             % (what, key, len(values), per_dir, dirs * per_dir))
            field = getattr(a, {"activations": "activation"}.get(key, key))
            for k, v in enumerate(values):
                field[k // per_dir][k % per_dir] = conv(v)
        yh, yc = ctypes.c_int32(_native.NONE), ctypes.c_int32(_native.NONE)
        t = [_tensor_arg(self, what, v, i > 2)
             for i, v in enumerate((x, w, r, b, sequence_lens, initial_h, initial_c, p))]
        y = self._built(_rnn(self._handle(), _name_arg(name), ctypes.byref(a), *t,
                             ctypes.byref(yh), ctypes.byref(yc)))
        outs = (y, Tensor(self, yh.value))
        return outs + (Tensor(self, yc.value),) if a.cell == 2 else outs

    def finalize(self):
        """Verifies and freezes the graph; raises the first error of the build."""
        status = _lib.dqg_graph_finalize(self._handle())
        if status != 0:
            raise errors.from_status(status, _native.last_error())
        return self

    @property
    def finalized(self):
        return _lib.dqg_graph_is_finalized(self._handle())

    # -- introspection --------------------------------------------------------

    def tensor(self, key):
        """The tensor named `key` (or of id `key`)."""
        if isinstance(key, str):
            tid = _lib.dqg_graph_find_tensor(self._handle(), _args.text("tensor", key))
            if tid < 0:
                raise errors.InvalidArgument("no tensor named %r" % key)
            return Tensor(self, tid)
        tid = _args.integer("tensor", key)
        if not 0 <= tid < _lib.dqg_graph_tensor_count(self._handle()):
            raise errors.InvalidArgument("no tensor of id %d" % tid)
        return Tensor(self, tid)

    @property
    def inputs(self):
        h = self._handle()
        return [Tensor(self, _lib.dqg_graph_input_id(h, i)) for i in range(_lib.dqg_graph_input_count(h))]

    @property
    def outputs(self):
        h = self._handle()
        return [Tensor(self, _lib.dqg_graph_output_id(h, i))
                for i in range(_lib.dqg_graph_output_count(h))]

    @property
    def tensors(self):
        return [Tensor(self, i) for i in range(_lib.dqg_graph_tensor_count(self._handle()))]

    @property
    def ops(self):
        h = self._handle()
        ops = []
        for i in range(_lib.dqg_graph_op_count(h)):
            ins = [_lib.dqg_graph_op_input(h, i, k) for k in range(_lib.dqg_graph_op_input_count(h, i))]
            outs = [_lib.dqg_graph_op_output(h, i, k)
                    for k in range(_lib.dqg_graph_op_output_count(h, i))]
            ops.append(Op(_lib.dqg_op_kind_name(_lib.dqg_graph_op_kind(h, i)).decode(),
                          _out_name(_lib.dqg_graph_op_name(h, i)),
                          [None if t < 0 else Tensor(self, t) for t in ins],
                          [Tensor(self, t) for t in outs]))
        return ops

    @property
    def warnings(self):
        h = self._handle()
        return [_lib.dqg_graph_warning(h, i).decode() for i in range(_lib.dqg_graph_warning_count(h))]

    def dump(self, format="text"):
        """The graph as text (format "text") or Graphviz DOT ("dot")."""
        fmt = {"text": 0, "dot": 1}.get(format) if isinstance(format, str) else None
        if fmt is None:
            raise errors.InvalidArgument("dump: format %r is not 'text' or 'dot'" % (format,))
        h = self._handle()
        return _native.capture(lambda f: _lib.dqg_graph_dump(h, fmt, f))

    def dot(self):
        return self.dump("dot")

    def __repr__(self):
        if not self._h:
            return "<dqgraph.Graph (closed)>"
        return "<dqgraph.Graph: %d inputs, %d ops, %d outputs%s>" % (
            len(self.inputs), len(self.ops), len(self.outputs),
            ", finalized" if self.finalized else "")

    # -- running ------------------------------------------------------------

    def reference_run(self, inputs=None, **named):
        """Runs the graph on the reference interpreter (finalizing it first
        if needed); returns {output name: array}."""
        if not self.finalized:
            self.finalize()
        spec = io_spec(self)
        ins = bind_inputs(spec, inputs, named)
        outs = {t.name: dtypes.empty(t.dtype, t.shape) for t in spec.outputs}
        in_bufs = make_buffers(spec.inputs, ins)
        out_bufs = make_buffers(spec.outputs, outs)
        h = self._enter()
        try:
            _lib.dqg_reference_run(h, in_bufs, len(spec.inputs), out_bufs, len(spec.outputs))
        finally:
            self._leave()
        return outs


_dql = _native.bind(
    "dqg_dynamic_quantize_linear", ctypes.c_int32,
    [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p],
)
_rnn = _native.bind(
    "dqg_rnn", ctypes.c_int32,
    [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p] + [ctypes.c_int32] * 8
    + [ctypes.c_void_p, ctypes.c_void_p],
)
_topk = _native.bind(
    "dqg_topk", ctypes.c_int32,
    [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_int, ctypes.c_bool,
     ctypes.c_void_p],
)

for _method, (_cname, _params, _doc) in _BUILDERS.items():
    setattr(Graph, _method, _make_builder(_method, _cname, _params, _doc))


def _constant_data(value, dtype, shape):
    """(contiguous storage array, dtype name, shape) of a constant."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged lists, objects NumPy cannot hold
        raise errors.InvalidArgumentType("constant: not an array of numbers: %s" % e) from None

    def shaped():
        shp = tuple(arr.shape) if shape is None else tuple(shape)
        if int(np.prod(shp, dtype=np.int64)) != arr.size:
            raise errors.InvalidArgument("constant: %d values for shape %s" % (arr.size, shp))
        return shp

    if dtype is None:
        dt = dtypes.from_numpy(arr.dtype)
        if dt is None:
            raise errors.InvalidArgument(
                "constant: NumPy type %s has no dqgraph type; give dtype= (e.g. 'f32')" % arr.dtype
            )
        return _args.c_array(arr), dt, shaped()
    dt = dtypes.name(dtype)
    store = dtypes.storage(dt)
    if dt in dtypes.PACKED:
        if arr.dtype == np.uint8 and shape is not None:
            n = int(np.prod(shape, dtype=np.int64))
            if arr.size == (n + 1) // 2:
                return _args.c_array(arr.reshape(-1)), dt, tuple(shape)
        if dt in ("s4", "u4") and arr.dtype.kind in "iu":
            shp = shaped()
            return dtypes.pack_int4(arr, dt == "s4"), dt, shp
        if arr.dtype.kind == "f":
            shp = shaped()
            return dtypes.encode(arr.reshape(shp), dt), dt, shp
        raise errors.InvalidArgument(
            "constant: %s takes integer values, float values, or packed uint8 bytes with shape="
            % dt
        )
    if arr.dtype == store:
        shp = shaped()
        return _args.c_array(arr.reshape(shp)), dt, shp
    if arr.dtype.kind == "f" and dtypes.is_float(dt):
        shp = shaped()
        return dtypes.encode(arr.reshape(shp), dt), dt, shp
    if arr.dtype.kind in "iub" and dtypes.is_integer(dt):
        shp = shaped()
        info = np.iinfo(store)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise errors.InvalidArgument("constant: values outside the range of %s" % dt)
        return _args.c_array(arr.reshape(shp).astype(store)), dt, shp
    raise errors.InvalidArgument(
        "constant: cannot make %s from a %s array (give values of type %s)" % (dt, arr.dtype, store)
    )


# ---------------------------------------------------------------------------
# Binding arrays to a graph's inputs and outputs (shared with Compiled)
# ---------------------------------------------------------------------------


class TensorSpec:
    __slots__ = ("name", "dtype", "shape", "nbytes", "np_dtype", "np_shape")

    def __init__(self, t):
        self.name, self.dtype, self.shape, self.nbytes = t.name, t.dtype, t.shape, t.nbytes
        self.np_dtype = dtypes.storage(self.dtype)
        self.np_shape = dtypes.storage_shape(self.dtype, self.shape)

    def __repr__(self):
        return "%s: %s%s" % (self.name, self.dtype, list(self.shape))


class IOSpec:
    def __init__(self, inputs, outputs):
        self.inputs, self.outputs = inputs, outputs
        self.input_names = {s.name for s in inputs}
        self.output_names = {s.name for s in outputs}


def io_spec(graph):
    return IOSpec([TensorSpec(t) for t in graph.inputs], [TensorSpec(t) for t in graph.outputs])


def check_array(spec, what, array, writable=False):
    """Raises InvalidArgument unless `array` can be bound to `spec` as is."""
    if not isinstance(array, np.ndarray):
        raise errors.InvalidArgument(
            "%s '%s': expected a numpy.ndarray of %s, got %s"
            % (what, spec.name, spec.np_dtype, type(array).__name__)
        )
    if array.dtype != spec.np_dtype:
        raise errors.InvalidArgument(
            "%s '%s': the %s tensor is held in a %s array, not %s"
            % (what, spec.name, spec.dtype, spec.np_dtype, array.dtype)
        )
    if tuple(array.shape) != spec.np_shape:
        extra = " (packed two per byte)" if spec.dtype in dtypes.PACKED else ""
        raise errors.InvalidArgument(
            "%s '%s': shape %s, expected %s%s"
            % (what, spec.name, tuple(array.shape), spec.np_shape, extra)
        )
    if not array.flags.c_contiguous:
        raise errors.InvalidArgument(
            "%s '%s': the array is not C-contiguous (use numpy.ascontiguousarray)" % (what, spec.name)
        )
    if writable and not array.flags.writeable:
        raise errors.InvalidArgument("%s '%s': the array is read-only" % (what, spec.name))


def bind_inputs(spec, inputs, named):
    arrays = _args.mapping("inputs", inputs)
    for k, v in named.items():
        if k in arrays:
            raise errors.InvalidArgument("input '%s' is given twice" % k)
        arrays[k] = v
    for k in arrays:
        if not isinstance(k, str) or k not in spec.input_names:
            raise errors.InvalidArgument(
                "no graph input named %r; the inputs are %s" % (k, sorted(spec.input_names))
            )
    for s in spec.inputs:
        if s.name not in arrays:
            raise errors.InvalidArgument("input '%s' has no array" % s.name)
        check_array(s, "input", arrays[s.name])
    return arrays


def make_buffers(specs, arrays):
    """A dqg_buffer array binding every tensor of `specs` by name."""
    bufs = (_native.Buffer * max(len(specs), 1))()
    for i, s in enumerate(specs):
        a = arrays[s.name]
        bufs[i].id = _native.NONE
        bufs[i].name = s.name.encode()
        bufs[i].data = a.ctypes.data
        bufs[i].size = a.nbytes
    return bufs
