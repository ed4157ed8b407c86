/* dqgraph's own int8 depthwise 3x3 convolution; see qdw_kernel.h.
 *
 * Channels go 64 to a block. For one output row and block, each input
 * column x the row's window reads becomes four registers: for 16 channels
 * each, the dword [x(r0), x(r1), x(r2), 0] of the three input rows (bytes
 * interleaved by unpacking within 128-bit lanes, so register q, dword
 * 4L + i holds channel 16L + 4q + i). One vpdpbusd per register and
 * kernel column adds the column's three taps; a column is prepared once
 * and used by every output whose window covers it (three at stride 1).
 * The weights, the compensation of the zero point and the per-channel
 * constants are stored in the same order, and the saturating packs that
 * turn the four results into bytes restore the channels' order. At
 * stride 1 the fourth byte holds a fourth input row, and the same
 * registers serve the output row below too, with the weights shifted by
 * one byte. A padded position reads the source's zero point (the
 * dequantized 0 of the reference's padding), so the compensation is the
 * same for every output. s8 sources run as u8 codes x + 128. Channels
 * past the last whole block go 16 to a register in their own order,
 * each row's bytes widened and shifted into place. */
#include "runtime/qdw_kernel.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu_isa.h"

enum { QDW_BLOCK = 64, QDW_GROUP = 16 };

/* Per 64-channel block: weights [kernel column][register][16 dwords of
 * bytes (w(0,j), w(1,j), w(2,j), 0)] for one output row (top), and the
 * same shifted by one row, (0, w(0,j), w(1,j), w(2,j)), for the row below
 * it (bottom): at stride 1 four interleaved input rows serve two output
 * rows. Then per register the compensation (s32), the scale and the bias
 * (f32), in the registers' channel order. */
typedef struct qdw_block {
    int8_t top[3][4][64];
    int8_t bottom[3][4][64];
    int32_t comp[4][16];
    float scale[4][16];
    float bias[4][16];
} qdw_block;

/* The channels past the last whole block, 16 to a group in one register
 * in their own order: dword i = (x(r0), x(r1), x(r2), 0) of channel i,
 * built by widening each row's bytes. */
typedef struct qdw_group {
    int8_t w[3][64];
    int32_t comp[16];
    float scale[16];
    float bias[16];
} qdw_group;

struct dqg_qdw {
    dqg_qdw_shape s;
    bool x_s8, y_s8, bias;
    uint8_t pad_code;     /* what a padded position reads, as a u8 code */
    float zp_dst, lo, hi; /* after the zero point: clamp(y + zp, lo, hi) */
    /* The blocks' clamp in integers, after the rounding conversion (which
     * no value can overflow): the saturating packs give the type's range,
     * and a narrower [byte_lo, byte_hi] is applied to the packed bytes. */
    bool int_clamp, byte_clamp;
    int byte_lo, byte_hi;
    int64_t blocks, groups, units; /* units: blocks + groups */
    qdw_block *b;                  /* 64-byte aligned */
    qdw_group *g;
};

/* The channel of register q's dword d. */
static inline int64_t lane_channel(int q, int d)
{
    return 16 * (d / 4) + 4 * q + d % 4;
}

/* Composes a clamp to [a, b] after the clamp [*lo, *hi] (see the caller). */
static void compose_clamp(float *lo, float *hi, float a, float b)
{
    *lo = fminf(fmaxf(*lo, a), b);
    *hi = fminf(fmaxf(*hi, a), b);
}

/* Reads q's oneDNN attribute: output scales, zero points and ReLU/Clip
 * post-ops are all it may hold. The post-ops, clamps each, compose into
 * one clamp [lo, hi] (the images of the first's bounds). */
static dqg_status read_attr(dqg_qdw *d, const dqg_qattr *q, float **scales, int64_t *n_scales,
                            int32_t *zp_src, int32_t *zp_dst, float *lo, float *hi,
                            const char *what)
{
    if (q->n_factors || q->has_src_zp || q->n_binary || q->row_term_binary >= 0 || q->own_gelu ||
        q->bias_runtime)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: run-time scales, zero points or operands", what);
    dnnl_dim_t count;
    int mask;
    const float *sc;
    if (dnnl_primitive_attr_get_output_scales(q->attr, &count, &mask, &sc) != dnnl_success ||
        (count != 1 && count != d->s.c))
        return dqg_set_error(DQG_UNSUPPORTED, "%s: output scales of %lld values", what,
                             (long long)count);
    for (dnnl_dim_t i = 0; i < count; i++)
        if (!isfinite(sc[i]))
            return dqg_set_error(DQG_UNSUPPORTED, "%s: an output scale that is not finite", what);
    *n_scales = count;
    *scales = (float *)sc;
    const int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    int32_t *zp[2] = {zp_src, zp_dst};
    for (int i = 0; i < 2; i++) {
        const int32_t *z;
        *zp[i] = 0;
        if (dnnl_primitive_attr_get_zero_points(q->attr, args[i], &count, &mask, &z) !=
            dnnl_success)
            return dqg_set_error(DQG_UNSUPPORTED, "%s: zero points", what);
        if (count > 1 || (count == 1 && z[0] == DNNL_RUNTIME_S32_VAL))
            return dqg_set_error(DQG_UNSUPPORTED, "%s: zero points per channel or at run time",
                                 what);
        if (count == 1)
            *zp[i] = z[0];
    }
    const_dnnl_post_ops_t po;
    if (dnnl_primitive_attr_get_post_ops(q->attr, &po) != dnnl_success)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: post-ops", what);
    *lo = -INFINITY;
    *hi = INFINITY;
    for (int i = 0; i < dnnl_post_ops_len(po); i++) {
        float scale, alpha, beta;
        dnnl_alg_kind_t alg;
        if (dnnl_post_ops_get_kind(po, i) != dnnl_eltwise ||
            dnnl_post_ops_get_params_eltwise(po, i, &scale, &alg, &alpha, &beta) != dnnl_success ||
            scale != 1.0f)
            return dqg_set_error(DQG_UNSUPPORTED, "%s: a post-op other than ReLU or Clip", what);
        if (alg == dnnl_eltwise_relu && alpha == 0.0f)
            compose_clamp(lo, hi, 0.0f, INFINITY);
        else if ((alg == dnnl_eltwise_clip || alg == dnnl_eltwise_clip_v2) && alpha <= beta)
            compose_clamp(lo, hi, alpha, beta);
        else
            return dqg_set_error(DQG_UNSUPPORTED, "%s: a post-op other than ReLU or Clip", what);
    }
    return DQG_OK;
}

/* A bias of integers (as a quantized bias with the scale x_scale * w_scale
 * gives) joins the integer compensation: the sums stay below 2^24, so
 * f32(acc) + bias and f32(acc + bias) are the same exact value. */
static void fold_integer_bias(dqg_qdw *d)
{
    if (!d->bias)
        return;
    for (int64_t blk = 0; blk < d->blocks; blk++)
        for (int q = 0; q < 4; q++)
            for (int i = 0; i < 16; i++) {
                float b = d->b[blk].bias[q][i];
                if (!(fabsf(b) <= 4194304.0f) || b != nearbyintf(b))
                    return;
            }
    for (int64_t g = 0; g < d->groups; g++)
        for (int i = 0; i < 16; i++) {
            float b = d->g[g].bias[i];
            if (!(fabsf(b) <= 4194304.0f) || b != nearbyintf(b))
                return;
        }
    for (int64_t blk = 0; blk < d->blocks; blk++)
        for (int q = 0; q < 4; q++)
            for (int i = 0; i < 16; i++) {
                d->b[blk].comp[q][i] += (int32_t)d->b[blk].bias[q][i];
                d->b[blk].bias[q][i] = 0.0f;
            }
    for (int64_t g = 0; g < d->groups; g++)
        for (int i = 0; i < 16; i++) {
            d->g[g].comp[i] += (int32_t)d->g[g].bias[i];
            d->g[g].bias[i] = 0.0f;
        }
    d->bias = false;
}

/* Rounding is monotone, so round(clamp(y, lo, hi)) = clamp(round(y),
 * round(lo), round(hi)): the clamp may follow the conversion when no
 * value reaches 2^31 there (|sums| <= 9 * 255 * 128 plus the bias). */
static void plan_int_clamp(dqg_qdw *d, const float *scales, int64_t n_scales)
{
    float smax = 0.0f, bmax = 0.0f;
    for (int64_t i = 0; i < n_scales; i++)
        smax = fmaxf(smax, fabsf(scales[i]));
    for (int64_t blk = 0; blk < d->blocks; blk++)
        for (int q = 0; q < 4; q++)
            for (int i = 0; i < 16; i++)
                bmax = fmaxf(bmax, fabsf(d->b[blk].bias[q][i]));
    double bound =
        (9.0 * 255.0 * 128.0 + 4194304.0 + (double)bmax) * (double)smax + fabs((double)d->zp_dst);
    if (!(bound < 1073741824.0))
        return;
    int tmin = d->y_s8 ? -128 : 0, tmax = d->y_s8 ? 127 : 255;
    d->int_clamp = true;
    d->byte_lo = (int)nearbyintf(d->lo); /* within the type's range (compose_clamp) */
    d->byte_hi = (int)nearbyintf(d->hi);
    d->byte_clamp = d->byte_lo != tmin || d->byte_hi != tmax;
}

dqg_status dqg_qdw_create(const dqg_qdw_shape *s, dqg_dtype x_type, dqg_dtype y_type,
                          const int8_t *w, const dqg_qattr *q, dqg_qdw **out, const char *what)
{
    *out = NULL;
    if (!dqg_cpu_has(DQG_ISA_AVX512_VNNI))
        return dqg_set_error(DQG_UNSUPPORTED, "%s: no AVX-512 VNNI", what);
    if ((x_type != DQG_U8 && x_type != DQG_S8) || (y_type != DQG_U8 && y_type != DQG_S8))
        return dqg_set_error(DQG_UNSUPPORTED, "%s: not u8/s8 in and out", what);
    if (s->n < 1 || s->c < 1 || s->oh < 1 || s->ow < 1 || s->stride_h < 1 || s->stride_w < 1)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: an empty layer", what);
    dqg_qdw *d = calloc(1, sizeof *d);
    if (!d)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    d->s = *s;
    d->x_s8 = x_type == DQG_S8;
    d->y_s8 = y_type == DQG_S8;
    float *scales = NULL, lo = 0.0f, hi = 0.0f;
    int64_t n_scales = 1;
    int32_t zp_src = 0, zp_dst = 0;
    dqg_status st = read_attr(d, q, &scales, &n_scales, &zp_src, &zp_dst, &lo, &hi, what);
    if (st != DQG_OK) {
        free(d);
        return st;
    }
    /* clamp(y, lo, hi) + zp, then the destination's saturation: with
     * rounding monotone, fl(clamp(y) + zp) = clamp(fl(y + zp), fl(lo + zp),
     * fl(hi + zp)), and two clamps compose into one. */
    d->zp_dst = (float)zp_dst;
    d->lo = lo + d->zp_dst;
    d->hi = hi + d->zp_dst;
    if (d->y_s8)
        compose_clamp(&d->lo, &d->hi, -128.0f, 127.0f);
    else
        compose_clamp(&d->lo, &d->hi, 0.0f, 255.0f);
    /* The source's zero point in the u8 codes the kernel reads. */
    int32_t pad = d->x_s8 ? zp_src + 128 : zp_src;
    if (pad < 0 || pad > 255) {
        free(d);
        return dqg_set_error(DQG_UNSUPPORTED, "%s: a source zero point outside its type", what);
    }
    d->pad_code = (uint8_t)pad;
    d->bias = q->bias != NULL;
    d->blocks = s->c / QDW_BLOCK;
    d->groups = (s->c - d->blocks * QDW_BLOCK + QDW_GROUP - 1) / QDW_GROUP;
    d->units = d->blocks + d->groups;
    size_t bb = (size_t)d->blocks * sizeof(qdw_block), gb = (size_t)d->groups * sizeof(qdw_group);
    if (!(d->b = aligned_alloc(64, bb + gb + 64))) {
        free(d);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    memset(d->b, 0, bb + gb + 64);
    d->g = (qdw_group *)((char *)d->b + bb);
    for (int64_t blk = 0; blk < d->blocks; blk++) {
        qdw_block *b = &d->b[blk];
        for (int qr = 0; qr < 4; qr++)
            for (int dw = 0; dw < 16; dw++) {
                int64_t c = blk * QDW_BLOCK + lane_channel(qr, dw);
                const int8_t *wc = w + c * 9;
                int32_t sum = 0;
                for (int j = 0; j < 3; j++)
                    for (int r = 0; r < 3; r++) {
                        b->top[j][qr][4 * dw + r] = wc[r * 3 + j];
                        b->bottom[j][qr][4 * dw + r + 1] = wc[r * 3 + j];
                        sum += wc[r * 3 + j];
                    }
                b->comp[qr][dw] = -pad * sum;
                b->scale[qr][dw] = scales[n_scales > 1 ? c : 0];
                b->bias[qr][dw] = d->bias ? q->bias[c] : 0.0f;
            }
    }
    for (int64_t grp = 0; grp < d->groups; grp++) {
        qdw_group *g = &d->g[grp];
        for (int i = 0; i < QDW_GROUP; i++) {
            int64_t c = d->blocks * QDW_BLOCK + grp * QDW_GROUP + i;
            if (c >= s->c)
                break;
            const int8_t *wc = w + c * 9;
            int32_t sum = 0;
            for (int j = 0; j < 3; j++)
                for (int r = 0; r < 3; r++) {
                    g->w[j][4 * i + r] = wc[r * 3 + j];
                    sum += wc[r * 3 + j];
                }
            g->comp[i] = -pad * sum;
            g->scale[i] = scales[n_scales > 1 ? c : 0];
            g->bias[i] = d->bias ? q->bias[c] : 0.0f;
        }
    }
    fold_integer_bias(d);
    plan_int_clamp(d, scales, n_scales);
    *out = d;
    return DQG_OK;
}

#define QDW_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

/* The four registers of input column x: rows[0..3] (NULL: a padded
 * row; with `three`, the fourth byte is 0). */
QDW_TARGET static inline void column(const uint8_t *const rows[4], bool three, int64_t x, int64_t W,
                                     int64_t C, __mmask64 m, __m512i padv, bool s8, __m512i out[4])
{
    __m512i v[4];
    for (int r = 0; r < 4; r++) {
        if (r == 3 && three) {
            v[r] = _mm512_setzero_si512();
        } else if (rows[r] && x >= 0 && x < W) {
            v[r] = _mm512_maskz_loadu_epi8(m, rows[r] + x * C);
            if (s8)
                v[r] = _mm512_xor_si512(v[r], _mm512_set1_epi8((char)0x80));
        } else {
            v[r] = padv;
        }
    }
    __m512i ab_lo = _mm512_unpacklo_epi8(v[0], v[1]), ab_hi = _mm512_unpackhi_epi8(v[0], v[1]);
    __m512i cd_lo = _mm512_unpacklo_epi8(v[2], v[3]), cd_hi = _mm512_unpackhi_epi8(v[2], v[3]);
    out[0] = _mm512_unpacklo_epi16(ab_lo, cd_lo);
    out[1] = _mm512_unpackhi_epi16(ab_lo, cd_lo);
    out[2] = _mm512_unpacklo_epi16(ab_hi, cd_hi);
    out[3] = _mm512_unpackhi_epi16(ab_hi, cd_hi);
}

/* The result's f32 steps on one register of sums, up to the rounding
 * conversion (as oneDNN's kernels take them). */
QDW_TARGET static inline __m512i requantize(__m512i acc, bool with_bias, __m512 bias, __m512 scale,
                                            __m512 zp, bool clamp, __m512 lo, __m512 hi)
{
    __m512 f = _mm512_cvtepi32_ps(acc);
    if (with_bias)
        f = _mm512_add_ps(f, bias);
    f = _mm512_mul_ps(f, scale);
    f = _mm512_add_ps(f, zp);
    if (clamp)
        f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
    return _mm512_cvtps_epi32(f);
}

/* Four registers of results in the interleaved order to 64 bytes in the
 * channels' order. */
QDW_TARGET static inline __m512i pack_bytes(const dqg_qdw *d, const __m512i r[4])
{
    __m512i p01 = _mm512_packs_epi32(r[0], r[1]), p23 = _mm512_packs_epi32(r[2], r[3]);
    if (d->y_s8) {
        __m512i v = _mm512_packs_epi16(p01, p23);
        if (d->byte_clamp)
            v = _mm512_min_epi8(_mm512_max_epi8(v, _mm512_set1_epi8((char)d->byte_lo)),
                                _mm512_set1_epi8((char)d->byte_hi));
        return v;
    }
    __m512i v = _mm512_packus_epi16(p01, p23);
    if (d->byte_clamp)
        v = _mm512_min_epu8(_mm512_max_epu8(v, _mm512_set1_epi8((char)d->byte_lo)),
                            _mm512_set1_epi8((char)d->byte_hi));
    return v;
}

/* Output rows oy and, with `two`, oy + 1 (stride 1) of one block. */
QDW_TARGET static void rows_block(const dqg_qdw *d, const uint8_t *x, uint8_t *y, int64_t n,
                                  int64_t oy, bool two, int64_t blk)
{
    const dqg_qdw_shape *s = &d->s;
    const qdw_block *b = &d->b[blk];
    const int64_t C = s->c, c0 = blk * QDW_BLOCK;
    const __mmask64 m = ~(__mmask64)0;
    const uint8_t *rows[4];
    for (int r = 0; r < 4; r++) {
        int64_t iy = oy * s->stride_h - s->pad_t + r;
        rows[r] = iy >= 0 && iy < s->h ? x + ((n * s->h + iy) * s->w) * C + c0 : NULL;
    }
    __m512i comp[4];
    __m512 scale[4], bias[4];
    for (int q = 0; q < 4; q++) {
        comp[q] = _mm512_load_si512(b->comp[q]);
        scale[q] = _mm512_load_ps(b->scale[q]);
        bias[q] = _mm512_load_ps(b->bias[q]);
    }
    const __m512i padv = _mm512_set1_epi8((char)d->pad_code);
    const __m512 zp = _mm512_set1_ps(d->zp_dst), lo = _mm512_set1_ps(d->lo),
                 hi = _mm512_set1_ps(d->hi);
    const bool s8 = d->x_s8, with_bias = d->bias, f32_clamp = !d->int_clamp;
    uint8_t *out = y + ((n * s->oh + oy) * s->ow) * C + c0;
    const int64_t next_row = s->ow * C;
    __m512i col[3][4];
    for (int j = 0; j < 3; j++)
        for (int q = 0; q < 4; q++)
            col[j][q] = _mm512_setzero_si512();
    int64_t have = INT64_MIN; /* the input column col[2] holds */
    for (int64_t ox = 0; ox < s->ow; ox++) {
        int64_t x0 = ox * s->stride_w - s->pad_l;
        if (have == x0 + 1) { /* stride 1: one new column */
            for (int q = 0; q < 4; q++) {
                col[0][q] = col[1][q];
                col[1][q] = col[2][q];
            }
            column(rows, !two, x0 + 2, s->w, C, m, padv, s8, col[2]);
        } else if (have == x0) { /* stride 2: two */
            for (int q = 0; q < 4; q++)
                col[0][q] = col[2][q];
            column(rows, !two, x0 + 1, s->w, C, m, padv, s8, col[1]);
            column(rows, !two, x0 + 2, s->w, C, m, padv, s8, col[2]);
        } else {
            for (int j = 0; j < 3; j++)
                column(rows, !two, x0 + j, s->w, C, m, padv, s8, col[j]);
        }
        have = x0 + 2;
        __m512i r[4];
        for (int q = 0; q < 4; q++) {
            __m512i acc = comp[q];
            for (int j = 0; j < 3; j++)
                acc = _mm512_dpbusd_epi32(acc, col[j][q], _mm512_load_si512(b->top[j][q]));
            r[q] = requantize(acc, with_bias, bias[q], scale[q], zp, f32_clamp, lo, hi);
        }
        _mm512_storeu_si512(out + ox * C, pack_bytes(d, r));
        if (!two)
            continue;
        for (int q = 0; q < 4; q++) {
            __m512i acc = comp[q];
            for (int j = 0; j < 3; j++)
                acc = _mm512_dpbusd_epi32(acc, col[j][q], _mm512_load_si512(b->bottom[j][q]));
            r[q] = requantize(acc, with_bias, bias[q], scale[q], zp, f32_clamp, lo, hi);
        }
        _mm512_storeu_si512(out + next_row + ox * C, pack_bytes(d, r));
    }
}

/* Input column x of one group, from rows[0..2] (NULL: padded). */
QDW_TARGET static inline __m512i column16(const uint8_t *const rows[3], int64_t x, int64_t W,
                                          int64_t C, __mmask16 m, __m128i padv, bool s8)
{
    __m512i v[3];
    for (int r = 0; r < 3; r++) {
        __m128i b = padv;
        if (rows[r] && x >= 0 && x < W) {
            b = _mm_maskz_loadu_epi8(m, rows[r] + x * C);
            if (s8)
                b = _mm_xor_si128(b, _mm_set1_epi8((char)0x80));
        }
        v[r] = _mm512_cvtepu8_epi32(b);
    }
    /* v0 | v1 << 8 | v2 << 16 */
    return _mm512_ternarylogic_epi32(v[0], _mm512_slli_epi32(v[1], 8), _mm512_slli_epi32(v[2], 16),
                                     0xFE);
}

/* Output row oy of one group. */
QDW_TARGET static void row_group(const dqg_qdw *d, const uint8_t *x, uint8_t *y, int64_t n,
                                 int64_t oy, int64_t grp)
{
    const dqg_qdw_shape *s = &d->s;
    const qdw_group *g = &d->g[grp];
    const int64_t C = s->c, c0 = d->blocks * QDW_BLOCK + grp * QDW_GROUP;
    const int64_t left = C - c0;
    const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    const uint8_t *rows[3];
    for (int r = 0; r < 3; r++) {
        int64_t iy = oy * s->stride_h - s->pad_t + r;
        rows[r] = iy >= 0 && iy < s->h ? x + ((n * s->h + iy) * s->w) * C + c0 : NULL;
    }
    const __m512i w0 = _mm512_load_si512(g->w[0]), w1 = _mm512_load_si512(g->w[1]),
                  w2 = _mm512_load_si512(g->w[2]), comp = _mm512_load_si512(g->comp);
    const __m512 scale = _mm512_load_ps(g->scale), bias = _mm512_load_ps(g->bias);
    const __m128i padv = _mm_set1_epi8((char)d->pad_code);
    const __m512 zp = _mm512_set1_ps(d->zp_dst), lo = _mm512_set1_ps(d->lo),
                 hi = _mm512_set1_ps(d->hi);
    const bool s8 = d->x_s8;
    uint8_t *out = y + ((n * s->oh + oy) * s->ow) * C + c0;
    __m512i c[3] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    int64_t have = INT64_MIN;
    for (int64_t ox = 0; ox < s->ow; ox++) {
        int64_t x0 = ox * s->stride_w - s->pad_l;
        if (have == x0 + 1) {
            c[0] = c[1];
            c[1] = c[2];
            c[2] = column16(rows, x0 + 2, s->w, C, m, padv, s8);
        } else if (have == x0) {
            c[0] = c[2];
            c[1] = column16(rows, x0 + 1, s->w, C, m, padv, s8);
            c[2] = column16(rows, x0 + 2, s->w, C, m, padv, s8);
        } else {
            for (int j = 0; j < 3; j++)
                c[j] = column16(rows, x0 + j, s->w, C, m, padv, s8);
        }
        have = x0 + 2;
        __m512i acc = _mm512_dpbusd_epi32(comp, c[0], w0);
        acc = _mm512_dpbusd_epi32(acc, c[1], w1);
        acc = _mm512_dpbusd_epi32(acc, c[2], w2);
        __m512i r = requantize(acc, d->bias, bias, scale, zp, true, lo, hi);
        if (d->y_s8)
            _mm_mask_storeu_epi8(out + ox * C, m, _mm512_cvtsepi32_epi8(r));
        else
            _mm_mask_storeu_epi8(out + ox * C, m, _mm512_cvtusepi32_epi8(r));
    }
}

void dqg_qdw_run(const dqg_qdw *d, const void *x, void *y)
{
    const dqg_qdw_shape *s = &d->s;
    /* At stride 1 the blocks take output rows two at a time. */
    const int64_t step = s->stride_h == 1 ? 2 : 1, spans = (s->oh + step - 1) / step;
    const int64_t items = s->n * spans * d->units;
    int threads = s->n * s->oh * s->ow * s->c >= (1 << 14) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < items; i++) {
        int64_t unit = i % d->units, span = i / d->units;
        int64_t n = span / spans, oy = span % spans * step;
        bool two = step == 2 && oy + 1 < s->oh;
        if (unit < d->blocks) {
            rows_block(d, (const uint8_t *)x, (uint8_t *)y, n, oy, two, unit);
        } else {
            row_group(d, (const uint8_t *)x, (uint8_t *)y, n, oy, unit - d->blocks);
            if (two)
                row_group(d, (const uint8_t *)x, (uint8_t *)y, n, oy + 1, unit - d->blocks);
        }
    }
}

size_t dqg_qdw_bytes(const dqg_qdw *d)
{
    return sizeof *d + (size_t)d->blocks * sizeof(qdw_block) +
           (size_t)d->groups * sizeof(qdw_group);
}

void dqg_qdw_destroy(dqg_qdw *d)
{
    if (!d)
        return;
    free(d->b);
    free(d);
}
