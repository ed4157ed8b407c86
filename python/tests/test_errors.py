"""Errors: the library's are exceptions carrying its status and message;
bad arguments are refused by the binding before any call into C."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dqgraph
from conftest import ROOT


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
    with pytest.raises(dqgraph.Unsupported, match="Compress") as e:
        dqgraph.load_onnx(testdata + "/test_compress_0/model.onnx")
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


# ---- Refused before the library is called, and never a crash ---------------

_FUZZ = r"""
import inspect, sys
import numpy as np
import dqgraph
from dqgraph import graph as G

# A valid value for each required builder parameter that is not a tensor.
VALID = {"function": "relu", "axis": 0, "size": 3, "lo": 0.0, "hi": 1.0, "shape": (6,),
         "to": "f16", "slices": [(0, 0, 1)]}
JUNK = [None, "x", b"x", 1.5, -1, 2**31, 2**63, -(2**70), [], [1.5], ["a"], (1,) * 9, {},
        object(), True, np.float64(2.5), np.int64(2**40), float("nan"), np.zeros(3), "a\0b",
        dqgraph.Graph().input("y", "f32", (2, 3))]
ok = refused = 0
for method in sorted(G._BUILDERS):
    params = [p for p in inspect.signature(getattr(dqgraph.Graph, method)).parameters.values()
              if p.name != "self"]
    for target in params:
        for junk in JUNK:
            g = dqgraph.Graph()
            x = g.input("x", "f32", (2, 3))
            kwargs = {p.name: ([x, x] if p.name == "inputs" else VALID.get(p.name, x))
                      for p in params if p.default is inspect.Parameter.empty}
            kwargs[target.name] = junk
            try:
                getattr(g, method)(**kwargs)
                ok += 1
            except dqgraph.Error:
                refused += 1
            except Exception as e:
                print("%s(%s=%r): %s: %s" % (method, target.name, junk, type(e).__name__, e))
                sys.exit(1)
print(ok, refused)
"""


def test_junk_builder_arguments_raise_dqgraph_errors_and_never_crash():
    """Every parameter of every builder given each kind of junk (None, str,
    bytes, floats, NaN, ints beyond int32 and int64, lists of the wrong
    things, dicts, objects, bools, arrays, a NUL in a string, a tensor of
    another graph): refused with a dqgraph.Error and nothing else, and no
    crash (in a child process, so that a crash fails this test instead of
    ending the run)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               DQGRAPH_LIBRARY=dqgraph.library_path)
    r = subprocess.run([sys.executable, "-c", _FUZZ], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    ok, refused = map(int, r.stdout.split())
    assert refused > 500, (ok, refused)


def test_refused_arguments_never_reach_the_library(relu_u8, monkeypatch):
    """A builder the library refused would leave the graph sticky-failed;
    after every refusal below the graph still builds and finalizes, so none
    reached C. Runs with a bad array never call dqg_execute or
    dqg_reference_run."""
    g = dqgraph.Graph()
    x = g.input("x", "f32", (2, 3))
    other = dqgraph.Graph().input("y", "f32", (2, 3))
    refusals = [
        lambda: g.relu(other), lambda: g.relu("x"), lambda: g.relu(2**32),
        lambda: g.reshape(x, (6.0,)), lambda: g.reshape(x, (2**64,)), lambda: g.reshape(x, "6"),
        lambda: g.transpose(x, (0, 1, 2)), lambda: g.softmax(x, axis=1.5),
        lambda: g.softmax(x, log="no"), lambda: g.clip(x, "0", 1), lambda: g.clip(x, 0),
        lambda: g.matmul(x, x, transpose_b="yes"), lambda: g.concat(x, 0),
        lambda: g.slice(x, [(0, 0, 2**70)]), lambda: g.typecast(x, "f64"),
        lambda: g.relu(x, name=b"r"), lambda: g.relu(x, name="r\0"), lambda: g.relu(x, bogus=1),
        lambda: g.constant([[1, 2], [3]]), lambda: g.constant(np.zeros(3)),
        lambda: g.constant(np.zeros(4, np.float32), shape=(5,)),
        lambda: g.input("z", "f32", (1.5,)), lambda: g.input(None, "f32", (1,)),
        lambda: g.dequantize_linear(x, x, opset="21"), lambda: g.dequantize_linear(x, x, axis=2**63),
        lambda: g.unary("cube", x), lambda: g.reduce("sum", x, axes=None),
        lambda: g.pool(x, kernel="2"), lambda: g.convolution(x, x, groups=1.0),
    ]
    for i, bad in enumerate(refusals):
        with pytest.raises(dqgraph.Error) as e:
            bad()
        assert e.value.status == dqgraph.InvalidArgument.status, i
    g.output(g.relu(x), "y")
    g.finalize()  # not sticky-failed: the library saw none of the above

    _, c = relu_u8
    calls = []
    monkeypatch.setattr(dqgraph._native.lib, "dqg_execute", lambda *a: calls.append(a))
    monkeypatch.setattr(dqgraph._native.lib, "dqg_reference_run", lambda *a: calls.append(a))
    bad_inputs = [
        dict(good(), x=np.zeros((2, 3), np.float64)), dict(good(), x=np.zeros((3, 2), np.float32)),
        dict(good(), x=np.zeros((3, 2), np.float32).T), dict(good(), x=[[0.0] * 3] * 2),
        dict(good(), q=np.zeros(4, np.int8)), dict(good(), nope=np.zeros(1, np.float32)),
        {"x": np.zeros((2, 3), np.float32)}, [np.zeros((2, 3), np.float32)], "x",
    ]
    for ins in bad_inputs:
        for run in (c.run, relu_u8[0].reference_run):
            with pytest.raises(dqgraph.Error):
                run(ins)
        with pytest.raises(dqgraph.Error):
            c.run_into(ins, {"y": np.empty((2, 3), np.float32), "dq": np.empty(4, np.float32)})
    with pytest.raises(dqgraph.Error):
        c.run_into(good(), [np.empty((2, 3), np.float32)])
    assert calls == []


def test_unaligned_arrays_are_used_in_place():
    """The library needs no alignment (dqg_buffer): an array at an odd
    address is read and written where it is, with the aligned result."""
    g = dqgraph.Graph()
    x = g.input("x", "u8", (16, 64))
    w = g.dequantize_linear(g.constant(np.arange(64 * 8, dtype=np.int8).reshape(64, 8) % 7 - 3),
                            g.constant(np.float32(0.01)))
    g.output(g.matmul(g.dequantize_linear(x, g.constant(np.float32(0.02)),
                                          g.constant(np.uint8(100))), w), "y")
    c = dqgraph.compile(g)
    xs = np.arange(16 * 64, dtype=np.uint8).reshape(16, 64)
    want = c.run(x=xs)["y"]
    raw_in, raw_out = np.zeros(16 * 64 + 1, np.uint8), np.zeros(16 * 8 * 4 + 1, np.uint8)
    xu = raw_in[1:].reshape(16, 64)
    xu[...] = xs
    yu = np.frombuffer(raw_out.data, np.float32, 16 * 8, offset=1).reshape(16, 8)
    assert not yu.flags.aligned and yu.flags.writeable and yu.flags.c_contiguous
    c.run_into({"x": xu}, {"y": yu})
    assert yu.tobytes() == want.tobytes()


def test_transpose_of_a_raw_id_checks_the_permutation_length():
    """transpose(x, perm) with x as a raw id: the permutation is checked
    against the tensor's rank as for a Tensor (the library reads rank
    entries)."""
    g = dqgraph.Graph()
    x = g.input("x", "f32", (2, 3, 4))
    with pytest.raises(dqgraph.InvalidArgument, match="expected 3 values, got 2"):
        g.transpose(x.id, (1, 0))
    y = g.transpose(x.id, (2, 0, 1))
    assert y.shape == (4, 2, 3)
    with pytest.raises(dqgraph.InvalidArgument, match="unknown tensor id 77"):
        g.transpose(77, (1, 0))
