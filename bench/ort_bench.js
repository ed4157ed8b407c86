// Times one ONNX model on ONNX Runtime (onnxruntime-node), the peer dqgraph
// is compared with: all graph optimizations, sequential execution, the
// given number of intra-op threads. Inputs are filled deterministically from
// the model's declared types and shapes. Prints one JSON line:
// {"model":..., "median_ms":..., "min_ms":..., "iters":...}
// Usage: node ort_bench.js MODEL [--threads N] [--iters N] [--warmup N]
//        [--accuracy-level L] [--no-opt] [--case DIR]
// With --case DIR it times nothing: it runs the model once and writes an
// ONNX backend-test case, DIR/model.onnx and DIR/test_data_set_0/ with the
// inputs and ONNX Runtime's outputs as TensorProto files, for
// `dqgraph test DIR` to compare against.
'use strict';
const fs = require('fs');
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

// A TensorProto: dims (1), data_type (2), name (8), raw_data (9).
function varint(v) {
    const out = [];
    let x = BigInt(v);
    do {
        let b = Number(x & 0x7fn);
        x >>= 7n;
        if (x > 0n)
            b |= 0x80;
        out.push(b);
    } while (x > 0n);
    return out;
}

function tensorProto(name, tensor) {
    const codes = {float32: 1, uint8: 2, int8: 3, int64: 7};
    if (!(tensor.type in codes))
        throw new Error('cannot write a ' + tensor.type + ' tensor');
    const parts = [];
    for (const d of tensor.dims)
        parts.push(Buffer.from([0x08, ...varint(d)]));
    parts.push(Buffer.from([0x10, ...varint(codes[tensor.type])]));
    const n = Buffer.from(name, 'utf8');
    parts.push(Buffer.from([0x42, ...varint(n.length)]), n);
    const d = tensor.data;
    const raw = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
    parts.push(Buffer.from([0x4a, ...varint(raw.length)]), raw);
    return Buffer.concat(parts);
}

async function writeCase(session, feeds, model, dir) {
    const set = path.join(dir, 'test_data_set_0');
    fs.mkdirSync(set, {recursive: true});
    fs.copyFileSync(model, path.join(dir, 'model.onnx'));
    session.inputNames.forEach((name, i) =>
        fs.writeFileSync(path.join(set, 'input_' + i + '.pb'), tensorProto(name, feeds[name])));
    const out = await session.run(feeds);
    session.outputNames.forEach((name, i) =>
        fs.writeFileSync(path.join(set, 'output_' + i + '.pb'), tensorProto(name, out[name])));
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
    const caseDir = arg('--case', null);
    if (caseDir !== null) {
        await writeCase(session, feeds, model, caseDir);
        return;
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
