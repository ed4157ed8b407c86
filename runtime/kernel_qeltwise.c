/* The int8 element-wise partition: per-tensor dequantizes of u8/s8 inputs,
 * a chain of element-wise ops, and the QuantizeLinear of the result, in one
 * pass over memory; constants are scalars or hold one value per index of one
 * axis (a BatchNormalization's per-channel scale and shift). Elements are
 * processed in chunks that stay in L1; every
 * step is the reference interpreter's arithmetic (dequantize (x - zp) *
 * scale in float32, the ops in float32, quantize round-half-even of
 * x / scale plus the zero point, saturated, NaN to 0), so the results are
 * bit-identical to it. Split over chunks between threads. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernel.h"
#include "runtime/lut8.h"

#define CHUNK        256
#define PARALLEL_MIN (32 * 1024)
#define MAX_SLOTS    (DQG_MAX_PART_OPS + 4)

typedef struct leaf {
    int arg, slot;
    bool s8;
    float scale;
    int32_t zp;
} leaf;

typedef struct step {
    dqg_op_kind kind;
    int a, b, out; /* slots; b < 0 for unary ops */
    float lo, hi;
    dqg_unary_op fn; /* UNARY: the function and its parameters */
    float alpha, beta;
} step;

/* A constant holding one value per index of one axis (a per-channel scale
 * or shift), as the slot's values for the elements of a chunk: with the
 * axis innermost in storage (channels-last, or the last axis), a window of
 * `rep`, else filled element by element. */
typedef struct axis_const {
    int slot;
    int64_t period; /* values along the axis */
    int64_t inner;  /* elements of storage per step along the axis */
    float *vals;    /* inner > 1: the values */
    float *rep;     /* inner == 1: vals[j % period] for j < period + CHUNK */
} axis_const;

typedef struct qeltwise_kernel qeltwise_kernel;
struct qeltwise_kernel {
    dqg_kernel base;
    int64_t n;
    int n_leaves, n_steps, n_slots, n_consts;
    leaf leaves[DQG_MAX_PART_OPS];
    step steps[DQG_MAX_PART_OPS];
    float consts[MAX_SLOTS]; /* slot -> value, for scalar-constant slots */
    bool is_const[MAX_SLOTS];
    int n_axis;
    axis_const axis[MAX_SLOTS];
    int in_slot, out_arg;
    bool out_s8;
    float out_scale;
    int32_t out_zp;
    void (*run)(const qeltwise_kernel *k, void *const *args, int64_t first, int64_t len);
    struct fast_step *fast; /* the register-fused form of a linear chain, or NULL */
    /* One int8 input (one or more dequantizes of one tensor) and no
     * per-axis constant, with a unary function in the chain: the whole
     * chain as a table of the input's 256 codes, built by running the chain
     * on them (lut8.h). */
    uint8_t lut[256];
    bool vbmi;
};

/* The arithmetic of a chunk, compiled once per instruction set below: the
 * same IEEE operations in the same order (no contraction into FMA: this
 * file is built with -ffp-contract=off), so every copy is bit-identical to
 * the reference. */
__attribute__((always_inline)) static inline void
chunk_body(const qeltwise_kernel *k, void *const *args, int64_t first, int64_t len)
{
    float v[MAX_SLOTS][CHUNK];
    const float *in[MAX_SLOTS]; /* what each slot reads: v, or a window of constants */
    for (int s = 0; s < k->n_slots; s++) {
        in[s] = v[s];
        if (k->is_const[s])
            for (int64_t i = 0; i < len; i++)
                v[s][i] = k->consts[s];
    }
    for (int a = 0; a < k->n_axis; a++) {
        const axis_const *c = &k->axis[a];
        if (c->rep) {
            in[c->slot] = c->rep + first % c->period;
            continue;
        }
        /* Runs of one value, `inner` elements long. */
        float *d = v[c->slot];
        int64_t j = (first / c->inner) % c->period, p = first % c->inner;
        for (int64_t i = 0; i < len;) {
            int64_t run = c->inner - p < len - i ? c->inner - p : len - i;
            const float value = c->vals[j];
            for (int64_t e = 0; e < run; e++)
                d[i + e] = value;
            i += run;
            p = 0;
            j = j + 1 == c->period ? 0 : j + 1;
        }
    }
    for (int l = 0; l < k->n_leaves; l++) {
        const leaf *f = &k->leaves[l];
        float *d = v[f->slot];
        if (f->s8) {
            const int8_t *x = (const int8_t *)args[f->arg] + first;
            for (int64_t i = 0; i < len; i++)
                d[i] = (float)((int32_t)x[i] - f->zp) * f->scale;
        } else {
            const uint8_t *x = (const uint8_t *)args[f->arg] + first;
            for (int64_t i = 0; i < len; i++)
                d[i] = (float)((int32_t)x[i] - f->zp) * f->scale;
        }
    }
    for (int s = 0; s < k->n_steps; s++) {
        const step *p = &k->steps[s];
        const float *a = in[p->a], *b = p->b >= 0 ? in[p->b] : NULL;
        float *o = v[p->out];
        switch (p->kind) {
        case DQG_OP_ADD:
            for (int64_t i = 0; i < len; i++)
                o[i] = a[i] + b[i];
            break;
        case DQG_OP_MUL:
            for (int64_t i = 0; i < len; i++)
                o[i] = a[i] * b[i];
            break;
        case DQG_OP_RELU:
            for (int64_t i = 0; i < len; i++)
                o[i] = a[i] < 0.0f ? 0.0f : a[i];
            break;
        case DQG_OP_UNARY: /* the reference's own function (tables only) */
            for (int64_t i = 0; i < len; i++)
                o[i] = (float)dqg_unary_eval(p->fn, p->alpha, p->beta, (double)a[i]);
            break;
        default: /* Clip */
            for (int64_t i = 0; i < len; i++) {
                float f = a[i];
                f = f < p->lo ? p->lo : f;
                o[i] = f > p->hi ? p->hi : f;
            }
            break;
        }
    }
    /* round(x / scale) + zp, half to even as nearbyintf rounds in the
     * default rounding mode, by adding and subtracting 1.5 * 2^23: exact for
     * |q| <= 2^22, where the sum's spacing is 1 (beyond, the result
     * saturates anyway). Unlike a call to nearbyintf, this vectorizes. */
    const float *r = in[k->in_slot];
    const float lo = k->out_s8 ? -128.0f : 0.0f, hi = k->out_s8 ? 127.0f : 255.0f;
    const float big = 4194304.0f, magic = 12582912.0f, zp = (float)k->out_zp;
    float y[CHUNK];
    for (int64_t i = 0; i < len; i++) {
        float q = r[i] / k->out_scale;
        float c = q < -big ? -big : q > big ? big : q;
        float t = (c + magic) - magic + zp;
        t = q != q ? 0.0f : t; /* NaN to 0 */
        y[i] = t < lo ? lo : t > hi ? hi : t;
    }
    if (k->out_s8) {
        int8_t *o = (int8_t *)args[k->out_arg] + first;
        for (int64_t i = 0; i < len; i++)
            o[i] = (int8_t)(int32_t)y[i];
    } else {
        uint8_t *o = (uint8_t *)args[k->out_arg] + first;
        for (int64_t i = 0; i < len; i++)
            o[i] = (uint8_t)(int32_t)y[i];
    }
}

static void run_chunk_scalar(const qeltwise_kernel *k, void *const *args, int64_t first,
                             int64_t len)
{
    chunk_body(k, args, first, len);
}

__attribute__((target("avx2"))) static void
run_chunk_avx2(const qeltwise_kernel *k, void *const *args, int64_t first, int64_t len)
{
    chunk_body(k, args, first, len);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void
run_chunk_avx512(const qeltwise_kernel *k, void *const *args, int64_t first, int64_t len)
{
    chunk_body(k, args, first, len);
}

/* Linear chains -- one or two int8 inputs, each op taking the previous
 * result and a constant (scalar, or per-axis innermost in storage) or the
 * other input: DenseNet's BatchNormalization + ReLU, ResNet's residual Add +
 * ReLU -- run 16 elements at a time with every value in registers, the
 * same IEEE operations in the same order as chunk_body (Add and Mul are
 * commutative bit for bit, NaN payloads aside, and the quantize maps any
 * NaN to 0). */
typedef struct fast_step {
    dqg_op_kind kind;
    int operand; /* ADD/MUL: FAST_LEAF1, FAST_SCALAR or an axis_const index */
    float value, lo, hi;
} fast_step;

#define FAST_LEAF1  (-1)
#define FAST_SCALAR (-2)

/* A chain of one int8 input through its table. */
static void run_lut(const qeltwise_kernel *k, void *const *args, int64_t first, int64_t len)
{
    dqg_lut8(k->lut, (const uint8_t *)args[k->leaves[0].arg] + first,
             (uint8_t *)args[k->out_arg] + first, (size_t)len, k->vbmi);
}

/* The linear form of k's steps in f (false: not linear). */
static bool fast_plan(const qeltwise_kernel *k, fast_step *f)
{
    if (k->n_leaves < 1 || k->n_leaves > 2 || k->n_steps < 1 || k->n_steps > DQG_MAX_PART_OPS)
        return false;
    for (int s = 0; s < k->n_steps; s++)
        if (k->steps[s].kind == DQG_OP_UNARY)
            return false;
    int axis_of[MAX_SLOTS];
    for (int s = 0; s < MAX_SLOTS; s++)
        axis_of[s] = -1;
    for (int a = 0; a < k->n_axis; a++) {
        if (!k->axis[a].rep)
            return false; /* filled per chunk: the staged path */
        axis_of[k->axis[a].slot] = a;
    }
    int cur = k->leaves[0].slot, leaf1 = k->n_leaves == 2 ? k->leaves[1].slot : -1;
    bool leaf1_used = false;
    for (int s = 0; s < k->n_steps; s++) {
        const step *p = &k->steps[s];
        fast_step *o = &f[s];
        o->kind = p->kind;
        o->lo = p->lo;
        o->hi = p->hi;
        if (p->kind == DQG_OP_RELU || p->kind == DQG_OP_CLIP) {
            if (p->a != cur)
                return false;
        } else {
            int other = p->a == cur ? p->b : p->b == cur ? p->a : -2;
            if (other == -2 || other == cur)
                return false;
            if (other == leaf1 && !leaf1_used) {
                o->operand = FAST_LEAF1;
                leaf1_used = true;
            } else if (k->is_const[other]) {
                o->operand = FAST_SCALAR;
                o->value = k->consts[other];
            } else if (axis_of[other] >= 0) {
                o->operand = axis_of[other];
            } else {
                return false;
            }
        }
        cur = p->out;
    }
    return cur == k->in_slot && (leaf1 < 0 || leaf1_used);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"), always_inline)) static inline __m512
fast_leaf(const leaf *f, void *const *args, int64_t at, __mmask16 m)
{
    const uint8_t *p = (const uint8_t *)args[f->arg] + at;
    __m128i b = m == 0xFFFF ? _mm_loadu_si128((const __m128i *)p) : _mm_maskz_loadu_epi8(m, p);
    __m512i v = f->s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    v = _mm512_sub_epi32(v, _mm512_set1_epi32(f->zp));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(f->scale));
}

/* A chunk's values, one register per 16 elements. */
#define FAST_VECS (CHUNK / 16)
_Static_assert(CHUNK % 16 == 0 && FAST_VECS <= 16, "a chunk's vectors fit the registers");

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void
run_fast_avx512(const qeltwise_kernel *k, void *const *args, int64_t first, int64_t len)
{
    const fast_step *f = k->fast;
    /* Per axis constant: its window from the chunk's first element on
     * (the window holds period + CHUNK values, and len <= CHUNK). */
    const float *win[MAX_SLOTS];
    for (int a = 0; a < k->n_axis; a++)
        win[a] = k->axis[a].rep + first % k->axis[a].period;
    /* The whole chunk in registers, step by step: each step's kind is
     * looked at once per chunk, not once per vector. Lanes past len hold
     * zeros; they are computed and never stored. */
    __mmask16 m[FAST_VECS];
    __m512 v[FAST_VECS];
#pragma GCC unroll 16
    for (int j = 0; j < FAST_VECS; j++) {
        int64_t left = len - 16 * j;
        m[j] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
        v[j] = fast_leaf(&k->leaves[0], args, first + 16 * j, m[j]);
    }
    const __m512 zero = _mm512_setzero_ps();
    for (int s = 0; s < k->n_steps; s++) {
        const fast_step *p = &f[s];
        switch (p->kind) {
        /* vmaxps/vminps return their second operand when the two are
         * equal or either is NaN: with v second, max(0, v) is exactly
         * v < 0 ? 0 : v (NaN and -0 kept), and so for Clip. */
        case DQG_OP_RELU:
#pragma GCC unroll 16
            for (int j = 0; j < FAST_VECS; j++)
                v[j] = _mm512_max_ps(zero, v[j]);
            continue;
        case DQG_OP_CLIP: {
            const __m512 lo = _mm512_set1_ps(p->lo), hi = _mm512_set1_ps(p->hi);
#pragma GCC unroll 16
            for (int j = 0; j < FAST_VECS; j++)
                v[j] = _mm512_min_ps(hi, _mm512_max_ps(lo, v[j]));
            continue;
        }
        default:
            break;
        }
        bool add = p->kind == DQG_OP_ADD;
        if (p->operand == FAST_LEAF1) {
#pragma GCC unroll 16
            for (int j = 0; j < FAST_VECS; j++) {
                __m512 b = fast_leaf(&k->leaves[1], args, first + 16 * j, m[j]);
                v[j] = add ? _mm512_add_ps(v[j], b) : _mm512_mul_ps(v[j], b);
            }
        } else if (p->operand == FAST_SCALAR) {
            const __m512 b = _mm512_set1_ps(p->value);
#pragma GCC unroll 16
            for (int j = 0; j < FAST_VECS; j++)
                v[j] = add ? _mm512_add_ps(v[j], b) : _mm512_mul_ps(v[j], b);
        } else {
            const float *w = win[p->operand];
#pragma GCC unroll 16
            for (int j = 0; j < FAST_VECS; j++) {
                __m512 b = _mm512_maskz_loadu_ps(m[j], w + 16 * j);
                v[j] = add ? _mm512_add_ps(v[j], b) : _mm512_mul_ps(v[j], b);
            }
        }
    }
    /* The quantize, as chunk_body computes it: vrndscaleps rounds half to
     * even as its magic-number sum does (exact at any magnitude; beyond
     * 2^22 the result saturates either way). vmaxps returns its second
     * operand for a NaN, so max(t, lo) maps NaN to lo, which is chunk_body's
     * 0 for u8; s8 needs the NaN mask. */
    const bool s8 = k->out_s8;
    const __m512 zp = _mm512_set1_ps((float)k->out_zp), vlo = _mm512_set1_ps(s8 ? -128.0f : 0.0f),
                 vhi = _mm512_set1_ps(s8 ? 127.0f : 255.0f), scale = _mm512_set1_ps(k->out_scale);
    uint8_t *out = (uint8_t *)args[k->out_arg] + first;
#pragma GCC unroll 16
    for (int j = 0; j < FAST_VECS; j++) {
        __m512 q = _mm512_div_ps(v[j], scale);
        __m512 t = _mm512_add_ps(
            _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
        if (s8)
            t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q), zero);
        t = _mm512_min_ps(_mm512_max_ps(t, vlo), vhi);
        __m128i y = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(t));
        /* A masked store (and vpmovdb to memory) is slow on some cores:
         * full vectors take a plain one. */
        if (m[j] == 0xFFFF)
            _mm_storeu_si128((__m128i *)(out + 16 * j), y);
        else if (m[j])
            _mm_mask_storeu_epi8(out + 16 * j, m[j], y);
    }
}

static dqg_status qeltwise_execute(dqg_kernel *kb, void *const *args, void *scratch)
{
    const qeltwise_kernel *k = (const qeltwise_kernel *)kb;
    (void)scratch;
    int64_t chunks = (k->n + CHUNK - 1) / CHUNK;
    int threads = k->n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t first = c * CHUNK, len = first + CHUNK <= k->n ? CHUNK : k->n - first;
        k->run(k, args, first, len);
    }
    return DQG_OK;
}

static void qeltwise_destroy(dqg_kernel *kb)
{
    qeltwise_kernel *k = (qeltwise_kernel *)kb;
    for (int a = 0; a < k->n_axis; a++) {
        free(k->axis[a].vals);
        free(k->axis[a].rep);
    }
    free(k->fast);
    free(k);
}

/* Slot `slot` as constant t, which varies along one axis of `like` (the
 * op's output; its storage is channels-last when the partition's output
 * is: the layout pass marks the partition's edges). */
static dqg_status add_axis_const(qeltwise_kernel *k, const dqg_tensor *t, const dqg_tensor *like,
                                 bool channels_last, int slot)
{
    int axis = dqg_broadcast_axis(t, like);
    if (axis < 0)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "int8 element-wise kernel: a constant of %lld values not along one "
                             "axis",
                             (long long)t->nelems);
    /* Channels-last storage puts axis 1 innermost and shifts the spatial
     * axes up by one. */
    int r = like->rank, pos = axis;
    bool cl = channels_last && r >= 3;
    if (cl)
        pos = axis == 0 ? 0 : axis == 1 ? r - 1 : axis - 1;
    int64_t inner = 1;
    for (int i = r - 1; i > pos; i--) {
        int logical = cl ? (i == r - 1 ? 1 : i == 0 ? 0 : i + 1) : i;
        inner *= like->dims[logical];
    }
    axis_const *c = &k->axis[k->n_axis++];
    c->slot = slot;
    c->period = t->nelems;
    c->inner = inner;
    size_t n = inner == 1 ? (size_t)(c->period + CHUNK) : (size_t)c->period;
    float *vals = malloc(n * sizeof *vals);
    if (!vals)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "int8 element-wise kernel: out of memory");
    for (size_t j = 0; j < n; j++)
        vals[j] = dqg_load_float(t->dtype, t->data, (int64_t)(j % (size_t)c->period));
    if (inner == 1)
        c->rep = vals;
    else
        c->vals = vals;
    return DQG_OK;
}

static float load_scale(const dqg_graph *g, dqg_tensor_id t)
{
    return dqg_load_float(g->tensors[t].dtype, g->tensors[t].data, 0);
}

static int32_t load_zp(const dqg_graph *g, dqg_tensor_id t)
{
    return t == DQG_NONE ? 0 : (int32_t)dqg_load_int(g->tensors[t].dtype, g->tensors[t].data, 0);
}

dqg_status dqg_kernel_qeltwise_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *q = dqg_req_op(req, DQG_ROLE_MAIN);
    qeltwise_kernel *k = calloc(1, sizeof *k);
    int *slot_of = malloc(((size_t)g->n_tensors + 1) * sizeof *slot_of);
    if (!k || !slot_of) {
        free(k);
        free(slot_of);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "int8 element-wise kernel: out of memory");
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        slot_of[t] = -1;
    k->base.execute = qeltwise_execute;
    k->base.destroy = qeltwise_destroy;
    k->n = g->tensors[q->outputs[0]].nelems;
    dqg_status st = DQG_OK;
    /* Mini graph ops are in topological order: dequantizes and ops fill
     * slots as they appear; scalar constants get a slot of their own. */
    for (int32_t i = 0; i < g->n_ops && st == DQG_OK; i++) {
        const dqg_op *op = &g->ops[i];
        if (op == q)
            break;
        /* Each op takes at most three new slots (two constants and its
         * result); a chain holding more values than MAX_SLOTS is refused
         * (and runs unfused). */
        if (k->n_slots + 3 > MAX_SLOTS) {
            st = dqg_set_error(DQG_UNSUPPORTED, "int8 element-wise kernel: more than %d values",
                               MAX_SLOTS - 3);
            break;
        }
        if (op->kind == DQG_OP_DEQUANTIZE) {
            leaf *f = &k->leaves[k->n_leaves++];
            f->arg = dqg_kernel_arg_index(g, op->inputs[0]);
            f->s8 = g->tensors[op->inputs[0]].dtype == DQG_S8;
            f->scale = load_scale(g, op->inputs[1]);
            f->zp = load_zp(g, op->inputs[2]);
            f->slot = slot_of[op->outputs[0]] = k->n_slots++;
            continue;
        }
        step *p = &k->steps[k->n_steps++];
        p->kind = op->kind;
        int operands[2] = {-1, -1};
        for (int j = 0; j < op->n_inputs && j < 2; j++) {
            dqg_tensor_id t = op->inputs[j];
            if (slot_of[t] < 0 && g->tensors[t].nelems == 1) { /* a scalar constant */
                k->is_const[k->n_slots] = true;
                k->consts[k->n_slots] = load_scale(g, t);
                slot_of[t] = k->n_slots++;
            } else if (slot_of[t] < 0) { /* one value per index of an axis */
                st = add_axis_const(k, &g->tensors[t], &g->tensors[op->outputs[0]],
                                    g->tensors[q->outputs[0]].channels_last, k->n_slots);
                if (st != DQG_OK)
                    break;
                slot_of[t] = k->n_slots++;
            }
            operands[j] = slot_of[t];
        }
        p->a = operands[0];
        p->b = op->kind == DQG_OP_ADD || op->kind == DQG_OP_MUL ? operands[1] : -1;
        if (op->kind == DQG_OP_CLIP) {
            p->lo = op->attrs.clip.lo;
            p->hi = op->attrs.clip.hi;
        }
        if (op->kind == DQG_OP_UNARY) {
            p->fn = op->attrs.unary.op;
            p->alpha = op->attrs.unary.alpha;
            p->beta = op->attrs.unary.beta;
        }
        p->out = slot_of[op->outputs[0]] = k->n_slots++;
    }
    if (st == DQG_OK) {
        k->in_slot = slot_of[q->inputs[0]];
        k->out_arg = dqg_kernel_arg_index(g, q->outputs[0]);
        k->out_s8 = g->tensors[q->outputs[0]].dtype == DQG_S8;
        k->out_scale = load_scale(g, q->inputs[1]);
        k->out_zp = load_zp(g, q->inputs[2]);
        dqg_isa isa = dqg_cpu_isa() >= DQG_ISA_AVX512 ? DQG_ISA_AVX512
                      : dqg_cpu_isa() >= DQG_ISA_AVX2 ? DQG_ISA_AVX2
                                                      : DQG_ISA_SCALAR;
        k->run = isa == DQG_ISA_AVX512 ? run_chunk_avx512
                 : isa == DQG_ISA_AVX2 ? run_chunk_avx2
                                       : run_chunk_scalar;
        if (isa == DQG_ISA_AVX512) {
            fast_step f[DQG_MAX_PART_OPS];
            if (fast_plan(k, f)) {
                k->fast = malloc((size_t)k->n_steps * sizeof *k->fast);
                if (!k->fast)
                    st =
                        dqg_set_error(DQG_OUT_OF_MEMORY, "int8 element-wise kernel: out of memory");
                else {
                    memcpy(k->fast, f, (size_t)k->n_steps * sizeof *k->fast);
                    k->run = run_fast_avx512;
                }
            }
        }
        bool unary = false;
        for (int s = 0; s < k->n_steps; s++)
            unary |= k->steps[s].kind == DQG_OP_UNARY;
        /* Leaves that are copies of one dequantize (SiLU reads x twice). */
        bool one_input = true;
        for (int l = 1; l < k->n_leaves; l++)
            one_input &=
                k->leaves[l].arg == k->leaves[0].arg && k->leaves[l].s8 == k->leaves[0].s8 &&
                k->leaves[l].scale == k->leaves[0].scale && k->leaves[l].zp == k->leaves[0].zp;
        if (st == DQG_OK && unary && one_input && k->n_axis == 0) {
            /* The chain on every code of the input, once: the table. */
            int args = (k->leaves[0].arg > k->out_arg ? k->leaves[0].arg : k->out_arg) + 1;
            void **a = calloc((size_t)args, sizeof *a);
            uint8_t codes[256];
            if (!a) {
                st = dqg_set_error(DQG_OUT_OF_MEMORY, "int8 element-wise kernel: out of memory");
            } else {
                for (int c = 0; c < 256; c++)
                    codes[c] = (uint8_t)c;
                a[k->leaves[0].arg] = codes;
                a[k->out_arg] = k->lut;
                run_chunk_scalar(k, a, 0, 256);
                free(a);
                k->vbmi = dqg_lut8_vbmi();
                k->run = run_lut;
            }
        } else if (st == DQG_OK && unary) {
            st = dqg_set_error(DQG_UNSUPPORTED,
                               "int8 element-wise kernel: a unary function with %d inputs%s",
                               k->n_leaves, k->n_axis ? " and per-axis constants" : "");
        }
        if (k->run == run_lut)
            snprintf(k->base.impl, sizeof k->base.impl, "own:%s:int8-eltwise:table:%d-ops",
                     k->vbmi ? "avx512_vbmi" : "scalar", k->n_steps);
        else
            snprintf(k->base.impl, sizeof k->base.impl, "own:%s:int8-eltwise:%d-in:%d-ops%s%s",
                     dqg_isa_name(isa), k->n_leaves, k->n_steps,
                     k->n_axis ? ":per-axis-constants" : "", k->fast ? ":in-registers" : "");
    }
    free(slot_of);
    if (st != DQG_OK) {
        qeltwise_destroy(&k->base);
        return st;
    }
    *out = &k->base;
    return DQG_OK;
}
