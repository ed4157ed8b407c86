// Times one ONNX model on ONNX Runtime (onnxruntime-node), the peer dqgraph
// is compared with: all graph optimizations, sequential execution, the
// given number of intra-op threads. Inputs are filled deterministically from
// the model's declared types and shapes. Prints one JSON line:
// {"model":..., "median_ms":..., "min_ms":..., "iters":...}
// Usage: node ort_bench.js MODEL [--threads N] [--iters N] [--warmup N]
//        [--accuracy-level L] [--no-opt]
'use strict';
const path = require('path');
const ortDir = process.env.DQG_ORT_DIR;
const ort = require(ortDir ? path.join(ortDir, 'node_modules', 'onnxruntime-node') : 'onnxruntime-node');

function arg(name, def) {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : def;
}

function fill(type, dims) {
    const n = dims.reduce((a, b) => a * b, 1);
    let s = 12345;
    const rnd = () => {
        s = (s * 1103515245 + 12345) >>> 0;
        return s / 4294967296;
    };
    switch (type) {
    case 'float32': return new ort.Tensor(type, Float32Array.from({length: n}, () => rnd() * 4 - 2), dims);
    case 'uint8': return new ort.Tensor(type, Uint8Array.from({length: n}, () => Math.floor(rnd() * 256)), dims);
    case 'int8': return new ort.Tensor(type, Int8Array.from({length: n}, () => Math.floor(rnd() * 256) - 128), dims);
    case 'int64': return new ort.Tensor(type, BigInt64Array.from({length: n}, () => BigInt(Math.floor(rnd() * 100))), dims);
    default: throw new Error('unsupported input type ' + type);
    }
}

(async () => {
    const model = process.argv[2];
    const threads = parseInt(arg('--threads', '2'));
    const iters = parseInt(arg('--iters', '50'));
    const warmup = parseInt(arg('--warmup', '5'));
    const level = arg('--accuracy-level', null);
    const opts = {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: process.argv.includes('--no-opt') ? 'disabled' : 'all',
    };
    if (level !== null)
        opts.extra = {session: {qdq_matmulnbits_accuracy_level: level}};
    const session = await ort.InferenceSession.create(model, opts);
    const feeds = {};
    for (const meta of session.inputMetadata) {
        const dims = meta.shape.map((d) => (typeof d === 'number' ? d : 1));
        feeds[meta.name] = fill(meta.type, dims);
    }
    for (let i = 0; i < warmup; i++)
        await session.run(feeds);
    const times = [];
    for (let i = 0; i < iters; i++) {
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    const median = iters % 2 ? times[(iters - 1) / 2] : (times[iters / 2 - 1] + times[iters / 2]) / 2;
    console.log(JSON.stringify({model: path.basename(model), median_ms: median, min_ms: times[0], iters}));
})().catch((e) => {
    console.error('ort_bench: ' + e.message);
    process.exit(1);
});
