/* Pooling: ONNX MaxPool, AveragePool (count_include_pad either way),
 * GlobalMaxPool and GlobalAveragePool as one op over NCX activations of
 * rank 3 to 5, with strides, asymmetric pads, dilations (max only) and
 * ceil_mode. One function computes one output element by ONNX's rules, so
 * the reference and the oneDNN kernel's corrections share it. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Pool"

static const char *label(int algorithm, bool global)
{
    switch (algorithm) {
    case DQG_POOL_MAX:
        return global ? "GlobalMaxPool" : "MaxPool";
    case DQG_POOL_AVG_INCLUDE_PAD:
    case DQG_POOL_AVG_EXCLUDE_PAD:
        return global ? "GlobalAveragePool" : "AveragePool";
    default:
        return KIND;
    }
}

static bool any_set(const int64_t *v)
{
    return v[0] || v[1] || v[2];
}

/* Output size of spatial dim i (>= 1 once the builder's checks passed). */
static int64_t out_size(const dqg_pool_params *a, int i, int64_t x)
{
    int64_t span = (a->kernel[i] - 1) * a->dilations[i] + 1;
    int64_t room = x + a->pads_begin[i] + a->pads_end[i] - span, s = a->strides[i];
    if (room < 0)
        return 0;
    if (!a->ceil_mode)
        return room / s + 1;
    int64_t o = (room + s - 1) / s + 1;
    /* ONNX (as PyTorch): the last window starts inside the input or its
     * left padding. */
    if ((o - 1) * s >= x + a->pads_begin[i])
        o--;
    return o;
}

int64_t dqg_pool_right_pad(const dqg_pool_params *a, int i, int64_t x_dim, int64_t y_dim)
{
    int64_t span = (a->kernel[i] - 1) * a->dilations[i] + 1;
    int64_t need = (y_dim - 1) * a->strides[i] + span - x_dim - a->pads_begin[i];
    return need > a->pads_end[i] ? need : a->pads_end[i];
}

dqg_tensor_id dqg_pool(dqg_graph *g, const char *name, dqg_tensor_id x, const dqg_pool_attrs *attrs)
{
    static const dqg_dtype types[] = {DQG_F32, DQG_F16, DQG_BF16, DQG_U8, DQG_S8};
    const char *kind = attrs ? label((int)attrs->algorithm, attrs->global) : KIND;
    if (!dqg_graph_can_build(g, kind, name) ||
        !dqg_graph_check_input(g, kind, name, 0, "x", x, false) ||
        !dqg_check_dtype_in(g, kind, name, 0, "x", x, types, 5))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    if (!attrs)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': attrs is NULL", shown);
    if (attrs->algorithm != DQG_POOL_MAX && attrs->algorithm != DQG_POOL_AVG_INCLUDE_PAD &&
        attrs->algorithm != DQG_POOL_AVG_EXCLUDE_PAD)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': algorithm %d is not DQG_POOL_MAX, "
                                   "DQG_POOL_AVG_INCLUDE_PAD or DQG_POOL_AVG_EXCLUDE_PAD",
                              shown, (int)attrs->algorithm);
    const dqg_tensor *t = &g->tensors[x];
    if (t->rank < 3 || t->rank > 5)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': input 0 (x): rank %d; pooling takes [N, C, X...] of "
                              "rank 3 to 5",
                              kind, shown, t->rank);
    dqg_pool_params a;
    memset(&a, 0, sizeof a); /* canonical bytes: the cache key reads this struct */
    a.algorithm = (int32_t)attrs->algorithm;
    a.global = attrs->global;
    a.ceil_mode = attrs->ceil_mode;
    int sr = t->rank - 2;
    if (attrs->global) {
        if (attrs->spatial_rank != 0 && attrs->spatial_rank != sr)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': spatial_rank %d does not match input 0 (x) of rank %d",
                                  kind, shown, attrs->spatial_rank, t->rank);
        if (any_set(attrs->kernel) || any_set(attrs->strides) || any_set(attrs->pads_begin) ||
            any_set(attrs->pads_end) || any_set(attrs->dilations) || attrs->ceil_mode)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': global pooling takes no kernel, strides, pads, "
                                  "dilations or ceil_mode (its window is the whole input)",
                                  kind, shown);
        a.spatial_rank = sr;
        for (int i = 0; i < sr; i++) {
            a.kernel[i] = t->dims[2 + i];
            a.strides[i] = a.dilations[i] = 1;
        }
    } else {
        if (attrs->spatial_rank < 1 || attrs->spatial_rank > 3)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': spatial_rank %d is outside [1, 3]", kind, shown,
                                  attrs->spatial_rank);
        if (attrs->spatial_rank != sr)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': input 0 (x): rank %d does not match spatial_rank %d "
                                  "(expected rank %d)",
                                  kind, shown, t->rank, attrs->spatial_rank,
                                  attrs->spatial_rank + 2);
        a.spatial_rank = sr;
        for (int i = 0; i < sr; i++) {
            int64_t k = attrs->kernel[i], s = attrs->strides[i], d = attrs->dilations[i];
            int64_t pb = attrs->pads_begin[i], pe = attrs->pads_end[i];
            if (k < 1)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      "%s '%s': kernel %lld at spatial dim %d must be >= 1", kind,
                                      shown, (long long)k, i);
            if (s < 0)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      "%s '%s': stride %lld at spatial dim %d must be >= 1", kind,
                                      shown, (long long)s, i);
            if (d < 0)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      "%s '%s': dilation %lld at spatial dim %d must be >= 1", kind,
                                      shown, (long long)d, i);
            if (pb < 0 || pe < 0)
                return dqg_graph_fail(
                    g, DQG_INVALID_ARGUMENT,
                    "%s '%s': negative pad at spatial dim %d (begin %lld, end %lld)", kind, shown,
                    i, (long long)pb, (long long)pe);
            /* oneDNN keeps these in 32-bit fields. */
            if (k > INT32_MAX || s > INT32_MAX || d > INT32_MAX)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      "%s '%s': kernel %lld, stride %lld or dilation %lld at "
                                      "spatial dim %d exceeds the limit %d",
                                      kind, shown, (long long)k, (long long)s, (long long)d, i,
                                      INT32_MAX);
            if (pb >= k || pe >= k)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      "%s '%s': pads %lld+%lld at spatial dim %d must be smaller "
                                      "than the kernel %lld",
                                      kind, shown, (long long)pb, (long long)pe, i, (long long)k);
            if (d > 1 && attrs->algorithm != DQG_POOL_MAX)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      "%s '%s': dilation %lld at spatial dim %d; only max pooling "
                                      "takes dilations",
                                      kind, shown, (long long)d, i);
            a.kernel[i] = k;
            a.strides[i] = s ? s : 1;
            a.dilations[i] = d ? d : 1;
            a.pads_begin[i] = pb;
            a.pads_end[i] = pe;
        }
    }
    int64_t out[1][DQG_MAX_RANK];
    int rank = t->rank;
    out[0][0] = t->dims[0];
    out[0][1] = t->dims[1];
    for (int i = 0; i < sr; i++) {
        int64_t X = t->dims[2 + i];
        out[0][2 + i] = out_size(&a, i, X);
        if (out[0][2 + i] < 1)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': output size at spatial dim %d would be 0: input %lld "
                                  "+ pads %lld+%lld is smaller than the window %lld",
                                  kind, shown, i, (long long)X, (long long)a.pads_begin[i],
                                  (long long)a.pads_end[i],
                                  (long long)((a.kernel[i] - 1) * a.dilations[i] + 1));
    }
    dqg_dtype dt = t->dtype;
    int32_t op = dqg_graph_add_op(g, DQG_OP_POOL, name, 1, &x, 1, &dt, &rank, out);
    if (op < 0)
        return DQG_NONE;
    memcpy(&g->ops[op].attrs.pool, &a, sizeof a);
    return g->ops[op].outputs[0];
}

/* The lowest finite value of a pooling type: a max over no input element. */
static double lowest(dqg_dtype t)
{
    switch (t) {
    case DQG_F16:
        return -65504.0;
    case DQG_BF16:
        return -3.3895313892515355e38; /* 0xff7f */
    case DQG_F32:
        return -FLT_MAX;
    default:
        return (double)dqg_int_min(t);
    }
}

/* sum / n rounded to nearest, ties to even (n >= 1). */
static int64_t div_rne(int64_t sum, int64_t n)
{
    int64_t q = sum / n, r = sum % n;
    if (r < 0) { /* floor division */
        q--;
        r += n;
    }
    if (2 * r > n || (2 * r == n && (q & 1)))
        q++;
    return q;
}

void dqg_pool_element(const dqg_pool_params *a, const dqg_tensor *x, const void *X,
                      const int64_t *xs, int64_t n, int64_t c, const int64_t *o, void *Y,
                      int64_t yi)
{
    int sr = a->spatial_rank;
    int64_t k[3] = {1, 1, 1}, start[3] = {0, 0, 0}, d[3] = {1, 1, 1}, dim[3] = {1, 1, 1};
    int64_t st[3] = {0, 0, 0};
    int64_t divisor = 1;
    for (int i = 0; i < sr; i++) {
        k[i] = a->kernel[i];
        d[i] = a->dilations[i];
        dim[i] = x->dims[2 + i];
        st[i] = xs[2 + i];
        start[i] = o[i] * a->strides[i] - a->pads_begin[i];
        /* Padding counts up to pads_end, not into ceil_mode's extra room. */
        int64_t end = start[i] + k[i], lim = dim[i] + a->pads_end[i];
        divisor *= (end < lim ? end : lim) - start[i];
    }
    bool is_int = dqg_dtype_is_integer(x->dtype), is_max = a->algorithm == DQG_POOL_MAX;
    int64_t base = n * xs[0] + c * xs[1], count = 0, isum = 0, imax = INT64_MIN;
    double fsum = 0.0, fmax = -INFINITY;
    bool nan = false;
    for (int64_t j0 = 0; j0 < k[0]; j0++) {
        int64_t i0 = start[0] + j0 * d[0];
        if (i0 < 0 || i0 >= dim[0])
            continue;
        for (int64_t j1 = 0; j1 < k[1]; j1++) {
            int64_t i1 = start[1] + j1 * d[1];
            if (i1 < 0 || i1 >= dim[1])
                continue;
            for (int64_t j2 = 0; j2 < k[2]; j2++) {
                int64_t i2 = start[2] + j2 * d[2];
                if (i2 < 0 || i2 >= dim[2])
                    continue;
                int64_t at = base + i0 * st[0] + i1 * st[1] + i2 * st[2];
                count++;
                if (is_int) {
                    int64_t v = dqg_load_int(x->dtype, X, at);
                    isum += v;
                    imax = v > imax ? v : imax;
                } else {
                    double v = dqg_load_double(x->dtype, X, at);
                    nan |= isnan(v);
                    fsum += v;
                    fmax = v > fmax ? v : fmax;
                }
            }
        }
    }
    if (a->algorithm == DQG_POOL_AVG_EXCLUDE_PAD)
        divisor = count;
    if (is_int && a->requant) { /* in f32, as oneDNN's int8 pooling and its post-op */
        float m = is_max ? (float)(count ? imax : (int64_t)lowest(x->dtype))
                         : (divisor ? (float)isum * (1.0f / (float)divisor) : 0.0f);
        float r = nearbyintf(fmaf(a->rq_alpha, m, a->rq_beta)); /* ties to even */
        double lo = (double)dqg_int_min(x->dtype), hi = (double)dqg_int_max(x->dtype);
        dqg_store_int(x->dtype, Y, yi, (int64_t)(r < lo ? lo : r > hi ? hi : r));
        return;
    }
    if (is_int) {
        int64_t v = is_max ? (count ? imax : (int64_t)lowest(x->dtype))
                           : (divisor ? div_rne(isum, divisor) : 0);
        dqg_store_int(x->dtype, Y, yi, v);
        return;
    }
    double v = is_max ? (count ? fmax : lowest(x->dtype)) : (divisor ? fsum / divisor : 0.0);
    dqg_store_float(x->dtype, Y, yi, nan ? NAN : (float)v);
}

static dqg_status pool_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_pool_params *a = &op->attrs.pool;
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    int64_t xs[DQG_MAX_RANK], os[3] = {1, 1, 1};
    dqg_strides(x->rank, x->dims, xs);
    for (int i = 0; i < a->spatial_rank; i++)
        os[i] = y->dims[2 + i];
    int64_t yi = 0;
    for (int64_t n = 0; n < y->dims[0]; n++)
        for (int64_t c = 0; c < y->dims[1]; c++)
            for (int64_t o0 = 0; o0 < os[0]; o0++)
                for (int64_t o1 = 0; o1 < os[1]; o1++)
                    for (int64_t o2 = 0; o2 < os[2]; o2++) {
                        int64_t o[3] = {o0, o1, o2};
                        dqg_pool_element(a, x, X, xs, n, c, o, Y, yi++);
                    }
    return DQG_OK;
}

static void pool_format(const dqg_op *op, char *buf, size_t size)
{
    const dqg_pool_params *a = &op->attrs.pool;
    static const char *const alg[] = {"max", "avg_include_pad", "avg_exclude_pad"};
    const char *an = a->algorithm >= 0 && a->algorithm <= 2 ? alg[a->algorithm] : "?";
    char k[DQG_DIMS_BUF], s[DQG_DIMS_BUF], pb[DQG_DIMS_BUF], pe[DQG_DIMS_BUF], d[DQG_DIMS_BUF];
    int sr = a->spatial_rank;
    if (a->global) {
        snprintf(buf, size, "algorithm=%s global kernel=%s", an,
                 dqg_format_dims(k, sizeof k, sr, a->kernel));
        return;
    }
    snprintf(buf, size,
             "algorithm=%s kernel=%s strides=%s pads_begin=%s pads_end=%s dilations=%s "
             "ceil_mode=%d",
             an, dqg_format_dims(k, sizeof k, sr, a->kernel),
             dqg_format_dims(s, sizeof s, sr, a->strides),
             dqg_format_dims(pb, sizeof pb, sr, a->pads_begin),
             dqg_format_dims(pe, sizeof pe, sr, a->pads_end),
             dqg_format_dims(d, sizeof d, sr, a->dilations), (int)a->ceil_mode);
}

const dqg_op_def dqg_op_def_pool = {
    .kind = DQG_OP_POOL,
    .name = KIND,
    .reference = pool_reference,
    .format_attrs = pool_format,
};
