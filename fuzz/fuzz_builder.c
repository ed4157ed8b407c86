/* Fuzz target: a byte-driven sequence of builder calls (every front door,
 * operands chosen among the tensors built so far, invalid ids, DQG_NONE,
 * hostile shapes, attributes and names) -> dqg_graph_finalize -> when the
 * graph is valid and small: compile (options from the bytes) + execute +
 * reference run on deterministic inputs. Expected: no crash, no leak, no UB;
 * builders return DQG_NONE with a message on bad input. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "fuzz/fuzz_common.h"

#define MAX_CALLS       48
#define MAX_IDS         128
#define MAX_CONST_ELEMS 4096
#define MAX_GRAPH_BYTES ((size_t)1 << 20)
#define MAX_GRAPH_WORK  2e6 /* multiply-adds; more stalls a run under ASan */

typedef struct state {
    fz_reader r;
    dqg_graph *g;
    dqg_tensor_id ids[MAX_IDS]; /* tensors built so far (never DQG_NONE) */
    int n_ids;
    int n_names;
    char name[400];
} state;

static void remember(state *s, dqg_tensor_id id)
{
    if (id != DQG_NONE && s->n_ids < MAX_IDS)
        s->ids[s->n_ids++] = id;
}

/* An operand: mostly a tensor built so far, sometimes an invalid id. */
static dqg_tensor_id pick(state *s)
{
    uint8_t b = fz_u8(&s->r);
    if (b < 0xF0)
        return s->n_ids ? s->ids[b % s->n_ids] : DQG_NONE;
    int32_t count = (int32_t)dqg_graph_tensor_count(s->g);
    switch (b) {
    case 0xF0:
    case 0xF1:
        return DQG_NONE;
    case 0xF2:
        return -2;
    case 0xF3:
        return INT32_MAX;
    case 0xF4:
        return INT32_MIN;
    case 0xF5:
        return count;
    case 0xF6:
        return count + 1;
    default:
        return (dqg_tensor_id)(b - 0xF7); /* raw small ids, valid or not */
    }
}

/* NULL, unique, repeated, long, or with printf directives. */
static const char *pick_name(state *s)
{
    switch (fz_u8(&s->r) % 8) {
    case 0:
    case 1:
    case 2:
        return NULL;
    case 3:
        snprintf(s->name, sizeof s->name, "t%d", s->n_names++);
        return s->name;
    case 4:
        snprintf(s->name, sizeof s->name, "t%d", s->n_names ? fz_range(&s->r, s->n_names) : 0);
        return s->name;
    case 5:
        memset(s->name, 'n', sizeof s->name - 1);
        s->name[sizeof s->name - 1] = '\0';
        s->name[fz_u8(&s->r) + 100] = '\0';
        return s->name;
    case 6:
        return "%s%s%n%d";
    default:
        return "";
    }
}

static dqg_dtype pick_dtype(state *s)
{
    uint8_t b = fz_u8(&s->r);
    if (b == 0xFF)
        return (dqg_dtype)-1;
    return (dqg_dtype)(b % (DQG_DTYPE_COUNT + 2));
}

static int64_t pick_dim(state *s)
{
    uint8_t b = fz_u8(&s->r);
    if (b < 0xF0)
        return 1 + b % 6;
    static const int64_t special[16] = {
        0,  -1, (int64_t)1 << 31, (int64_t)1 << 40, INT64_MAX,  INT64_MIN, 7, 8, 16,
        17, 64, (int64_t)1 << 20, (int64_t)1 << 21, 3037000500, /* squares to just above INT64_MAX
                                                                 */
        -2, 1};
    return special[b - 0xF0];
}

static int pick_rank(state *s)
{
    uint8_t b = fz_u8(&s->r);
    if (b == 0xFF)
        return -1;
    if (b == 0xFE)
        return DQG_MAX_RANK + 1;
    return b % 5 + (b >= 0xF0 ? 4 : 0); /* 0..4 mostly, up to 8 */
}

static void pick_shape(state *s, int *rank, int64_t *dims)
{
    *rank = pick_rank(s);
    for (int i = 0; i < DQG_MAX_RANK; i++)
        dims[i] = i < *rank ? pick_dim(s) : 1;
}

/* Element count of a shape, or -1 when it is invalid or above the cap. */
static int64_t small_count(int rank, const int64_t *dims)
{
    if (rank < 0 || rank > DQG_MAX_RANK)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 1 || dims[i] > MAX_CONST_ELEMS)
            return -1;
        n *= dims[i];
        if (n > MAX_CONST_ELEMS)
            return -1;
    }
    return n;
}

static dqg_tensor_id make_constant(state *s, const char *name, dqg_dtype dt, int rank,
                                   const int64_t *dims)
{
    int64_t n = small_count(rank, dims);
    bool valid_type = dqg_dtype_bits(dt) > 0;
    size_t need = n >= 0 && valid_type ? dqg_dtype_storage_size(dt, n) : 16;
    /* Sometimes a wrong byte count: the buffer always has exactly as many
     * bytes as we claim, so a library that reads more is caught by ASan. */
    size_t claim = need;
    uint8_t mode = fz_u8(&s->r);
    if (mode % 16 == 15)
        claim = need + 1;
    else if (mode % 16 == 14 && need)
        claim = need - 1;
    uint8_t *buf = malloc(claim ? claim : 1);
    if (!buf)
        return DQG_NONE;
    switch ((mode >> 4) % 4) {
    case 0: /* the fuzzer's bytes (a few), then the PRNG */
        fz_fill(&s->r, buf, claim < 32 ? claim : 32);
        for (size_t i = 32; i < claim; i++)
            buf[i] = (uint8_t)(fz_rand(&s->r) >> 24);
        break;
    case 1:
        memset(buf, 0, claim);
        break;
    case 2: /* small "nice" values of the type */
        if (valid_type && n >= 0 && claim == need) {
            float v[64];
            for (int64_t i = 0; i < n; i += 64) {
                int64_t m = n - i < 64 ? n - i : 64;
                for (int64_t k = 0; k < m; k++)
                    v[k] = (float)((int)(fz_rand(&s->r) % 9) - 4) * 0.25f;
                dqg_dtype_encode(dt, v, m, buf, i, true);
            }
            break;
        }
        /* fall through */
    default:
        for (size_t i = 0; i < claim; i++)
            buf[i] = (uint8_t)(fz_rand(&s->r) >> 24);
        break;
    }
    bool null_data = claim && mode == 0xEE;
    dqg_tensor_id id = dqg_constant(s->g, name, dt, rank, dims, null_data ? NULL : buf, claim);
    free(buf);
    return id;
}

/* A shape derived from an existing tensor: the same, a scalar, [1], its
 * dimension on an axis (per-axis parameters), or blocked along an axis. */
static bool shape_like(state *s, dqg_tensor_id t, int *rank, int64_t *dims)
{
    int64_t d[DQG_MAX_RANK];
    int r = dqg_tensor_dims(s->g, t, d);
    if (r < 0)
        return false;
    uint8_t mode = fz_u8(&s->r) % 6;
    int axis = r ? fz_range(&s->r, r) : 0;
    switch (mode) {
    case 0:
        *rank = r;
        memcpy(dims, d, sizeof d);
        return true;
    case 1:
        *rank = 0;
        return true;
    case 2:
        *rank = 1;
        dims[0] = 1;
        return true;
    case 3:
        *rank = 1;
        dims[0] = r ? d[axis] : 1;
        return true;
    case 4: { /* blocked */
        *rank = r;
        memcpy(dims, d, sizeof d);
        if (r) {
            int64_t b = 1 + fz_u8(&s->r) % 8;
            dims[axis] = (d[axis] + b - 1) / b;
        }
        return true;
    }
    default: /* a reversed shape (for MatMul / Transpose) */
        *rank = r;
        for (int i = 0; i < r; i++)
            dims[i] = d[r - 1 - i];
        return true;
    }
}

static int64_t small_signed(state *s, int mod)
{
    uint8_t b = fz_u8(&s->r);
    if (b == 0xFF)
        return INT64_MAX;
    if (b == 0xFE)
        return INT64_MIN;
    if (b == 0xFD)
        return (int64_t)1 << 40;
    return (int64_t)((int8_t)b % mod);
}

static float pick_float(state *s)
{
    static const float table[] = {-6.0f, 0.0f, 1.0f, 6.0f, -1.0f, 0.5f, 3.5f, 1e30f, -1e30f};
    uint8_t b = fz_u8(&s->r);
    if (b == 0xFF)
        return NAN;
    if (b == 0xFE)
        return INFINITY;
    if (b == 0xFD)
        return -INFINITY;
    return table[b % (sizeof table / sizeof table[0])];
}

/* Per spatial dimension: stride, dilation, pads and (when `opad` is not
 * NULL) output_padding. */
static void conv_spatial(state *s, int64_t *strides, int64_t *dil, int64_t *pb, int64_t *pe,
                         int64_t *opad)
{
    for (int i = 0; i < 3; i++) {
        strides[i] = small_signed(s, 4);
        dil[i] = small_signed(s, 4);
        pb[i] = small_signed(s, 4);
        pe[i] = small_signed(s, 4);
        if (opad)
            opad[i] = small_signed(s, 3);
    }
}

/* Convolution, or (one call in eight) ConvTranspose with output_padding,
 * which oneDNN takes only below the stride plus the end padding. */
static void op_conv(state *s, const char *name)
{
    dqg_tensor_id x = pick(s), w = pick(s), bias = pick(s);
    uint8_t b = fz_u8(&s->r);
    if (b >= 0xE0) {
        dqg_conv_transpose_attrs a;
        memset(&a, 0, sizeof a);
        a.spatial_rank = b % 5;
        a.groups = small_signed(s, 4);
        conv_spatial(s, a.strides, a.dilations, a.pads_begin, a.pads_end, a.output_padding);
        remember(s, dqg_conv_transpose(s->g, name, x, w, bias, fz_u8(&s->r) == 0xFF ? NULL : &a));
        return;
    }
    dqg_conv_attrs a;
    memset(&a, 0, sizeof a);
    a.spatial_rank = b % 5;
    a.data_format = (dqg_data_format)((b >> 3) % 3);
    a.groups = small_signed(s, 4);
    conv_spatial(s, a.strides, a.dilations, a.pads_begin, a.pads_end, NULL);
    remember(s, dqg_convolution(s->g, name, x, w, bias, fz_u8(&s->r) == 0xFF ? NULL : &a));
}

static void op_reshape(state *s, const char *name)
{
    dqg_tensor_id x = pick(s);
    int rank = pick_rank(s);
    int64_t shape[DQG_MAX_RANK + 1];
    for (int i = 0; i <= DQG_MAX_RANK; i++) {
        uint8_t b = fz_u8(&s->r);
        shape[i] = b >= 0xF0 ? pick_dim(s) : (int64_t)(b % 10) - 1; /* -1 .. 8 */
    }
    remember(s, dqg_reshape(s->g, name, x, rank, fz_u8(&s->r) == 0xFF ? NULL : shape));
}

static void op_transpose(state *s, const char *name)
{
    dqg_tensor_id x = pick(s);
    int64_t perm[DQG_MAX_RANK];
    for (int i = 0; i < DQG_MAX_RANK; i++)
        perm[i] = i;
    uint8_t mode = fz_u8(&s->r) % 3;
    if (mode == 1) { /* a valid permutation of the tensor's rank */
        int r = dqg_tensor_rank(s->g, x);
        for (int i = r - 1; i > 0; i--) {
            int j = fz_range(&s->r, i + 1);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    } else if (mode == 2) {
        for (int i = 0; i < DQG_MAX_RANK; i++)
            perm[i] = small_signed(s, 10);
    }
    remember(s, dqg_transpose(s->g, name, x, mode == 0 ? NULL : perm));
}

static int pick_opset(state *s)
{
    static const int opsets[] = {21, 23, 13, 19, 10, 0, 9, 11, 18, 20, 22, 24, 100, -1};
    return opsets[fz_u8(&s->r) % (sizeof opsets / sizeof opsets[0])];
}

static int64_t pick_block(state *s)
{
    static const int64_t blocks[] = {0, 0, 0, 0, 1, 2, 3, 4, 5, 8, -1, (int64_t)1 << 40};
    return blocks[fz_u8(&s->r) % (sizeof blocks / sizeof blocks[0])];
}

static dqg_dtype pick_opt_dtype(state *s)
{
    return fz_u8(&s->r) % 4 == 0 ? pick_dtype(s) : DQG_DTYPE_UNDEF;
}

static void op_dequantize_linear(state *s, const char *name)
{
    dqg_tensor_id x = pick(s), sc = pick(s), zp = pick(s);
    dqg_dequantize_linear_attrs a = {.opset = pick_opset(s)};
    uint8_t f = fz_u8(&s->r);
    a.has_axis = f & 1;
    a.axis = small_signed(s, 10);
    a.block_size = pick_block(s);
    a.output_dtype = pick_opt_dtype(s);
    remember(s, dqg_dequantize_linear(s->g, name, x, sc, zp, (f & 0x80) && f > 0xF0 ? NULL : &a));
}

static void op_quantize_linear(state *s, const char *name)
{
    dqg_tensor_id x = pick(s), sc = pick(s), zp = pick(s);
    dqg_quantize_linear_attrs a = {.opset = pick_opset(s)};
    uint8_t f = fz_u8(&s->r);
    a.has_axis = f & 1;
    a.no_saturate = f & 2;
    a.axis = small_signed(s, 10);
    a.block_size = pick_block(s);
    a.output_dtype = pick_opt_dtype(s);
    remember(s, dqg_quantize_linear(s->g, name, x, sc, zp, f > 0xF0 ? NULL : &a));
}

static void op_dynamic_dequantize(state *s, const char *name)
{
    static const char *const qtypes[] = {NULL, "per_tensor", "per_channel", "per_group", ""};
    dqg_tensor_id x = pick(s), sc = pick(s), zp = pick(s);
    const char *q = qtypes[fz_u8(&s->r) % 5];
    remember(s, dqg_dynamic_dequantize(s->g, name, x, sc, zp, q, small_signed(s, 10)));
}

static void op_dynamic_quantize_linear(state *s, const char *name)
{
    dqg_tensor_id x = pick(s), ys = DQG_NONE, yz = DQG_NONE;
    uint8_t f = fz_u8(&s->r);
    dqg_tensor_id y =
        dqg_dynamic_quantize_linear(s->g, name, x, f & 1 ? &ys : NULL, f & 2 ? &yz : NULL);
    remember(s, y);
    remember(s, ys);
    remember(s, yz);
}

/* The operators of whole networks: unary functions, Sub/Div/Pow/Max/Min,
 * Softmax, Concat, LRN, LayerNorm, reductions, Slice, Pad, Gather, pooling, comparisons,
 * logical ops, Where and GatherElements; and the rotary embedding's ops. */
static void op_network(state *s, const char *name, uint8_t which)
{
    dqg_graph *g = s->g;
    switch (which % 16) {
    case 0: {
        dqg_tensor_id x = pick(s);
        dqg_unary_op f = (dqg_unary_op)(fz_u8(&s->r) % (DQG_UNARY_COUNT + 2));
        float a = pick_float(s), b = pick_float(s);
        remember(s, dqg_unary(g, name, f, x, a, b));
        break;
    }
    case 1: {
        dqg_tensor_id a = pick(s), b = pick(s);
        uint8_t k = fz_u8(&s->r) % 5;
        remember(s, k == 0   ? dqg_sub(g, name, a, b)
                    : k == 1 ? dqg_div(g, name, a, b)
                    : k == 2 ? dqg_max(g, name, a, b)
                    : k == 3 ? dqg_min(g, name, a, b)
                             : dqg_pow(g, name, a, b));
        break;
    }
    case 2: {
        dqg_tensor_id x = pick(s);
        remember(s, dqg_softmax(g, name, x, small_signed(s, 9), fz_bool(&s->r)));
        break;
    }
    case 3: {
        dqg_tensor_id xs[5];
        int n = fz_u8(&s->r) % 6;
        for (int i = 0; i < n; i++)
            xs[i] = pick(s);
        remember(s, dqg_concat(g, name, n, n ? xs : NULL, small_signed(s, 9)));
        break;
    }
    case 4: {
        dqg_tensor_id x = pick(s);
        int size = small_signed(s, 8);
        float a = pick_float(s), b = pick_float(s), k = pick_float(s);
        remember(s, dqg_lrn(g, name, x, size, a, b, k));
        break;
    }
    case 5: {
        dqg_tensor_id x = pick(s), sc = pick(s), b = fz_bool(&s->r) ? pick(s) : DQG_NONE;
        remember(s, dqg_layer_norm(g, name, x, sc, b, small_signed(s, 9), pick_float(s)));
        break;
    }
    case 6: {
        dqg_tensor_id x = pick(s);
        int64_t axes[DQG_MAX_RANK + 1];
        int n = fz_u8(&s->r) % (DQG_MAX_RANK + 2);
        for (int i = 0; i < n && i <= DQG_MAX_RANK; i++)
            axes[i] = small_signed(s, 9);
        remember(s, dqg_reduce(g, name, (dqg_reduce_op)(fz_u8(&s->r) % (DQG_REDUCE_COUNT + 1)), x,
                               n, axes, fz_bool(&s->r)));
        break;
    }
    case 8:
        if (fz_bool(&s->r)) { /* Pad: amounts that crop, pad or exceed the axis */
            dqg_tensor_id x = pick(s);
            int64_t pads[2 * DQG_MAX_RANK];
            for (int i = 0; i < 2 * DQG_MAX_RANK; i++)
                pads[i] = small_signed(s, 6);
            dqg_pad_mode m = (dqg_pad_mode)(fz_u8(&s->r) % (DQG_PAD_MODE_COUNT + 1));
            double v = fz_bool(&s->r) ? (double)pick_float(s) : (double)small_signed(s, 300);
            remember(s, dqg_pad(g, name, x, fz_u8(&s->r) == 0xFF ? NULL : pads, m, v));
            break;
        }
        /* fall through */
    case 7: {
        dqg_tensor_id x = pick(s);
        int64_t axes[DQG_MAX_RANK + 1], st[DQG_MAX_RANK + 1], en[DQG_MAX_RANK + 1],
            sp[DQG_MAX_RANK + 1];
        int n = fz_u8(&s->r) % (DQG_MAX_RANK + 2);
        for (int i = 0; i < n && i <= DQG_MAX_RANK; i++) {
            axes[i] = small_signed(s, 9);
            uint8_t f = fz_u8(&s->r);
            st[i] = f & 1 ? INT64_MIN : small_signed(s, 20);
            en[i] = f & 2 ? INT64_MAX : small_signed(s, 20);
            sp[i] = f & 4 ? INT64_MIN + 1 : small_signed(s, 4);
        }
        uint8_t f = fz_u8(&s->r);
        remember(s, dqg_slice(g, name, x, n, f & 1 ? NULL : axes, st, en, f & 2 ? NULL : sp));
        break;
    }
    case 9: {
        dqg_tensor_id d = pick(s), ix = pick(s);
        remember(s, dqg_gather(g, name, d, ix, small_signed(s, 9)));
        break;
    }
    case 10:
    case 11: {
        dqg_tensor_id x = pick(s);
        dqg_pool_attrs a = {.algorithm = (dqg_pool_algorithm)(fz_u8(&s->r) % 4),
                            .global = fz_u8(&s->r) % 4 == 0,
                            .spatial_rank = fz_u8(&s->r) % 5,
                            .ceil_mode = fz_bool(&s->r)};
        for (int i = 0; i < 3; i++) {
            a.kernel[i] = small_signed(s, 4);
            a.strides[i] = small_signed(s, 3);
            a.pads_begin[i] = small_signed(s, 2);
            a.pads_end[i] = small_signed(s, 2);
            a.dilations[i] = small_signed(s, 3);
        }
        remember(s, dqg_pool(g, name, x, fz_u8(&s->r) == 0xFF ? NULL : &a));
        break;
    }
    case 12: {
        dqg_tensor_id a = pick(s), b = pick(s);
        uint8_t f = fz_u8(&s->r);
        remember(
            s, f & 1 ? dqg_compare(g, name, (dqg_compare_op)(f / 2 % (DQG_COMPARE_COUNT + 1)), a, b)
                     : dqg_logical(g, name, (dqg_logical_op)(f / 2 % (DQG_LOGICAL_COUNT + 1)), a,
                                   f & 2 ? DQG_NONE : b));
        break;
    }
    case 13: {
        dqg_tensor_id c = pick(s), x = pick(s), y = pick(s);
        remember(s, dqg_where(g, name, c, x, y));
        break;
    }
    case 14: {
        dqg_tensor_id d = pick(s), ix = pick(s);
        remember(s, dqg_gather_elements(g, name, d, ix, small_signed(s, 9)));
        break;
    }
    case 15: { /* a rotary embedding, x cos + Concat(-x[h:], x[:h]) sin, or a near miss */
        dqg_tensor_id x = pick(s), c = pick(s), sn = pick(s);
        int64_t dims[DQG_MAX_RANK];
        int r = dqg_tensor_dims(g, x, dims);
        uint8_t f = fz_u8(&s->r);
        int64_t ax[1] = {f & 1 ? small_signed(s, 9) : -1};
        int64_t d = r > 0 ? dims[r - 1] : 2, h = f & 2 ? small_signed(s, 9) : d / 2;
        int64_t hs[1] = {h}, he[1] = {f & 4 ? small_signed(s, 20) : INT64_MAX}, ls[1] = {0},
                le[1] = {h};
        dqg_tensor_id hi = dqg_slice(g, NULL, x, 1, ax, hs, he, NULL);
        dqg_tensor_id lo = dqg_slice(g, NULL, x, 1, ax, ls, le, NULL);
        dqg_tensor_id parts[2] = {dqg_unary(g, NULL, DQG_UNARY_NEG, hi, 0, 0), lo};
        dqg_tensor_id cat = dqg_concat(g, NULL, 2, parts, (int)ax[0]);
        if (f & 8)
            sn = cat; /* the rotated x squared */
        if (f & 16)
            remember(s, cat);
        dqg_tensor_id a = f & 32 ? dqg_mul(g, NULL, c, x) : dqg_mul(g, NULL, x, c);
        dqg_tensor_id b = f & 64 ? dqg_mul(g, NULL, sn, cat) : dqg_mul(g, NULL, cat, sn);
        remember(s, f & 128 ? dqg_add(g, name, b, a) : dqg_add(g, name, a, b));
        break;
    }
    }
}

/* A recurrent layer: half the time well formed (x an input, weights
 * constants of the right shapes), else over tensors built so far; the
 * attributes from the fuzzer's bytes, out-of-range values included. */
static void op_rnn(state *s, const char *name)
{
    uint8_t f = fz_u8(&s->r), g8 = fz_u8(&s->r);
    dqg_rnn_attrs a = {.cell = (dqg_rnn_cell)(g8 % 4 == 3 ? 9 : g8 % 4),
                       .direction = (dqg_rnn_direction)((g8 >> 2) % 3),
                       .hidden_size = small_signed(s, 6),
                       .batch_first = f & 1,
                       .linear_before_reset = (f & 2) != 0,
                       .clip = f & 4 ? pick_float(s) : 0.0f};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 3; i++) {
            uint8_t b = fz_u8(&s->r);
            a.activation[d][i] = (dqg_rnn_activation)(b < 0xF0 ? b % DQG_RNN_ACT_COUNT : b);
            a.alpha[d][i] = b & 1 ? pick_float(s) : 0.5f;
            a.beta[d][i] = b & 2 ? pick_float(s) : 0.25f;
        }
    dqg_tensor_id in[8];
    int64_t T = 1 + fz_u8(&s->r) % 4, N = 1 + fz_u8(&s->r) % 3, I = 1 + fz_u8(&s->r) % 5;
    int64_t H = a.hidden_size > 0 && a.hidden_size <= 8 ? a.hidden_size : 2,
            D = a.direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t G = a.cell == DQG_RNN_CELL_RNN ? 1 : a.cell == DQG_RNN_CELL_GRU ? 3 : 4;
    if (f & 8) {
        int64_t xd[3] = {a.batch_first ? N : T, a.batch_first ? T : N, I};
        int64_t wd[3] = {D, G * H, I}, rd[3] = {D, G * H, H}, bd[2] = {D, 2 * G * H};
        in[0] = dqg_input(s->g, NULL, DQG_F32, 3, xd);
        in[1] = make_constant(s, NULL, DQG_F32, 3, wd);
        in[2] =
            f & 16 ? dqg_input(s->g, NULL, DQG_F32, 3, rd) : make_constant(s, NULL, DQG_F32, 3, rd);
        in[3] = f & 32 ? make_constant(s, NULL, DQG_F32, 2, bd) : DQG_NONE;
        for (int i = 4; i < 8; i++)
            in[i] = f & (64 << (i & 1)) ? pick(s) : DQG_NONE;
    } else {
        for (int i = 0; i < 8; i++)
            in[i] = i < 3 || fz_bool(&s->r) ? pick(s) : DQG_NONE;
    }
    dqg_tensor_id yh, yc;
    remember(s, dqg_rnn(s->g, name, &a, in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], &yh,
                        &yc));
    remember(s, yh);
    remember(s, yc);
}

/* One builder call chosen by the next byte. */
static void one_call(state *s)
{
    uint8_t op = fz_u8(&s->r);
    const char *name = pick_name(s);
    int rank;
    int64_t dims[DQG_MAX_RANK];
    switch (op % 30) {
    case 0:
    case 1: {
        dqg_dtype dt = pick_dtype(s);
        pick_shape(s, &rank, dims);
        remember(s, dqg_input(s->g, name, dt, rank, fz_u8(&s->r) == 0xFF ? NULL : dims));
        break;
    }
    case 2:
    case 3: {
        dqg_dtype dt = pick_dtype(s);
        pick_shape(s, &rank, dims);
        remember(s, make_constant(s, name, dt, rank, dims));
        break;
    }
    case 4: { /* a constant or input shaped after an existing tensor */
        dqg_tensor_id t = pick(s);
        dqg_dtype dt = pick_dtype(s);
        if (shape_like(s, t, &rank, dims))
            remember(s, fz_bool(&s->r) ? make_constant(s, name, dt, rank, dims)
                                       : dqg_input(s->g, name, dt, rank, dims));
        break;
    }
    case 5: {
        dqg_tensor_id a = pick(s), b = pick(s);
        uint8_t f = fz_u8(&s->r);
        dqg_matmul_attrs at = {.transpose_a = f & 1, .transpose_b = f & 2};
        remember(s, dqg_matmul(s->g, name, a, b, f & 4 ? NULL : &at));
        break;
    }
    case 6:
        op_conv(s, name);
        break;
    case 7: {
        dqg_tensor_id a = pick(s), b = pick(s);
        remember(s, dqg_add(s->g, name, a, b));
        break;
    }
    case 8: {
        dqg_tensor_id a = pick(s), b = pick(s);
        remember(s, dqg_mul(s->g, name, a, b));
        break;
    }
    case 9: {
        dqg_tensor_id x = pick(s), b = pick(s);
        remember(s, dqg_bias_add(s->g, name, x, b, (dqg_data_format)(fz_u8(&s->r) % 3)));
        break;
    }
    case 10:
        remember(s, dqg_relu(s->g, name, pick(s)));
        break;
    case 11: {
        dqg_tensor_id x = pick(s);
        float lo = pick_float(s), hi = pick_float(s);
        remember(s, dqg_clip(s->g, name, x, lo, hi));
        break;
    }
    case 12:
        op_reshape(s, name);
        break;
    case 13:
        op_transpose(s, name);
        break;
    case 14: {
        dqg_tensor_id x = pick(s);
        remember(s, dqg_typecast(s->g, name, x, pick_dtype(s)));
        break;
    }
    case 15:
    case 16:
        op_dequantize_linear(s, name);
        break;
    case 17:
        op_quantize_linear(s, name);
        break;
    case 18:
        op_dynamic_dequantize(s, name);
        break;
    case 19: {
        dqg_tensor_id x = pick(s), sc = pick(s), zp = pick(s);
        remember(s, dqg_extended_dequantize_linear(s->g, name, x, sc, zp, small_signed(s, 10)));
        break;
    }
    case 20: {
        dqg_tensor_id x = pick(s), sc = pick(s), zp = pick(s);
        remember(s, dqg_dml_dequantize(s->g, name, x, sc, zp));
        break;
    }
    case 21:
        op_dynamic_quantize_linear(s, name);
        break;
    case 22:
    case 23: {
        dqg_status st = dqg_output(s->g, pick(s), name);
        fz_require_message("dqg_output", st);
        break;
    }
    case 24:
        op_rnn(s, name);
        break;
    default:
        op_network(s, name, fz_u8(&s->r));
        break;
    }
}

/* Every introspection call on every op and tensor, plus a few invalid ones. */
static void introspect(const dqg_graph *g)
{
    for (size_t o = 0; o <= dqg_graph_op_count(g); o++) {
        (void)dqg_graph_op_kind(g, o);
        (void)dqg_graph_op_name(g, o);
        for (size_t i = 0; i <= dqg_graph_op_input_count(g, o); i++)
            (void)dqg_graph_op_input(g, o, i);
        for (size_t i = 0; i <= dqg_graph_op_output_count(g, o); i++)
            (void)dqg_graph_op_output(g, o, i);
    }
    int32_t nt = (int32_t)dqg_graph_tensor_count(g);
    for (dqg_tensor_id t = -1; t <= nt; t++) {
        const char *n = dqg_tensor_name(g, t);
        if (n && t >= 0 && dqg_graph_find_tensor(g, n) == DQG_NONE) {
            fprintf(stderr, "fuzz: tensor %d is named '%s' but find_tensor does not find it\n", t,
                    n);
            __builtin_trap();
        }
        int64_t d[DQG_MAX_RANK];
        (void)dqg_tensor_dims(g, t, d);
        (void)dqg_tensor_dtype(g, t);
        (void)dqg_tensor_element_count(g, t);
        (void)dqg_tensor_byte_size(g, t);
        (void)dqg_tensor_is_constant(g, t);
    }
    for (size_t w = 0; w <= dqg_graph_warning_count(g); w++)
        (void)dqg_graph_warning(g, w);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    dqg_cache_set_capacity(32);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static state s; /* large name buffer: not on the stack */
    memset(&s, 0, sizeof s);
    fz_init(&s.r, data, size);
    uint8_t cfg = fz_u8(&s.r);
    if (dqg_graph_create(&s.g) != DQG_OK)
        return 0;
    for (int call = 0; call < MAX_CALLS && fz_left(&s.r) > 0; call++)
        one_call(&s);
    /* Builders on a NULL graph must refuse. */
    if (cfg == 0xFF && dqg_relu(NULL, NULL, 0) != DQG_NONE)
        __builtin_trap();
    dqg_status st = dqg_graph_finalize(s.g);
    fz_require_message("dqg_graph_finalize", st);
    introspect(s.g);
    if (st == DQG_OK) {
        /* A finalized graph refuses further building. */
        if (s.n_ids && dqg_relu(s.g, NULL, s.ids[0]) != DQG_NONE) {
            fprintf(stderr, "fuzz: a builder added to a finalized graph\n");
            __builtin_trap();
        }
        if (fz_graph_within(s.g, MAX_GRAPH_BYTES, MAX_GRAPH_WORK)) {
            fz_buffers b;
            if (fz_buffers_make(s.g, &s.r, &b)) {
                dqg_compile_options o = dqg_compile_options_default();
                o.disable_fusion = cfg & 1;
                o.backend = cfg & 2 ? DQG_BACKEND_REFERENCE : DQG_BACKEND_ONEDNN;
                o.fpmath = !(cfg & 4) ? DQG_FPMATH_STRICT
                           : cfg & 64 ? DQG_FPMATH_INT8
                                      : DQG_FPMATH_BF16;
                o.threads = (cfg >> 3) % 8 == 7 ? -1 : 1 + (cfg >> 3) % 2;
                fz_compile_and_run(s.g, &o, &b);
                fz_buffers_free(&b);
            }
        }
    }
    dqg_graph_destroy(s.g);
    return 0;
}
