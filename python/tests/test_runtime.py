"""Compiled graphs from Python: introspection, the cache, threads (the GIL
is released in the library), preallocated outputs, and memory that stays
flat over many compile/run cycles."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import dqgraph
from conftest import ROOT


def int8_layer(m=16, k=64, n=32, seed=1):
    rng = np.random.default_rng(seed)
    g = dqgraph.Graph()
    x = g.input("x", "u8", (m, k))
    w = g.dequantize_linear(g.constant(rng.integers(-127, 128, (k, n)).astype(np.int8), name="w"),
                            g.constant(rng.uniform(0.001, 0.01, n).astype(np.float32)), axis=1,
                            name="w_dq")
    xf = g.dequantize_linear(x, g.constant(np.float32(0.05)), g.constant(np.uint8(100)), name="x_dq")
    y = g.matmul(xf, w, name="fc")
    g.output(g.relu(g.bias_add(y, g.constant(np.linspace(-1, 1, n, dtype=np.float32)), "nxc")), "y")
    return g, rng.integers(0, 256, (m, k)).astype(np.uint8)


def test_explain_partitions_dot_and_counts():
    g, x = int8_layer()
    c = dqgraph.compile(g)
    u = dqgraph.compile(g, fuse=False)
    assert u.fused_count == 0 and u.partition_count > c.partition_count
    # How the int8 layer fuses depends on the CPU (VNNI or AMX: one int8
    # MatMul); the explain log says what was done either way.
    assert any("'fc'" in line for line in c.explain())
    if "int8" in c.partitions()[0]:
        assert c.partition_count == 1 and c.fused_count == 1
    assert "cluster" in c.dot() and "cluster" not in c.dot(after_passes=False)
    assert "partition 0" in c.text()
    assert c.peak_memory >= 0
    assert c.inputs == [("x", "u8", (16, 64))] and c.outputs == [("y", "f32", (16, 32))]
    ref = g.reference_run(x=x)["y"]
    for comp in (c, u):
        got = comp.run(x=x)["y"]
        assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()


def test_cache_hit_on_recompile_and_clear():
    dqgraph.cache_clear()
    g, _ = int8_layer(seed=7)
    dqgraph.compile(g)
    s1 = dqgraph.cache_stats()
    assert s1.misses >= 1 and s1.entries >= 1
    again = dqgraph.compile(g)
    s2 = dqgraph.cache_stats()
    assert again.cache_hits == again.partition_count
    assert s2.plan_hits == s1.plan_hits + 1
    dqgraph.cache_clear()
    assert dqgraph.cache_stats().hits == 0
    cap = dqgraph.cache_capacity()
    dqgraph.set_cache_capacity(0)
    assert dqgraph.cache_capacity() == 0
    dqgraph.set_cache_capacity(cap)
    with pytest.raises(dqgraph.InvalidArgument):
        dqgraph.set_cache_capacity(-1)


def test_run_into_reuses_buffers_without_copies():
    g, x = int8_layer()
    c = dqgraph.compile(g)
    out = {"y": np.empty((16, 32), np.float32)}
    res = c.run_into({"x": x}, out)
    assert res["y"] is out["y"]
    np.testing.assert_array_equal(out["y"], c.run(x=x)["y"])


def test_options_threads_backend_fpmath():
    g, x = int8_layer()
    ref = g.reference_run(x=x)["y"]
    for kw in ({"threads": 1}, {"backend": "reference"}, {"fpmath": "bf16", "fuse": False}):
        got = dqgraph.compile(g, **kw).run(x=x)["y"]
        # bf16 math is opt-in and looser; the others hold the f32 contract.
        bound = (2.0**-7 * np.abs(ref).max() * 64) if kw.get("fpmath") else 1e-5 * np.abs(ref).max()
        assert np.abs(got - ref).max() <= bound, kw


@pytest.mark.parametrize("backend", ["reference", "onednn"])
def test_one_compiled_graph_from_many_threads(backend):
    g, _ = int8_layer(m=64, k=256, n=128)
    c = dqgraph.compile(g, backend=backend)
    rng = np.random.default_rng(3)
    xs = [rng.integers(0, 256, (64, 256)).astype(np.uint8) for _ in range(8)]
    want = [c.run(x=x)["y"] for x in xs]
    errors, barrier = [], threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()
            for _ in range(20):
                got = c.run(x=xs[i])["y"]
                if not np.array_equal(got, want[i]):
                    errors.append("thread %d: wrong result" % i)
                    return
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_compiles_from_many_threads_share_the_cache():
    g, x = int8_layer(seed=11)
    dqgraph.cache_clear()
    dqgraph.compile(g).close()
    one_thread = dqgraph.cache_stats().misses
    dqgraph.cache_clear()
    compiled, lock = [], threading.Lock()
    barrier = threading.Barrier(6)

    def work():
        barrier.wait()
        c = dqgraph.compile(g)
        with lock:
            compiled.append(c)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Each partition built once, whatever the threads.
    assert dqgraph.cache_stats().misses == one_thread
    results = [c.run(x=x)["y"] for c in compiled]
    assert len(results) == 6 and all(np.array_equal(r, results[0]) for r in results)


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_memory_flat_over_10000_compile_run_cycles():
    """Each cycle builds a graph (input, constants, three front-door and op
    builders, output), compiles it (the cache hits after the first), runs
    it with new and with preallocated outputs, reads the explain log and
    frees both handles: every allocation path of the binding and of the
    library's graph, compile and execute.

    Measured here: RSS grows by 0 KiB over the 10,000 cycles after 2,000 of
    warm-up (caches, allocator pools), in about 2 s; a compiled graph left
    undestroyed (about 2 KB) grows it by 20 MB. The bound, 512 KiB, is what
    a leak of about 50 bytes per cycle would reach."""
    w = np.arange(8 * 4, dtype=np.int8).reshape(8, 4) % 5 - 2
    xs = np.arange(32, dtype=np.uint8).reshape(4, 8)
    out = {"y": np.empty((4, 4), np.float32)}

    def cycles(n):
        for _ in range(n):
            g = dqgraph.Graph()
            x = g.input("x", "u8", (4, 8))
            xf = g.dequantize_linear(x, g.constant(np.float32(0.5)), g.constant(np.uint8(3)),
                                     name="x_dq")
            wf = g.dequantize_linear(g.constant(w), g.constant(np.float32(0.25)), name="w_dq")
            g.output(g.relu(g.matmul(xf, wf, name="fc")), "y")
            c = dqgraph.compile(g)
            c.run(x=xs)
            c.run_into({"x": xs}, out)
            c.explain()
            c.close()
            g.close()

    cycles(2000)  # warm up: caches, allocator pools
    before = rss_kib()
    cycles(10000)
    grown = rss_kib() - before
    assert grown < 512, "RSS grew by %d KiB over 10000 cycles" % grown
    np.testing.assert_array_equal(out["y"], np.maximum(
        ((xs.astype(np.float32) - 3) * 0.5) @ (w.astype(np.float32) * 0.25), 0))


# ---- The GIL is released while the library works ----------------------------


def test_a_blocked_library_call_lets_other_threads_run(tmp_path):
    """A library call that cannot finish until another Python thread acts:
    dqg_graph_dump (the function Graph.dump calls, as the binding declared
    it) writes a 6000-op graph, hundreds of KB, into a pipe that only a
    Python thread reads. Once the pipe's 64 KiB buffer is full the call
    blocks in write(); if it held the GIL the reader could never run and
    the call never return. In a child process, so that such a deadlock
    fails this test by its timeout instead of hanging the run."""
    code = (
        "import ctypes, os, threading, numpy as np, dqgraph\n"
        "from dqgraph import _native\n"
        "g = dqgraph.Graph()\n"
        "y = g.input('x', 'f32', (4, 4))\n"
        "for i in range(3000):\n"
        "    y = g.add(g.relu(y), g.constant(np.full((4, 4), i, np.float32)))\n"
        "g.output(y, 'y')\n"
        "r, w = os.pipe()\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.fdopen.restype = ctypes.c_void_p\n"
        "libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]\n"
        "libc.fclose.argtypes = [ctypes.c_void_p]\n"
        "f = libc.fdopen(w, b'w')\n"
        "got = []\n"
        "def drain():\n"
        "    while True:\n"
        "        b = os.read(r, 65536)\n"
        "        if not b:\n"
        "            return\n"
        "        got.append(b)\n"
        "t = threading.Thread(target=drain)\n"
        "t.start()\n"
        "_native.lib.dqg_graph_dump(g._handle(), 0, f)\n"
        "libc.fclose(f)\n"
        "t.join()\n"
        "text = b''.join(got).decode()\n"
        "assert text == g.dump(), 'the pipe got something else'\n"
        "print(len(text))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               DQGRAPH_LIBRARY=dqgraph.library_path)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 4 * 65536  # well beyond what a pipe holds


def _python_runs_during(call, attempts=3):
    """Whether another Python thread executes Python code in the middle of
    `call()`. A thread records a timestamp every half millisecond; a stamp
    in the middle half of the call can only be taken if the GIL was free
    then: with the GIL held, another thread runs at most one switch
    interval (set to 0.5 ms here) around the call's Python edges. Returns
    (whether it did, the longest call's duration)."""
    stamps, stop = [], threading.Event()

    def spin():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.0005)

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    t = threading.Thread(target=spin)
    t.start()
    longest = 0.0
    try:
        for _ in range(attempts):
            t0 = time.perf_counter()
            call()
            t1 = time.perf_counter()
            longest = max(longest, t1 - t0)
            q = (t1 - t0) / 4
            if any(t0 + q < s < t1 - q for s in list(stamps)):
                return True, longest
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    return False, longest


def test_run_and_compile_release_the_gil():
    rng = np.random.default_rng(4)
    g = dqgraph.Graph()
    x = g.input("x", "f32", (128, 512))
    g.output(g.matmul(x, g.constant(rng.standard_normal((512, 512)).astype(np.float32))), "y")
    # The reference backend: one thread of plain C, about 0.1 s per run here.
    c = dqgraph.compile(g, backend="reference", threads=1)
    xs = np.ones((128, 512), np.float32)
    ran, seconds = _python_runs_during(lambda: c.run(x=xs))
    assert seconds > 0.01, "the run is too short to tell (%.4f s)" % seconds
    assert ran, "no Python code ran during a %.3f s run" % seconds

    # A long chain: compiling its 6000 ops takes about 0.1 s here.
    chain = dqgraph.Graph()
    y = chain.input("x", "f32", (4, 4))
    for i in range(3000):
        y = chain.add(chain.relu(y), chain.constant(np.full((4, 4), i, np.float32)))
    chain.output(y, "y")
    chain.finalize()

    def compile_afresh():
        dqgraph.cache_clear()
        dqgraph.compile(chain, threads=1).close()

    ran, seconds = _python_runs_during(compile_afresh)
    assert seconds > 0.01, "the compile is too short to tell (%.4f s)" % seconds
    assert ran, "no Python code ran during a %.3f s compile" % seconds


def test_fpmath_int8_weight_only():
    # fpmath="int8": a weight-only int4 layer quantizes its activations per
    # K-block of 32 (opt-in, approximate). Each activation moves by at most
    # half its block's step, so y moves by at most e . |W|.
    rng = np.random.default_rng(5)
    m, k, n, blk = 2, 128, 48, 32
    w = rng.integers(-8, 8, (k, n)).astype(np.int8)
    scale = rng.uniform(0.01, 0.02, (k // blk, n)).astype(np.float32)
    g = dqgraph.Graph()
    x = g.input("x", "f32", (m, k))
    wf = g.dequantize_linear(g.constant(w, "s4"), g.constant(scale), axis=0, block_size=blk,
                             opset=21)
    g.output(g.matmul(x, wf), "y")
    xv = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    ref = g.reference_run(x=xv)["y"]
    c = dqgraph.compile(g, fpmath="int8")
    got = c.run(x=xv)["y"]
    step = np.abs(xv.reshape(m, k // blk, blk)).max(axis=2) / 127
    e = np.repeat(step / 2, blk, axis=1)
    wdq = np.abs(w * np.repeat(scale, blk, axis=0))
    assert np.all(np.abs(got - ref) <= e @ wdq * (1 + 1e-5) + 1e-5 * np.abs(ref).max())
    if "wo-int8-act" not in c.partitions()[0]:
        # CPUs without VNNI run the exact kernel.
        np.testing.assert_allclose(got, ref, atol=1e-5 * np.abs(ref).max())
