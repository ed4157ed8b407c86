/* Resize: x scaled to new dimensions by nearest, linear or cubic
 * interpolation (ONNX Resize, opsets 11 to 19; Upsample). Each output
 * coordinate maps into x by the coordinate transformation, per axis; the
 * output element is the tensor product of the axes' taps (source index,
 * weight), as ONNX's reference computes it, with source indices outside x
 * clamped to its edges and taps of weight 0 left out. The reference
 * evaluates that sum in double per element and rounds once. */
#include <math.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Resize"

/* The coordinate in x of output coordinate o. ONNX's length_resized is
 * x's size times the scale when a scale is given (not rounded down to the
 * output's size), else the size asked for. */
static double source_coord(const dqg_resize_attrs *a, int axis, int64_t in, int64_t out, int64_t o)
{
    double given = (double)a->scales[axis];
    double scale = given > 0.0 ? given : (double)out / (double)in;
    double length = given > 0.0 ? (double)in * given : (double)out;
    double x = (double)o;
    switch (a->coord) {
    case DQG_RESIZE_ASYMMETRIC:
        return x / scale;
    case DQG_RESIZE_ALIGN_CORNERS:
        return length == 1.0 ? 0.0 : x * (double)(in - 1) / (length - 1.0);
    case DQG_RESIZE_PYTORCH_HALF_PIXEL:
        return length > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
    case DQG_RESIZE_TF_HALF_PIXEL_FOR_NN:
        return (x + 0.5) / scale;
    default:
        return (x + 0.5) / scale - 0.5;
    }
}

static int64_t clamp_index(int64_t i, int64_t n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* Taps of weight 0 are left out: a coordinate on a source element reads
 * that element alone (an axis that keeps its size is a copy, and an
 * infinity beside it does not make a NaN). */
static int drop_zero_taps(int64_t *idx, double *w, int n)
{
    int m = 0;
    for (int k = 0; k < n; k++)
        if (w[k] != 0.0) {
            idx[m] = idx[k];
            w[m++] = w[k];
        }
    if (m == 0) { /* excluded all around (an axis of one element): its edge */
        w[0] = 1.0;
        m = 1;
    }
    return m;
}

int dqg_resize_taps(const dqg_resize_attrs *a, int axis, int64_t in, int64_t out, int64_t o,
                    int64_t *idx, double *w)
{
    double x = source_coord(a, axis, in, out, o), f = floor(x), r = x - f;
    int64_t fi = (int64_t)f;
    if (a->mode == DQG_RESIZE_NEAREST) {
        bool up;
        switch (a->nearest) {
        case DQG_RESIZE_ROUND_PREFER_CEIL:
            up = r >= 0.5;
            break;
        case DQG_RESIZE_FLOOR:
            up = false;
            break;
        case DQG_RESIZE_CEIL:
            up = r > 0.0;
            break;
        default:
            up = r > 0.5;
            break;
        }
        idx[0] = clamp_index(fi + (up ? 1 : 0), in);
        w[0] = 1.0;
        return 1;
    }
    if (a->mode == DQG_RESIZE_LINEAR) {
        idx[0] = clamp_index(fi, in);
        idx[1] = clamp_index(fi + 1, in);
        w[0] = 1.0 - r;
        w[1] = r;
        return drop_zero_taps(idx, w, 2);
    }
    /* Cubic convolution with parameter A on the taps fi - 1 .. fi + 2. */
    double A = (double)a->cubic_a, d[4] = {r + 1.0, r, 1.0 - r, 2.0 - r}, sum = 0.0;
    for (int k = 0; k < 4; k++) {
        double t = d[k];
        w[k] = t <= 1.0 ? ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0
                        : ((A * t - 5.0 * A) * t + 8.0 * A) * t - 4.0 * A;
        int64_t j = fi - 1 + k;
        if (a->exclude_outside && (j < 0 || j >= in))
            w[k] = 0.0;
        sum += w[k];
        idx[k] = clamp_index(j, in);
    }
    if (a->exclude_outside && sum != 0.0)
        for (int k = 0; k < 4; k++)
            w[k] /= sum;
    return drop_zero_taps(idx, w, 4);
}

dqg_tensor_id dqg_resize(dqg_graph *g, const char *name, dqg_tensor_id x,
                         const dqg_resize_attrs *attrs)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *t = &g->tensors[x];
    if (!attrs)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': attrs is NULL", shown);
    dqg_resize_attrs a = *attrs;
    if ((int)a.mode < 0 || a.mode >= DQG_RESIZE_MODE_COUNT || (int)a.coord < 0 ||
        a.coord >= DQG_RESIZE_COORD_COUNT || (int)a.nearest < 0 ||
        a.nearest >= DQG_RESIZE_NEAREST_COUNT)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': mode %d, coord %d or nearest %d is outside its enum",
                              shown, (int)a.mode, (int)a.coord, (int)a.nearest);
    if (a.mode != DQG_RESIZE_NEAREST && !dqg_check_float_dtype(g, KIND, name, 0, "x", x))
        return DQG_NONE;
    if (t->rank < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': x is a scalar", shown);
    if (!isfinite(a.cubic_a))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': cubic_a %g is not finite",
                              shown, (double)a.cubic_a);
    if (a.cubic_a == 0.0f)
        a.cubic_a = -0.75f;
    if (a.mode != DQG_RESIZE_CUBIC) {
        a.cubic_a = -0.75f;
        a.exclude_outside = false;
    }
    if (a.mode != DQG_RESIZE_NEAREST)
        a.nearest = DQG_RESIZE_ROUND_PREFER_FLOOR;
    int64_t dims[1][DQG_MAX_RANK];
    for (int d = 0; d < DQG_MAX_RANK; d++) {
        if (d >= t->rank) {
            a.sizes[d] = 0;
            a.scales[d] = 0.0f;
            continue;
        }
        if (a.sizes[d] < 1 || a.sizes[d] > ((int64_t)1 << 40))
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': size %lld of axis %d is outside [1, 2^40]", shown,
                                  (long long)a.sizes[d], d);
        if (!(a.scales[d] >= 0.0f) || !isfinite(a.scales[d]))
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': scale %g of axis %d is not a finite number >= 0",
                                  shown, (double)a.scales[d], d);
        dims[0][d] = a.sizes[d];
    }
    dqg_dtype dt = t->dtype;
    int rank = t->rank;
    int32_t o = dqg_graph_add_op(g, DQG_OP_RESIZE, name, 1, &x, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.resize = a;
    return g->ops[o].outputs[0];
}

static dqg_status resize_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    const dqg_resize_attrs *a = &op->attrs.resize;
    int R = x->rank, bits = dqg_dtype_bits(x->dtype);
    int64_t stride[DQG_MAX_RANK], s = 1;
    for (int d = R - 1; d >= 0; d--) {
        stride[d] = s;
        s *= x->dims[d];
    }
    for (int64_t i = 0; i < y->nelems; i++) {
        int64_t idx[DQG_MAX_RANK][4], rest = i;
        double w[DQG_MAX_RANK][4];
        int n[DQG_MAX_RANK], total = 1;
        for (int d = R - 1; d >= 0; d--) {
            int64_t c = rest % y->dims[d];
            rest /= y->dims[d];
            n[d] = dqg_resize_taps(a, d, x->dims[d], y->dims[d], c, idx[d], w[d]);
            total *= n[d];
        }
        if (a->mode == DQG_RESIZE_NEAREST) {
            int64_t src = 0;
            for (int d = 0; d < R; d++)
                src += idx[d][0] * stride[d];
            if (bits == 4)
                dqg_nibble_set(Y, i, dqg_nibble_get(X, src));
            else
                memcpy((char *)Y + i * (bits / 8), (const char *)X + src * (bits / 8),
                       (size_t)bits / 8);
            continue;
        }
        /* The tensor product of the taps, every combination once. */
        double acc = 0.0;
        for (int k = 0; k < total; k++) {
            int64_t src = 0;
            double wt = 1.0;
            for (int d = R - 1, rem = k; d >= 0; d--) {
                int j = rem % n[d];
                rem /= n[d];
                src += idx[d][j] * stride[d];
                wt *= w[d][j];
            }
            acc += wt * dqg_load_double(x->dtype, X, src);
        }
        dqg_store_float(y->dtype, Y, i, (float)acc);
    }
    return DQG_OK;
}

static void resize_format(const dqg_op *op, char *buf, size_t size)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel", "asymmetric", "align_corners",
                                         "pytorch_half_pixel", "tf_half_pixel_for_nn"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
    const dqg_resize_attrs *a = &op->attrs.resize;
    int n = snprintf(buf, size, "mode=%s coord=%s", modes[a->mode], coords[a->coord]);
    if (n > 0 && (size_t)n < size && a->mode == DQG_RESIZE_NEAREST)
        n += snprintf(buf + n, size - (size_t)n, " nearest=%s", nearest[a->nearest]);
    if (n > 0 && (size_t)n < size && a->mode == DQG_RESIZE_CUBIC)
        n += snprintf(buf + n, size - (size_t)n, " cubic_a=%g exclude_outside=%d",
                      (double)a->cubic_a, (int)a->exclude_outside);
    for (int d = 0; d < DQG_MAX_RANK && a->sizes[d] > 0 && n > 0 && (size_t)n < size; d++)
        n += snprintf(buf + n, size - (size_t)n, " scale%d=%g", d, (double)a->scales[d]);
}

const dqg_op_def dqg_op_def_resize = {
    .kind = DQG_OP_RESIZE,
    .name = KIND,
    .reference = resize_reference,
    .format_attrs = resize_format,
};
