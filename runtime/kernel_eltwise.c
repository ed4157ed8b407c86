/* Kernels for single element-wise and layout ops on oneDNN: ReLU, Clip and
 * the unary functions as eltwise primitives (Erf and HardSigmoid, which
 * oneDNN 2.6 lacks, and Log, whose oneDNN version is inaccurate near 1, as
 * loops of dqgraph's own), Softmax and LRN as their
 * primitives, Add/Mul/Sub/Div/BiasAdd as binary primitives (broadcasting
 * the second operand), Transpose and TypeCast as reorders, Reshape as a
 * copy. Combinations oneDNN lacks return DQG_UNSUPPORTED, and the caller
 * falls back to the reference kernel. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernel.h"
#include "runtime/nan_scan.h"
#include "runtime/onednn_exec.h"
#include "runtime/onednn_layout.h"
#include "runtime/softmax_kernel.h"

typedef struct eltwise_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    bool swap;     /* binary: operands swapped so the broadcast one is second */
    size_t nbytes; /* Reshape: bytes to copy */
    bool is_copy;
    /* A unary function computed here (f32): Erf, HardSigmoid or Log. */
    bool own_unary;
    dqg_unary_op fn;
    float alpha, beta;
    int64_t nelems;
    /* Softmax over contiguous rows on dqgraph's own kernel. */
    bool own_softmax, log_softmax;
    int64_t rows, row_len;
    /* The input's type, for the repairs below. */
    dqg_dtype x_dtype;
    /* The unary functions, and bf16/f16 ReLU and Clip, on oneDNN, whose
     * kernels map a NaN to a bound (ReLU, Clip) or to infinity (Exp): the
     * elements whose input is NaN are set to it afterwards, as the
     * reference propagates it. */
    bool nan_patch;
    /* f32 ReLU/Clip on the own one-pass kernel, bounds alpha and beta. */
    bool own_clamp;
    /* oneDNN's softmax: the rows with NaN or infinity are redone after it. */
    bool softmax_special;
    int64_t outer, inner;
    /* Where each operand comes from: an arg index, or a constant copy. */
    int in_arg[2], out_arg;
    void *in_const[2];
    /* f32 Add/Sub/Mul/Div whose operands oneDNN cannot broadcast (both
     * broadcast, or the first of Sub/Div): dqgraph's own loop over the
     * output's rows, each operand read with its strides in the output's
     * index space (0 along its broadcast axes). */
    bool own_bcast;
    dqg_op_kind bop;
    int brank;
    int64_t bdims[DQG_MAX_RANK], sa[DQG_MAX_RANK], sb[DQG_MAX_RANK];
} eltwise_kernel;

/* One row of y = a op b, n elements, each operand stepping by 1 or by 0. */
#define BCAST_ROW(EXPR)                                                                            \
    do {                                                                                           \
        if (sa && sb)                                                                              \
            for (int64_t k = 0; k < n; k++) {                                                      \
                float u = a[k], v = b[k];                                                          \
                y[k] = EXPR;                                                                       \
            }                                                                                      \
        else if (sa)                                                                               \
            for (int64_t k = 0; k < n; k++) {                                                      \
                float u = a[k], v = b[0];                                                          \
                y[k] = EXPR;                                                                       \
            }                                                                                      \
        else if (sb)                                                                               \
            for (int64_t k = 0; k < n; k++) {                                                      \
                float u = a[0], v = b[k];                                                          \
                y[k] = EXPR;                                                                       \
            }                                                                                      \
        else                                                                                       \
            for (int64_t k = 0; k < n; k++) {                                                      \
                float u = a[0], v = b[0];                                                          \
                y[k] = EXPR;                                                                       \
            }                                                                                      \
    } while (0)

static void bcast_row(dqg_op_kind op, const float *a, int64_t sa, const float *b, int64_t sb,
                      float *y, int64_t n)
{
    switch (op) {
    case DQG_OP_ADD:
        BCAST_ROW(u + v);
        break;
    case DQG_OP_SUB:
        BCAST_ROW(u - v);
        break;
    case DQG_OP_MUL:
        BCAST_ROW(u * v);
        break;
    case DQG_OP_MAX:
        BCAST_ROW(dqg_max_f(u, v));
        break;
    case DQG_OP_MIN:
        BCAST_ROW(dqg_min_f(u, v));
        break;
    default:
        BCAST_ROW(u / v);
        break;
    }
}
#undef BCAST_ROW

static void bcast_run(const eltwise_kernel *e, const float *a, const float *b, float *y)
{
    const int R = e->brank;
    const int64_t n = e->bdims[R - 1], rows = e->nelems / n;
    int threads = e->nelems >= 64 * 1024 ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t oa = 0, ob = 0, rest = r;
        for (int i = R - 2; i >= 0; i--) {
            int64_t k = rest % e->bdims[i];
            rest /= e->bdims[i];
            oa += k * e->sa[i];
            ob += k * e->sb[i];
        }
        bcast_row(e->bop, a + oa, e->sa[R - 1], b + ob, e->sb[R - 1], y + r * n, n);
    }
}

/* ReLU and Clip on f32: min(hi, max(lo, x)), NaN and -0 coming through as
 * the reference has them (vmaxps/vminps return their second operand, x,
 * when one is NaN or both are zeros; the C loop's comparisons are false for
 * NaN). One pass, split between threads; safe in place. */
__attribute__((target("avx512f"))) static void clamp_avx512(const float *x, float *y, int64_t first,
                                                            int64_t last, float lo, float hi)
{
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    for (int64_t i = first; i < last; i += 16) {
        __mmask16 m = last - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (last - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        v = _mm512_min_ps(vhi, _mm512_max_ps(vlo, v));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

static void clamp_c(const float *x, float *y, int64_t first, int64_t last, float lo, float hi)
{
    for (int64_t i = first; i < last; i++) {
        float v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
    }
}

static void clamp(const float *x, float *y, int64_t n, float lo, float hi)
{
    void (*run)(const float *, float *, int64_t, int64_t, float, float) =
        dqg_cpu_has(DQG_ISA_AVX512) ? clamp_avx512 : clamp_c;
    int threads = n >= 64 * 1024 ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t per = ((n + nt - 1) / nt + 15) & ~(int64_t)15, first = t * per;
        int64_t last = first + per < n ? first + per : n;
        if (first < last)
            run(x, y, first, last, lo, hi);
    }
}

/* y[i] = x[i] (the reference's value for it) wherever x[i] is NaN. */
static void patch_nans(dqg_dtype dt, const void *x, void *y, int64_t n)
{
    if (!dqg_has_nonfinite(dt, x, n, false))
        return;
    if (dt == DQG_F32) {
        const uint32_t *u = x;
        uint32_t *o = y;
        for (int64_t i = 0; i < n; i++)
            if ((u[i] & 0x7fffffffu) > 0x7f800000u)
                o[i] = u[i];
        return;
    }
    const uint16_t *h = x;
    uint16_t e = dt == DQG_BF16 ? 0x7f80 : 0x7c00, m = dt == DQG_BF16 ? 0x007f : 0x03ff;
    for (int64_t i = 0; i < n; i++)
        if ((h[i] & e) == e && (h[i] & m) != 0)
            dqg_store_float(dt, y, i, dqg_load_float(dt, x, i));
}

static dqg_status eltwise_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    eltwise_kernel *e = (eltwise_kernel *)k;
    void *in[2];
    for (int i = 0; i < 2; i++)
        in[i] = e->in_arg[i] >= 0 ? args[e->in_arg[i]] : e->in_const[i];
    void *out = args[e->out_arg];
    if (e->is_copy) {
        if (in[0] != out)
            memcpy(out, in[0], e->nbytes);
        return DQG_OK;
    }
    if (e->own_clamp) {
        clamp(in[0], out, e->nelems, e->alpha, e->beta);
        return DQG_OK;
    }
    if (e->own_softmax) {
        dqg_softmax_rows(in[0], out, e->rows, e->row_len, e->log_softmax);
        return DQG_OK;
    }
    if (e->own_bcast) {
        bcast_run(e, in[0], in[1], out);
        return DQG_OK;
    }
    if (e->own_unary) {
        const float *x = in[0];
        float *y = out;
        if (e->fn == DQG_UNARY_ERF) {
            for (int64_t i = 0; i < e->nelems; i++)
                y[i] = erff(x[i]);
        } else if (e->fn == DQG_UNARY_LOG) {
            for (int64_t i = 0; i < e->nelems; i++)
                y[i] = logf(x[i]);
        } else if (e->fn == DQG_UNARY_HARD_SIGMOID) {
            float a = e->alpha, b = e->beta;
            for (int64_t i = 0; i < e->nelems; i++)
                y[i] = fmaxf(0.0f, fminf(1.0f, a * x[i] + b));
        } else {
            /* The reference's own evaluation (double, rounded once):
             * bit-identical to it. */
            dqg_unary_op fn = e->fn;
            float a = e->alpha, b = e->beta;
            int64_t n = e->nelems;
            int threads = n >= 64 * 1024 ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < n; i++)
                y[i] = (float)dqg_unary_eval(fn, a, b, (double)x[i]);
        }
        return DQG_OK;
    }
    void *h[3];
    /* n_user: the arguments given here (n_args also counts the scratchpad). */
    if (e->prim.n_user == 3) {
        h[0] = in[e->swap ? 1 : 0];
        h[1] = in[e->swap ? 0 : 1];
        h[2] = out;
    } else {
        h[0] = in[0];
        h[1] = out;
    }
    dqg_status st = dqg_dnnl_prim_execute(&e->prim, h, scratch, e->base.impl);
    if (st == DQG_OK && e->nan_patch)
        patch_nans(e->x_dtype, in[0], out, e->nelems);
    if (st == DQG_OK && e->softmax_special)
        dqg_softmax_special_rows(e->x_dtype, in[0], out, e->outer, e->row_len, e->inner,
                                 e->log_softmax);
    return st;
}

static void eltwise_destroy(dqg_kernel *k)
{
    eltwise_kernel *e = (eltwise_kernel *)k;
    dqg_dnnl_prim_destroy(&e->prim);
    free(e->in_const[0]);
    free(e->in_const[1]);
    free(e);
}

/* Creates the primitive from an op descriptor and finishes the kernel. */
static dqg_status finish(eltwise_kernel *e, const void *op_desc, int n_args, const int *kinds,
                         const dnnl_memory_desc_t *mds, dqg_kernel **out)
{
    dnnl_primitive_desc_t pd = NULL;
    dqg_status st = dqg_dnnl_pd_create(&pd, op_desc, NULL, e->base.impl, sizeof e->base.impl);
    if (st != DQG_OK)
        return st;
    st = dqg_dnnl_prim_init(&e->prim, pd, n_args, kinds, mds, e->base.impl);
    dnnl_primitive_desc_destroy(pd);
    if (st != DQG_OK)
        return st;
    e->base.scratch_size = dqg_dnnl_scratchpad(&e->prim);
    *out = &e->base;
    return DQG_OK;
}

static dqg_status reorder_kernel(eltwise_kernel *e, const dnnl_memory_desc_t *src,
                                 const dnnl_memory_desc_t *dst, dqg_kernel **out)
{
    dqg_status st = dqg_dnnl_reorder_prim(&e->prim, src, dst, e->base.impl);
    if (st != DQG_OK)
        return st;
    e->base.scratch_size = dqg_dnnl_scratchpad(&e->prim);
    *out = &e->base;
    return DQG_OK;
}

/* An operand of the binary primitive: its dimensions right-aligned to
 * `rank`, laid out as its buffer is (row-major, or channels-last). */
static dqg_status operand_md(const dqg_tensor *t, int rank, const int64_t *dims,
                             dnnl_memory_desc_t *md)
{
    int64_t st[DQG_MAX_RANK];
    if (t->channels_last && t->rank == rank)
        dqg_tensor_strides(t, st);
    else
        dqg_strides(rank, dims, st);
    dnnl_dims_t d, s;
    for (int i = 0; i < rank; i++) {
        d[i] = dims[i];
        s[i] = st[i];
    }
    dnnl_data_type_t dt = dqg_dnnl_dtype(t->dtype);
    if (dt == dnnl_data_type_undef)
        return dqg_set_error(DQG_UNSUPPORTED, "oneDNN has no %s type", dqg_dtype_name(t->dtype));
    dnnl_status_t r = dnnl_memory_desc_init_by_strides(md, rank, d, dt, s);
    return r == dnnl_success ? DQG_OK : dqg_dnnl_error(r, "binary", "operand descriptor");
}

/* The own broadcasting loop for f32 a op b (row-major tensors). */
static dqg_status bcast_kernel(eltwise_kernel *e, dqg_op_kind op, const dqg_tensor *a,
                               const dqg_tensor *b, const dqg_tensor *y, dqg_kernel **out)
{
    if (a->dtype != DQG_F32 || b->dtype != DQG_F32 || y->dtype != DQG_F32 || a->channels_last ||
        b->channels_last || y->channels_last)
        return dqg_set_error(DQG_UNSUPPORTED, "both operands broadcast (%s, not f32 row-major)",
                             dqg_dtype_name(y->dtype));
    int R = y->rank ? y->rank : 1;
    e->own_bcast = true;
    e->bop = op;
    e->brank = R;
    e->nelems = y->nelems;
    dqg_broadcast_strides(a, R, e->sa);
    dqg_broadcast_strides(b, R, e->sb);
    for (int i = 0; i < R; i++)
        e->bdims[i] = y->rank ? y->dims[i] : 1;
    snprintf(e->base.impl, sizeof e->base.impl, "dqgraph:broadcast:%s", dqg_op_kind_name(op));
    *out = &e->base;
    return DQG_OK;
}

/* Binary op; the output shape is the broadcast shape. */
static dqg_status binary_kernel(eltwise_kernel *e, dnnl_alg_kind_t alg, const dqg_tensor *a,
                                const dqg_tensor *b, const dqg_tensor *y, dqg_kernel **out)
{
    int rank = y->rank ? y->rank : 1;
    int64_t da[DQG_MAX_RANK], db[DQG_MAX_RANK], dy[DQG_MAX_RANK];
    /* Right-align both operands to the output's rank. */
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        da[i] = ia >= 0 ? a->dims[ia] : 1;
        db[i] = ib >= 0 ? b->dims[ib] : 1;
        dy[i] = y->rank ? y->dims[i] : 1;
    }
    bool a_full = memcmp(da, dy, (size_t)rank * sizeof *da) == 0;
    bool b_full = memcmp(db, dy, (size_t)rank * sizeof *db) == 0;
    if (!a_full && !b_full)
        return dqg_set_error(DQG_UNSUPPORTED, "both operands broadcast");
    e->swap = !a_full; /* oneDNN broadcasts only its second source */
    dnnl_memory_desc_t mds[3];
    dqg_status st;
    if ((st = operand_md(e->swap ? b : a, rank, e->swap ? db : da, &mds[0])) != DQG_OK ||
        (st = operand_md(e->swap ? a : b, rank, e->swap ? da : db, &mds[1])) != DQG_OK ||
        (st = operand_md(y, rank, dy, &mds[2])) != DQG_OK)
        return st;
    dnnl_binary_desc_t d;
    dnnl_status_t s = dnnl_binary_desc_init(&d, alg, &mds[0], &mds[1], &mds[2]);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, e->base.impl, "binary descriptor");
    int kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    return finish(e, &d, 3, kinds, mds, out);
}

/* A unary function: oneDNN's eltwise algorithm where it has one (alpha and
 * beta in its terms), else a loop of dqgraph's own for f32. */
static dqg_status unary_kernel(eltwise_kernel *e, const dqg_op *op, const dqg_tensor *x,
                               dqg_kernel **out)
{
    float a = op->attrs.unary.alpha, b = op->attrs.unary.beta;
    dnnl_alg_kind_t alg;
    float da = 0.0f, db = 0.0f;
    switch (op->attrs.unary.op) {
    case DQG_UNARY_SIGMOID:
        alg = dnnl_eltwise_logistic;
        break;
    case DQG_UNARY_TANH:
        alg = dnnl_eltwise_tanh;
        break;
    case DQG_UNARY_GELU_ERF:
        alg = dnnl_eltwise_gelu_erf;
        break;
    case DQG_UNARY_GELU_TANH:
        alg = dnnl_eltwise_gelu_tanh;
        break;
    case DQG_UNARY_NEG:
        alg = dnnl_eltwise_linear; /* alpha x + beta */
        da = -1.0f;
        break;
    case DQG_UNARY_ABS:
        alg = dnnl_eltwise_abs;
        break;
    case DQG_UNARY_SQRT:
        alg = dnnl_eltwise_sqrt;
        break;
    case DQG_UNARY_RECIPROCAL:
        alg = dnnl_eltwise_pow; /* alpha x^beta */
        da = 1.0f;
        db = -1.0f;
        break;
    case DQG_UNARY_EXP:
        alg = dnnl_eltwise_exp;
        break;
    case DQG_UNARY_HARD_SWISH:
        alg = dnnl_eltwise_hardswish;
        break;
    case DQG_UNARY_LEAKY_RELU:
        alg = dnnl_eltwise_relu; /* alpha: the slope below zero */
        da = a;
        break;
    case DQG_UNARY_ELU:
        alg = dnnl_eltwise_elu;
        da = a;
        break;
    case DQG_UNARY_SWISH:
        alg = dnnl_eltwise_swish;
        da = a;
        break;
    case DQG_UNARY_POW:
        alg = dnnl_eltwise_pow;
        da = 1.0f;
        db = a;
        break;
    case DQG_UNARY_ERF:
    case DQG_UNARY_HARD_SIGMOID:
    case DQG_UNARY_LOG: /* oneDNN 2.6's loses 1e-4 relative near x = 1 */
    /* oneDNN 2.6 has no cos, sin, the other trigonometric and
     * hyperbolic functions, floor, ceil, sign, softsign, selu, celu or
     * thresholded relu; the loop also gives round, softplus and mish
     * bit-identical to the reference. */
    case DQG_UNARY_COS:
    case DQG_UNARY_SIN:
    case DQG_UNARY_FLOOR:
    case DQG_UNARY_CEIL:
    case DQG_UNARY_ROUND:
    case DQG_UNARY_SIGN:
    case DQG_UNARY_SOFTPLUS:
    case DQG_UNARY_SELU:
    case DQG_UNARY_SOFTSIGN:
    case DQG_UNARY_THRESHOLDED_RELU:
    case DQG_UNARY_CELU:
    case DQG_UNARY_MISH:
    case DQG_UNARY_TAN:
    case DQG_UNARY_ASIN:
    case DQG_UNARY_ACOS:
    case DQG_UNARY_ATAN:
    case DQG_UNARY_SINH:
    case DQG_UNARY_COSH:
    case DQG_UNARY_ASINH:
    case DQG_UNARY_ACOSH:
    case DQG_UNARY_ATANH:
    default:
        if (x->dtype != DQG_F32)
            return dqg_set_error(DQG_UNSUPPORTED, "%s on %s", dqg_unary_op_name(op->attrs.unary.op),
                                 dqg_dtype_name(x->dtype));
        e->own_unary = true;
        e->fn = op->attrs.unary.op;
        e->alpha = a;
        e->beta = b;
        e->nelems = x->nelems;
        snprintf(e->base.impl, sizeof e->base.impl, "dqgraph:%s",
                 dqg_unary_op_name(op->attrs.unary.op));
        *out = &e->base;
        return DQG_OK;
    }
    snprintf(e->base.impl, sizeof e->base.impl, "onednn:%s", dqg_unary_op_name(op->attrs.unary.op));
    dnnl_memory_desc_t mds[2];
    dqg_status st = dqg_dnnl_md_dense(&mds[0], x->rank, x->dims, x->dtype);
    if (st != DQG_OK)
        return st;
    mds[1] = mds[0];
    int kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    dnnl_eltwise_desc_t d;
    dnnl_status_t s =
        dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &mds[0], da, db);
    return s == dnnl_success ? finish(e, &d, 2, kinds, mds, out)
                             : dqg_dnnl_error(s, e->base.impl, "eltwise descriptor");
}

dqg_status dqg_kernel_eltwise_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    eltwise_kernel *e = calloc(1, sizeof *e);
    if (!e)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
    e->base.execute = eltwise_execute;
    e->base.destroy = eltwise_destroy;
    snprintf(e->base.impl, sizeof e->base.impl, "onednn:%s", dqg_op_kind_name(op->kind));
    e->out_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    e->x_dtype = x->dtype;
    for (int i = 0; i < 2; i++) {
        e->in_arg[i] = -1;
        if (i >= op->n_inputs || op->inputs[i] == DQG_NONE)
            continue;
        if (!dqg_kernel_operand(g, op->inputs[i], &e->in_arg[i], &e->in_const[i], &e->base.bytes)) {
            eltwise_destroy(&e->base);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
        }
    }
    dqg_status st = DQG_UNSUPPORTED;
    dnnl_memory_desc_t mds[2];
    int kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    switch (op->kind) {
    case DQG_OP_RESHAPE:
        e->is_copy = true;
        e->nbytes = y->nbytes;
        /* The same bytes: given its input's buffer, the copy is skipped. */
        e->base.in_place_ok = e->in_arg[0] == 0 && x->channels_last == y->channels_last;
        snprintf(e->base.impl, sizeof e->base.impl, "copy:Reshape");
        *out = &e->base;
        return DQG_OK;
    case DQG_OP_RELU:
    case DQG_OP_CLIP: {
        if (x->dtype == DQG_F32) {
            e->own_clamp = true;
            e->nelems = x->nelems;
            e->alpha = op->kind == DQG_OP_RELU ? 0.0f : op->attrs.clip.lo;
            e->beta = op->kind == DQG_OP_RELU ? INFINITY : op->attrs.clip.hi;
            snprintf(e->base.impl, sizeof e->base.impl, "own:%s:%s",
                     dqg_isa_name(dqg_cpu_has(DQG_ISA_AVX512) ? DQG_ISA_AVX512 : DQG_ISA_SCALAR),
                     op->kind == DQG_OP_RELU ? "relu" : "clip");
            e->base.in_place_ok = e->in_arg[0] == 0 && x->channels_last == y->channels_last;
            *out = &e->base;
            return DQG_OK;
        }
        if ((st = dqg_dnnl_md_dense(&mds[0], x->rank, x->dims, x->dtype)) != DQG_OK)
            break;
        mds[1] = mds[0];
        bool relu = op->kind == DQG_OP_RELU;
        dnnl_eltwise_desc_t d;
        dnnl_status_t s = dnnl_eltwise_forward_desc_init(
            &d, dnnl_forward_inference, relu ? dnnl_eltwise_relu : dnnl_eltwise_clip_v2, &mds[0],
            relu ? 0.0f : op->attrs.clip.lo, relu ? 0.0f : op->attrs.clip.hi);
        e->nan_patch = true;
        e->nelems = x->nelems;
        st = s == dnnl_success ? finish(e, &d, 2, kinds, mds, out)
                               : dqg_dnnl_error(s, e->base.impl, "eltwise descriptor");
        break;
    }
    case DQG_OP_UNARY:
        st = unary_kernel(e, op, x, out);
        if (st == DQG_OK && !e->own_unary) {
            e->nan_patch = true;
            e->nelems = x->nelems;
        }
        break;
    case DQG_OP_SOFTMAX: {
        /* Rows along the last axis (nothing but 1s after the axis) on the
         * own kernel, which beats oneDNN 2.6's by 1.5-2x there. */
        int axis = op->attrs.softmax.axis;
        int64_t inner = 1;
        for (int i = axis + 1; i < x->rank; i++)
            inner *= x->dims[i];
        if (x->dtype == DQG_F32 && inner == 1 && !x->channels_last && !y->channels_last &&
            dqg_softmax_own_available()) {
            e->own_softmax = true;
            e->log_softmax = op->attrs.softmax.log;
            e->row_len = x->dims[axis];
            e->rows = x->nelems / e->row_len;
            snprintf(e->base.impl, sizeof e->base.impl, "own:%s:%s", dqg_isa_name(DQG_ISA_AVX512),
                     e->log_softmax ? "logsoftmax" : "softmax");
            *out = &e->base;
            return DQG_OK;
        }
        if ((st = dqg_dnnl_md_dense(&mds[0], x->rank, x->dims, x->dtype)) != DQG_OK)
            break;
        /* oneDNN's softmax gives 0 where a row with an infinity has the
         * reference's NaN (f32 below AVX-512, bf16 on AVX-512): rows with
         * NaN or infinity are redone after it. */
        e->softmax_special = x->dtype == DQG_F32 || x->dtype == DQG_BF16 || x->dtype == DQG_F16;
        e->log_softmax = op->attrs.softmax.log;
        e->row_len = x->dims[axis];
        e->inner = inner;
        e->outer = x->nelems / (e->row_len * inner);
        mds[1] = mds[0];
        dnnl_softmax_desc_t d;
        dnnl_status_t s = op->attrs.softmax.log
                              ? dnnl_logsoftmax_forward_desc_init(&d, dnnl_forward_inference,
                                                                  &mds[0], op->attrs.softmax.axis)
                              : dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &mds[0],
                                                               op->attrs.softmax.axis);
        st = s == dnnl_success ? finish(e, &d, 2, kinds, mds, out)
                               : dqg_dnnl_error(s, e->base.impl, "softmax descriptor");
        break;
    }
    case DQG_OP_LRN: {
        /* oneDNN's window is symmetric, (size - 1) / 2 channels each side;
         * ONNX's takes one more after the channel when size is even. */
        if (op->attrs.lrn.size % 2 == 0) {
            st = dqg_set_error(DQG_UNSUPPORTED, "an even LRN size has an uneven window");
            break;
        }
        /* In the layout its tensors are stored in: between channels-last
         * convolutions the layout pass keeps them channels-last. */
        if (x->channels_last != y->channels_last) {
            st = dqg_set_error(DQG_UNSUPPORTED, "an LRN between two layouts");
            break;
        }
        if ((st = dqg_conv_activation_md(x, DQG_FORMAT_NCX, dqg_dnnl_dtype(x->dtype), &mds[0])) !=
            DQG_OK)
            break;
        mds[1] = mds[0];
        dnnl_lrn_desc_t d;
        dnnl_status_t s = dnnl_lrn_forward_desc_init(
            &d, dnnl_forward_inference, dnnl_lrn_across_channels, &mds[0], op->attrs.lrn.size,
            op->attrs.lrn.alpha, op->attrs.lrn.beta, op->attrs.lrn.bias);
        /* LRN also writes a workspace in training only: inference has none. */
        st = s == dnnl_success ? finish(e, &d, 2, kinds, mds, out)
                               : dqg_dnnl_error(s, e->base.impl, "LRN descriptor");
        break;
    }
    case DQG_OP_ADD:
    case DQG_OP_MUL:
    case DQG_OP_SUB:
    case DQG_OP_DIV: {
        if (dqg_dtype_is_integer(y->dtype)) {
            /* oneDNN's binary saturates where ONNX's integers wrap around
             * (and divides in float). */
            st = dqg_set_error(DQG_UNSUPPORTED, "integer %s wraps around; oneDNN saturates",
                               dqg_op_kind_name(op->kind));
            break;
        }
        dnnl_alg_kind_t alg = op->kind == DQG_OP_ADD   ? dnnl_binary_add
                              : op->kind == DQG_OP_MUL ? dnnl_binary_mul
                              : op->kind == DQG_OP_SUB ? dnnl_binary_sub
                                                       : dnnl_binary_div;
        /* oneDNN broadcasts only its second source: a - b and a / b with a
         * broadcast `a` cannot swap their operands, and neither can two
         * operands that both broadcast; f32 ones take dqgraph's loop. */
        const dqg_tensor *b = &g->tensors[op->inputs[1]];
        bool a_full = x->nelems == y->nelems, b_full = b->nelems == y->nelems;
        if ((!a_full && !b_full) ||
            ((op->kind == DQG_OP_SUB || op->kind == DQG_OP_DIV) && !a_full)) {
            st = bcast_kernel(e, op->kind, x, b, y, out);
            break;
        }
        st = binary_kernel(e, alg, x, b, y, out);
        break;
    }
    case DQG_OP_MAX:
    case DQG_OP_MIN:
        /* dqgraph's loop on f32 (oneDNN's binary max/min drop a NaN);
         * other types on the reference kernel. */
        if (y->dtype != DQG_F32) {
            st = dqg_set_error(DQG_UNSUPPORTED, "%s on %s", dqg_op_kind_name(op->kind),
                               dqg_dtype_name(y->dtype));
            break;
        }
        st = bcast_kernel(e, op->kind, x, &g->tensors[op->inputs[1]], y, out);
        break;
    case DQG_OP_BIAS_ADD: {
        /* The bias as a tensor of x's rank that is 1 except on the channel axis. */
        dqg_tensor b = g->tensors[op->inputs[1]];
        int caxis = op->attrs.bias_add.data_format == DQG_FORMAT_NCX ? 1 : x->rank - 1;
        int64_t c = b.dims[0];
        b.rank = x->rank;
        for (int i = 0; i < x->rank; i++)
            b.dims[i] = i == caxis ? c : 1;
        st = binary_kernel(e, dnnl_binary_add, x, &b, y, out);
        break;
    }
    case DQG_OP_TRANSPOSE: {
        /* Destination written through permuted strides: out[j] = in[perm[j]]. */
        if (dqg_dnnl_dtype(x->dtype) == dnnl_data_type_undef) {
            st = dqg_set_error(DQG_UNSUPPORTED, "oneDNN has no %s type", dqg_dtype_name(x->dtype));
            break;
        }
        int64_t ystr[DQG_MAX_RANK], xstr_dims[DQG_MAX_RANK];
        dqg_strides(y->rank, y->dims, ystr);
        dnnl_dims_t dims, strides;
        for (int i = 0; i < x->rank; i++)
            xstr_dims[i] = x->dims[i];
        for (int j = 0; j < y->rank; j++) {
            int64_t src_axis = op->attrs.transpose.perm[j];
            dims[src_axis] = xstr_dims[src_axis];
            strides[src_axis] = ystr[j];
        }
        if ((st = dqg_dnnl_md_dense(&mds[0], x->rank, x->dims, x->dtype)) != DQG_OK)
            break;
        dnnl_status_t s = dnnl_memory_desc_init_by_strides(&mds[1], x->rank ? x->rank : 1, dims,
                                                           dqg_dnnl_dtype(x->dtype), strides);
        if (x->rank == 0 || s != dnnl_success) {
            st = dqg_set_error(DQG_UNSUPPORTED, "transpose layout");
            break;
        }
        st = reorder_kernel(e, &mds[0], &mds[1], out);
        break;
    }
    case DQG_OP_TYPECAST:
        /* oneDNN leaves NaN -> integer undefined; those casts (rare: the
         * exact results of integer ops) run on the reference kernel. */
        if (dqg_dtype_is_integer(y->dtype) && !dqg_dtype_is_integer(x->dtype)) {
            st = dqg_set_error(DQG_UNSUPPORTED, "float to integer TypeCast");
            break;
        }
        if ((st = dqg_dnnl_md_dense(&mds[0], x->rank, x->dims, x->dtype)) != DQG_OK ||
            (st = dqg_dnnl_md_dense(&mds[1], y->rank, y->dims, y->dtype)) != DQG_OK)
            break;
        st = reorder_kernel(e, &mds[0], &mds[1], out);
        break;
    default:
        st = dqg_set_error(DQG_UNSUPPORTED, "no oneDNN kernel for %s", dqg_op_kind_name(op->kind));
        break;
    }
    if (st != DQG_OK) {
        eltwise_destroy(&e->base);
        return st;
    }
    /* oneDNN's eltwise and binary primitives allow dst == src0; the planner
     * may then give the output its input's buffer. */
    e->base.in_place_ok =
        (op->kind == DQG_OP_RELU || op->kind == DQG_OP_CLIP || op->kind == DQG_OP_ADD ||
         op->kind == DQG_OP_MUL || op->kind == DQG_OP_SUB || op->kind == DQG_OP_DIV ||
         op->kind == DQG_OP_UNARY || op->kind == DQG_OP_BIAS_ADD) &&
        !e->swap && e->in_arg[0] == 0 && x->nbytes == y->nbytes && x->dtype == y->dtype &&
        !e->nan_patch; /* the repair reads the input after the primitive */
    return st;
}
