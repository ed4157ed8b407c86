/* dqgraph's own dequantize kernels. Elements are processed in runs that
 * share one scale (per-tensor, per-axis, blocks along the last axis) or that
 * walk a scale vector (element-wise, blocks along an inner axis), in chunks
 * that stay in L1: decode x (and a zero-point vector) to float, compute
 * (x - zp) * scale in float32, encode once to the output type. The chunk
 * code is compiled for AVX-512, AVX2+F16C and plain C, chosen at run time;
 * results are bit-identical to the reference interpreter in all three. */
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/cpu_isa.h"
#include "runtime/dq_kernel.h"

#define CHUNK        256
#define PARALLEL_MIN (64 * 1024)

struct dqg_dq_kernel {
    dqg_dq_desc d;
    int impl;
    char name[32];
    dqg_dq_reorder *reorder;
    void *own_scale, *own_zp; /* copies of constant parameters */
    int64_t n, outer, D, inner, S;
    float x_lut[256], z_lut[256]; /* float8/float4 decode tables */
    bool x_lut_used, nibbles;
    bool stream; /* output larger than the caches: streaming stores */
    void (*run)(const struct dqg_dq_kernel *k, const void *x, const void *s, const void *z, void *y,
                int64_t first, int64_t n, int64_t sidx, bool vec);
};

/* ---- Chunk helpers shared by every ISA variant (inlined into each) ------- */

static inline __attribute__((always_inline)) void decode_x(const struct dqg_dq_kernel *k,
                                                           dqg_dtype t, const void *x,
                                                           int64_t first, int64_t n, float *out)
{
    switch (t) {
    case DQG_U8:
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)((const uint8_t *)x)[first + i];
        break;
    case DQG_S8:
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)((const int8_t *)x)[first + i];
        break;
    case DQG_U16:
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)((const uint16_t *)x)[first + i];
        break;
    case DQG_S16:
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)((const int16_t *)x)[first + i];
        break;
    case DQG_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint32_t b = (uint32_t)((const uint16_t *)x)[first + i] << 16;
            memcpy(&out[i], &b, 4);
        }
        break;
    case DQG_F8E4M3FN:
    case DQG_F8E4M3FNUZ:
    case DQG_F8E5M2:
    case DQG_F8E5M2FNUZ:
        for (int64_t i = 0; i < n; i++)
            out[i] = k->x_lut[((const uint8_t *)x)[first + i]];
        break;
    case DQG_U4:
    case DQG_S4:
    case DQG_F4E2M1: {
        const uint8_t *p = x;
        const float *lut = k->x_lut;
        int64_t i = 0;
        if (first & 1) {
            out[0] = lut[p[first >> 1] >> 4];
            i = 1;
        }
        const uint8_t *q = p + ((first + i) >> 1);
        int64_t pairs = (n - i) / 2;
        for (int64_t j = 0; j < pairs; j++) {
            out[i + 2 * j] = lut[q[j] & 15];
            out[i + 2 * j + 1] = lut[q[j] >> 4];
        }
        if ((n - i) & 1)
            out[n - 1] = lut[q[pairs] & 15];
        break;
    }
    default: /* f16 is decoded by the ISA variant; 32-bit ints elsewhere */
        for (int64_t i = 0; i < n; i++)
            out[i] = dqg_load_float(t, x, first + i);
        break;
    }
}

static inline __attribute__((always_inline)) void encode_bf16(const float *r, uint16_t *y,
                                                              int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &r[i], 4);
        uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
        y[i] = (uint16_t)((b & 0x7FFFFFFFu) > 0x7F800000u ? (b >> 16) | 0x40u : rounded);
    }
}

/* The body of a run, parameterized by the f16 converters of each ISA. */
#define DQ_RUN_BODY(F16_DECODE, F16_ENCODE, NIBBLES, STORE32, STORE16)                             \
    const dqg_dq_desc *d = &k->d;                                                                  \
    float xf[CHUNK], zf[CHUNK], sf[CHUNK], r[CHUNK];                                               \
    bool has_z = d->zp_dtype != DQG_DTYPE_UNDEF;                                                   \
    /* A 32-bit integer x or zero point: x - zp in int64, not in float. */                         \
    bool wide = d->x_dtype == DQG_S32 || d->x_dtype == DQG_U32 || d->zp_dtype == DQG_S32 ||        \
                d->zp_dtype == DQG_U32;                                                            \
    if (!vec && !wide && k->x_lut_used && d->out_dtype == DQG_F32 &&                               \
        n >= (k->nibbles ? 32 : 1024)) {                                                           \
        /* One scale for the whole run: (decode(c) - zp) * scale per code,                         \
         * computed in the same float32 steps, then a table lookup. */                             \
        float tbl[256];                                                                            \
        float sc = dqg_load_float(d->scale_dtype, s, sidx);                                        \
        float zc = has_z ? dqg_load_float(d->zp_dtype, z, sidx) : 0.0f;                            \
        int codes = k->nibbles ? 16 : 256;                                                         \
        for (int c = 0; c < codes; c++)                                                            \
            tbl[c] = (k->x_lut[c] - zc) * sc;                                                      \
        float *out = (float *)y + first;                                                           \
        if (k->nibbles) {                                                                          \
            const uint8_t *p = x;                                                                  \
            int64_t i = 0;                                                                         \
            if (first & 1)                                                                         \
                out[i++] = tbl[p[first >> 1] >> 4];                                                \
            int64_t pairs = (n - i) / 2;                                                           \
            NIBBLES(p + ((first + i) >> 1), pairs, tbl, out + i);                                  \
            if ((n - i) & 1)                                                                       \
                out[n - 1] = tbl[p[(first + n - 1) >> 1] & 15];                                    \
        } else {                                                                                   \
            const uint8_t *p = (const uint8_t *)x + first;                                         \
            for (int64_t i = 0; i < n; i++)                                                        \
                out[i] = tbl[p[i]];                                                                \
        }                                                                                          \
        return;                                                                                    \
    }                                                                                              \
    float s1 = vec ? 0.0f : dqg_load_float(d->scale_dtype, s, sidx);                               \
    float z1 = (!vec && has_z && !wide) ? dqg_load_float(d->zp_dtype, z, sidx) : 0.0f;             \
    int64_t zi1 = (!vec && has_z && wide && dqg_dtype_is_integer(d->zp_dtype))                     \
                      ? dqg_load_int(d->zp_dtype, z, sidx)                                         \
                      : 0;                                                                         \
    for (int64_t off = 0; off < n; off += CHUNK) {                                                 \
        int64_t m = n - off < CHUNK ? n - off : CHUNK;                                             \
        int64_t at = first + off;                                                                  \
        if (vec) {                                                                                 \
            if (d->scale_dtype == DQG_F32)                                                         \
                memcpy(sf, (const float *)s + sidx + off, (size_t)m * sizeof(float));              \
            else                                                                                   \
                decode_x(k, d->scale_dtype, s, sidx + off, m, sf);                                 \
        }                                                                                          \
        if (wide) {                                                                                \
            /* x - zp exact in int64, then one rounding, as the reference. */                      \
            for (int64_t i = 0; i < m; i++) {                                                      \
                int64_t xv = dqg_load_int(d->x_dtype, x, at + i);                                  \
                if (has_z && dqg_dtype_is_integer(d->zp_dtype)) {                                  \
                    int64_t zv = vec ? dqg_load_int(d->zp_dtype, z, sidx + off + i) : zi1;         \
                    xf[i] = (float)(xv - zv);                                                      \
                } else if (has_z) {                                                                \
                    double zv = dqg_load_double(d->zp_dtype, z, vec ? sidx + off + i : sidx);      \
                    xf[i] = (float)((double)xv - zv);                                              \
                } else {                                                                           \
                    xf[i] = (float)xv;                                                             \
                }                                                                                  \
            }                                                                                      \
        } else {                                                                                   \
            if (d->x_dtype == DQG_F16)                                                             \
                F16_DECODE((const uint16_t *)x + at, xf, m);                                       \
            else                                                                                   \
                decode_x(k, d->x_dtype, x, at, m, xf);                                             \
            if (has_z && vec) {                                                                    \
                if (d->zp_dtype == DQG_F16)                                                        \
                    F16_DECODE((const uint16_t *)z + sidx + off, zf, m);                           \
                else                                                                               \
                    decode_x(k, d->zp_dtype, z, sidx + off, m, zf);                                \
                for (int64_t i = 0; i < m; i++)                                                    \
                    xf[i] = xf[i] - zf[i];                                                         \
            } else if (has_z) {                                                                    \
                for (int64_t i = 0; i < m; i++)                                                    \
                    xf[i] = xf[i] - z1;                                                            \
            }                                                                                      \
        }                                                                                          \
        if (vec)                                                                                   \
            for (int64_t i = 0; i < m; i++)                                                        \
                r[i] = xf[i] * sf[i];                                                              \
        else                                                                                       \
            for (int64_t i = 0; i < m; i++)                                                        \
                r[i] = xf[i] * s1;                                                                 \
        if (d->out_dtype == DQG_F32) {                                                             \
            STORE32((float *)y + at, r, m);                                                        \
        } else {                                                                                   \
            uint16_t h[CHUNK];                                                                     \
            if (d->out_dtype == DQG_F16)                                                           \
                F16_ENCODE(r, h, m);                                                               \
            else                                                                                   \
                encode_bf16(r, h, m);                                                              \
            STORE16((uint16_t *)y + at, h, m);                                                     \
        }                                                                                          \
    }

static inline __attribute__((always_inline)) void store32_c(float *dst, const float *src, int64_t m)
{
    memcpy(dst, src, (size_t)m * sizeof(float));
}

static inline __attribute__((always_inline)) void store16_c(uint16_t *dst, const uint16_t *src,
                                                            int64_t m)
{
    memcpy(dst, src, (size_t)m * sizeof(uint16_t));
}

/* Expands `pairs` bytes of packed 4-bit codes through a 16-entry table. */
static inline __attribute__((always_inline)) void nibbles_c(const uint8_t *q, int64_t pairs,
                                                            const float *tbl, float *out)
{
    for (int64_t j = 0; j < pairs; j++) {
        out[2 * j] = tbl[q[j] & 15];
        out[2 * j + 1] = tbl[q[j] >> 4];
    }
}

/* ---- Scalar variant --------------------------------------------------------- */

static void f16_decode_c(const uint16_t *h, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = dqg_f16_to_f32(h[i]);
}

static void f16_encode_c(const float *r, uint16_t *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = dqg_f32_to_f16(r[i]);
}

__attribute__((optimize("no-tree-vectorize"))) static void
run_scalar(const struct dqg_dq_kernel *k, const void *x, const void *s, const void *z, void *y,
           int64_t first, int64_t n, int64_t sidx, bool vec)
{
    DQ_RUN_BODY(f16_decode_c, f16_encode_c, nibbles_c, store32_c, store16_c)
}

/* ---- AVX2 + F16C variant ---------------------------------------------------- */

__attribute__((target("avx2,f16c,fma"))) static inline void f16_decode_avx2(const uint16_t *h,
                                                                            float *out, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    for (; i < n; i++)
        out[i] = dqg_f16_to_f32(h[i]);
}

__attribute__((target("avx2,f16c,fma"))) static inline void f16_encode_avx2(const float *r,
                                                                            uint16_t *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(r + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        y[i] = dqg_f32_to_f16(r[i]);
}

__attribute__((target("avx2,f16c"))) static void run_avx2(const struct dqg_dq_kernel *k,
                                                          const void *x, const void *s,
                                                          const void *z, void *y, int64_t first,
                                                          int64_t n, int64_t sidx, bool vec)
{
    DQ_RUN_BODY(f16_decode_avx2, f16_encode_avx2, nibbles_c, store32_c, store16_c)
}

/* ---- AVX-512 variant -------------------------------------------------------- */

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static inline void
f16_decode_avx512(const uint16_t *h, float *out, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
    for (; i < n; i++)
        out[i] = dqg_f16_to_f32(h[i]);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static inline void
f16_encode_avx512(const float *r, uint16_t *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(r + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        y[i] = dqg_f32_to_f16(r[i]);
}

/* 16 codes per step: split the nibbles of 8 bytes, interleave them into
 * element order, widen to indices and permute the table held in a register. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static inline void
nibbles_avx512(const uint8_t *q, int64_t pairs, const float *tbl, float *out)
{
    __m512 t = _mm512_loadu_ps(tbl);
    __m128i mask = _mm_set1_epi8(0x0F);
    int64_t j = 0;
    for (; j + 8 <= pairs; j += 8) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(q + j));
        __m128i lo = _mm_and_si128(b, mask);
        __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
        __m512i idx = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
        _mm512_storeu_ps(out + 2 * j, _mm512_permutexvar_ps(idx, t));
    }
    for (; j < pairs; j++) {
        out[2 * j] = tbl[q[j] & 15];
        out[2 * j + 1] = tbl[q[j] >> 4];
    }
}

/* Large outputs are written with streaming stores, as memcpy does: the
 * destination is not read first, which halves the write traffic. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static inline void
stream_bytes(void *dst, const void *src, size_t bytes)
{
    char *d = dst;
    const char *s = src;
    size_t head = (64 - ((uintptr_t)d & 63)) & 63;
    if (head > bytes)
        head = bytes;
    memcpy(d, s, head);
    size_t i = head;
    for (; i + 64 <= bytes; i += 64)
        _mm512_stream_si512((void *)(d + i), _mm512_loadu_si512((const void *)(s + i)));
    memcpy(d + i, s + i, bytes - i);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static inline void
store32_avx512(float *dst, const float *src, int64_t m)
{
    stream_bytes(dst, src, (size_t)m * sizeof(float));
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static inline void
store16_avx512(uint16_t *dst, const uint16_t *src, int64_t m)
{
    stream_bytes(dst, src, (size_t)m * sizeof(uint16_t));
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void
f8_run_avx512(const struct dqg_dq_kernel *k, const uint8_t *x, float sc, float zp, float *y,
              int64_t first, int64_t n);

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void
run_avx512(const struct dqg_dq_kernel *k, const void *x, const void *s, const void *z, void *y,
           int64_t first, int64_t n, int64_t sidx, bool vec)
{
    if (!vec && k->d.out_dtype == DQG_F32 &&
        (k->d.x_dtype == DQG_F8E5M2 || k->d.x_dtype == DQG_F8E4M3FN)) {
        float sc = dqg_load_float(k->d.scale_dtype, s, sidx);
        float zp = k->d.zp_dtype != DQG_DTYPE_UNDEF ? dqg_load_float(k->d.zp_dtype, z, sidx) : 0.0f;
        f8_run_avx512(k, x, sc, zp, y, first, n);
        if (k->stream)
            _mm_sfence();
        return;
    }
    if (k->stream) {
        DQ_RUN_BODY(f16_decode_avx512, f16_encode_avx512, nibbles_avx512, store32_avx512,
                    store16_avx512)
        _mm_sfence();
    } else {
        DQ_RUN_BODY(f16_decode_avx512, f16_encode_avx512, nibbles_avx512, store32_c, store16_c)
    }
}

/* Blocked 4-bit along the last axis, f32 output, one row: per block the
 * 16-entry table (decode(c) - zp) * scale is one vector subtract and
 * multiply, then each 16 codes are one permute. Needs even block starts. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void
blocked4_row_avx512(const struct dqg_dq_kernel *k, const uint8_t *x, const void *s, const void *z,
                    float *y, int64_t start, int64_t D, int64_t sbase)
{
    const dqg_dq_desc *d = &k->d;
    int64_t B = d->block_size;
    __m512 lut = _mm512_loadu_ps(k->x_lut);
    __m128i mask = _mm_set1_epi8(0x0F);
    bool aligned = k->stream && ((uintptr_t)(y + start) & 63) == 0 && (B & 15) == 0;
    for (int64_t b0 = 0, bi = 0; b0 < D; b0 += B, bi++) {
        int64_t len = b0 + B <= D ? B : D - b0;
        __m512 sc = _mm512_set1_ps(dqg_load_float(d->scale_dtype, s, sbase + bi));
        __m512 zp = _mm512_set1_ps(
            d->zp_dtype != DQG_DTYPE_UNDEF ? dqg_load_float(d->zp_dtype, z, sbase + bi) : 0.0f);
        __m512 t = _mm512_mul_ps(_mm512_sub_ps(lut, zp), sc);
        const uint8_t *q = x + ((start + b0) >> 1);
        float *out = y + start + b0;
        int64_t j = 0;
        for (; j + 16 <= len; j += 16) {
            __m128i v = _mm_loadl_epi64((const __m128i *)(q + j / 2));
            __m128i lo = _mm_and_si128(v, mask);
            __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
            __m512 r = _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)), t);
            if (aligned)
                _mm512_stream_ps(out + j, r);
            else
                _mm512_storeu_ps(out + j, r);
        }
        if (j < len) {
            float tbl[16];
            _mm512_storeu_ps(tbl, t);
            for (; j < len; j++)
                out[j] = tbl[(q[j / 2] >> ((j & 1) * 4)) & 15];
        }
    }
}

/* 8-bit integers with an f32 scale (and zero point) vector along the last
 * axis, f32 output, one row: widen, convert, subtract, multiply and store
 * 16 elements at a time, in the same float32 steps as the definition. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void
axis8_row_avx512(const struct dqg_dq_kernel *k, const void *x, const float *s, const void *z,
                 float *y, int64_t start, int64_t D)
{
    bool sgn = k->d.x_dtype == DQG_S8, has_z = k->d.zp_dtype != DQG_DTYPE_UNDEF;
    const uint8_t *p = (const uint8_t *)x + start;
    float *out = y + start;
    bool aligned = k->stream && ((uintptr_t)out & 63) == 0;
    int64_t j = 0;
    for (; j + 16 <= D; j += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + j));
        __m512 xf = _mm512_cvtepi32_ps(sgn ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v));
        if (has_z) {
            __m128i zv = _mm_loadu_si128((const __m128i *)((const uint8_t *)z + j));
            xf = _mm512_sub_ps(
                xf, _mm512_cvtepi32_ps(sgn ? _mm512_cvtepi8_epi32(zv) : _mm512_cvtepu8_epi32(zv)));
        }
        __m512 r = _mm512_mul_ps(xf, _mm512_loadu_ps(s + j));
        if (aligned)
            _mm512_stream_ps(out + j, r);
        else
            _mm512_storeu_ps(out + j, r);
    }
    for (; j < D; j++) {
        float xv = sgn ? (float)((const int8_t *)p)[j] : (float)p[j];
        float zv = !has_z ? 0.0f
                   : sgn  ? (float)((const int8_t *)z)[j]
                          : (float)((const uint8_t *)z)[j];
        out[j] = (xv - zv) * s[j];
    }
}

/* float8 E5M2 / E4M3FN with one scale, f32 output, through f16 bits and
 * the hardware converter instead of a table gather: E5M2 is the top byte
 * of an f16 (every code, subnormals, infinities and NaNs included); an
 * E4M3FN normal is its 7 low bits shifted into an f16 with the exponent
 * rebiased (+8), its subnormals m * 2^-9 and S.1111.111 NaN. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void
f8_run_avx512(const struct dqg_dq_kernel *k, const uint8_t *x, float sc, float zp, float *y,
              int64_t first, int64_t n)
{
    bool e5m2 = k->d.x_dtype == DQG_F8E5M2;
    const uint8_t *p = x + first;
    float *out = y + first;
    bool aligned = k->stream && ((uintptr_t)out & 63) == 0;
    __m512 vs = _mm512_set1_ps(sc), vz = _mm512_set1_ps(zp);
    __m512i m7f = _mm512_set1_epi32(0x7F), m80 = _mm512_set1_epi32(0x80);
    __m512i m78 = _mm512_set1_epi32(0x78), m07 = _mm512_set1_epi32(0x07);
    __m512 sub_scale = _mm512_set1_ps(1.0f / 512.0f);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + j)));
        __m512 f;
        if (e5m2) {
            f = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_slli_epi32(v, 8)));
        } else {
            __m512i h =
                _mm512_or_si512(_mm512_add_epi32(_mm512_slli_epi32(_mm512_and_si512(v, m7f), 7),
                                                 _mm512_set1_epi32(8 << 10)),
                                _mm512_slli_epi32(_mm512_and_si512(v, m80), 8));
            f = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
            __mmask16 subn = _mm512_testn_epi32_mask(v, m78);
            __m512 fs = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, m07)), sub_scale);
            fs = _mm512_castsi512_ps(_mm512_or_si512(
                _mm512_castps_si512(fs), _mm512_slli_epi32(_mm512_and_si512(v, m80), 24)));
            f = _mm512_mask_mov_ps(f, subn, fs);
            __mmask16 nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(v, m7f), m7f);
            f = _mm512_mask_mov_ps(f, nan, _mm512_set1_ps(__builtin_nanf("")));
        }
        __m512 r = _mm512_mul_ps(_mm512_sub_ps(f, vz), vs);
        if (aligned)
            _mm512_stream_ps(out + j, r);
        else
            _mm512_storeu_ps(out + j, r);
    }
    for (; j < n; j++)
        out[j] = (k->x_lut[p[j]] - zp) * sc;
}

/* ---- Driving the runs --------------------------------------------------------- */

/* Splits the tensor into runs by granularity and spreads them over threads. */
static void run_all(const struct dqg_dq_kernel *k, const void *x, const void *s, const void *z,
                    void *y)
{
    const dqg_dq_desc *d = &k->d;
    int threads = k->n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
    switch (d->granularity) {
    case DQG_PER_TENSOR:
    case DQG_ELEMENTWISE: {
        bool vec = d->granularity == DQG_ELEMENTWISE;
        /* Even chunk boundaries keep 4-bit inputs byte-aligned. */
        int64_t per = ((k->n + threads - 1) / threads + 1) & ~(int64_t)1;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int t = 0; t < threads; t++) {
            int64_t a = t * per, b = a + per < k->n ? a + per : k->n;
            if (a < b)
                k->run(k, x, s, z, y, a, b - a, vec ? a : 0, vec);
        }
        break;
    }
    case DQG_PER_AXIS: {
        if (k->inner == 1) {
            /* Along the last axis: each row walks the whole scale vector
             * (the AVX-512 row kernel reads the zero points as x's type). */
            if (k->impl == DQG_DQ_IMPL_OWN_AVX512 && d->out_dtype == DQG_F32 &&
                d->scale_dtype == DQG_F32 && (d->x_dtype == DQG_U8 || d->x_dtype == DQG_S8) &&
                (d->zp_dtype == DQG_DTYPE_UNDEF || d->zp_dtype == d->x_dtype)) {
#pragma omp parallel for num_threads(threads) schedule(static)
                for (int64_t o = 0; o < k->outer; o++)
                    axis8_row_avx512(k, x, s, z, y, o * k->D, k->D);
                if (k->stream)
                    _mm_sfence();
                break;
            }
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t o = 0; o < k->outer; o++)
                k->run(k, x, s, z, y, o * k->D, k->D, 0, true);
            break;
        }
        int64_t rows = k->outer * k->D;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t row = 0; row < rows; row++)
            k->run(k, x, s, z, y, row * k->inner, k->inner, row % k->D, false);
        break;
    }
    case DQG_BLOCKED: {
        int64_t rows = k->outer * k->D, B = d->block_size;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t row = 0; row < rows; row++) {
            int64_t o = row / k->D, a = row % k->D;
            int64_t sbase = (o * k->S + a / B) * k->inner;
            if (k->inner == 1)
                k->run(k, x, s, z, y, row, 1, sbase, false);
            else
                k->run(k, x, s, z, y, row * k->inner, k->inner, sbase, true);
        }
        break;
    }
    }
}

/* Blocks along the last axis: each block of B elements shares one scale, so
 * runs of B (not of 1) keep the vector loops long. */
static void run_blocked_last(const struct dqg_dq_kernel *k, const void *x, const void *s,
                             const void *z, void *y)
{
    int64_t B = k->d.block_size, D = k->D, nblk = (D + B - 1) / B;
    int64_t total = k->outer * nblk;
    int threads = k->n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
    /* The row kernel subtracts the zero point in float32: not for 32-bit
     * integer zero points. */
    if (k->impl == DQG_DQ_IMPL_OWN_AVX512 && k->nibbles && k->d.out_dtype == DQG_F32 &&
        (B & 1) == 0 && (D & 1) == 0 && k->d.zp_dtype != DQG_S32 && k->d.zp_dtype != DQG_U32) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t o = 0; o < k->outer; o++)
            blocked4_row_avx512(k, x, s, z, y, o * D, D, o * k->S);
        if (k->stream)
            _mm_sfence();
        return;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t bi = 0; bi < total; bi++) {
        int64_t o = bi / nblk, b = bi % nblk;
        int64_t start = o * D + b * B, len = (b + 1) * B <= D ? B : D - b * B;
        k->run(k, x, s, z, y, start, len, o * k->S + b, false);
    }
}

/* Whether this CPU, within the DQG_MAX_ISA cap, runs the own kernel `impl`. */
static bool cpu_has(int impl)
{
    if (impl == DQG_DQ_IMPL_OWN_AVX512)
        return dqg_cpu_has(DQG_ISA_AVX512);
    if (impl == DQG_DQ_IMPL_OWN_AVX2)
        return dqg_cpu_has(DQG_ISA_AVX2);
    return true;
}

static void *copy_param(dqg_dtype t, int64_t n, const void *p)
{
    size_t bytes = dqg_dtype_storage_size(t, n);
    void *c = malloc(bytes ? bytes : 1);
    if (c)
        memcpy(c, p, bytes);
    return c;
}

dqg_status dqg_dq_kernel_create(const dqg_dq_desc *d, int impl, dqg_dq_kernel **out)
{
    *out = NULL;
    struct dqg_dq_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "dequantize kernel: out of memory");
    k->d = *d;
    k->n = 1;
    for (int i = 0; i < d->rank; i++)
        k->n *= d->dims[i];
    int axis = d->granularity == DQG_PER_AXIS || d->granularity == DQG_BLOCKED ? d->axis : 0;
    k->outer = 1;
    k->inner = 1;
    for (int i = 0; i < axis; i++)
        k->outer *= d->dims[i];
    for (int i = axis + 1; i < d->rank; i++)
        k->inner *= d->dims[i];
    k->D = d->rank ? d->dims[axis] : 1;
    k->S = d->granularity == DQG_BLOCKED ? (k->D + d->block_size - 1) / d->block_size : 1;
    k->stream = dqg_dtype_storage_size(d->out_dtype, k->n) >= ((size_t)8 << 20);

    /* AUTO: with AVX-512, dqgraph's kernels (their streaming stores and
     * row loops outrun oneDNN 2.6's reorders in every case bench_dequantize
     * measures); without it, oneDNN's reorder where it applies. */
    bool prefer_onednn = impl == DQG_DQ_IMPL_ONEDNN ||
                         (impl == DQG_DQ_IMPL_AUTO && !cpu_has(DQG_DQ_IMPL_OWN_AVX512));
    if (prefer_onednn) {
        dqg_status st = dqg_dq_reorder_create(d, &k->reorder);
        if (st == DQG_OK) {
            snprintf(k->name, sizeof k->name, "onednn:reorder");
            *out = k;
            return DQG_OK;
        }
        if (impl == DQG_DQ_IMPL_ONEDNN) {
            free(k);
            return st;
        }
        impl = DQG_DQ_IMPL_OWN;
    }
    if (impl == DQG_DQ_IMPL_OWN || impl == DQG_DQ_IMPL_AUTO)
        impl = cpu_has(DQG_DQ_IMPL_OWN_AVX512) ? DQG_DQ_IMPL_OWN_AVX512
               : cpu_has(DQG_DQ_IMPL_OWN_AVX2) ? DQG_DQ_IMPL_OWN_AVX2
                                               : DQG_DQ_IMPL_OWN_SCALAR;
    if (!cpu_has(impl)) {
        free(k);
        return dqg_set_error(DQG_UNSUPPORTED, "dequantize kernel: the CPU lacks the ISA");
    }
    k->impl = impl;
    k->run = impl == DQG_DQ_IMPL_OWN_AVX512 ? run_avx512
             : impl == DQG_DQ_IMPL_OWN_AVX2 ? run_avx2
                                            : run_scalar;
    snprintf(k->name, sizeof k->name, "own:%s",
             impl == DQG_DQ_IMPL_OWN_AVX512 ? "avx512"
             : impl == DQG_DQ_IMPL_OWN_AVX2 ? "avx2"
                                            : "scalar");
    /* Decode tables for the 8-bit float and 4-bit types. */
    dqg_dtype xt = d->x_dtype;
    int bits = dqg_dtype_bits(xt);
    if ((bits == 8 && dqg_dtype_is_float(xt)) || bits == 4) {
        k->x_lut_used = true;
        k->nibbles = bits == 4;
        int codes = bits == 4 ? 16 : 256;
        for (int c = 0; c < codes; c++) {
            uint8_t byte = (uint8_t)c;
            k->x_lut[c] = dqg_load_float(xt, &byte, 0);
        }
    }
    if (d->scale_is_constant) {
        int64_t ns = d->granularity == DQG_PER_TENSOR    ? 1
                     : d->granularity == DQG_PER_AXIS    ? k->D
                     : d->granularity == DQG_ELEMENTWISE ? k->n
                                                         : k->outer * k->S * k->inner;
        k->own_scale = copy_param(d->scale_dtype, ns, d->const_scale);
        if (d->zp_dtype != DQG_DTYPE_UNDEF)
            k->own_zp = copy_param(d->zp_dtype, ns, d->const_zp);
        if (!k->own_scale || (d->zp_dtype != DQG_DTYPE_UNDEF && !k->own_zp)) {
            dqg_dq_kernel_destroy(k);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "dequantize kernel: out of memory");
        }
    }
    *out = k;
    return DQG_OK;
}

dqg_status dqg_dq_kernel_run(dqg_dq_kernel *k, const void *x, const void *scale, const void *zp,
                             void *y)
{
    if (k->d.scale_is_constant) {
        scale = k->own_scale;
        zp = k->own_zp;
    }
    if (k->reorder)
        return dqg_dq_reorder_run(k->reorder, x, scale, zp, y);
    if (k->d.granularity == DQG_BLOCKED && k->inner == 1)
        run_blocked_last(k, x, scale, zp, y);
    else
        run_all(k, x, scale, zp, y);
    return DQG_OK;
}

const char *dqg_dq_kernel_impl_name(const dqg_dq_kernel *k)
{
    return k->name;
}

void dqg_dq_kernel_destroy(dqg_dq_kernel *k)
{
    if (!k)
        return;
    dqg_dq_reorder_destroy(k->reorder);
    free(k->own_scale);
    free(k->own_zp);
    free(k);
}
