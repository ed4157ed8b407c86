"""Where the tests find what they compare against: the C library (through
the package's own lookup, or DQGRAPH_LIBRARY), the dqgraph tool
(DQGRAPH_TOOL, else build/dqgraph), the ONNX backend tests
(DQGRAPH_ONNX_TESTDATA, else libonnx-testdata's folder) and the list of
those the C conformance suite runs (DQGRAPH_ONNX_CASES, written by
cmake/onnx.cmake); and how an ONNX backend test case is loaded and run."""

import glob
import os
import sys

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import dqgraph  # noqa: E402  (after the path above)

TESTDATA = os.environ.get("DQGRAPH_ONNX_TESTDATA", "/usr/share/libonnx-testdata/data/node")

# Without the build's list (pytest run by hand), these cases stand for it:
# one or more of each dequantize/quantize form and of the ops around them.
SMALL_CASE_LIST = [
    "test_dequantizelinear", "test_dequantizelinear_axis", "test_quantizelinear",
    "test_quantizelinear_axis", "test_dynamicquantizelinear", "test_qlinearmatmul_2D",
    "test_qlinearmatmul_3D", "test_qlinearconv", "test_matmulinteger", "test_matmul_2d",
    "test_gemm_default_vector_bias", "test_basic_conv_with_padding",
    "test_conv_with_strides_padding", "test_relu", "test_add_bcast", "test_cast_FLOAT_to_FLOAT16",
]


def conformance_cases():
    """The ONNX backend node tests the C conformance suite runs (all of them
    when ctest runs the Python tests), else SMALL_CASE_LIST."""
    path = os.environ.get("DQGRAPH_ONNX_CASES")
    if path and os.path.exists(path):
        with open(path) as f:
            cases = [line.strip() for line in f if line.strip()]
        if cases:
            return cases
    return SMALL_CASE_LIST


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def tool():
    path = os.environ.get("DQGRAPH_TOOL", os.path.join(ROOT, "build", "dqgraph"))
    if not os.access(path, os.X_OK):
        pytest.skip("the dqgraph tool is not built (%s)" % path)
    return path


@pytest.fixture(scope="session")
def testdata():
    if not os.path.isdir(TESTDATA):
        pytest.skip("ONNX backend tests not found (%s)" % TESTDATA)
    return TESTDATA


def _numbered(folder, prefix):
    files = glob.glob(os.path.join(folder, prefix + "_*.pb"))
    return sorted(files, key=lambda p: int(os.path.basename(p)[len(prefix) + 1:-3]))


class Case:
    """One data set of an ONNX backend test: the model loaded with the data
    set's values (an input whose value the importer needs, such as Reshape's
    shape, becomes a constant, as `dqgraph run -i` does), the arrays for the
    remaining graph inputs, and the expected outputs."""

    def __init__(self, case_dir, data_set):
        self.model = os.path.join(case_dir, "model.onnx")
        self.input_files = _numbered(data_set, "input")
        ins = [dqgraph.read_tensor(p) for p in self.input_files]
        self.expected = [dqgraph.read_tensor(p) for p in _numbered(data_set, "output")]
        # Named by the file's tensor name, else by position (as the tool does).
        values = {(t.name or i): t.array for i, t in enumerate(ins)}
        self.graph = dqgraph.load_onnx(self.model, values=values)
        names = [t.name for t in self.graph.inputs]
        by_name = {t.name: t.array for t in ins if t.name in names}
        if len(by_name) < len(names) and len(ins) == len(names):
            by_name = {n: t.array for n, t in zip(names, ins)}
        self.inputs = by_name


def case_data_sets(testdata_dir, case):
    d = os.path.join(testdata_dir, case)
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    assert sets, "%s has no data set" % d
    return [Case(d, s) for s in sets]


def within_contract(got, want, dtype, shape):
    """The numerical contract (README): float results within 1e-5 of the
    expected value relative to its largest finite magnitude (NaN where NaN is
    expected, the same infinity where one is); quantized 8/16-bit integers
    within one unit; other integers exact."""
    if dqgraph.dtypes.is_float(dtype):
        g = dqgraph.decode(got, dtype, shape).astype(np.float64)
        w = dqgraph.decode(want, dtype, shape).astype(np.float64)
        finite = np.isfinite(w)
        scale = np.abs(w[finite]).max() if finite.any() else 0.0
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        with np.errstate(invalid="ignore"):
            close = finite & (np.abs(g - w) <= 1e-5 * max(scale, 1e-30))
        return bool(np.all(same | close))
    if dtype in ("u8", "s8", "u16", "s16"):
        return int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max(initial=0)) <= 1
    return np.array_equal(got, want)
