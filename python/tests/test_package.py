"""The package: one version number everywhere, the library it loaded, and
an offline installation with pip that works outside the source tree and
finds the library by each documented lookup."""

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


PIP_TIMEOUT = 120  # seconds; an offline install of this package takes about one


def _pip_install(tmp_path):
    """`pip install --no-index ./python` (build isolation on: the package's
    own backend needs nothing) from a copy of python/, into a virtual
    environment that sees the system's NumPy, or, without the venv module,
    into a --target folder; pip is the one the system's Python has. Returns
    (python to run, extra PYTHONPATH)."""
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "python"), src,
                    ignore=shutil.ignore_patterns("tests", "__pycache__"))
    before = sorted(p.relative_to(src) for p in src.rglob("*"))
    venv = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                       capture_output=True, text=True, timeout=PIP_TIMEOUT)
    if r.returncode == 0 and (venv / "bin" / "python").exists():
        python, cmd, pythonpath = str(venv / "bin" / "python"), [], ""
    else:
        target = tmp_path / "site"
        python, cmd, pythonpath = sys.executable, ["--no-deps", "--target", str(target)], str(target)
    r = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-cache-dir"] + cmd
                       + [str(src)], capture_output=True, text=True, timeout=PIP_TIMEOUT,
                       env=dict(os.environ, PIP_NO_INPUT="1"))
    if r.returncode != 0 and "No module named pip" in r.stderr:
        pytest.skip("pip is not installed for %s" % python)
    assert r.returncode == 0, r.stdout + r.stderr
    # Nothing is written next to the sources (no build/, no *.egg-info).
    assert sorted(p.relative_to(src) for p in src.rglob("*")
                  if "__pycache__" not in p.parts) == before
    return python, pythonpath


RUN = ("import dqgraph, numpy as np; g = dqgraph.Graph(); "
       "g.output(g.relu(g.input('x', 'f32', (2,))), 'y'); "
       "print(dqgraph.__file__); print(dqgraph.library_path); "
       "print(dqgraph.compile(g).run(x=np.float32([-1, 2]))['y'])")


def _run_installed(python, pythonpath, cwd, **env):
    e = {k: v for k, v in os.environ.items()
         if k not in ("DQGRAPH_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH")}
    e.update(env)
    if pythonpath:
        e["PYTHONPATH"] = pythonpath
    return subprocess.run([python, "-c", RUN], env=e, capture_output=True, text=True, cwd=str(cwd),
                          timeout=PIP_TIMEOUT)


def test_pip_install_offline_and_the_library_lookup(tmp_path):
    """The installed package, imported outside the source tree, finds the
    library through each documented lookup in turn."""
    python, pythonpath = _pip_install(tmp_path)
    lib = os.path.realpath(dqgraph.library_path)
    if not os.path.exists(lib):
        pytest.skip("the library was found by the system loader, not as a file")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    # 1. DQGRAPH_LIBRARY.
    r = _run_installed(python, pythonpath, elsewhere, DQGRAPH_LIBRARY=lib)
    assert r.returncode == 0, r.stderr
    installed_file, found, result = r.stdout.splitlines()
    assert not installed_file.startswith(os.path.join(ROOT, "python"))
    assert os.path.realpath(found) == lib and result == "[0. 2.]"

    # 2. Nothing set, no library anywhere: an ImportError that says what to do.
    r = _run_installed(python, pythonpath, elsewhere)
    assert r.returncode != 0 and "DQGRAPH_LIBRARY" in r.stderr and "cmake --install" in r.stderr

    # 3. The system loader, by the SONAME (as after `cmake --install`).
    sodir = tmp_path / "lib"
    sodir.mkdir()
    shutil.copy(lib, sodir / "libdqgraph.so.0.1")
    r = _run_installed(python, pythonpath, elsewhere, LD_LIBRARY_PATH=str(sodir))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == "libdqgraph.so.0.1"

    # 4. A copy next to the installed package wins over the system's.
    pkg_dir = os.path.dirname(installed_file)
    shutil.copy(lib, os.path.join(pkg_dir, "libdqgraph.so"))
    r = _run_installed(python, pythonpath, elsewhere, LD_LIBRARY_PATH=str(sodir))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == os.path.join(pkg_dir, "libdqgraph.so")


def test_build_backend_reads_pyproject_without_tomllib():
    """build_backend.py reads pyproject.toml with tomllib where Python has
    it (3.11+) and with its own line reader before; both read the same."""
    tomllib = pytest.importorskip("tomllib")
    sys.path.insert(0, os.path.join(ROOT, "python"))
    try:
        import build_backend
    finally:
        sys.path.pop(0)
    path = os.path.join(ROOT, "python", "pyproject.toml")
    with open(path, "rb") as f:
        want = tomllib.load(f)["project"]
    assert build_backend._read_project_table(path) == want
    assert build_backend.get_requires_for_build_wheel() == []


def test_version_mismatch_is_refused(monkeypatch):
    """__version__ is checked against dqg_version() up to the minor number."""
    monkeypatch.setattr(dqgraph, "version", lambda: "0.2.0")
    with pytest.raises(ImportError, match="must agree up to the minor"):
        dqgraph._check_version()
    monkeypatch.setattr(dqgraph, "version", lambda: "0.1.7")
    with pytest.warns(UserWarning, match="runs with libdqgraph 0.1.7"):
        dqgraph._check_version()
    monkeypatch.setattr(dqgraph, "version", lambda: dqgraph.__version__)
    dqgraph._check_version()  # neither


def test_the_readme_example_runs(tmp_path, monkeypatch):
    """README.md's Python example, as printed, on made-up data and a model
    with a symbolic "batch" dimension (tests/corpus/symbolic_dim.onnx)."""
    import numpy as np
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    section = readme[readme.index("\n## Python\n"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    M, K, N = 8, 64, 16
    rng = np.random.default_rng(9)
    env = {"M": M, "K": K, "w_s8": rng.integers(-127, 128, (K, N)).astype(np.int8),
           "w_scale": rng.uniform(0.001, 0.01, N).astype(np.float32),
           "x_u8": rng.integers(0, 256, (M, K)).astype(np.uint8),
           "y_buf": np.empty((M, N), np.float32)}
    shutil.copy(os.path.join(ROOT, "tests", "corpus", "symbolic_dim.onnx"), tmp_path / "model.onnx")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), env)
    out, ref = env["out"], env["ref"]
    assert out.shape == (M, N) and np.array_equal(env["y_buf"], out)
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max()
    assert env["m"].inputs[0].shape == (8, 4)
