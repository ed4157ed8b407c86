"""The package: one version number everywhere, the library it loaded, and
an installation with pip that works outside the source tree."""

import os
import re
import shutil
import subprocess
import sys

import pytest

import dqgraph
from conftest import ROOT


def test_versions_agree():
    assert dqgraph.__version__ == dqgraph.version()
    with open(os.path.join(ROOT, "python", "pyproject.toml")) as f:
        assert re.search(r'^version = "%s"$' % re.escape(dqgraph.__version__), f.read(), re.M)
    with open(os.path.join(ROOT, "include", "dqgraph.h")) as f:
        assert '#define DQG_VERSION_STRING "%s"' % dqgraph.__version__ in f.read()
    assert os.path.exists(dqgraph.library_path) or dqgraph.library_path.startswith("libdqgraph")


def test_dqgraph_library_names_a_missing_file():
    env = dict(os.environ, DQGRAPH_LIBRARY="/nonexistent/libdqgraph.so")
    r = subprocess.run([sys.executable, "-c", "import dqgraph"], env=env, capture_output=True,
                       text=True, cwd=os.path.join(ROOT, "python"))
    assert r.returncode != 0 and "DQGRAPH_LIBRARY" in r.stderr and "no such file" in r.stderr


def test_pip_install_outside_the_source_tree(tmp_path):
    """pip install --no-build-isolation ./python into a folder, then import it
    from elsewhere with the library named by DQGRAPH_LIBRARY."""
    target = tmp_path / "site"
    # From a copy: setuptools writes build/ and *.egg-info next to the sources.
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "python"), src,
                    ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                        "--no-index", "--target", str(target), str(src)],
                       capture_output=True, text=True)
    if r.returncode != 0 and "No module named pip" in r.stderr:
        pytest.skip("pip is not installed for %s" % sys.executable)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, PYTHONPATH=str(target), DQGRAPH_LIBRARY=dqgraph.library_path)
    code = ("import dqgraph, numpy as np; g = dqgraph.Graph(); "
            "g.output(g.relu(g.input('x', 'f32', (2,))), 'y'); "
            "print(dqgraph.__file__, dqgraph.compile(g).run(x=np.float32([-1, 2]))['y'])")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert str(target) in r.stdout and "[0. 2.]" in r.stdout
