/* Pad: x extended (or cropped, by negative amounts) along each axis, the
 * new elements a constant, a reflection, the edge or the other end (ONNX
 * Pad, opsets 2 to 23). Any data type (4-bit types element by element). */
#include <math.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Pad"

static const char *const mode_names[DQG_PAD_MODE_COUNT] = {"constant", "reflect", "edge", "wrap"};

const char *dqg_pad_mode_name(dqg_pad_mode mode)
{
    return ((int)mode >= 0 && mode < DQG_PAD_MODE_COUNT) ? mode_names[mode] : "unknown";
}

int64_t dqg_pad_source(dqg_pad_mode mode, int64_t o, int64_t begin, int64_t end, int64_t n)
{
    int64_t lo = begin < 0 ? -begin : 0;          /* first element kept */
    int64_t kept = n - lo - (end < 0 ? -end : 0); /* elements kept, >= 1 */
    int64_t i = o - (begin > 0 ? begin : 0);      /* position in the kept ones */
    if (i >= 0 && i < kept)
        return lo + i;
    switch (mode) {
    case DQG_PAD_EDGE:
        return lo + (i < 0 ? 0 : kept - 1);
    case DQG_PAD_WRAP:
        return lo + ((i % kept) + kept) % kept;
    case DQG_PAD_REFLECT: {
        if (kept == 1)
            return lo;
        int64_t period = 2 * (kept - 1), j = ((i % period) + period) % period;
        return lo + (j < kept ? j : period - j);
    }
    default:
        return -1;
    }
}

dqg_tensor_id dqg_pad(dqg_graph *g, const char *name, dqg_tensor_id x, const int64_t *pads,
                      dqg_pad_mode mode, double value)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *t = &g->tensors[x];
    if ((int)mode < 0 || mode >= DQG_PAD_MODE_COUNT)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': mode %d is not one of dqg_pad_mode (0 to %d)", shown,
                              (int)mode, DQG_PAD_MODE_COUNT - 1);
    if (mode == DQG_PAD_CONSTANT && !dqg_dtype_is_float(t->dtype)) {
        int64_t lo = t->dtype == DQG_BOOL ? 0 : dqg_int_min(t->dtype),
                hi = t->dtype == DQG_BOOL ? 1 : dqg_int_max(t->dtype);
        if (!(value == floor(value)) || value < (double)lo || value > (double)hi)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': the constant value %g is not a %s value (an "
                                       "integer in [%lld, %lld])",
                                  shown, value, dqg_dtype_name(t->dtype), (long long)lo,
                                  (long long)hi);
    }
    int64_t begin[DQG_MAX_RANK] = {0}, end[DQG_MAX_RANK] = {0}, dims[1][DQG_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
        int64_t b = pads ? pads[d] : 0, e = pads ? pads[t->rank + d] : 0, n = t->dims[d];
        /* |amounts| up to 2^40 keep every sum below in range. */
        const int64_t cap = (int64_t)1 << 40;
        if (b < -cap || b > cap || e < -cap || e > cap)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': axis %d's pads (%lld, %lld) exceed 2^40 in "
                                       "magnitude",
                                  shown, d, (long long)b, (long long)e);
        int64_t kept = n - (b < 0 ? -b : 0) - (e < 0 ? -e : 0), out = n + b + e;
        if (out < 1 || (kept < 1 && (b > 0 || e > 0)))
            return dqg_graph_fail(
                g, DQG_INVALID_ARGUMENT,
                KIND " '%s': axis %d of size %lld with pads (%lld, %lld) leaves %s; dqgraph has "
                     "no empty tensors",
                shown, d, (long long)n, (long long)b, (long long)e,
                out < 1 ? "no element" : "no element of x to pad from");
        begin[d] = b;
        end[d] = e;
        dims[0][d] = out;
    }
    dqg_dtype dt = t->dtype;
    int rank = t->rank;
    int32_t o = dqg_graph_add_op(g, DQG_OP_PAD, name, 1, &x, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    dqg_op *op = &g->ops[o];
    memcpy(op->attrs.pad.begin, begin, sizeof begin);
    memcpy(op->attrs.pad.end, end, sizeof end);
    op->attrs.pad.mode = mode;
    op->attrs.pad.value = mode == DQG_PAD_CONSTANT ? value : 0.0;
    return op->outputs[0];
}

void dqg_pad_value_bytes(const dqg_op *op, dqg_dtype dt, unsigned char *out)
{
    memset(out, 0, 8);
    if (dqg_dtype_is_float(dt))
        dqg_store_float(dt, out, 0, (float)op->attrs.pad.value);
    else if (dqg_dtype_bits(dt) != 4)
        dqg_store_int(dt, out, 0, (int64_t)op->attrs.pad.value);
}

static dqg_status pad_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    int bits = dqg_dtype_bits(x->dtype);
    unsigned char fill[8];
    dqg_pad_value_bytes(op, x->dtype, fill);
    /* A 4-bit constant: f4e2m1's code (saturating, as a cast), or the
     * integer the builder checked. */
    uint8_t nibble = bits != 4 ? 0
                     : dqg_dtype_is_float(x->dtype)
                         ? dqg_f32_to_f4e2m1((float)op->attrs.pad.value)
                         : (uint8_t)((int64_t)op->attrs.pad.value & 0x0F);
    for (int64_t i = 0; i < y->nelems; i++) {
        int64_t src = 0, stride = 1, rest = i;
        for (int d = y->rank - 1; d >= 0 && src >= 0; d--) {
            int64_t c = rest % y->dims[d];
            rest /= y->dims[d];
            int64_t s = dqg_pad_source(op->attrs.pad.mode, c, op->attrs.pad.begin[d],
                                       op->attrs.pad.end[d], x->dims[d]);
            src = s < 0 ? -1 : src + s * stride;
            stride *= x->dims[d];
        }
        if (bits == 4)
            dqg_nibble_set(Y, i, src < 0 ? nibble : dqg_nibble_get(X, src));
        else
            memcpy((char *)Y + i * (bits / 8),
                   src < 0 ? (const void *)fill : (const char *)X + src * (bits / 8),
                   (size_t)bits / 8);
    }
    return DQG_OK;
}

static void pad_format(const dqg_op *op, char *buf, size_t size)
{
    int n = snprintf(buf, size, "mode=%s", dqg_pad_mode_name(op->attrs.pad.mode));
    if (op->attrs.pad.mode == DQG_PAD_CONSTANT && n > 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, " value=%g", op->attrs.pad.value);
    for (int d = 0; d < DQG_MAX_RANK && n > 0 && (size_t)n < size; d++)
        if (op->attrs.pad.begin[d] || op->attrs.pad.end[d])
            n += snprintf(buf + n, size - (size_t)n, " pads%d=%lld,%lld", d,
                          (long long)op->attrs.pad.begin[d], (long long)op->attrs.pad.end[d]);
}

const dqg_op_def dqg_op_def_pad = {
    .kind = DQG_OP_PAD,
    .name = KIND,
    .reference = pad_reference,
    .format_attrs = pad_format,
};
