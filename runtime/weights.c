/* Resolving a fused partition's constant weights: storage layout and the
 * scale index of every element. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/cache.h"
#include "runtime/weights.h"

/* Applies the layout ops to the quantized constant with the reference
 * interpreter (exact for every type, 4-bit too). */
static dqg_status apply_layouts(const dqg_graph *g, const dqg_op *dq, const dqg_op **layouts, int n,
                                void **out)
{
    const dqg_tensor *w = &g->tensors[dq->inputs[0]];
    dqg_cache_count_constant_transform();
    dqg_graph *tmp = NULL;
    dqg_status st = dqg_graph_create(&tmp);
    if (st != DQG_OK)
        return st;
    dqg_tensor_id t = dqg_constant(tmp, "w", w->dtype, w->rank, w->dims, w->data, w->nbytes);
    for (int i = 0; i < n; i++) {
        const dqg_tensor *y = &g->tensors[layouts[i]->outputs[0]];
        t = layouts[i]->kind == DQG_OP_TRANSPOSE
                ? dqg_transpose(tmp, NULL, t, layouts[i]->attrs.transpose.perm)
                : dqg_reshape(tmp, NULL, t, y->rank, y->dims);
    }
    dqg_output(tmp, t, "y");
    if ((st = dqg_graph_finalize(tmp)) == DQG_OK) {
        *out = malloc(w->nbytes ? w->nbytes : 1);
        dqg_buffer b = {.id = t, .data = *out, .size = w->nbytes};
        st = *out ? dqg_reference_run(tmp, NULL, 0, &b, 1)
                  : dqg_set_error(DQG_OUT_OF_MEMORY, "weights: out of memory");
        if (st != DQG_OK) {
            free(*out);
            *out = NULL;
        }
    }
    dqg_graph_destroy(tmp);
    return st;
}

dqg_status dqg_weights_resolve(const dqg_graph *g, const dqg_partition *p, dqg_weights *w,
                               const char *what)
{
    memset(w, 0, sizeof *w);
    const dqg_op *dq = &g->ops[p->ops[dqg_part_find(p, DQG_ROLE_W_DQ)]];
    const dqg_op *mm = &g->ops[p->ops[dqg_part_find(p, DQG_ROLE_MAIN)]];
    const dqg_tensor *x = &g->tensors[dq->inputs[0]];
    const dqg_tensor *b = &g->tensors[mm->inputs[1]]; /* the MatMul's view, 2-D */
    dqg_quant_attrs q = dq->attrs.quant;
    const dqg_op *layouts[DQG_MAX_PART_OPS];
    int n = 0;
    for (int k = 0; k < p->n_ops; k++)
        if (p->role[k] == DQG_ROLE_W_LAYOUT)
            layouts[n++] = &g->ops[p->ops[k]];
    if (b->rank != 2)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: the weights have rank %d", what, b->rank);
    w->dtype = x->dtype;
    w->data = x->data;
    w->scale = &g->tensors[dq->inputs[1]];
    w->zp = dq->inputs[2] != DQG_NONE ? &g->tensors[dq->inputs[2]] : NULL;
    w->granularity = q.granularity;
    /* Storage [R, C] and the quantization axis in storage coordinates. */
    int64_t R, C;
    bool transposed = false;
    bool only_reshapes = true;
    for (int i = 0; i < n; i++)
        only_reshapes &= layouts[i]->kind == DQG_OP_RESHAPE;
    if (n == 1 && layouts[0]->kind == DQG_OP_TRANSPOSE && x->rank == 2 &&
        layouts[0]->attrs.transpose.perm[0] == 1) {
        R = x->dims[0];
        C = x->dims[1];
        transposed = true;
    } else {
        /* Reshapes keep the row-major data: the axis survives when the
         * leading dimensions up to it are kept. Anything else applies the
         * layout to the constant (one scale, or one per axis only). */
        int axis = q.axis;
        for (int i = 0; i < n && q.granularity == DQG_PER_AXIS; i++)
            axis = dqg_quant_axis_through(g, layouts[i], axis);
        bool scales_follow = q.granularity == DQG_PER_TENSOR ||
                             (q.granularity == DQG_PER_AXIS && axis >= 0) ||
                             (n == 0 && x->rank == 2);
        if (!scales_follow)
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "%s: the weights' scales do not follow their Transpose/Reshape",
                                 what);
        if (!only_reshapes) {
            dqg_status st = apply_layouts(g, dq, layouts, n, &w->owned);
            if (st != DQG_OK)
                return st;
            w->data = w->owned;
        }
        q.axis = axis;
        R = b->dims[0];
        C = b->dims[1];
    }
    /* The MatMul's K x N: [R, C] is [K, N] unless the layout transposed
     * it; transpose_b swaps again. */
    w->nk = transposed != mm->attrs.matmul.transpose_b;
    if (transposed) {
        /* storage [R, C] = logical B^T: B is [C, R] */
        w->K = mm->attrs.matmul.transpose_b ? R : C;
        w->N = mm->attrs.matmul.transpose_b ? C : R;
    } else {
        w->K = mm->attrs.matmul.transpose_b ? C : R;
        w->N = mm->attrs.matmul.transpose_b ? R : C;
    }
    /* Storage row r, column c: r = nk ? n : k, c = nk ? k : n. */
    int64_t K = w->K, N = w->N;
    bool nk = w->nk;
    switch (q.granularity) {
    case DQG_PER_TENSOR:
        w->block_k = K, w->block_n = N, w->stride_k = 0, w->stride_n = 0;
        break;
    case DQG_PER_AXIS:
        if ((q.axis == 0) == nk) /* the axis is n */
            w->block_k = K, w->stride_k = 0, w->block_n = 1, w->stride_n = 1;
        else
            w->block_k = 1, w->stride_k = 1, w->block_n = N, w->stride_n = 0;
        break;
    case DQG_BLOCKED: {
        int64_t B = q.block_size;
        if (q.axis == 0 && nk) /* (n / B) * K + k */
            w->block_n = B, w->stride_n = K, w->block_k = 1, w->stride_k = 1;
        else if (q.axis == 0) /* (k / B) * N + n */
            w->block_k = B, w->stride_k = N, w->block_n = 1, w->stride_n = 1;
        else if (nk) /* n * ceil(K / B) + k / B */
            w->block_n = 1, w->stride_n = (K + B - 1) / B, w->block_k = B, w->stride_k = 1;
        else /* k * ceil(N / B) + n / B */
            w->block_k = 1, w->stride_k = (N + B - 1) / B, w->block_n = B, w->stride_n = 1;
        break;
    }
    case DQG_ELEMENTWISE:
        if (nk)
            w->block_n = 1, w->stride_n = K, w->block_k = 1, w->stride_k = 1;
        else
            w->block_k = 1, w->stride_k = N, w->block_n = 1, w->stride_n = 1;
        break;
    }
    (void)R;
    (void)C;
    return DQG_OK;
}

void dqg_weights_of_conv(const dqg_graph *g, const dqg_op *wdq, dqg_weights *w)
{
    const dqg_tensor *x = &g->tensors[wdq->inputs[0]];
    memset(w, 0, sizeof *w);
    w->dtype = x->dtype;
    w->data = x->data;
    w->N = x->dims[0];
    w->K = x->nelems / w->N;
    w->nk = true;
    w->scale = &g->tensors[wdq->inputs[1]];
    w->zp = wdq->inputs[2] != DQG_NONE ? &g->tensors[wdq->inputs[2]] : NULL;
    w->granularity = wdq->attrs.quant.granularity;
    /* One scale, or one per output channel (the fusion pass allows no
     * other). */
    bool per_channel = wdq->attrs.quant.granularity == DQG_PER_AXIS;
    w->block_k = w->K;
    w->stride_k = 0;
    w->block_n = per_channel ? 1 : w->N;
    w->stride_n = per_channel ? 1 : 0;
}

void dqg_weights_release(dqg_weights *w)
{
    free(w->owned);
    memset(w, 0, sizeof *w);
}

/* 8-bit weights with no zero point, one, or one per output channel: a loop
 * the compiler vectorizes. Stores every w - zp wrapped to 8 bits and sets
 * [*lo, *hi] to their range; false when the case is another one. */
static bool fold_s8_fast(const dqg_weights *w, int8_t *buf, int32_t *lo_out, int32_t *hi_out)
{
    bool per_tensor = w->block_k == w->K && w->block_n == w->N;
    bool per_n = w->block_k == w->K && w->block_n == 1 && w->stride_n == 1;
    if ((w->dtype != DQG_S8 && w->dtype != DQG_U8) || (w->zp && !per_tensor && !per_n))
        return false;
    int64_t R = w->nk ? w->N : w->K, C = w->nk ? w->K : w->N;
    int32_t *zn = calloc((size_t)w->N + 1, sizeof *zn);
    if (!zn)
        return false;
    for (int64_t n = 0; w->zp && n < w->N; n++)
        zn[n] = (int32_t)dqg_load_int(w->zp->dtype, w->zp->data, per_tensor ? 0 : n);
    const uint8_t *u = w->data;
    const int8_t *s = w->data;
    bool is_u8 = w->dtype == DQG_U8;
    int32_t lo = 0, hi = 0;
    for (int64_t r = 0; r < R; r++) {
        const int32_t *z = w->nk ? &zn[r] : zn; /* zero point of element (r, c) */
        int64_t zs = w->nk ? 0 : 1;
        int32_t rlo = 0, rhi = 0;
        for (int64_t c = 0; c < C; c++) {
            int32_t v = (is_u8 ? (int32_t)u[r * C + c] : (int32_t)s[r * C + c]) - z[c * zs];
            rlo = v < rlo ? v : rlo;
            rhi = v > rhi ? v : rhi;
            buf[r * C + c] = (int8_t)(uint8_t)v;
        }
        lo = rlo < lo ? rlo : lo;
        hi = rhi > hi ? rhi : hi;
    }
    free(zn);
    *lo_out = lo;
    *hi_out = hi;
    return true;
}

dqg_status dqg_weights_fold_s8(const dqg_weights *w, int8_t **out, int32_t *offset,
                               const char *what)
{
    dqg_cache_count_constant_transform();
    int64_t n = w->K * w->N;
    int8_t *buf = malloc((size_t)(n ? n : 1));
    if (!buf)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory folding weights", what);
    int32_t lo = 0, hi = 0;
    if (!fold_s8_fast(w, buf, &lo, &hi)) {
        /* Every other case (blocked scales, an unusual zero point). */
        for (int64_t k = 0; k < w->K; k++)
            for (int64_t c = 0; c < w->N; c++) {
                int64_t i = dqg_weights_index(w, k, c);
                int64_t v = dqg_load_int(w->dtype, w->data, i);
                if (w->zp)
                    v -= dqg_load_int(w->zp->dtype, w->zp->data, dqg_weights_scale_index(w, k, c));
                lo = v < lo ? (int32_t)v : lo;
                hi = v > hi ? (int32_t)v : hi;
                buf[i] = (int8_t)(uint8_t)v;
            }
    }
    int32_t z0 = 0;
    if (offset && (lo < -128 || hi > 127) && hi - lo <= 255) {
        /* u8 weights (w - zp spans up to 255): shifted into s8 by a
         * common offset, which the kernel gives back as the weights' zero
         * point. The offset nearest 0 keeps the shifted values small. */
        int32_t min_z = -128 - lo, max_z = 127 - hi;
        z0 = min_z > 0 ? min_z : max_z < 0 ? max_z : 0;
        uint8_t add = (uint8_t)z0;
        for (int64_t i = 0; i < n; i++)
            buf[i] = (int8_t)(uint8_t)((uint8_t)buf[i] + add); /* exact: the sum fits s8 */
        lo += z0;
        hi += z0;
    }
    if (lo >= -128 && hi <= 127) {
        if (offset)
            *offset = z0;
        *out = buf;
        return DQG_OK;
    }
    free(buf);
    /* The message names the first element that does not fit. */
    for (int64_t k = 0; k < w->K; k++)
        for (int64_t c = 0; c < w->N; c++) {
            int64_t i = dqg_weights_index(w, k, c);
            int64_t v = dqg_load_int(w->dtype, w->data, i), s = dqg_weights_scale_index(w, k, c);
            int64_t z = w->zp ? dqg_load_int(w->zp->dtype, w->zp->data, s) : 0;
            v -= z;
            if (v >= -128 && v <= 127)
                continue;
            if (offset)
                return dqg_set_error(DQG_UNSUPPORTED,
                                     "%s: weights minus their zero points span %d .. %d (channel "
                                     "%lld: zero point %lld, w - zp = %lld), more than one s8 "
                                     "range with a common zero point",
                                     what, (int)lo, (int)hi, (long long)s, (long long)z,
                                     (long long)v);
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "%s: weights zero point %lld on channel %lld does not "
                                 "fit s8 after folding (w - zp = %lld)",
                                 what, (long long)z, (long long)s, (long long)v);
        }
    return dqg_set_error(DQG_UNSUPPORTED, "%s: weights do not fit s8 after folding", what);
}

dqg_status dqg_weights_fold_s8_columns(const dqg_weights *w, int8_t **out, int32_t **col,
                                       const char *what)
{
    bool per_tensor = w->block_k == w->K && w->block_n == w->N;
    bool per_n = w->block_k == w->K && w->block_n == 1;
    *out = NULL;
    *col = NULL;
    if (!w->zp || (!per_tensor && !per_n) || (w->dtype != DQG_S8 && w->dtype != DQG_U8))
        return dqg_set_error(DQG_UNSUPPORTED, "%s: weights zero points that vary along K", what);
    dqg_cache_count_constant_transform();
    int64_t n = w->K * w->N;
    int8_t *buf = malloc((size_t)(n ? n : 1));
    int32_t *c = malloc((size_t)(w->N ? w->N : 1) * sizeof *c);
    if (!buf || !c) {
        free(buf);
        free(c);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory folding weights", what);
    }
    /* u8 codes less 128 (their top bit flipped), s8 codes as they are. */
    const uint8_t *src = w->data;
    uint8_t flip = w->dtype == DQG_U8 ? 0x80 : 0x00;
    for (int64_t i = 0; i < n; i++)
        buf[i] = (int8_t)(uint8_t)(src[i] ^ flip);
    int32_t base = w->dtype == DQG_U8 ? 128 : 0;
    for (int64_t j = 0; j < w->N; j++)
        c[j] = base -
               (int32_t)dqg_load_int(w->zp->dtype, w->zp->data, dqg_weights_scale_index(w, 0, j));
    *out = buf;
    *col = c;
    return DQG_OK;
}

dqg_status dqg_weights_check_int32(const dqg_weights *w, const int8_t *folded, int32_t offset,
                                   int64_t src_range, const char *what)
{
    /* With an offset the kernel multiplies folded - offset; |folded| +
     * |offset| bounds it, and the folded sums alone. */
    int64_t extra = offset < 0 ? -(int64_t)offset : offset;
    if (w->K * (128 + extra) * src_range <= INT32_MAX)
        return DQG_OK; /* no weight exceeds 128 + |offset| in magnitude */
    int64_t *sum = calloc((size_t)(w->N ? w->N : 1), sizeof *sum);
    if (!sum)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    /* In storage order: rows of K for [N, K], rows of N for [K, N]. */
    int64_t rows = w->nk ? w->N : w->K, cols = w->nk ? w->K : w->N;
    for (int64_t r = 0; r < rows; r++) {
        const int8_t *row = folded + r * cols;
        if (w->nk) {
            int64_t s = 0;
            for (int64_t c = 0; c < cols; c++)
                s += (row[c] < 0 ? -row[c] : row[c]) + extra;
            sum[r] = s;
        } else {
            for (int64_t c = 0; c < cols; c++)
                sum[c] += (row[c] < 0 ? -row[c] : row[c]) + extra;
        }
    }
    int64_t worst = 0;
    for (int64_t n = 1; n < w->N; n++)
        if (sum[n] > sum[worst])
            worst = n;
    int64_t s = w->N ? sum[worst] : 0;
    free(sum);
    if (s * src_range <= INT32_MAX)
        return DQG_OK;
    return dqg_set_error(DQG_UNSUPPORTED,
                         "%s: output channel %lld's weights sum to %lld in magnitude; with sources "
                         "up to %lld away from zero its int32 accumulator could overflow (limit "
                         "2^31 - 1)",
                         what, (long long)worst, (long long)s, (long long)src_range);
}

dqg_status dqg_weights_panels_alloc(size_t wbytes, size_t sbytes, bool with_zs, uint8_t **codes,
                                    float **scale, float **zs, const char *what)
{
    *codes = aligned_alloc(64, wbytes);
    *scale = aligned_alloc(64, sbytes);
    *zs = with_zs ? aligned_alloc(64, sbytes) : NULL;
    if (!*codes || !*scale || (with_zs && !*zs)) {
        free(*codes);
        free(*scale);
        free(*zs);
        *codes = NULL;
        *scale = *zs = NULL;
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of packed weights",
                             what, wbytes + 2 * sbytes);
    }
    memset(*codes, 0, wbytes);
    memset(*scale, 0, sbytes);
    if (*zs)
        memset(*zs, 0, sbytes);
    return DQG_OK;
}

void dqg_weights_panel_scales(const dqg_weights *w, int64_t n0, int64_t nn, int64_t block,
                              int64_t n_blocks, int width, float mult, float offset, float *scale,
                              float *zs)
{
    for (int64_t j = 0; j < nn; j++)
        for (int64_t b = 0; b < n_blocks; b++) {
            /* Every k of a block has the same scale (the kernels' block is
             * the scales'). */
            int64_t si = dqg_weights_scale_index(w, b * block, n0 + j);
            size_t at = (size_t)b * (size_t)width + (size_t)j;
            float s = dqg_load_float(w->scale->dtype, w->scale->data, si);
            scale[at] = s * mult;
            if (zs)
                zs[at] =
                    s * ((w->zp ? dqg_load_float(w->zp->dtype, w->zp->data, si) : 0.0f) + offset);
        }
}
