"""Every builder method of dqgraph.Graph, run compiled (fused and unfused)
and on the reference interpreter, against values worked out with NumPy."""

import numpy as np
import pytest

import dqgraph


def run_all(g, inputs, exact=True):
    """Runs g three ways; asserts they agree; returns the reference result."""
    ref = g.reference_run(inputs)
    for fuse in (True, False):
        got = dqgraph.compile(g, fuse=fuse).run(inputs)
        for k in ref:
            if exact:
                np.testing.assert_array_equal(got[k], ref[k], err_msg="%s fuse=%s" % (k, fuse))
            else:
                bound = 1e-5 * max(np.abs(ref[k]).max(), 1e-30)
                assert np.abs(got[k].astype(np.float64) - ref[k]).max() <= bound, (k, fuse)
    return ref


def f32(*a):
    return np.array(a, dtype=np.float32)


def test_input_constant_output_and_introspection():
    g = dqgraph.Graph()
    x = g.input("x", "f32", (2, 3))
    c = g.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="c")
    y = g.output(g.add(x, c, name="sum"), "y")
    assert (x.name, x.dtype, x.shape, x.rank, x.size, x.nbytes) == ("x", "f32", (2, 3), 2, 6, 24)
    assert c.is_constant and not x.is_constant
    assert y.name == "y" and y.shape == (2, 3)
    assert [t.name for t in g.inputs] == ["x"] and [t.name for t in g.outputs] == ["y"]
    assert g.tensor("c") == c and g.tensor(c.id) == c
    ops = g.ops
    assert [(o.kind, o.name) for o in ops] == [("Add", "sum")]
    assert ops[0].inputs == [x, c] and ops[0].outputs == [y]
    assert not g.finalized
    g.finalize()
    assert g.finalized and g.warnings == []
    assert "Add" in g.dump("text") and g.dump("dot").startswith("digraph")
    out = run_all(g, {"x": np.ones((2, 3), np.float32)})
    np.testing.assert_array_equal(out["y"], np.arange(6).reshape(2, 3) + 1)


def test_scalar_input_and_unused_input_warning():
    g = dqgraph.Graph()
    x = g.input("x", "f32", ())
    g.input("unused", "f32", (1,))
    g.output(g.relu(x), "y")
    g.finalize()
    assert len(g.warnings) == 1 and "unused" in g.warnings[0]
    out = run_all(g, {"x": np.array(-2, np.float32), "unused": f32(0)})
    assert out["y"].shape == () and out["y"] == 0


def test_matmul_with_transposes():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    for ta in (False, True):
        for tb in (False, True):
            g = dqgraph.Graph()
            x = g.input("a", "f32", a.T.shape if ta else a.shape)
            w = g.constant(np.ascontiguousarray(b.T) if tb else b)
            g.output(g.matmul(x, w, transpose_a=ta, transpose_b=tb), "y")
            out = run_all(g, {"a": np.ascontiguousarray(a.T) if ta else a})
            np.testing.assert_array_equal(out["y"], a @ b)


def conv_ref(x, w, b, stride, pad):
    """NCHW cross-correlation, groups 1, in float64."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return y + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("fmt", ["ncx", "nxc"])
def test_convolution(fmt):
    rng = np.random.default_rng(3)
    x = rng.integers(-4, 5, (1, 3, 6, 5)).astype(np.float32)
    w = rng.integers(-3, 4, (4, 3, 3, 3)).astype(np.float32)
    b = f32(1, -2, 0.5, 0)
    want = conv_ref(x, w, b, 2, 1)
    xin = x if fmt == "ncx" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    g = dqgraph.Graph()
    t = g.input("x", "f32", xin.shape)
    y = g.convolution(t, g.constant(w), g.constant(b), strides=2, pads_begin=1, pads_end=(1, 1),
                      data_format=fmt)
    g.output(y, "y")
    out = run_all(g, {"x": xin}, exact=False)["y"]
    if fmt == "nxc":
        out = out.transpose(0, 3, 1, 2)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_pool():
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    g = dqgraph.Graph()
    t = g.input("x", "f32", x.shape)
    g.output(g.pool(t, kernel=2, strides=2), "max")
    g.output(g.pool(t, algorithm="avg_exclude_pad", kernel=(3, 3), strides=2, pads_begin=1,
                    pads_end=1, ceil_mode=True), "avg")
    g.output(g.pool(t, algorithm="avg_exclude_pad", global_pool=True), "gap")
    out = run_all(g, {"x": x})
    np.testing.assert_array_equal(out["max"].ravel(), f32(6, 8, 14, 16))
    # ceil_mode: windows over rows/columns {0, 1}, {1, 2, 3} and {3} (the last
    # one starts inside the input); x = 4 r + c + 1, so each mean is
    # 4 mean(rows) + mean(columns) + 1.
    want = [4 * r + c + 1 for r in (0.5, 2, 3) for c in (0.5, 2, 3)]
    np.testing.assert_allclose(out["avg"].ravel(), np.array(want, np.float32), rtol=1e-6)
    np.testing.assert_array_equal(out["gap"].ravel(), f32(8.5))
    with pytest.raises(dqgraph.errors.InvalidArgument, match="algorithm 'min'"):
        g.pool(t, algorithm="min", kernel=2)


def test_bias_add_add_mul_relu_clip():
    x = f32(-3, -1, 0, 2, 5, 7).reshape(1, 2, 3)
    g = dqgraph.Graph()
    t = g.input("x", "f32", x.shape)
    b = g.bias_add(t, g.constant(f32(10, 20)), "ncx")
    b2 = g.bias_add(t, g.constant(f32(1, 2, 3)), data_format="nxc")
    s = g.add(t, g.constant(f32(1, 2, 3)))  # broadcast along the last axis
    m = g.mul(t, g.constant(np.float32(2)))
    g.output(b, "bias_ncx")
    g.output(b2, "bias_nxc")
    g.output(s, "add")
    g.output(m, "mul")
    g.output(g.relu(t), "relu")
    g.output(g.clip(t, -2, 4), "clip")
    out = run_all(g, {"x": x})
    np.testing.assert_array_equal(out["bias_ncx"], x + f32(10, 20).reshape(1, 2, 1))
    np.testing.assert_array_equal(out["bias_nxc"], x + f32(1, 2, 3))
    np.testing.assert_array_equal(out["add"], x + f32(1, 2, 3))
    np.testing.assert_array_equal(out["mul"], x * 2)
    np.testing.assert_array_equal(out["relu"], np.maximum(x, 0))
    np.testing.assert_array_equal(out["clip"], np.clip(x, -2, 4))


def test_integer_add_and_mul_wrap_around():
    a = np.array([250, 3], np.uint8)
    g = dqgraph.Graph()
    t = g.input("a", "u8", (2,))
    g.output(g.add(t, g.constant(np.array([10, 4], np.uint8))), "s")
    g.output(g.mul(t, g.constant(np.array([2, 100], np.uint8))), "p")
    out = run_all(g, {"a": a})
    np.testing.assert_array_equal(out["s"], np.array([4, 7], np.uint8))
    np.testing.assert_array_equal(out["p"], np.array([244, 44], np.uint8))


def test_reshape_transpose_typecast():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.5
    g = dqgraph.Graph()
    t = g.input("x", "f32", x.shape)
    g.output(g.reshape(t, (0, -1)), "reshaped")
    g.output(g.transpose(t, (2, 0, 1)), "perm")
    g.output(g.transpose(t), "reversed")
    g.output(g.typecast(t, "s8"), "s8")
    g.output(g.typecast(t, "f16"), "f16")
    g.output(g.typecast(t, "bf16"), "bf16")
    out = run_all(g, {"x": x})
    np.testing.assert_array_equal(out["reshaped"], x.reshape(2, 12))
    np.testing.assert_array_equal(out["perm"], x.transpose(2, 0, 1))
    np.testing.assert_array_equal(out["reversed"], x.transpose())
    np.testing.assert_array_equal(out["s8"], np.round(x).astype(np.int8))  # half to even
    np.testing.assert_array_equal(out["f16"], x.astype(np.float16))
    assert out["bf16"].dtype == np.uint16
    np.testing.assert_array_equal(dqgraph.from_bf16(out["bf16"]), x)  # exact in bf16


# ---- The dequantize front doors -------------------------------------------


def test_dequantize_linear_spec_example_default():
    """ONNX DequantizeLinear, "default" example (test_dequantizelinear)."""
    g = dqgraph.Graph()
    x = g.input("x", "u8", (4,))
    for opset in (10, 13, 19, 21, 23):
        g.output(g.dequantize_linear(x, g.constant(np.float32(2)), g.constant(np.uint8(128)),
                                     opset=opset), "y%d" % opset)
    out = run_all(g, {"x": np.array([0, 3, 128, 255], np.uint8)})
    for opset in (10, 13, 19, 21, 23):
        np.testing.assert_array_equal(out["y%d" % opset], f32(-256, -250, 0, 254))


# The ONNX DequantizeLinear spec's two worked examples (shared/spec, opset
# 10/13 text: test_dequantizelinear and test_dequantizelinear_axis), with
# the expected values worked out by hand from y = (x - zero_point) * scale.
AXIS_X = np.array([[[[3, 89], [34, 200], [74, 59]], [[5, 24], [24, 87], [32, 13]],
                    [[245, 99], [4, 142], [121, 102]]]], np.uint8)
AXIS_SCALE, AXIS_ZP = f32(2, 4, 5), np.array([84, 24, 196], np.uint8)
AXIS_Y = np.array([[[[-162, 10], [-100, 232], [-20, -50]],    # (x - 84) * 2
                    [[-76, 0], [0, 252], [32, -44]],          # (x - 24) * 4
                    [[245, -485], [-960, -270], [-375, -470]]]], np.float32)  # (x - 196) * 5


def test_dequantize_linear_spec_example_axis():
    """ONNX DequantizeLinear, "_axis" example (test_dequantizelinear_axis)."""
    g = dqgraph.Graph()
    t = g.input("x", "u8", AXIS_X.shape)
    sc, zp = g.constant(AXIS_SCALE), g.constant(AXIS_ZP)
    g.output(g.dequantize_linear(t, sc, zp, opset=13), "default_axis")
    g.output(g.dequantize_linear(t, sc, zp, opset=13, axis=1), "axis1")
    g.output(g.dequantize_linear(t, sc, zp, opset=13, axis=-3), "axis-3")
    g.output(g.dequantize_linear(t, sc, zp, opset=23, axis=1), "opset23")
    out = run_all(g, {"x": AXIS_X})
    for k in out:
        np.testing.assert_array_equal(out[k], AXIS_Y, err_msg=k)


def test_spec_examples_through_every_front_door():
    """The same two examples through oneDNN Graph's DynamicDequantize
    (scales and zero points given at run time), Quark's
    ExtendedDequantizeLinear and DirectML's element-wise dequantize (scale
    and zero point broadcast to x's shape by the caller, as DirectML asks)."""
    x4 = np.array([0, 3, 128, 255], np.uint8)
    y4 = f32(-256, -250, 0, 254)
    g = dqgraph.Graph()
    a = g.input("a", "u8", (4,))
    b = g.input("b", "u8", AXIS_X.shape)
    s1, z1 = g.input("s1", "f32", (1,)), g.input("z1", "u8", (1,))
    s3, z3 = g.input("s3", "f32", (3,)), g.input("z3", "u8", (3,))
    g.output(g.dynamic_dequantize(a, s1, z1), "dyn_default")
    g.output(g.dynamic_dequantize(b, s3, z3, qtype="per_channel", axis=1), "dyn_axis")
    g.output(g.extended_dequantize_linear(a, g.constant(np.float32(2)), g.constant(np.uint8(128))),
             "ext_default")
    g.output(g.extended_dequantize_linear(b, g.constant(AXIS_SCALE), g.constant(AXIS_ZP), axis=1),
             "ext_axis")
    g.output(g.dml_dequantize(a, g.constant(np.full(4, 2, np.float32)),
                              g.constant(np.full(4, 128, np.uint8))), "dml_default")
    full = (1, 3, 3, 2)
    g.output(g.dml_dequantize(b, g.constant(np.broadcast_to(AXIS_SCALE.reshape(1, 3, 1, 1), full)),
                              g.constant(np.broadcast_to(AXIS_ZP.reshape(1, 3, 1, 1), full))),
             "dml_axis")
    out = run_all(g, {"a": x4, "b": AXIS_X, "s1": f32(2), "z1": np.array([128], np.uint8),
                      "s3": AXIS_SCALE, "z3": AXIS_ZP})
    for door in ("dyn", "ext", "dml"):
        np.testing.assert_array_equal(out[door + "_default"], y4, err_msg=door)
        np.testing.assert_array_equal(out[door + "_axis"], AXIS_Y, err_msg=door)


def test_dequantize_linear_blocked_int4_and_output_dtype():
    w = np.array([[-8, 7, 1, -1], [2, 3, -4, 5]], np.int8)  # s4 values
    scale = f32(0.5, 2).reshape(2, 1)  # blocks of 4 along axis 1
    g = dqgraph.Graph()
    wq = g.constant(w, "s4")
    y = g.dequantize_linear(wq, g.constant(scale), axis=1, block_size=4, opset=21)
    g.output(y, "y")
    g.output(g.dequantize_linear(wq, g.constant(scale), axis=1, block_size=4, opset=23,
                                 output_dtype="f16"), "y16")
    g.output(g.add(g.input("dummy", "f32", (1,)), g.constant(f32(0))), "d")
    out = run_all(g, {"dummy": f32(0)})
    np.testing.assert_array_equal(out["y"], w * scale)
    np.testing.assert_array_equal(out["y16"], (w * scale).astype(np.float16))


def test_dynamic_dequantize_per_tensor_and_per_channel():
    src = np.array([[0, 10, 250], [128, 129, 1]], np.uint8)
    g = dqgraph.Graph()
    x = g.input("x", "u8", src.shape)
    s = g.input("s", "f32", (1,))
    z = g.input("z", "u8", (1,))
    sc = g.input("sc", "f32", (3,))
    g.output(g.dynamic_dequantize(x, s, z), "pt")
    g.output(g.dynamic_dequantize(x, sc, None, qtype="per_channel", axis=1), "pc")
    out = run_all(g, {"x": src, "s": f32(0.5), "z": np.array([128], np.uint8), "sc": f32(1, 2, 4)})
    np.testing.assert_array_equal(out["pt"], (src.astype(np.float32) - 128) * 0.5)
    np.testing.assert_array_equal(out["pc"], src.astype(np.float32) * f32(1, 2, 4))


def test_dynamic_quantize():
    x = f32(-1, 0, 0.25, 0.75, 100, 1.25)
    g = dqgraph.Graph()
    t = g.input("x", "f32", (6,))
    s = g.input("s", "f32", (1,))
    g.output(g.dynamic_quantize(t, s, g.constant(np.array([10], np.uint8))), "u8")
    g.output(g.dynamic_quantize(t, s, None, dst_dtype="s8"), "s8")
    out = run_all(g, {"x": x, "s": f32(0.5)})
    # round half to even of x / 0.5: -2, 0, 0 (0.5), 2 (1.5), 200, 2 (2.5)
    np.testing.assert_array_equal(out["u8"], np.array([8, 10, 10, 12, 210, 12], np.uint8))
    np.testing.assert_array_equal(out["s8"], np.array([-2, 0, 0, 2, 127, 2], np.int8))


def test_extended_dequantize_linear():
    x = np.array([[-30000, 5], [32767, 0]], np.int16)
    g = dqgraph.Graph()
    t = g.input("x", "s16", x.shape)
    g.output(g.extended_dequantize_linear(t, g.constant(np.float32(0.25)),
                                          g.constant(np.int16(-2))), "pt")
    g.output(g.extended_dequantize_linear(t, g.constant(f32(1, 3)), None, axis=1), "pa")
    g.output(g.extended_dequantize_linear(t, g.constant(np.float32(2)), g.constant(np.float32(1))),
             "zp_f32")
    out = run_all(g, {"x": x})
    np.testing.assert_array_equal(out["pt"], (x.astype(np.float32) + 2) * 0.25)
    np.testing.assert_array_equal(out["pa"], x.astype(np.float32) * f32(1, 3))
    np.testing.assert_array_equal(out["zp_f32"], (x.astype(np.float32) - 1) * 2)


def test_dml_dequantize():
    x = np.array([[1, 2], [3, 250]], np.uint8)
    scale = f32(1, 0.5, 0, 2).reshape(2, 2)
    zp = np.array([[1, 0], [3, 200]], np.uint8)
    g = dqgraph.Graph()
    t = g.input("x", "u8", x.shape)
    g.output(g.dml_dequantize(t, g.constant(scale), g.constant(zp)), "y")
    g.output(g.dml_dequantize(t, g.constant(scale.astype(np.float16))), "y16")
    out = run_all(g, {"x": x})
    np.testing.assert_array_equal(out["y"], (x.astype(np.float32) - zp) * scale)  # 0 scale: 0
    np.testing.assert_array_equal(out["y16"], (x * scale).astype(np.float16))


def test_quantize_linear():
    x = f32(-1, 0.5, 1.5, 2.5, 300, -300)
    g = dqgraph.Graph()
    t = g.input("x", "f32", (6,))
    g.output(g.quantize_linear(t, g.constant(np.float32(1)), g.constant(np.uint8(10))), "u8")
    g.output(g.quantize_linear(t, g.constant(np.float32(1)), g.constant(np.int8(0))), "s8")
    g.output(g.quantize_linear(t, g.constant(np.float32(1))), "default_u8")
    out = run_all(g, {"x": x})
    np.testing.assert_array_equal(out["u8"], np.array([9, 10, 12, 12, 255, 0], np.uint8))
    np.testing.assert_array_equal(out["s8"], np.array([-1, 0, 2, 2, 127, -128], np.int8))
    np.testing.assert_array_equal(out["default_u8"], np.array([0, 0, 2, 2, 255, 0], np.uint8))


def test_quantize_linear_float8_saturate():
    x = f32(1000, -1000, 0.5)
    g = dqgraph.Graph()
    t = g.input("x", "f32", (3,))
    one = g.constant(np.float32(1))
    zp = g.constant(np.zeros((), np.uint8), "f8e4m3fn")
    g.output(g.quantize_linear(t, one, zp, opset=19), "sat")
    g.output(g.quantize_linear(t, one, zp, opset=19, saturate=False), "nosat")
    out = run_all(g, {"x": x})
    np.testing.assert_array_equal(dqgraph.decode(out["sat"], "f8e4m3fn"), f32(448, -448, 0.5))
    assert np.isnan(dqgraph.decode(out["nosat"], "f8e4m3fn")[:2]).all()


def test_dynamic_quantize_linear():
    x = f32(0, 2, -3, -2.5, 1.34, 0.5)  # ONNX's first DynamicQuantizeLinear example
    g = dqgraph.Graph()
    t = g.input("x", "f32", (6,))
    y, s, z = g.dynamic_quantize_linear(t)
    g.output(y, "y")
    g.output(s, "y_scale")
    g.output(z, "y_zero_point")
    out = run_all(g, {"x": x})
    np.testing.assert_array_equal(out["y"], np.array([153, 255, 0, 26, 221, 179], np.uint8))
    assert out["y_scale"] == np.float32(0.019607844)
    assert out["y_zero_point"] == 153


def test_sub_div_pow_unary_softmax_concat_lrn():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = (rng.random((3, 4)) + 0.5).astype(np.float32)
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    y = g.input("b", "f32", b.shape)
    g.output(g.sub(x, y), "sub")
    g.output(g.div(x, y), "div")
    g.output(g.pow(y, y), "pow")
    g.output(g.unary("sigmoid", x), "sigmoid")
    g.output(g.unary("leaky_relu", x, alpha=0.1), "leaky")
    g.output(g.softmax(x, axis=1), "softmax")
    g.output(g.softmax(x, -1, log=True), "logsoftmax")
    g.output(g.concat([x, x], 2), "concat")
    g.output(g.lrn(x, 3, alpha=0.5, beta=0.75, bias=2.0), "lrn")
    out = run_all(g, {"a": a, "b": b}, exact=False)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(out["sub"], a64 - b64, rtol=1e-6)
    np.testing.assert_allclose(out["div"], a64 / b64, rtol=1e-6)
    np.testing.assert_allclose(out["pow"], b64**b64, rtol=1e-6)
    np.testing.assert_allclose(out["sigmoid"], 1 / (1 + np.exp(-a64)), rtol=1e-6)
    np.testing.assert_allclose(out["leaky"], np.where(a64 < 0, 0.1 * a64, a64), rtol=1e-6)
    e = np.exp(a64 - a64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out["softmax"], e / e.sum(axis=1, keepdims=True), rtol=1e-6)
    m = a64 - a64.max(axis=-1, keepdims=True)
    np.testing.assert_allclose(out["logsoftmax"], m - np.log(np.exp(m).sum(-1, keepdims=True)),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out["concat"], np.concatenate([a, a], axis=2))
    sq = np.pad(a64**2, ((0, 0), (1, 1), (0, 0)))
    s = sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]
    np.testing.assert_allclose(out["lrn"], a64 / (2.0 + 0.5 / 3 * s) ** 0.75, rtol=1e-6)
    with pytest.raises(dqgraph.InvalidArgument, match="not one of"):
        g2 = dqgraph.Graph()
        g2.unary("softmin", g2.input("x", "f32", (1,)))


def test_layer_norm_and_reduce():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 8)).astype(np.float32)
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    scale = g.constant(np.full(8, 2.0, np.float32))
    g.output(g.layer_norm(x, scale, None, -1, 1e-5), "ln")
    g.output(g.reduce("mean", x, (1, 2), keepdims=False), "mean")
    g.output(g.reduce("max", x), "max")
    out = run_all(g, {"a": a}, exact=False)
    a64 = a.astype(np.float64)
    m = a64.mean(-1, keepdims=True)
    want = (a64 - m) / np.sqrt(((a64 - m) ** 2).mean(-1, keepdims=True) + 1e-5) * 2.0
    np.testing.assert_allclose(out["ln"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["mean"], a64.mean(axis=(1, 2)), rtol=1e-5, atol=1e-6)
    assert out["max"].shape == (1, 1, 1) and out["max"].item() == a.max()


def test_slice():
    a = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    g.output(g.slice(x, [(1, -1, 0, -2), (0, 1, 2**62)]), "y")
    out = run_all(g, {"a": a})
    np.testing.assert_array_equal(out["y"], a[1:, -1:0:-2])


def test_max_min_and_new_unary_functions():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32) * 4
    b = rng.standard_normal((3, 1)).astype(np.float32) * 4
    a[0, 0, 0], b[1, 0] = np.nan, np.nan
    a[0, 0, 1] = 2.5  # a tie for round: to even
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    y = g.input("b", "f32", b.shape)
    g.output(g.max(x, y), "max")
    g.output(g.min(y, x), "min")
    for f in ("cos", "sin", "floor", "ceil", "round", "sign", "softplus"):
        g.output(g.unary(f, x), f)
    out = run_all(g, {"a": a, "b": b})
    np.testing.assert_array_equal(out["max"], np.maximum(a, b))
    np.testing.assert_array_equal(out["min"], np.minimum(b, a))
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(out["cos"], np.cos(a64), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out["sin"], np.sin(a64), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(out["floor"], np.floor(a))
    np.testing.assert_array_equal(out["ceil"], np.ceil(a))
    np.testing.assert_array_equal(out["round"], np.round(a))
    assert out["round"][0, 0, 1] == 2.0
    np.testing.assert_array_equal(out["sign"], np.sign(a))
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(out["softplus"], np.logaddexp(0, a64), rtol=1e-6)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad(mode):
    a = np.arange(3 * 4, dtype=np.int16).reshape(3, 4) - 5
    g = dqgraph.Graph()
    x = g.input("a", "s16", a.shape)
    g.output(g.pad(x, [1, 5, 2, 0], mode, -7), "y")     # 5 > 3: the pattern repeats
    g.output(g.pad(x, [-1, 2, 0, -3], mode, 9), "crop")  # negative: cropped first
    out = run_all(g, {"a": a})
    kw = {"constant_values": -7} if mode == "constant" else {}
    np.testing.assert_array_equal(out["y"], np.pad(a, ((1, 2), (5, 0)), mode, **kw))
    kw = {"constant_values": 9} if mode == "constant" else {}
    np.testing.assert_array_equal(out["crop"], np.pad(a[1:, :1], ((0, 0), (2, 0)), mode, **kw))


def test_resize():
    a = np.arange(2 * 3, dtype=np.float32).reshape(1, 1, 2, 3)
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    g.output(g.resize(x, sizes=(1, 1, 4, 6)), "nearest")
    g.output(g.resize(x, sizes=(1, 1, 3, 5), mode="linear", coord="align_corners"), "linear")
    out = run_all(g, {"a": a}, exact=False)
    # half_pixel, round_prefer_floor at scale 2: each element twice
    np.testing.assert_array_equal(out["nearest"], a.repeat(2, axis=2).repeat(2, axis=3))
    # align_corners: the grid's corners land on x's corners, the rest in between
    rows, cols = np.linspace(0, 1, 3), np.linspace(0, 2, 5)
    want = rows[:, None] * 3 + cols[None, :]
    np.testing.assert_allclose(out["linear"][0, 0], want, rtol=1e-6, atol=1e-6)
    with pytest.raises(dqgraph.InvalidArgument, match="not one of"):
        g.resize(x, sizes=(1, 1, 2, 2), mode="area")


def test_argmax_argmin():
    a = np.array([[3, 9, 9], [-1, -4, -4]], dtype=np.float32)
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    g.output(g.argmax(x, axis=1), "max")
    g.output(g.argmin(x, axis=-1, keepdims=False, select_last=True), "min")
    out = run_all(g, {"a": a})
    np.testing.assert_array_equal(out["max"], np.argmax(a, axis=1)[:, None])
    np.testing.assert_array_equal(out["min"], [0, 2])
    assert out["max"].dtype == np.int64


def test_conv_transpose():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 3, 2)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)  # [C, M / groups, K...]
    g = dqgraph.Graph()
    xi = g.input("x", "f32", x.shape)
    g.output(g.conv_transpose(xi, g.constant(w), strides=(2, 1), pads_begin=(1, 0),
                              pads_end=(0, 1), output_padding=(1, 0), groups=2), "y")
    out = run_all(g, {"x": x}, exact=False)
    # Scatter: y[m, i s + k - pb] += x[c, i] w[c, m', k], channels by group.
    full = np.zeros((6, 2 * 2 + 2 + 1, 1 * 1 + 3 + 0))
    for c in range(4):
        grp = c // 2
        for mm in range(3):
            for i in range(3):
                for j in range(2):
                    for ki in range(2):
                        for kj in range(3):
                            full[grp * 3 + mm, i * 2 + ki, j + kj] += x[0, c, i, j] * w[c, mm, ki, kj]
    want = full[:, 1:1 + out["y"].shape[2], 0:out["y"].shape[3]]
    np.testing.assert_allclose(out["y"][0], want, rtol=1e-5, atol=1e-5)


def test_cumsum_and_topk():
    a = np.array([[3, 1, 4, 1], [5, 9, 2, 6]], dtype=np.float32)
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    g.output(g.cumsum(x, axis=1), "cs")
    g.output(g.cumsum(x, axis=0, exclusive=True, reverse=True), "csr")
    v, i = g.topk(x, 2)
    g.output(v, "v")
    g.output(i, "i")
    out = run_all(g, {"a": a})
    np.testing.assert_array_equal(out["cs"], np.cumsum(a, axis=1))
    np.testing.assert_array_equal(out["csr"], [[5, 9, 2, 6], [0, 0, 0, 0]])
    np.testing.assert_array_equal(out["v"], [[4, 3], [9, 6]])
    np.testing.assert_array_equal(out["i"], [[2, 0], [1, 3]])


def test_rnn_cells():
    """One RNN step is tanh(x W^T + h R^T + Wb + Rb); a bidirectional LSTM over a
    sequence agrees compiled and on the reference, its shapes as ONNX's."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (1, 1, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (1, 2, 3)).astype(np.float32)
    r = rng.uniform(-1, 1, (1, 2, 2)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, 4)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (1, 1, 2)).astype(np.float32)
    g = dqgraph.Graph()
    y, yh = g.rnn("rnn", g.input("x", "f32", x.shape), g.constant(w), g.constant(r),
                  g.constant(b), initial_h=g.input("h0", "f32", h0.shape))
    g.output(y, "y")
    g.output(yh, "yh")
    out = run_all(g, {"x": x, "h0": h0}, exact=False)
    want = np.tanh(x[0, 0] @ w[0].T + h0[0, 0] @ r[0].T + b[0, :2] + b[0, 2:])
    np.testing.assert_allclose(out["y"][0, 0, 0], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out["yh"], out["y"][0])

    xs = rng.uniform(-1, 1, (5, 2, 4)).astype(np.float32)
    g = dqgraph.Graph()
    y, yh, yc = g.rnn(
        "lstm", g.input("x", "f32", xs.shape),
        g.constant(rng.uniform(-0.5, 0.5, (2, 12, 4)).astype(np.float32)),
        g.constant(rng.uniform(-0.5, 0.5, (2, 12, 3)).astype(np.float32)),
        direction="bidirectional")
    assert (y.shape, yh.shape, yc.shape) == ((5, 2, 2, 3), (2, 2, 3), (2, 2, 3))
    for t, n in ((y, "y"), (yh, "yh"), (yc, "yc")):
        g.output(t, n)
    run_all(g, {"x": xs}, exact=False)
    with pytest.raises(dqgraph.InvalidArgument, match="activations lists 2 values"):
        g2 = dqgraph.Graph()
        g2.rnn("gru", g2.input("x", "f32", (1, 1, 1)), g2.input("w", "f32", (1, 3, 1)),
               g2.input("r", "f32", (1, 3, 1)), activations=["sigmoid", "tanh"],
               direction="bidirectional")


def test_gather_nd_and_scatter_nd():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    i = g.constant(np.array([[1, 2], [0, -1]], np.int64))
    g.output(g.gather_nd(x, i), "g")
    g.output(g.scatter_nd(x, i, g.constant(np.float32([10, 20])), "add"), "s")
    out = run_all(g, {"a": a})
    np.testing.assert_array_equal(out["g"], [5, 2])
    want = a.copy()
    want[1, 2] += 10
    want[0, 2] += 20
    np.testing.assert_array_equal(out["s"], want)


def test_scatter_elements_and_mod():
    a = np.zeros((2, 3), np.float32)
    g = dqgraph.Graph()
    x = g.input("a", "f32", a.shape)
    i = g.constant(np.array([[2, 0]], np.int64))
    g.output(g.scatter_elements(x, i, g.constant(np.float32([[7, 8]])), axis=1), "s")
    n = g.input("n", "s32", (4,))
    g.output(g.mod(n, g.constant(np.int32([3, -3, 3, -3]))), "m")
    out = run_all(g, {"a": a, "n": np.int32([7, 7, -7, -7])})
    np.testing.assert_array_equal(out["s"], [[8, 0, 7], [0, 0, 0]])
    np.testing.assert_array_equal(out["m"], np.int32([7, 7, -7, -7]) % np.int32([3, -3, 3, -3]))


def test_pad_errors():
    cases = [([0, 0, 1, 1], "constant", 256, dqgraph.InvalidArgument, "not a u8 value"),
             ([-1, 0, -1, 0], "constant", 0, dqgraph.InvalidArgument, "no empty tensors"),
             ([0, 0, 1, 1], "symmetric", 0, dqgraph.InvalidArgument, "not one of"),
             ([1, 1], "edge", 0, dqgraph.InvalidArgument, "expected 4 values")]
    for pads, mode, value, error, message in cases:
        g = dqgraph.Graph()
        x = g.input("a", "u8", (2, 3))
        with pytest.raises(error, match=message):
            g.pad(x, pads, mode, value)


def test_gather():
    table = np.arange(20, dtype=np.float32).reshape(5, 4)
    g = dqgraph.Graph()
    ids = g.input("ids", "s32", (3,))
    g.output(g.gather(g.constant(table), ids, 0), "y")
    out = run_all(g, {"ids": np.array([4, 0, -1], np.int32)})
    np.testing.assert_array_equal(out["y"], table[[4, 0, -1]])


def test_compare_logical_where_gather_elements():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b = np.array([2, 5, 3], np.float32)
    g = dqgraph.Graph()
    x = g.input("a", "f32", (2, 3))
    lt = g.compare("less", x, g.constant(b))
    eq = g.compare("equal", x, g.constant(b))
    keep = g.logical("or", lt, eq)
    g.output(g.logical("not", keep), "drop")
    g.output(g.where(keep, x, g.constant(np.float32(-1))), "y")
    ix = np.array([[2, 0], [-1, 1]], np.int64)
    g.output(g.gather_elements(x, g.constant(ix), axis=1), "picked")
    out = run_all(g, {"a": a})
    assert out["drop"].dtype == np.bool_
    np.testing.assert_array_equal(out["drop"], ~(a <= b))
    np.testing.assert_array_equal(out["y"], np.where(a <= b, a, -1).astype(np.float32))
    np.testing.assert_array_equal(out["picked"], np.take_along_axis(a, ix % 3, axis=1))
