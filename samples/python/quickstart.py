#!/usr/bin/env python3
"""quickstart.py: the C quickstart (samples/quickstart.c) in Python.

A three-layer int8 MLP (batch 256, 1024 -> 4096 -> 4096 -> 1024) built from
ONNX DequantizeLinear and oneDNN Graph DynamicDequantize nodes, MatMul, bias
and ReLU. Prints the explain log, compiles twice (the second time from the
cache), runs fused and unfused, checks every layer against the reference
interpreter on the input that layer was given (u8 activations within one
unit, f32 outputs within 1e-5 of the largest magnitude), and exits 1 if a
check fails.

    DQGRAPH_LIBRARY=build/libdqgraph.so python3 samples/python/quickstart.py
(or with the package installed: pip install ./python)
"""

import os
import sys
import time

import numpy as np

try:
    import dqgraph
except ImportError:  # run from the source tree without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import dqgraph

BATCH, CHECK_ROWS, IN, HID, OUT = 256, 4, 1024, 4096, 1024
X_SCALE, H_SCALE = 0.02, 0.05  # scales of the u8 input and of the u8 activations between layers


def make_layer(k, n, rng):
    return {
        "w": rng.integers(-127, 128, (k, n)).astype(np.int8),
        "w_scale": (0.0004 + 0.0001 * (np.arange(n) % 5)).astype(np.float32),
        "bias": (0.01 * ((np.arange(n) % 21) - 10)).astype(np.float32),
    }


def layer(g, name, x_u8, x_scale, L, dynamic, relu, quantize):
    """u8 activations -> DQ -> MatMul(DQ(s8 weights)) -> bias [-> ReLU] [-> Q]."""
    if dynamic:
        # oneDNN Graph's DynamicDequantize: the scale as a 1-D tensor.
        xf = g.dynamic_dequantize(x_u8, g.constant(np.float32([x_scale])), name=name + "_x_dq")
    else:
        xf = g.dequantize_linear(x_u8, g.constant(np.float32(x_scale)), g.constant(np.uint8(0)),
                                 opset=21, name=name + "_x_dq")
    wf = g.dequantize_linear(g.constant(L["w"]), g.constant(L["w_scale"]), axis=1, opset=21,
                             name=name + "_w_dq")
    y = g.bias_add(g.matmul(xf, wf, name=name), g.constant(L["bias"]), "nxc", name=name + "_bias")
    if relu:
        y = g.relu(y, name=name + "_relu")
    if quantize:
        y = g.quantize_linear(y, g.constant(np.float32(H_SCALE)), g.constant(np.uint8(0)), opset=21,
                              name=name + "_q")
    return y


def build(batch, layers):
    """The MLP; the hidden activations h1 and h2 (u8) are outputs too, so that
    each layer can be checked on the very input it was given."""
    g = dqgraph.Graph()
    x = g.input("x", "u8", (batch, IN))
    h1 = layer(g, "fc1", x, X_SCALE, layers[0], False, True, True)
    h2 = layer(g, "fc2", h1, H_SCALE, layers[1], True, True, True)
    g.output(layer(g, "fc3", h2, H_SCALE, layers[2], False, False, False), "y")
    g.output(h1, "h1")
    g.output(h2, "h2")
    return g.finalize()


def build_layer(i, rows, layers):
    """Layer i alone, for `rows` rows of its u8 input "in": its reference."""
    g = dqgraph.Graph()
    x = g.input("in", "u8", (rows, layers[i]["w"].shape[0]))
    out = layer(g, "fc%d" % (i + 1), x, (X_SCALE, H_SCALE, H_SCALE)[i], layers[i], i == 1, i < 2, i < 2)
    g.output(out, "out")
    return g.finalize()


def check_layers(label, layers, x, out):
    """The numerical contract, layer by layer, on the first CHECK_ROWS rows."""
    ok = True
    ins = (x, out["h1"], out["h2"])
    got = (out["h1"], out["h2"], out["y"])
    for i in range(3):
        ref = build_layer(i, CHECK_ROWS, layers).reference_run({"in": ins[i][:CHECK_ROWS]})["out"]
        mine = got[i][:CHECK_ROWS]
        if i < 2:
            diff = np.abs(mine.astype(np.int32) - ref.astype(np.int32))
            print("| %s fc%d (u8) | largest difference %d unit (%d of %d values one unit apart); "
                  "bound 1 unit |" % (label, i + 1, diff.max(), (diff == 1).sum(), diff.size))
            ok = ok and diff.max() <= 1
        else:
            diff = np.abs(mine.astype(np.float64) - ref).max()
            bound = 1e-5 * np.abs(ref).max()
            print("| %s fc3 (f32) | largest difference %.3g (outputs up to %.3g); bound %.3g |"
                  % (label, diff, np.abs(ref).max(), bound))
            ok = ok and diff <= bound
    return ok


def median_ms(c, inputs, outputs, reps):
    c.run_into(inputs, outputs)  # warm up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        c.run_into(inputs, outputs)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main():
    rng = np.random.default_rng(2024)
    layers = [make_layer(IN, HID, rng), make_layer(HID, HID, rng), make_layer(HID, OUT, rng)]
    g = build(BATCH, layers)
    print("dqgraph quickstart (Python): int8 MLP, batch %d, %d -> %d -> %d -> %d\n"
          % (BATCH, IN, HID, HID, OUT))

    dqgraph.cache_clear()
    t0 = time.perf_counter()
    fused = dqgraph.compile(g)
    compile_ms = (time.perf_counter() - t0) * 1e3
    print("explain:")
    for line in fused.explain():
        print("  " + line)
    for i, p in enumerate(fused.partitions()):
        print("  partition %d: %s" % (i, p))
    t0 = time.perf_counter()
    again = dqgraph.compile(g)
    recompile_ms = (time.perf_counter() - t0) * 1e3
    stats = dqgraph.cache_stats()
    unfused = dqgraph.compile(g, fuse=False)

    x = rng.integers(0, 128, (BATCH, IN)).astype(np.uint8)
    # Preallocated outputs, reused by every run: no allocation in the loop.
    outs = [{name: dqgraph.dtypes.empty(dt, shape) for name, dt, shape in c.outputs}
            for c in (fused, unfused)]
    fused_ms = median_ms(fused, {"x": x}, outs[0], 9)
    unfused_ms = median_ms(unfused, {"x": x}, outs[1], 5)

    print("\n| | |\n|---|---|")
    print("| compile (cache miss) | %.1f ms, %d partitions, %d fused |"
          % (compile_ms, fused.partition_count, fused.fused_count))
    print("| compile again (cache hit) | %.3f ms (%d of %d partitions from the cache) |"
          % (recompile_ms, again.cache_hits, again.partition_count))
    print("| cache counters | %d partitions built (misses), %d whole-graph hits |"
          % (stats.misses, stats.plan_hits))
    print("| fused execute (median) | %.2f ms |" % fused_ms)
    print("| unfused execute (median) | %.2f ms |" % unfused_ms)
    print("| speedup from fusion on this machine | %.1fx |" % (unfused_ms / fused_ms))
    t0 = time.perf_counter()
    ok = check_layers("fused", layers, x, outs[0])
    ok = check_layers("unfused", layers, x, outs[1]) and ok
    print("| reference check | first %d rows, %.0f ms |" % (CHECK_ROWS, (time.perf_counter() - t0) * 1e3))
    print("\n%s: every layer of both paths within the numerical contract of the reference"
          % ("OK" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
