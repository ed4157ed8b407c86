"""ONNX models through the binding: every ONNX backend node test of the C
conformance suite loads, runs fused and unfused and matches its expected
outputs within the numerical contract; import options, the rejected-model
corpus; tensor files read and write."""

import os
import re

import numpy as np
import pytest

import dqgraph
from conftest import ROOT, case_data_sets, conformance_cases, within_contract


@pytest.mark.parametrize("case", conformance_cases())
def test_backend_node_case(testdata, case):
    for data in case_data_sets(testdata, case):
        g = data.graph
        assert g.finalized
        for fuse in (True, False):
            got = dqgraph.compile(g, fuse=fuse).run(data.inputs)
            assert len(got) == len(data.expected)
            for spec, want in zip(g.outputs, data.expected):
                assert got[spec.name].shape == want.array.shape, (spec.name, fuse)
                assert within_contract(got[spec.name], want.array, spec.dtype, spec.shape), \
                    (spec.name, "fused" if fuse else "unfused")


def test_the_whole_conformance_list_is_run_under_ctest():
    """Under ctest the list is the build's (296 cases when this was written),
    not the short fallback."""
    if not os.environ.get("DQGRAPH_ONNX_CASES"):
        pytest.skip("not run by ctest")
    assert len(conformance_cases()) > 200


def test_load_with_dims_shapes_and_bytes(testdata):
    path = os.path.join(testdata, "test_relu", "model.onnx")
    g = dqgraph.load_onnx(path, shapes={"x": (3, 4, 5)})
    assert g.inputs[0].shape == (3, 4, 5)
    with open(path, "rb") as f:
        g2 = dqgraph.load_onnx_bytes(f.read())
    assert [t.name for t in g2.outputs] == [t.name for t in g.outputs]
    with pytest.raises(dqgraph.InvalidArgument, match="not an integer >= 1"):
        dqgraph.load_onnx(path, dims={"N": 0})
    with pytest.raises(dqgraph.InvalidArgument, match="dimension 2 is 5 in the model"):
        dqgraph.load_onnx(path, shapes={"x": (3, 4, 6)})


CORPUS = os.path.join(ROOT, "tests", "corpus")


def test_symbolic_dimension_set_by_dims():
    """tests/corpus/symbolic_dim.onnx: x [batch, 4] -> Relu -> y."""
    path = os.path.join(CORPUS, "symbolic_dim.onnx")
    with pytest.raises(dqgraph.InvalidArgument, match=r"dimension 0 is symbolic \('batch'\)"):
        dqgraph.load_onnx(path)
    for batch in (1, 8):
        g = dqgraph.load_onnx(path, dims={"batch": batch})
        assert [(t.name, t.shape) for t in g.inputs] == [("x", (batch, 4))]
        x = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4) - 5
        np.testing.assert_array_equal(dqgraph.compile(g).run(x=x)["y"], np.maximum(x, 0))
    g = dqgraph.load_onnx(path, shapes={"x": (3, 4)})  # a shape fixes it too
    assert g.inputs[0].shape == (3, 4)
    g = dqgraph.load_onnx(path, shapes={0: (2, 4)})  # the input by position
    assert g.inputs[0].shape == (2, 4)


# `dqgraph run FILE` exit status -> the exception load_onnx raises; both
# carry the same message (tests/corpus/expected.txt lists it).
_EXPECTED_CLASS = {"parse error": dqgraph.ParseError, "invalid argument": dqgraph.InvalidArgument,
                   "unsupported": dqgraph.Unsupported, "I/O error": dqgraph.IOError}


def _corpus_expectations():
    rows = []
    with open(os.path.join(CORPUS, "expected.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, _, regex = line.rstrip("\n").split(" ", 2)
                rows.append((name, regex))
    return rows


@pytest.mark.parametrize("name,regex", _corpus_expectations(), ids=lambda v: str(v)[:40])
def test_rejected_models_raise_the_status_and_message(name, regex):
    """Each malformed or unsupported model of the C tests' corpus raises the
    dqgraph exception of its status, with the library's message."""
    kind, _, message = re.match(r"([a-zA-Z/ ]+): (.*)", regex).groups() and \
        regex.partition(": ")
    with pytest.raises(dqgraph.Error) as e:
        dqgraph.load_onnx(os.path.join(CORPUS, name))
    assert type(e.value) is _EXPECTED_CLASS[kind], (name, type(e.value))
    assert e.value.status == _EXPECTED_CLASS[kind].status
    assert re.search(message, e.value.message), (name, e.value.message)
    assert str(e.value) == e.value.message


def test_import_options(testdata):
    # Clip's bounds (inputs from opset 11) are needed while the graph is
    # built: given as values, those scalar inputs become scalar constants.
    path = os.path.join(testdata, "test_clip_example", "model.onnx")
    with pytest.raises(dqgraph.Error, match="min"):
        dqgraph.load_onnx(path)
    g = dqgraph.load_onnx(path, values={"min": np.float32(-1), "max": np.array(1, np.float32)})
    assert [t.name for t in g.inputs] == ["x"]
    y = dqgraph.compile(g).run(x=np.float32([-2, 0, 2]))["y"]
    np.testing.assert_array_equal(y, np.float32([-1, 0, 1]))
    with pytest.raises(dqgraph.InvalidArgumentType, match="max_nodes"):
        dqgraph.load_onnx(path, max_nodes=0.5)  # not an integer
    with pytest.raises(dqgraph.InvalidArgument, match="max_model_bytes"):
        dqgraph.load_onnx(path, max_model_bytes=-1)
    with pytest.raises(dqgraph.InvalidArgumentType, match="numpy array"):
        dqgraph.load_onnx(path, values={"min": -1.0})


def test_max_nodes_limit(testdata):
    path = os.path.join(testdata, "test_add", "model.onnx")  # one node
    assert dqgraph.load_onnx(path, max_nodes=1).finalized
    # The expanded Softmax has a dozen nodes: above a limit of 3 the library
    # refuses it before looking at its operators.
    big = os.path.join(testdata, "test_softmax_axis_0_expanded", "model.onnx")
    with pytest.raises(dqgraph.InvalidArgument, match=r"nodes, above the limit of 3 .*max_nodes"):
        dqgraph.load_onnx(big, max_nodes=3)


def test_tensor_files_round_trip(tmp_path):
    for dt, arr in [("f32", np.float32([[1, 2], [3, 4]])), ("u8", np.arange(5, dtype=np.uint8)),
                    ("bf16", dqgraph.to_bf16([1.5, -2])), ("s4", dqgraph.pack_int4([1, -2, 3]))]:
        path = str(tmp_path / (dt + ".pb"))
        shape = (3,) if dt == "s4" else None
        dqgraph.write_tensor(path, arr, "t_" + dt, dtype=dt, shape=shape)
        t = dqgraph.read_tensor(path)
        assert (t.name, t.dtype) == ("t_" + dt, dt)
        assert t.shape == (shape or arr.shape)
        np.testing.assert_array_equal(t.array, arr)
    with pytest.raises(dqgraph.InvalidArgument, match="held in"):
        dqgraph.write_tensor(str(tmp_path / "x.pb"), np.zeros(2, np.float32), dtype="bf16")
