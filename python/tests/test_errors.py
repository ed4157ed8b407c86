"""Errors: the library's are exceptions carrying its status and message;
bad arguments are refused by the binding before any call into C."""

import numpy as np
import pytest

import dqgraph


@pytest.fixture
def relu_u8():
    """x f32 [2, 3] -> ReLU -> y, and a u8 input q [4]."""
    g = dqgraph.Graph()
    x = g.input("x", "f32", (2, 3))
    q = g.input("q", "u8", (4,))
    g.output(g.relu(x), "y")
    g.output(g.dequantize_linear(q, g.constant(np.float32(1))), "dq")
    return g, dqgraph.compile(g)


def good():
    return {"x": np.zeros((2, 3), np.float32), "q": np.zeros(4, np.uint8)}


def test_builder_error_carries_status_and_message():
    g = dqgraph.Graph()
    a = g.input("a", "f32", (2, 3))
    b = g.input("b", "f32", (4, 5))
    with pytest.raises(dqgraph.InvalidGraph) as e:
        g.matmul(a, b, name="fc1")
    assert e.value.status == 1 and isinstance(e.value, ValueError)
    assert "MatMul 'fc1'" in e.value.message and "K=3" in e.value.message
    # The graph keeps the first error (sticky): later calls and finalize raise it.
    with pytest.raises(dqgraph.InvalidArgument, match="fc1"):
        g.relu(a)
    with pytest.raises(dqgraph.InvalidArgument, match="fc1"):
        g.finalize()


def test_front_door_rule_violation():
    g = dqgraph.Graph()
    x = g.input("x", "s8", (28, 4))
    with pytest.raises(dqgraph.InvalidArgument, match=r"block_size 3 is outside \[7, 9\] for axis 0"):
        g.dequantize_linear(x, g.constant(np.ones((4, 4), np.float32)), axis=0, block_size=3,
                            opset=21, name="w_dq")


def test_unsupported_and_parse_and_io_errors(tmp_path):
    with pytest.raises(dqgraph.ParseError) as e:
        dqgraph.load_onnx_bytes(b"not a model")
    assert e.value.status == 6
    with pytest.raises(dqgraph.IOError) as e:
        dqgraph.load_onnx(str(tmp_path / "missing.onnx"))
    assert e.value.status == 5 and isinstance(e.value, OSError)
    with pytest.raises(dqgraph.IOError):
        dqgraph.read_tensor(str(tmp_path / "missing.pb"))


def test_unsupported_operator_in_model(testdata):
    with pytest.raises(dqgraph.Unsupported, match="Hardmax") as e:
        dqgraph.load_onnx(testdata + "/test_hardmax_axis_0/model.onnx")
    assert e.value.status == 2


def test_run_wrong_dtype_shape_contiguity_and_type(relu_u8):
    g, c = relu_u8
    for run in (c.run, g.reference_run):
        bad = good()
        bad["x"] = np.zeros((2, 3), np.float64)
        with pytest.raises(dqgraph.InvalidArgument, match="held in a float32 array, not float64"):
            run(bad)
        bad = good()
        bad["x"] = np.zeros((3, 2), np.float32)
        with pytest.raises(dqgraph.InvalidArgument, match=r"shape \(3, 2\), expected \(2, 3\)"):
            run(bad)
        bad = good()
        bad["x"] = np.zeros((3, 2), np.float32).T
        with pytest.raises(dqgraph.InvalidArgument, match="not C-contiguous"):
            run(bad)
        bad = good()
        bad["x"] = [[0.0] * 3] * 2
        with pytest.raises(dqgraph.InvalidArgument, match="expected a numpy.ndarray"):
            run(bad)


def test_run_unknown_missing_and_twice_given_names(relu_u8):
    g, c = relu_u8
    with pytest.raises(dqgraph.InvalidArgument, match="no graph input named 'nope'"):
        c.run(good(), nope=np.zeros(1, np.float32))
    with pytest.raises(dqgraph.InvalidArgument, match="input 'q' has no array"):
        c.run(x=np.zeros((2, 3), np.float32))
    with pytest.raises(dqgraph.InvalidArgument, match="given twice"):
        c.run(good(), x=np.zeros((2, 3), np.float32))
    with pytest.raises(dqgraph.InvalidArgument, match="no graph input named 'y'"):
        c.run(good(), y=np.zeros((2, 3), np.float32))


def test_run_into_checks_outputs(relu_u8):
    g, c = relu_u8
    outs = {"y": np.empty((2, 3), np.float32), "dq": np.empty(4, np.float32)}
    assert c.run_into(good(), outs) is not None
    ro = np.empty((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(dqgraph.InvalidArgument, match="read-only"):
        c.run_into(good(), {"y": ro, "dq": outs["dq"]})
    with pytest.raises(dqgraph.InvalidArgument, match="output 'dq' has no array"):
        c.run_into(good(), {"y": outs["y"]})
    with pytest.raises(dqgraph.InvalidArgument, match="no graph output named 'x'"):
        c.run_into(good(), dict(outs, x=outs["y"]))
    with pytest.raises(dqgraph.InvalidArgument, match="shape"):
        c.run_into(good(), {"y": np.empty(6, np.float32), "dq": outs["dq"]})
    # An output that overlaps an input: the library refuses it, naming both.
    ins = good()
    with pytest.raises(dqgraph.InvalidArgument, match="overlaps"):
        c.run_into(ins, {"y": ins["x"], "dq": outs["dq"]})


def test_builder_argument_errors():
    g = dqgraph.Graph()
    other = dqgraph.Graph()
    x = g.input("x", "f32", (2, 3))
    y = other.input("y", "f32", (2, 3))
    with pytest.raises(dqgraph.InvalidArgument, match="belongs to another graph"):
        g.add(x, y)
    with pytest.raises(TypeError, match="expected a dqgraph.Tensor"):
        g.relu("x")
    with pytest.raises(dqgraph.InvalidArgument, match="expected 2 values, got 3"):
        g.transpose(x, (0, 1, 2))  # the library would read past a short list
    with pytest.raises(dqgraph.InvalidArgument, match="rank limit"):
        g.reshape(x, (1,) * 9)
    with pytest.raises(dqgraph.InvalidArgument, match="unknown dqgraph data type"):
        g.typecast(x, "f64")
    with pytest.raises(dqgraph.InvalidArgument, match="data_format"):
        g.bias_add(x, g.constant(np.zeros(3, np.float32)), "nhcw")
    with pytest.raises(TypeError):
        g.clip(x, 0)  # hi missing
    with pytest.raises(dqgraph.InvalidArgument, match="no dqgraph type"):
        g.constant(np.zeros(3))  # float64
    with pytest.raises(dqgraph.InvalidArgument, match="outside the range of u8"):
        g.constant([300], "u8")
    with pytest.raises(dqgraph.InvalidArgument, match="no tensor named 'zz'"):
        g.tensor("zz")
    # A raw id is passed on; the library refuses an unknown one.
    with pytest.raises(dqgraph.InvalidArgument, match="unknown tensor id 99"):
        g.relu(99)


def test_compile_option_errors(relu_u8):
    g, _ = relu_u8
    with pytest.raises(dqgraph.InvalidArgument, match="backend"):
        dqgraph.compile(g, backend="cuda")
    with pytest.raises(dqgraph.InvalidArgument, match="fpmath"):
        dqgraph.compile(g, fpmath="tf32")
    with pytest.raises(dqgraph.InvalidArgument, match="1 to 1024"):
        dqgraph.compile(g, threads=1025)
    with pytest.raises(TypeError):
        dqgraph.compile("graph")


def test_closed_handles(relu_u8):
    g, c = relu_u8
    c.close()
    c.close()  # twice is fine
    with pytest.raises(dqgraph.InvalidArgument, match="compiled graph is closed"):
        c.run(good())
    g.close()
    with pytest.raises(dqgraph.InvalidArgument, match="graph is closed"):
        g.relu(0)


def test_compiled_outlives_its_graph():
    g = dqgraph.Graph()
    g.output(g.relu(g.input("x", "f32", (2,))), "y")
    c = dqgraph.compile(g)
    g.close()
    np.testing.assert_array_equal(c.run(x=np.float32([-1, 1]))["y"], np.float32([0, 1]))
    assert c.partitions() and c.dot().startswith("digraph")
    with pytest.raises(dqgraph.InvalidArgument, match="the graph this was compiled from is gone"):
        c.dot(after_passes=False)
