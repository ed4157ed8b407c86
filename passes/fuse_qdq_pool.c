/* fuse quantized pooling: DequantizeLinear (u8/s8, one constant scale and
 * zero point) -> MaxPool or AveragePool -> QuantizeLinear back to the same
 * type with the same scale and zero point becomes one pooling op on the
 * quantized tensor, so int8 stays int8 across the pooling.
 *
 * Max: a dequantize of positive scale is monotone, so the max of the
 * dequantized window is the dequantize of the max, and quantizing it back
 * with the same parameters gives that element again: exact.
 * Average: the mean of (x - zp) * scale quantized back is the mean of x
 * rounded to nearest (ties to even), rounded once instead of three times
 * (dequantize, average, quantize), so it can differ from the float path by
 * one unit where the mean lies within float rounding of a half. Padding
 * counted by an include-padding average is a dequantized 0, which is the
 * zero point on the quantized side: that case is fused only when the zero
 * point is 0. The rewrite happens on the compile-time copy of the graph:
 * the pooling op reads the dequantize's input and writes the quantize's
 * output, and both are removed.
 *
 * An average whose quantize has another scale or zero point than the
 * dequantize is requantized in the same step: saturate(rne(mean * sx / sy
 * + zy - zx * sx / sy)) in f32, one rounding (oneDNN's pooling with a
 * linear post-op), within one unit of the float path as above.
 *
 * The same rewrite moves Reshape, Transpose, Pad and a nearest Resize
 * between a dequantize and a quantize of equal parameters onto the
 * quantized tensor (a channel shuffle as ONNX Runtime's quantizer writes
 * it, a Flatten, the explicit padding of converted TensorFlow models, the
 * upsampling of a detection neck): they move values without changing them,
 * so it is exact; a constant Pad adds its constant as the quantize would
 * write it. A chain of such ops between the two (DepthToSpace, imported as
 * Reshape, Transpose, Reshape) moves as a whole, its links holding the
 * quantized type. */
#include <math.h>
#include <string.h>

#include "graph/dtype.h"
#include "passes/fuse_common.h"

static bool pads_anything(const dqg_pool_params *a)
{
    for (int i = 0; i < a->spatial_rank; i++)
        if (a->pads_begin[i] || a->pads_end[i])
            return true;
    return false;
}

/* Why DQ -> pool -> Q cannot run on the quantized tensor, or NULL; then
 * *requant says whether the quantize's scale or zero point differ from the
 * dequantize's (an average is requantized). */
static const char *refusal(const dqg_graph *g, const dqg_op *dq, const dqg_op *pool,
                           const dqg_op *q, bool *requant, char *why, size_t n)
{
    dqg_dtype xt = g->tensors[dq->inputs[0]].dtype, yt = g->tensors[q->outputs[0]].dtype;
    if (xt != DQG_U8 && xt != DQG_S8) {
        snprintf(why, n, "the dequantized tensor is %s, not u8 or s8", dqg_dtype_name(xt));
        return why;
    }
    if (!dqg_fuse_const_int_params(g, dq) || !dqg_fuse_const_int_params(g, q)) {
        snprintf(why, n, "the scales and zero points are not one constant each");
        return why;
    }
    if (yt != xt) {
        snprintf(why, n, "the quantize writes %s, the dequantize reads %s", dqg_dtype_name(yt),
                 dqg_dtype_name(xt));
        return why;
    }
    float s = dqg_fuse_scale(g, dq), sq = dqg_fuse_scale(g, q);
    int64_t z = dqg_fuse_zero_point(g, dq), zq = dqg_fuse_zero_point(g, q);
    bool same = memcmp(&s, &sq, sizeof s) == 0 && z == zq;
    bool avg = pool->kind == DQG_OP_POOL && pool->attrs.pool.algorithm != DQG_POOL_MAX;
    if (!same && !avg) {
        snprintf(why, n,
                 "the quantize's scale and zero point (%g, %lld) differ from the dequantize's "
                 "(%g, %lld)",
                 (double)sq, (long long)zq, (double)s, (long long)z);
        return why;
    }
    /* Positive and normal, and (x - zp) * s stays finite: then
     * rne((x - zp) * s / s) is x - zp exactly. */
    for (int i = 0; i < 2; i++) {
        float v = i ? sq : s;
        if (!(v > 0.0f) || !isnormal(v) || v > 1e30f) {
            snprintf(why, n, "the %s's scale %g is not a positive normal number",
                     i ? "quantize" : "dequantize", (double)v);
            return why;
        }
    }
    *requant = !same;
    /* The requantization's factor sx / sy and offset zy - zx sx / sy must
     * be finite: an infinite factor times a zero mean is NaN, where the
     * float path saturates. */
    if (!same) {
        float a = s / sq, b = (float)zq - (float)z * a;
        if (!isfinite(a) || !isfinite(b)) {
            snprintf(why, n, "requantizing by %g / %g overflows f32", (double)s, (double)sq);
            return why;
        }
    }
    if (pool->kind != DQG_OP_POOL)
        return NULL;
    const dqg_pool_params *a = &pool->attrs.pool;
    if (a->algorithm == DQG_POOL_AVG_INCLUDE_PAD && z != 0 && pads_anything(a)) {
        snprintf(why, n,
                 "the average counts padding, a dequantized 0 that is the zero point %lld on the "
                 "quantized side",
                 (long long)z);
        return why;
    }
    return NULL;
}

/* An op that moves values without changing them, with one input. */
static bool moves(const dqg_pass_state *s, int32_t i)
{
    const dqg_op *op = &s->graph->ops[i];
    return !op->removed && s->group[i] < 0 && op->n_inputs == 1 &&
           (op->kind == DQG_OP_RESHAPE || op->kind == DQG_OP_TRANSPOSE || op->kind == DQG_OP_PAD ||
            (op->kind == DQG_OP_RESIZE && op->attrs.resize.mode == DQG_RESIZE_NEAREST));
}

enum { MAX_CHAIN = 8 };

dqg_status dqg_pass_fuse_qdq_pool(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    if (s->options->disable_fusion)
        return DQG_OK;
    for (int32_t i = 0; i < g->n_ops; i++) {
        dqg_op *pool = &g->ops[i];
        bool move = moves(s, i);
        if (pool->removed || (pool->kind != DQG_OP_POOL && !move) || pool->n_inputs != 1 ||
            s->group[i] >= 0)
            continue;
        dqg_tensor_id x = pool->inputs[0];
        int32_t d = g->tensors[x].producer;
        if (d < 0 || g->ops[d].removed || s->group[d] >= 0 || g->ops[d].kind != DQG_OP_DEQUANTIZE ||
            dqg_pass_single_consumer(s, x) != i)
            continue;
        /* Ops that move values may follow one another (DepthToSpace as
         * Reshape, Transpose, Reshape): the chain up to the quantize, each
         * f32 result read by the next alone. */
        int32_t chain[MAX_CHAIN] = {i};
        int n_chain = 1;
        dqg_tensor_id y = pool->outputs[0];
        int32_t k = dqg_pass_single_consumer(s, y);
        while (move && k >= 0 && n_chain < MAX_CHAIN && moves(s, k) &&
               g->tensors[y].dtype == DQG_F32) {
            chain[n_chain++] = k;
            y = g->ops[k].outputs[0];
            k = dqg_pass_single_consumer(s, y);
        }
        if (k < 0 || g->ops[k].removed || s->group[k] >= 0 || g->ops[k].kind != DQG_OP_QUANTIZE ||
            g->tensors[y].dtype != DQG_F32)
            continue;
        dqg_op *dq = &g->ops[d], *q = &g->ops[k];
        bool max = pool->attrs.pool.algorithm == DQG_POOL_MAX;
        char kinds[MAX_CHAIN * 24] = "", names[MAX_CHAIN * 80] = "";
        for (int c = 0; c < n_chain; c++) {
            const dqg_op *o = &g->ops[chain[c]];
            size_t at = strlen(kinds), an = strlen(names);
            snprintf(kinds + at, sizeof kinds - at, "%s%s", c ? ", " : "",
                     move ? dqg_op_kind_name(o->kind) : "");
            snprintf(names + an, sizeof names - an, "%s%s '%s'", c ? " -> " : "",
                     move ? dqg_op_kind_name(o->kind) : "", o->name);
        }
        const char *kind = move                      ? kinds
                           : pool->attrs.pool.global ? (max ? "GlobalMaxPool" : "GlobalAveragePool")
                                                     : (max ? "MaxPool" : "AveragePool");
        if (!move)
            snprintf(names, sizeof names, "%s '%s'", kind, pool->name);
        char why[200];
        dqg_status st;
        bool requant = false;
        if (refusal(g, dq, pool, q, &requant, why, sizeof why)) {
            st = dqg_explain(s, "not fused: Dequantize '%s' -> %s -> Quantize '%s': %s", dq->name,
                             names, q->name, why);
            if (st != DQG_OK)
                return st;
            continue;
        }
        dqg_tensor_id qx = dq->inputs[0], qy = q->outputs[0];
        dqg_dtype t = g->tensors[qx].dtype;
        if (requant) { /* y = (mean - zx) sx / sy + zy */
            float sx = dqg_fuse_scale(g, dq), sy = dqg_fuse_scale(g, q);
            int64_t zx = dqg_fuse_zero_point(g, dq), zy = dqg_fuse_zero_point(g, q);
            pool->attrs.pool.requant = 1;
            pool->attrs.pool.rq_alpha = sx / sy;
            pool->attrs.pool.rq_beta = (float)zy - (float)zx * (sx / sy);
        }
        /* The chain reads the quantized tensor, its links hold quantized
         * values, and its last op writes the quantize's result. */
        int32_t last = chain[n_chain - 1];
        pool->inputs[0] = qx;
        g->ops[last].outputs[0] = qy;
        g->tensors[qy].producer = last;
        g->tensors[y].producer = k; /* now an orphan, as the removed ops' results */
        for (int c = 0; c + 1 < n_chain; c++) {
            dqg_tensor *link = &g->tensors[g->ops[chain[c]].outputs[0]];
            link->dtype = t;
            link->nbytes = dqg_dtype_storage_size(t, link->nelems);
        }
        dq->removed = q->removed = true;
        for (int c = 0; c < n_chain; c++) {
            dqg_op *o = &g->ops[chain[c]];
            if (o->kind == DQG_OP_PAD && o->attrs.pad.mode == DQG_PAD_CONSTANT)
                o->attrs.pad.value = (double)dqg_fuse_quantized(g, q, o->attrs.pad.value);
        }
        if (move) {
            st = dqg_explain(s,
                             "fused: Dequantize '%s' -> %s -> Quantize '%s' -> %s %s on the "
                             "quantized tensor (exact: %s values without changing them)",
                             dq->name, names, q->name, dqg_dtype_name(t), kind,
                             n_chain > 1 ? "they move" : "it moves");
            if (st != DQG_OK)
                return st;
            continue;
        }
        st = dqg_explain(s,
                         "fused: Dequantize '%s' -> %s -> Quantize '%s' -> %s %s pooling on "
                         "the quantized tensor (%s)",
                         dq->name, names, q->name, dqg_dtype_name(t), max ? "max" : "average",
                         max       ? "exact: the max commutes with the dequantize"
                         : requant ? "the mean requantized to the quantize's scale and zero point "
                                     "and rounded once, to nearest even: within one unit of the "
                                     "float path"
                                   : "the mean rounded once, to nearest even: within one unit of "
                                     "the float path");
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
