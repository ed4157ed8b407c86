"""The binding speaks the C API's ABI: every function of the two headers is
declared with as many arguments as C has, every struct the binding mirrors
has C's field names, order, offsets and size, and every enum value the
binding spells out is C's. A C compiler (DQGRAPH_CC, else cc) reports
offsets, sizes and enum values from the headers themselves; a mismatch here
is a silent wrong argument or a read past a struct at run time."""

import ctypes
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import dqgraph
from conftest import ROOT
from dqgraph import _native, compiled, dtypes, errors, graph

HEADERS = [os.path.join(ROOT, "include", h) for h in ("dqgraph.h", "dqgraph_onnx.h")]


def _header_text():
    text = ""
    for h in HEADERS:
        with open(h) as f:
            text += f.read()
    # Comments out, so that a commented example is never taken for code.
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def c_functions():
    """{name: number of parameters} of every DQG_API function."""
    out = {}
    for m in re.finditer(r"DQG_API\s+[\w\s\*]*?\b(dqg_\w+)\s*\(([^)]*)\)\s*;", _header_text()):
        params = " ".join(m.group(2).split())
        out[m.group(1)] = 0 if params in ("", "void") else len(params.split(","))
    return out


def c_structs():
    """{struct name: [field names in order]} of the headers' typedef structs."""
    out = {}
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", _header_text(), re.S):
        fields = []
        for decl in m.group(2).split(";"):
            decl = decl.strip()
            if decl:
                fields.append(re.search(r"(\w+)\s*(\[[^\]]*\])*$", decl).group(1))
        out[m.group(3)] = fields
    return out


# The binding's ctypes structs and the C structs they mirror.
STRUCTS = {
    "dqg_buffer": _native.Buffer,
    "dqg_matmul_attrs": _native.MatmulAttrs,
    "dqg_conv_attrs": _native.ConvAttrs,
    "dqg_pool_attrs": _native.PoolAttrs,
    "dqg_conv_transpose_attrs": _native.ConvTransposeAttrs,
    "dqg_resize_attrs": _native.ResizeAttrs,
    "dqg_rnn_attrs": _native.RnnAttrs,
    "dqg_dequantize_linear_attrs": _native.DequantizeLinearAttrs,
    "dqg_quantize_linear_attrs": _native.QuantizeLinearAttrs,
    "dqg_compile_options": _native.CompileOptions,
    "dqg_cache_stats": _native.CacheStats,
    "dqg_onnx_dim_param": _native.OnnxDimParam,
    "dqg_onnx_input_hint": _native.OnnxInputHint,
    "dqg_onnx_options": _native.OnnxOptions,
}
C_FIELD = {"global_": "global"}  # a Python keyword in C


def _enum_constants():
    """(C expression, the value the binding uses) for every enum value and
    macro the binding spells out."""
    pairs = [("DQG_NONE", _native.NONE), ("DQG_MAX_RANK", _native.MAX_RANK),
             ("DQG_MAX_THREADS", compiled.MAX_THREADS)]
    pairs += [("DQG_" + n.upper(), code) for n, code in
              ((n, dtypes.code(n)) for n in dtypes.NAMES[1:])]
    pairs += [("DQG_UNARY_" + {"gelu": "GELU_ERF"}.get(n, n.upper()), i)
              for i, n in enumerate(graph._UNARY_OPS)]
    pairs += [("DQG_UNARY_COUNT", len(graph._UNARY_OPS))]
    pairs += [("DQG_RESIZE_" + n.upper(), i) for i, n in enumerate(graph._RESIZE_MODES)]
    pairs += [("DQG_RESIZE_" + n.upper(), i) for i, n in enumerate(graph._RESIZE_COORDS)]
    pairs += [("DQG_RESIZE_" + n.upper(), i) for i, n in enumerate(graph._RESIZE_NEAREST)]
    pairs += [("DQG_SCATTER_" + n.upper(), i) for i, n in enumerate(graph._SCATTER_REDUCTIONS)]
    pairs += [("DQG_SCATTER_REDUCTION_COUNT", len(graph._SCATTER_REDUCTIONS))]
    pairs += [("DQG_RNN_CELL_" + n.upper(), i) for i, n in enumerate(graph._RNN_CELLS)]
    pairs += [("DQG_RNN_" + n.upper(), i) for i, n in enumerate(graph._RNN_DIRECTIONS)]
    pairs += [("DQG_RNN_ACT_" + n.upper(), i) for i, n in enumerate(graph._RNN_ACTIVATIONS)]
    pairs += [("DQG_RNN_ACT_COUNT", len(graph._RNN_ACTIVATIONS))]
    pairs += [("DQG_PAD_" + n.upper(), i) for i, n in enumerate(graph._PAD_MODES)]
    pairs += [("DQG_PAD_MODE_COUNT", len(graph._PAD_MODES))]
    pairs += [("DQG_REDUCE_" + n.upper(), i) for i, n in enumerate(graph._REDUCE_OPS)]
    pairs += [("DQG_REDUCE_COUNT", len(graph._REDUCE_OPS))]
    pairs += [("DQG_POOL_" + n.upper(), v) for n, v in graph._POOL_ALGORITHMS.items()]
    pairs += [("DQG_FORMAT_NCX", graph._FORMATS["ncx"]), ("DQG_FORMAT_NXC", graph._FORMATS["nxc"])]
    pairs += [("DQG_BACKEND_" + n.upper(), v) for n, v in compiled._BACKENDS.items()]
    pairs += [("DQG_FPMATH_" + n.upper(), v) for n, v in compiled._FPMATH.items()]
    pairs += [("DQG_" + c.__name__.upper().replace("INVALIDARGUMENT", "INVALID_ARGUMENT")
               .replace("OUTOFMEMORY", "OUT_OF_MEMORY").replace("BACKENDERROR", "BACKEND_ERROR")
               .replace("IOERROR", "IO_ERROR").replace("PARSEERROR", "PARSE_ERROR"), c.status)
              for c in (errors.InvalidArgument, errors.Unsupported, errors.OutOfMemory,
                        errors.BackendError, errors.IOError, errors.ParseError)]
    return pairs


@pytest.fixture(scope="module")
def c_report(tmp_path_factory):
    """Compiles and runs a program printing, from the headers, every
    mirrored struct's size and fields' offsets and sizes, and the value of
    every constant of _enum_constants()."""
    cc = os.environ.get("DQGRAPH_CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc or not os.access(cc, os.X_OK):
        pytest.skip("no C compiler (set DQGRAPH_CC)")
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <dqgraph.h>",
             "#include <dqgraph_onnx.h>", "int main(void) {"]
    for cname, cls in STRUCTS.items():
        lines.append('printf("size %s %%zu\\n", sizeof(%s));' % (cname, cname))
        for f, _ in cls._fields_:
            cf = C_FIELD.get(f, f)
            lines.append('printf("field %s %s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                         % (cname, f, cname, cf, cname, cf))
    for expr, _ in _enum_constants():
        lines.append('printf("const %s %%lld\\n", (long long)(%s));' % (expr, expr))
    lines.append("return 0; }")
    d = tmp_path_factory.mktemp("abi")
    src, exe = d / "abi.c", d / "abi"
    src.write_text("\n".join(lines) + "\n")
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"),
                        str(src), "-o", str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60).stdout
    report = {}
    for line in out.splitlines():
        kind, *rest = line.split()
        report[(kind,) + tuple(rest[:-2] if kind == "field" else rest[:-1])] = \
            tuple(int(v) for v in (rest[-2:] if kind == "field" else rest[-1:]))
    return report


@pytest.mark.parametrize("cname", sorted(STRUCTS))
def test_struct_layout_matches_c(c_report, cname):
    cls = STRUCTS[cname]
    assert [C_FIELD.get(f, f) for f, _ in cls._fields_] == c_structs()[cname]
    assert c_report[("size", cname)] == (ctypes.sizeof(cls),)
    for f, _ in cls._fields_:
        desc = getattr(cls, f)
        assert c_report[("field", cname, f)] == (desc.offset, desc.size), (cname, f)


def test_enum_values_and_limits_match_c(c_report):
    for expr, value in _enum_constants():
        assert c_report[("const", expr)] == (value,), expr


def test_every_c_function_is_declared_with_c_arity():
    """Every DQG_API function is declared to ctypes (_native._FUNCTIONS, or
    a builder of graph._BUILDERS), with C's number of arguments."""
    funcs = c_functions()
    assert len(funcs) > 80
    for name, n in sorted(funcs.items()):
        f = getattr(_native.lib, name)
        assert f.argtypes is not None, "%s is not declared to ctypes" % name
        assert len(f.argtypes) == n, (name, len(f.argtypes), n)


def test_every_c_builder_has_a_method_with_c_defaults():
    """Each C builder (a dqg_tensor_id function taking the graph first) is a
    Graph method; builders with an attribute struct, called with the
    method's defaults, build what C builds from a zero-initialized struct
    (plus the required opset or spatial rank): the dumps are equal."""
    builders = re.findall(r"dqg_tensor_id\s+dqg_(\w+)\s*\(\s*dqg_graph\s*\*", _header_text())
    assert len(builders) >= 30
    methods = set(graph._BUILDERS) | {"input", "constant", "dynamic_quantize_linear", "topk",
                                      "rnn"}
    assert sorted(set(builders) - methods) == []
    assert sorted(methods - set(builders)) == []

    lib = _native.lib

    def pair():
        g = dqgraph.Graph()
        x = g.input("x", "f32", (1, 2, 5, 5))
        w = g.constant(np.ones((3, 2, 3, 3), np.float32), name="w")
        q = g.input("q", "u8", (4, 3))
        s = g.constant(np.float32(1), name="s")
        v = g.input("v", "f32", (4, 3))
        return g, x, w, q, s, v

    py, x, w, q, s, v = pair()
    py.convolution(x, w, name="conv")
    py.pool(x, kernel=(2, 2), name="pool")
    py.matmul(v, py.transpose(v, name="vt"), name="mm")
    py.dequantize_linear(q, s, name="dq")
    py.quantize_linear(v, s, name="ql")
    py.dynamic_dequantize(q, py.constant(np.float32([1]), name="s1"), name="ddq")
    py.extended_dequantize_linear(q, s, name="edq")
    py.dml_dequantize(q, py.constant(np.ones((4, 3), np.float32), name="s43"), name="dml")
    py.softmax(v, name="softmax")
    py.unary("elu", v, name="elu")

    cg, x, w, q, s, v = pair()
    h = cg._handle()

    def z(cls, **fields):
        st = _native.zeroed(cls)
        for k, val in fields.items():
            setattr(st, k, val)
        return ctypes.addressof(st), st

    conv, _k1 = z(_native.ConvAttrs, spatial_rank=2)
    assert lib.dqg_convolution(h, b"conv", x.id, w.id, -1, conv) >= 0
    pool, _k2 = z(_native.PoolAttrs, spatial_rank=2)
    _k2.kernel[0] = _k2.kernel[1] = 2
    assert lib.dqg_pool(h, b"pool", x.id, pool) >= 0
    vt = lib.dqg_transpose(h, b"vt", v.id, None)
    assert lib.dqg_matmul(h, b"mm", v.id, vt, None) >= 0
    dql, _k3 = z(_native.DequantizeLinearAttrs, opset=23)
    assert lib.dqg_dequantize_linear(h, b"dq", q.id, s.id, -1, dql) >= 0
    ql, _k4 = z(_native.QuantizeLinearAttrs, opset=21)
    assert lib.dqg_quantize_linear(h, b"ql", v.id, s.id, -1, ql) >= 0
    s1 = cg.constant(np.float32([1]), name="s1")
    assert lib.dqg_dynamic_dequantize(h, b"ddq", q.id, s1.id, -1, None, 0) >= 0
    assert lib.dqg_extended_dequantize_linear(h, b"edq", q.id, s.id, -1, 1) >= 0
    s43 = cg.constant(np.ones((4, 3), np.float32), name="s43")
    assert lib.dqg_dml_dequantize(h, b"dml", q.id, s43.id, -1) >= 0
    assert lib.dqg_softmax(h, b"softmax", v.id, -1, False) >= 0
    assert lib.dqg_unary(h, b"elu", 14, v.id, 0.0, 0.0) >= 0  # DQG_UNARY_ELU
    assert py.dump() == cg.dump()


def test_unary_function_names_follow_c():
    """graph._UNARY_OPS[i] is C's function i (dqg_unary_op_name)."""
    for i, n in enumerate(graph._UNARY_OPS):
        c_name = _native.lib.dqg_unary_op_name(i).decode()
        assert c_name.lower() == {"pow": "powscalar"}.get(n, n.replace("_", "")), (i, n, c_name)
    assert _native.lib.dqg_unary_op_name(len(graph._UNARY_OPS)) == b"Unknown"


def test_rnn_names_follow_c():
    """graph._RNN_CELLS and _RNN_ACTIVATIONS follow C's names (dqg_rnn_*_name)."""
    for i, n in enumerate(graph._RNN_CELLS):
        assert _native.lib.dqg_rnn_cell_name(i).decode().lower() == n
    for i, n in enumerate(graph._RNN_ACTIVATIONS):
        assert _native.lib.dqg_rnn_activation_name(i).decode().lower() == n.replace("_", "")
    assert _native.lib.dqg_rnn_cell_name(3) == b"Unknown"


def test_pad_mode_names_follow_c():
    """graph._PAD_MODES[i] is C's mode i (dqg_pad_mode_name)."""
    for i, n in enumerate(graph._PAD_MODES):
        assert _native.lib.dqg_pad_mode_name(i).decode() == n
    assert _native.lib.dqg_pad_mode_name(len(graph._PAD_MODES)) == b"unknown"
