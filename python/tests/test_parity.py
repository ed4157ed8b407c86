"""The binding gives the C API's results bit for bit: the same models run
through the dqgraph tool (C: dqg_onnx_load_file + dqg_compile + dqg_execute,
in another process) and through Python, fused and unfused: every ONNX
backend node test of the conformance suite, the int8 MLP of
samples/onnx_model, and graphs built with the builder methods that fuse
(int8 MatMul and Convolution), run the weight-only int4 kernels, or hold
float8, s16/u16 and bf16 tensors."""

import os
import subprocess

import numpy as np
import pytest

import dqgraph
from conftest import case_data_sets, conformance_cases


def compare(tool, graph, inputs, input_files, model, tmp_path, expect_fused=False):
    """Runs `model` through the tool on `input_files` and `graph` through the
    binding on `inputs`; asserts equal bytes for every output."""
    fused_partitions = 0
    for fuse in (True, False):
        out_dir = tmp_path / ("fused" if fuse else "unfused")
        out_dir.mkdir(exist_ok=True)
        cmd = [tool, "run", model, "-o", str(out_dir)] + sum((["-i", p] for p in input_files), [])
        if not fuse:
            cmd.append("--no-fuse")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        c = dqgraph.compile(graph, fuse=fuse)
        if fuse:
            fused_partitions = c.fused_count
        got = c.run(inputs)
        for i, spec in enumerate(graph.outputs):
            c_out = dqgraph.read_tensor(str(out_dir / ("output_%d.pb" % i)))
            assert c_out.name == spec.name
            assert (c_out.dtype, c_out.shape) == (spec.dtype, spec.shape)
            assert got[spec.name].tobytes() == c_out.array.tobytes(), (model, spec.name, fuse)
    if expect_fused:
        assert fused_partitions > 0, "%s: nothing fused, so fused == unfused proves little" % model


@pytest.mark.parametrize("case", conformance_cases())
def test_same_bytes_as_the_c_api_on_node_tests(tool, testdata, case, tmp_path):
    data = case_data_sets(testdata, case)[0]
    # (Their quantization parameters are graph inputs, so nothing fuses: the
    # fused path is compared on the models further down.)
    compare(tool, data.graph, data.inputs, data.input_files, data.model, tmp_path)


def test_node_tests_cover_the_types(testdata):
    """The cases above hold the 8- and 32-bit integer and the 16- and 32-bit
    float types (libonnx-testdata predates float8, 4-bit and 16-bit integer
    quantization: the models further down have those)."""
    if len(conformance_cases()) < 200:
        pytest.skip("the short case list (not run by ctest)")
    seen = set()
    for case in conformance_cases():
        seen.update(t.dtype for t in case_data_sets(testdata, case)[0].graph.tensors)
    want = {"f32", "f16", "bf16", "u8", "s8", "s32"}
    assert want <= seen, sorted(want - seen)


def test_same_bytes_as_the_c_api_on_the_sample_model(tool, tmp_path):
    """samples/onnx_model's int8 MLP: two fused int8 layers."""
    sample = os.path.join(os.path.dirname(tool), "onnx_model")
    if not os.access(sample, os.X_OK):
        pytest.skip("samples are not built")
    subprocess.run([sample, str(tmp_path)], check=True, capture_output=True, timeout=120)
    model, x = str(tmp_path / "qdq_mlp.onnx"), str(tmp_path / "input_0.pb")
    g = dqgraph.load_onnx(model)
    t = dqgraph.read_tensor(x)
    compare(tool, g, {g.inputs[0].name: t.array}, [x], model, tmp_path, expect_fused=True)


def test_built_in_python_equals_reference_run_of_the_c_interpreter():
    """A graph built through the binding: compiled on the reference backend,
    it gives the reference interpreter's bytes."""
    rng = np.random.default_rng(5)
    g = dqgraph.Graph()
    x = g.input("x", "u8", (8, 32))
    w = g.dequantize_linear(g.constant(rng.integers(-127, 128, (32, 16)).astype(np.int8)),
                            g.constant(rng.uniform(0.01, 0.02, 16).astype(np.float32)), axis=1)
    y = g.matmul(g.dequantize_linear(x, g.constant(np.float32(0.1)), g.constant(np.uint8(128))), w)
    g.output(g.relu(y), "y")
    xs = rng.integers(0, 256, (8, 32)).astype(np.uint8)
    ref = g.reference_run(x=xs)["y"]
    got = dqgraph.compile(g, backend="reference").run(x=xs)["y"]
    assert got.tobytes() == ref.tobytes()


# ---- Graphs built in Python, the same graphs as ONNX models run by the tool --
#
# Each model below is written twice: with the builder methods, and as an
# ONNX model (tests/onnx_writer.py) that the tool imports and runs in C. The
# binding's builder graph, the binding's import of the model and the C tool
# must give the same bytes, fused and unfused.

from onnx_writer import Model  # noqa: E402


def _int8_mlp(rng):
    """u8 activations, per-channel s8 weights, bias, ReLU, requantized: fuses
    into one int8 MatMul."""
    m, k, n = 8, 64, 32
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    ws = rng.uniform(0.001, 0.004, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    x = rng.integers(0, 256, (m, k)).astype(np.uint8)
    onnx = Model(21)
    onnx.input("x", "u8", (m, k))
    onnx.init("xs", "f32", (), np.float32(0.03))
    onnx.init("xz", "u8", (), np.uint8(120))
    onnx.init("w", "s8", (k, n), w)
    onnx.init("ws", "f32", (n,), ws)
    onnx.init("b", "f32", (n,), b)
    onnx.init("ys", "f32", (), np.float32(0.05))
    onnx.init("yz", "u8", (), np.uint8(3))
    onnx.node("DequantizeLinear", ["x", "xs", "xz"], "x_dq")
    onnx.node("DequantizeLinear", ["w", "ws"], "w_dq", axis=1)
    onnx.node("MatMul", ["x_dq", "w_dq"], "fc")
    onnx.node("Add", ["fc", "b"], "fc_b")
    onnx.node("Relu", ["fc_b"], "act")
    onnx.node("QuantizeLinear", ["act", "ys", "yz"], "y")
    onnx.output("y", "u8", (m, n))

    def build(g):
        xt = g.input("x", "u8", (m, k))
        xf = g.dequantize_linear(xt, g.constant(np.float32(0.03)), g.constant(np.uint8(120)),
                                 opset=21)
        wf = g.dequantize_linear(g.constant(w), g.constant(ws), axis=1, opset=21)
        y = g.relu(g.add(g.matmul(xf, wf), g.constant(b)))
        g.output(g.quantize_linear(y, g.constant(np.float32(0.05)), g.constant(np.uint8(3)),
                                   opset=21), "y")
    return onnx, build, {"x": x}, True


def _int4_weight_only(rng):
    """f32 activations, s4 weights blocked along K (blocks of 32), with u4
    zero points in the other layer: the weight-only kernels."""
    m, k, n, blk = 2, 64, 16, 32
    w = rng.integers(-8, 8, (k, n)).astype(np.int8)
    ws = rng.uniform(0.01, 0.02, (k // blk, n)).astype(np.float32)
    u = rng.integers(0, 16, (n, 8)).astype(np.uint8)
    us = rng.uniform(0.01, 0.02, (n, 1)).astype(np.float32)
    uz = rng.integers(0, 16, (n, 1)).astype(np.uint8)
    x = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    packed_w, packed_u, packed_uz = (dqgraph.pack_int4(w), dqgraph.pack_int4(u, signed=False),
                                     dqgraph.pack_int4(uz, signed=False))
    onnx = Model(21)
    onnx.input("x", "f32", (m, k))
    onnx.init("w", "s4", (k, n), packed_w)
    onnx.init("ws", "f32", (k // blk, n), ws)
    onnx.init("u", "u4", (n, 8), packed_u)
    onnx.init("us", "f32", (n, 1), us)
    onnx.init("uz", "u4", (n, 1), packed_uz)
    onnx.node("DequantizeLinear", ["w", "ws"], "w_dq", axis=0, block_size=blk)
    onnx.node("DequantizeLinear", ["u", "us", "uz"], "u_dq", axis=1, block_size=8)
    onnx.node("MatMul", ["x", "w_dq"], "h")
    onnx.node("MatMul", ["h", "u_dq"], "y")
    onnx.output("y", "f32", (m, 8))

    def build(g):
        xt = g.input("x", "f32", (m, k))
        wf = g.dequantize_linear(g.constant(w, "s4"), g.constant(ws), axis=0, block_size=blk,
                                 opset=21)
        uf = g.dequantize_linear(g.constant(u, "u4"), g.constant(us), g.constant(uz, "u4"),
                                 axis=1, block_size=8, opset=21)
        g.output(g.matmul(g.matmul(xt, wf), uf), "y")
    return onnx, build, {"x": x}, False


def _float8_and_16_bit(rng):
    """Run-time float8 and s16 inputs, a u16 constant, a bf16 scale and f16
    output: DequantizeLinear of opset 21 over the types the older node tests
    lack, and a QuantizeLinear to float8 without saturation."""
    x8 = dqgraph.encode(rng.uniform(-400, 400, 12).astype(np.float32), "f8e4m3fn")
    x5 = dqgraph.encode(rng.uniform(-1000, 1000, 12).astype(np.float32), "f8e5m2")
    xs = rng.integers(-32768, 32768, (3, 4)).astype(np.int16)
    cu = rng.integers(0, 65536, (3, 4)).astype(np.uint16)
    s3 = rng.uniform(0.001, 0.01, 3).astype(np.float32)
    q = rng.uniform(-600, 600, 12).astype(np.float32)
    onnx = Model(21)
    onnx.input("x8", "f8e4m3fn", (12,))
    onnx.input("x5", "f8e5m2", (12,))
    onnx.input("xs", "s16", (3, 4))
    onnx.input("q", "f32", (12,))
    onnx.init("one", "f32", (), np.float32(1.5))
    onnx.init("s_bf16", "bf16", (), dqgraph.to_bf16(np.float32(0.25)))
    onnx.init("s3", "f32", (3,), s3)
    onnx.init("zs", "s16", (3,), np.array([-5, 0, 7], np.int16))
    onnx.init("cu", "u16", (3, 4), cu)
    onnx.init("z8", "f8e4m3fn", (), np.uint8(0))
    onnx.node("DequantizeLinear", ["x8", "one"], "y8")
    onnx.node("DequantizeLinear", ["x5", "s_bf16"], "y5")
    onnx.node("DequantizeLinear", ["xs", "s3", "zs"], "ys", axis=0)
    onnx.node("DequantizeLinear", ["cu", "s3"], "yu", axis=0)
    onnx.node("QuantizeLinear", ["q", "one", "z8"], "q8", saturate=0)
    for name, dt, shape in (("y8", "f32", (12,)), ("y5", "bf16", (12,)), ("ys", "f32", (3, 4)),
                            ("yu", "f32", (3, 4)), ("q8", "f8e4m3fn", (12,))):
        onnx.output(name, dt, shape)

    def build(g):
        one, s3t = g.constant(np.float32(1.5)), g.constant(s3)
        g.output(g.dequantize_linear(g.input("x8", "f8e4m3fn", (12,)), one, opset=21), "y8")
        g.output(g.dequantize_linear(g.input("x5", "f8e5m2", (12,)),
                                     g.constant(dqgraph.to_bf16(np.float32(0.25)), "bf16"),
                                     opset=21), "y5")
        g.output(g.dequantize_linear(g.input("xs", "s16", (3, 4)), s3t,
                                     g.constant(np.array([-5, 0, 7], np.int16)), axis=0,
                                     opset=21), "ys")
        g.output(g.dequantize_linear(g.constant(cu), s3t, axis=0, opset=21), "yu")
        g.output(g.quantize_linear(g.input("q", "f32", (12,)), one,
                                   g.constant(np.uint8(0), "f8e4m3fn"), opset=21, saturate=False),
                 "q8")
    return onnx, build, {"x8": x8, "x5": x5, "xs": xs, "q": q}, False


def _int8_conv(rng):
    """An int8 convolution block: u8 NCHW input, per-output-channel s8
    weights, bias, ReLU."""
    x = rng.integers(0, 256, (1, 4, 7, 6)).astype(np.uint8)
    w = rng.integers(-127, 128, (8, 4, 3, 3)).astype(np.int8)
    ws = rng.uniform(0.002, 0.006, 8).astype(np.float32)
    b = rng.uniform(-1, 1, 8).astype(np.float32)
    onnx = Model(13)
    onnx.input("x", "u8", (1, 4, 7, 6))
    onnx.init("xs", "f32", (), np.float32(0.02))
    onnx.init("xz", "u8", (), np.uint8(128))
    onnx.init("w", "s8", (8, 4, 3, 3), w)
    onnx.init("ws", "f32", (8,), ws)
    onnx.init("b", "f32", (8,), b)
    onnx.node("DequantizeLinear", ["x", "xs", "xz"], "x_dq")
    onnx.node("DequantizeLinear", ["w", "ws"], "w_dq", axis=0)
    onnx.node("Conv", ["x_dq", "w_dq", "b"], "conv", pads=[1, 1, 1, 1], strides=[2, 1])
    onnx.node("Relu", ["conv"], "y")
    onnx.output("y", "f32", (1, 8, 4, 6))

    def build(g):
        xf = g.dequantize_linear(g.input("x", "u8", (1, 4, 7, 6)), g.constant(np.float32(0.02)),
                                 g.constant(np.uint8(128)), opset=13)
        wf = g.dequantize_linear(g.constant(w), g.constant(ws), axis=0, opset=13)
        g.output(g.relu(g.convolution(xf, wf, g.constant(b), strides=(2, 1), pads_begin=1,
                                      pads_end=1)), "y")
    return onnx, build, {"x": x}, True


@pytest.mark.parametrize("make", [_int8_mlp, _int4_weight_only, _float8_and_16_bit, _int8_conv],
                         ids=lambda f: f.__name__.strip("_"))
def test_graph_built_in_python_gives_the_c_api_bytes(tool, tmp_path, make):
    onnx, build, inputs, fuses = make(np.random.default_rng(17))
    model = tmp_path / "model.onnx"
    model.write_bytes(onnx.bytes())
    files = []
    for i, (name, array) in enumerate(inputs.items()):
        path = str(tmp_path / ("input_%d.pb" % i))
        g_in = dqgraph.load_onnx(str(model))
        dqgraph.write_tensor(path, array, name, dtype=g_in.tensor(name).dtype)
        files.append(path)
    built = dqgraph.Graph()
    build(built)
    built.finalize()
    imported = dqgraph.load_onnx(str(model))
    assert [(t.name, t.dtype, t.shape) for t in built.outputs] == \
        [(t.name, t.dtype, t.shape) for t in imported.outputs]
    compare(tool, built, inputs, files, str(model), tmp_path, expect_fused=fuses)
    compare(tool, imported, inputs, files, str(model), tmp_path, expect_fused=fuses)
