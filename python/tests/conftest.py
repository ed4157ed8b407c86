"""Where the tests find what they compare against: the C library (through
the package's own lookup, or DQGRAPH_LIBRARY), the dqgraph tool
(DQGRAPH_TOOL, else build/dqgraph) and the ONNX backend tests
(DQGRAPH_ONNX_TESTDATA, else libonnx-testdata's folder)."""

import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))


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
    path = os.environ.get("DQGRAPH_ONNX_TESTDATA", "/usr/share/libonnx-testdata/data/node")
    if not os.path.isdir(path):
        pytest.skip("ONNX backend tests not found (%s)" % path)
    return path
