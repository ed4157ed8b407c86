"""ONNX models through the binding: ONNX's backend node tests load, run and
match their expected outputs within the numerical contract; tensor files
read and write."""

import glob
import os

import numpy as np
import pytest

import dqgraph

CASES = [
    "test_dequantizelinear", "test_dequantizelinear_axis", "test_quantizelinear",
    "test_quantizelinear_axis", "test_dynamicquantizelinear", "test_qlinearmatmul_2D",
    "test_qlinearmatmul_3D", "test_matmulinteger", "test_matmul_2d", "test_gemm_default_vector_bias",
    "test_basic_conv_with_padding", "test_conv_with_strides_padding", "test_relu", "test_add_bcast",
    "test_cast_FLOAT_to_FLOAT16",
]


def load_case(case_dir):
    g = dqgraph.load_onnx(os.path.join(case_dir, "model.onnx"))
    data = os.path.join(case_dir, "test_data_set_0")
    ins = [dqgraph.read_tensor(p) for p in sorted(glob.glob(data + "/input_*.pb"))]
    outs = [dqgraph.read_tensor(p) for p in sorted(glob.glob(data + "/output_*.pb"))]
    names = [t.name for t in g.inputs]
    # By the file's tensor name, else by position.
    inputs = {(t.name if t.name in names else names[i]): t.array for i, t in enumerate(ins)}
    return g, inputs, outs


def within_contract(got, want, dtype):
    if dqgraph.dtypes.is_float(dtype):
        g, w = dqgraph.decode(got, dtype), dqgraph.decode(want, dtype)
        return np.abs(g.astype(np.float64) - w).max() <= 1e-5 * max(np.abs(w).max(), 1e-30)
    if dtype in ("u8", "s8", "u16", "s16"):  # quantized outputs: one unit
        return np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1
    return np.array_equal(got, want)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
def test_backend_node_case(testdata, case, fuse):
    g, inputs, outs = load_case(os.path.join(testdata, case))
    assert g.finalized
    got = dqgraph.compile(g, fuse=fuse).run(inputs)
    assert len(got) == len(outs)
    for spec, want in zip(g.outputs, outs):
        assert got[spec.name].shape == want.array.shape
        assert within_contract(got[spec.name], want.array, want.dtype), spec.name


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
