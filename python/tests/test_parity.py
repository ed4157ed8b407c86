"""The binding gives the C API's results bit for bit: the same models run
through the dqgraph tool (C, dqg_onnx_load_file + dqg_compile +
dqg_execute) and through Python, fused and unfused."""

import glob
import os
import subprocess

import numpy as np
import pytest

import dqgraph

NODE_CASES = ["test_qlinearmatmul_2D", "test_qlinearconv", "test_matmulinteger",
              "test_dequantizelinear_axis", "test_gemm_all_attributes",
              "test_conv_with_strides_padding", "test_dynamicquantizelinear"]


def compare(tool, model, inputs, tmp_path):
    """Runs `model` on the .pb files `inputs` both ways; asserts equal bytes."""
    g = dqgraph.load_onnx(model)
    names = [t.name for t in g.inputs]
    arrays = {}
    for i, p in enumerate(inputs):
        t = dqgraph.read_tensor(p)
        arrays[t.name if t.name in names else names[i]] = t.array
    for fuse in (True, False):
        out_dir = tmp_path / ("fused" if fuse else "unfused")
        out_dir.mkdir()
        cmd = [tool, "run", model, "-o", str(out_dir)] + sum((["-i", p] for p in inputs), [])
        if not fuse:
            cmd.append("--no-fuse")
        subprocess.run(cmd, check=True, capture_output=True)
        got = dqgraph.compile(g, fuse=fuse).run(arrays)
        for i, spec in enumerate(g.outputs):
            c_out = dqgraph.read_tensor(str(out_dir / ("output_%d.pb" % i)))
            assert c_out.name == spec.name
            assert got[spec.name].tobytes() == c_out.array.tobytes(), (model, spec.name, fuse)


@pytest.mark.parametrize("case", NODE_CASES)
def test_same_bytes_as_the_c_api_on_node_tests(tool, testdata, case, tmp_path):
    d = os.path.join(testdata, case)
    compare(tool, d + "/model.onnx", sorted(glob.glob(d + "/test_data_set_0/input_*.pb")), tmp_path)


def test_same_bytes_as_the_c_api_on_the_sample_model(tool, tmp_path):
    """samples/onnx_model's int8 MLP: two fused int8 layers."""
    sample = os.path.join(os.path.dirname(tool), "onnx_model")
    if not os.access(sample, os.X_OK):
        pytest.skip("samples are not built")
    subprocess.run([sample, str(tmp_path)], check=True, capture_output=True)
    compare(tool, str(tmp_path / "qdq_mlp.onnx"), [str(tmp_path / "input_0.pb")], tmp_path)


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
