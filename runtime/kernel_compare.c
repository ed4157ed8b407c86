/* Kernels of the element-wise ops that oneDNN has no form for: the
 * comparisons and logical functions (bool results) and Where. One
 * broadcasting walk over the output's rows (each operand's stride is 0
 * along the dimensions it broadcasts), with a loop per element type inside
 * a row. Loads go through memcpy, since callers' buffers need no alignment.
 * Row-major tensors only; others run on the reference kernel. */
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/kernel.h"

#define MAX_IN 3

typedef struct select_kernel {
    dqg_kernel base;
    dqg_op_kind kind;
    int fn;          /* dqg_compare_op or dqg_logical_op */
    dqg_dtype dtype; /* of the compared operands, or of Where's x and y */
    size_t es;
    int n_in;
    int rank; /* >= 1: a scalar is one row of one element */
    int64_t dims[DQG_MAX_RANK];
    int64_t stride[MAX_IN][DQG_MAX_RANK]; /* elements; 0 where the operand broadcasts */
    int64_t rows;
    int in_arg[MAX_IN], out_arg;
    void *in_const[MAX_IN];
} select_kernel;

/* ---- Rows ------------------------------------------------------------------ */

#define LOADER(NAME, T)                                                                            \
    static inline T NAME(const void *p, int64_t i)                                                 \
    {                                                                                              \
        T v;                                                                                       \
        memcpy(&v, (const char *)p + (size_t)i * sizeof v, sizeof v);                              \
        return v;                                                                                  \
    }
LOADER(ld_f32, float)
LOADER(ld_u16, uint16_t)
LOADER(ld_s8, int8_t)
LOADER(ld_u8, uint8_t)
LOADER(ld_s16, int16_t)
LOADER(ld_s32, int32_t)
LOADER(ld_u32, uint32_t)
LOADER(ld_s64, int64_t)
#undef LOADER

static inline float ld_f16(const void *p, int64_t i)
{
    return dqg_f16_to_f32(ld_u16(p, i));
}
static inline float ld_bf16(const void *p, int64_t i)
{
    return dqg_bf16_to_f32(ld_u16(p, i));
}
static inline uint8_t ld_bool(const void *p, int64_t i)
{
    return ld_u8(p, i) != 0;
}

/* One row of n elements of a comparison: y[i] = a[i * sa] OP b[i * sb]. */
#define COMPARE_ROW(NAME, LOAD)                                                                    \
    static void NAME(int fn, const void *a, int64_t sa, const void *b, int64_t sb, uint8_t *y,     \
                     int64_t n)                                                                    \
    {                                                                                              \
        switch (fn) {                                                                              \
        case DQG_COMPARE_EQUAL:                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = LOAD(a, i * sa) == LOAD(b, i * sb);                                         \
            break;                                                                                 \
        case DQG_COMPARE_LESS:                                                                     \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = LOAD(a, i * sa) < LOAD(b, i * sb);                                          \
            break;                                                                                 \
        case DQG_COMPARE_LESS_EQUAL:                                                               \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = LOAD(a, i * sa) <= LOAD(b, i * sb);                                         \
            break;                                                                                 \
        case DQG_COMPARE_GREATER:                                                                  \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = LOAD(a, i * sa) > LOAD(b, i * sb);                                          \
            break;                                                                                 \
        default:                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = LOAD(a, i * sa) >= LOAD(b, i * sb);                                         \
            break;                                                                                 \
        }                                                                                          \
    }
COMPARE_ROW(cmp_f32, ld_f32)
COMPARE_ROW(cmp_f16, ld_f16)
COMPARE_ROW(cmp_bf16, ld_bf16)
COMPARE_ROW(cmp_s8, ld_s8)
COMPARE_ROW(cmp_u8, ld_u8)
COMPARE_ROW(cmp_s16, ld_s16)
COMPARE_ROW(cmp_u16, ld_u16)
COMPARE_ROW(cmp_s32, ld_s32)
COMPARE_ROW(cmp_u32, ld_u32)
COMPARE_ROW(cmp_s64, ld_s64)
COMPARE_ROW(cmp_bool, ld_bool)
#undef COMPARE_ROW

typedef void (*compare_row_fn)(int, const void *, int64_t, const void *, int64_t, uint8_t *,
                               int64_t);

static compare_row_fn compare_row_of(dqg_dtype t)
{
    switch (t) {
    case DQG_F32:
        return cmp_f32;
    case DQG_F16:
        return cmp_f16;
    case DQG_BF16:
        return cmp_bf16;
    case DQG_S8:
        return cmp_s8;
    case DQG_U8:
        return cmp_u8;
    case DQG_S16:
        return cmp_s16;
    case DQG_U16:
        return cmp_u16;
    case DQG_S32:
        return cmp_s32;
    case DQG_U32:
        return cmp_u32;
    case DQG_S64:
        return cmp_s64;
    case DQG_BOOL:
        return cmp_bool;
    default:
        return NULL;
    }
}

static void logical_row(int fn, const uint8_t *a, int64_t sa, const uint8_t *b, int64_t sb,
                        uint8_t *y, int64_t n)
{
    switch (fn) {
    case DQG_LOGICAL_AND:
        for (int64_t i = 0; i < n; i++)
            y[i] = (a[i * sa] != 0) & (b[i * sb] != 0);
        break;
    case DQG_LOGICAL_OR:
        for (int64_t i = 0; i < n; i++)
            y[i] = (a[i * sa] != 0) | (b[i * sb] != 0);
        break;
    case DQG_LOGICAL_XOR:
        for (int64_t i = 0; i < n; i++)
            y[i] = (a[i * sa] != 0) ^ (b[i * sb] != 0);
        break;
    default: /* Not */
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i * sa] == 0;
        break;
    }
}

/* y[i] = c[i * sc] ? x[i * sx] : z[i * sz] for elements of ES bytes. */
#define WHERE_ROW(NAME, ES)                                                                        \
    static void NAME(const uint8_t *c, int64_t sc, const char *x, int64_t sx, const char *z,       \
                     int64_t sz, char *y, int64_t n)                                               \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++)                                                            \
            memcpy(y + i * ES, c[i * sc] ? x + i * sx * ES : z + i * sz * ES, ES);                 \
    }
WHERE_ROW(where_1, 1)
WHERE_ROW(where_2, 2)
WHERE_ROW(where_4, 4)
WHERE_ROW(where_8, 8)
#undef WHERE_ROW

/* ---- Execution --------------------------------------------------------------- */

static dqg_status select_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)scratch;
    select_kernel *s = (select_kernel *)k;
    const char *in[MAX_IN] = {NULL, NULL, NULL};
    for (int i = 0; i < s->n_in; i++)
        in[i] = s->in_arg[i] >= 0 ? args[s->in_arg[i]] : s->in_const[i];
    char *y = args[s->out_arg];
    int last = s->rank - 1;
    int64_t row = s->dims[last], coord[DQG_MAX_RANK] = {0}, off[MAX_IN] = {0, 0, 0};
    int64_t sl[MAX_IN];
    for (int i = 0; i < MAX_IN; i++)
        sl[i] = s->stride[i][last];
    compare_row_fn cmp = s->kind == DQG_OP_COMPARE ? compare_row_of(s->dtype) : NULL;
    size_t ey = s->kind == DQG_OP_WHERE ? s->es : 1; /* bytes per output element */
    size_t ea = s->kind == DQG_OP_COMPARE ? s->es : 1;
    for (int64_t r = 0; r < s->rows; r++) {
        char *yr = y + (size_t)(r * row) * ey;
        if (s->kind == DQG_OP_COMPARE) {
            cmp(s->fn, in[0] + (size_t)off[0] * ea, sl[0], in[1] + (size_t)off[1] * ea, sl[1],
                (uint8_t *)yr, row);
        } else if (s->kind == DQG_OP_LOGICAL) {
            const uint8_t *b = s->n_in > 1 ? (const uint8_t *)in[1] + off[1] : NULL;
            logical_row(s->fn, (const uint8_t *)in[0] + off[0], sl[0], b, sl[1], (uint8_t *)yr,
                        row);
        } else {
            const uint8_t *c = (const uint8_t *)in[0] + off[0];
            const char *x = in[1] + (size_t)off[1] * s->es, *z = in[2] + (size_t)off[2] * s->es;
            switch (s->es) {
            case 1:
                where_1(c, sl[0], x, sl[1], z, sl[2], yr, row);
                break;
            case 2:
                where_2(c, sl[0], x, sl[1], z, sl[2], yr, row);
                break;
            case 4:
                where_4(c, sl[0], x, sl[1], z, sl[2], yr, row);
                break;
            default:
                where_8(c, sl[0], x, sl[1], z, sl[2], yr, row);
                break;
            }
        }
        /* The next row: an odometer over the dimensions before the last. */
        for (int d = last - 1; d >= 0; d--) {
            for (int i = 0; i < s->n_in; i++)
                off[i] += s->stride[i][d];
            if (++coord[d] < s->dims[d])
                break;
            for (int i = 0; i < s->n_in; i++)
                off[i] -= s->stride[i][d] * s->dims[d];
            coord[d] = 0;
        }
    }
    return DQG_OK;
}

static void select_destroy(dqg_kernel *k)
{
    select_kernel *s = (select_kernel *)k;
    for (int i = 0; i < MAX_IN; i++)
        free(s->in_const[i]);
    free(s);
}

/* ---- Building ------------------------------------------------------------------ */

dqg_status dqg_kernel_select_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const char *kind = dqg_op_kind_name(op->kind);
    bool cl = y->channels_last;
    for (int i = 0; i < op->n_inputs; i++)
        cl = cl || g->tensors[op->inputs[i]].channels_last;
    const dqg_tensor *operand = &g->tensors[op->inputs[op->kind == DQG_OP_WHERE ? 1 : 0]];
    size_t es = (size_t)dqg_dtype_bits(operand->dtype) / 8;
    if (cl || op->n_inputs > MAX_IN || (es != 1 && es != 2 && es != 4 && es != 8) ||
        (op->kind == DQG_OP_COMPARE && !compare_row_of(operand->dtype)))
        return dqg_set_error(DQG_UNSUPPORTED, "%s of %s%s", kind, dqg_dtype_name(operand->dtype),
                             cl ? " channels-last" : "");
    select_kernel *s = calloc(1, sizeof *s);
    if (!s)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", kind);
    s->base.execute = select_execute;
    s->base.destroy = select_destroy;
    snprintf(s->base.impl, sizeof s->base.impl, "dqgraph:%s",
             op->kind == DQG_OP_WHERE     ? "where"
             : op->kind == DQG_OP_COMPARE ? "compare"
                                          : "logical");
    s->kind = op->kind;
    s->fn = op->kind == DQG_OP_COMPARE   ? (int)op->attrs.compare.op
            : op->kind == DQG_OP_LOGICAL ? (int)op->attrs.logical.op
                                         : 0;
    s->dtype = operand->dtype;
    s->es = es;
    s->n_in = op->n_inputs;
    s->rank = y->rank ? y->rank : 1;
    for (int d = 0; d < s->rank; d++)
        s->dims[d] = y->rank ? y->dims[d] : 1;
    s->rows = y->nelems / s->dims[s->rank - 1];
    for (int i = 0; i < s->n_in; i++) {
        dqg_broadcast_strides(&g->tensors[op->inputs[i]], s->rank, s->stride[i]);
        if (!dqg_kernel_operand(g, op->inputs[i], &s->in_arg[i], &s->in_const[i], &s->base.bytes)) {
            select_destroy(&s->base);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", kind);
        }
    }
    s->out_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    *out = &s->base;
    return DQG_OK;
}
