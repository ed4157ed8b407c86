/* The weight-only kernel's approximate mode (fpmath = DQG_FPMATH_INT8, never
 * the default): the f32 activations are quantized at run time to int8, per
 * row and per block of K (symmetric, scale max|x| / 127, rounding half to
 * even), and multiplied with the 4- or 8-bit weights by VNNI dot products
 * (vpdpbusd: 64 multiply-adds per instruction where the exact kernel's FMA
 * does 16). This is what ONNX Runtime's MatMulNBits does by default.
 *
 * Weights are stored unsigned: q + offset (s4: +8, s8: +128), the offset
 * joining the zero point. Panels of 16 output columns; within a panel, k
 * runs in quads (vpdpbusd sums four adjacent bytes into a 32-bit lane):
 * 8-bit weights give 64 bytes per quad (byte 4n + i: column n, k = 4j + i);
 * 4-bit weights put quad j in the low nibbles and quad j + 1 in the high
 * nibbles of the same 64 bytes. For the x-block c of row m (scale sx, codes
 * xq, their sum xs) and its weight block b:
 *
 *   y[m, n] += s[b, n] sx[m, c] (sum_{k in c} xq[m, k] u[k, n]
 *                                - (zp[b, n] + offset) xs[m, c])
 *
 * The integer sums are exact (|sum| < 256 x 255 x 127 < 2^24, so also their
 * conversion to f32); the approximation is the activations' rounding,
 * |x - sx xq| <= sx / 2 per element. An x-block is the weights' K-block
 * when that is shorter than K (it must then hold whole quads), else 128. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/cpu_isa.h"
#include "runtime/wo_q8.h"

#define PANEL    16
#define MAX_ROWS 4
#define XBLOCK   128 /* x-block of per-tensor and per-channel weights */

struct dqg_wo_q8 {
    int64_t K, N, K_pad, panels;
    int64_t wblock, n_wblocks; /* the scales' K-block */
    int64_t xblock, n_xblocks;
    bool four_bit, has_zs;
    float offset; /* without zero points: the offset, applied with the scale */
    uint8_t *w;   /* [panels][K_pad / 4][64] (4-bit: [K_pad / 8][64]) */
    float *scale; /* [panels][n_wblocks][16] */
    float *zs;    /* [panels][n_wblocks][16]: scale * (zero point + offset), for
                   * weights with zero points */
};

static size_t round64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

int64_t dqg_wo_q8_xblock(const dqg_wo_q8 *g)
{
    return g->xblock;
}

size_t dqg_wo_q8_bytes(const dqg_wo_q8 *g)
{
    size_t per = (size_t)g->panels * (size_t)g->n_wblocks * PANEL * sizeof(float);
    return (size_t)g->panels * (size_t)(g->four_bit ? g->K_pad / 8 : g->K_pad / 4) * 64 +
           per * (g->has_zs ? 2 : 1);
}

dqg_status dqg_wo_q8_create(const dqg_weights *w, dqg_wo_q8 **out, const char *what)
{
    bool four = w->dtype == DQG_S4 || w->dtype == DQG_U4;
    bool eight = w->dtype == DQG_S8 || w->dtype == DQG_U8;
    if (!four && !eight)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "%s: int8 activations take 4- and 8-bit integer "
                             "weights, not %s",
                             what, dqg_dtype_name(w->dtype));
    if (!dqg_cpu_has(DQG_ISA_AVX512_VNNI))
        return dqg_set_error(DQG_UNSUPPORTED, "%s: int8 activations need AVX512-VNNI", what);
    if (w->block_k < 1 || w->block_n < 1)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: scale blocks", what);
    int64_t quad = four ? 8 : 4; /* k per 64-byte load */
    int64_t wblock = w->block_k < w->K ? w->block_k : w->K;
    if (wblock < w->K && wblock % quad)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "%s: int8 activations need K-blocks of a multiple of %lld (not %lld)",
                             what, (long long)quad, (long long)wblock);
    dqg_wo_q8 *g = calloc(1, sizeof *g);
    if (!g)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    g->K = w->K;
    g->N = w->N;
    g->K_pad = (w->K + quad - 1) / quad * quad;
    g->panels = (w->N + PANEL - 1) / PANEL;
    g->wblock = wblock;
    g->n_wblocks = (w->K + wblock - 1) / wblock;
    g->xblock = wblock < w->K ? wblock : XBLOCK;
    g->n_xblocks = (w->K + g->xblock - 1) / g->xblock;
    g->four_bit = four;
    bool is_signed = w->dtype == DQG_S4 || w->dtype == DQG_S8;
    int offset = !is_signed ? 0 : four ? 8 : 128;
    g->has_zs = w->zp != NULL;
    g->offset = (float)offset;
    size_t panel_bytes = (size_t)(four ? g->K_pad / 8 : g->K_pad / 4) * 64;
    size_t wbytes = round64((size_t)g->panels * panel_bytes);
    size_t sbytes = round64((size_t)g->panels * (size_t)g->n_wblocks * PANEL * sizeof(float));
    dqg_status st =
        dqg_weights_panels_alloc(wbytes, sbytes, g->has_zs, &g->w, &g->scale, &g->zs, what);
    if (st != DQG_OK) {
        free(g);
        return st;
    }
    int64_t K = g->K, N = g->N;
    const uint8_t *src = w->data;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < g->panels; p++) {
        uint8_t *dst = g->w + (size_t)p * panel_bytes;
        int64_t n0 = p * PANEL, nn = N - n0 < PANEL ? N - n0 : PANEL;
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < nn; j++) {
                int64_t i = dqg_weights_index(w, k, n0 + j);
                int64_t q = four ? (src[i >> 1] >> ((i & 1) * 4)) & 0x0F : src[i];
                if (is_signed) /* the stored value plus the offset, as unsigned */
                    q = four ? (q ^ 8) : (q ^ 128);
                size_t at = (size_t)(four ? k / 8 : k / 4) * 64 + (size_t)j * 4 + (size_t)(k % 4);
                if (four)
                    dst[at] |= (uint8_t)(q << (k % 8 >= 4 ? 4 : 0));
                else
                    dst[at] = (uint8_t)q;
            }
        size_t at = (size_t)p * (size_t)g->n_wblocks * PANEL;
        dqg_weights_panel_scales(w, n0, nn, wblock, g->n_wblocks, PANEL, 1.0f, (float)offset,
                                 g->scale + at, g->zs ? g->zs + at : NULL);
    }
    *out = g;
    return DQG_OK;
}

/* Scratch: per row, the codes (K_pad bytes, zero beyond K), then per
 * x-block its scale and sx times the codes' sum. */
static size_t codes_bytes(const dqg_wo_q8 *g, int64_t M)
{
    return round64((size_t)M * (size_t)g->K_pad);
}

size_t dqg_wo_q8_scratch(const dqg_wo_q8 *g, int64_t M)
{
    return codes_bytes(g, M) + 2 * round64((size_t)M * (size_t)g->n_xblocks * sizeof(float));
}

/* Row m of x as codes: sx = max|x| / 127 per x-block (1 for an all-zero
 * block, whose codes are all 0). */
static void quantize_rows(const dqg_wo_q8 *g, int64_t M, const float *x, int8_t *xq, float *sx,
                          float *sxs)
{
    for (int64_t m = 0; m < M; m++) {
        const float *xr = x + m * g->K;
        int8_t *qr = xq + m * g->K_pad;
        for (int64_t c = 0; c < g->n_xblocks; c++) {
            int64_t k0 = c * g->xblock, k1 = k0 + g->xblock < g->K ? k0 + g->xblock : g->K;
            float amax = 0.0f;
            for (int64_t k = k0; k < k1; k++)
                amax = fmaxf(amax, fabsf(xr[k]));
            float s = amax > 0.0f ? amax / 127.0f : 1.0f, inv = 1.0f / s;
            int32_t sum = 0;
            for (int64_t k = k0; k < k1; k++) {
                float v = nearbyintf(xr[k] * inv);
                v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
                qr[k] = (int8_t)v;
                sum += qr[k];
            }
            sx[m * g->n_xblocks + c] = s;
            sxs[m * g->n_xblocks + c] = s * (float)sum;
        }
        memset(qr + g->K, 0, (size_t)(g->K_pad - g->K));
    }
}

/* Rows m0 .. m0 + ROWS of panel p, U independent sums per row. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), always_inline)) static inline void
panel_rows(const dqg_wo_q8 *g, const bool four, int64_t p, int64_t m0, const int ROWS, const int U,
           const int8_t *xq, const float *sx, const float *sxs, float *y, const dqg_epilogue *e,
           const void *const *rt)
{
    const size_t panel_bytes = (size_t)(four ? g->K_pad / 8 : g->K_pad / 4) * 64;
    const uint8_t *wp = g->w + (size_t)p * panel_bytes;
    const __m512i nib = _mm512_set1_epi8(0x0F);
    __m512 out[MAX_ROWS];
    for (int r = 0; r < ROWS; r++)
        out[r] = _mm512_setzero_ps();
    for (int64_t c = 0; c < g->n_xblocks; c++) {
        int64_t k0 = c * g->xblock, k1 = k0 + g->xblock < g->K_pad ? k0 + g->xblock : g->K_pad;
        __m512i acc[4][MAX_ROWS];
        for (int u = 0; u < U; u++)
            for (int r = 0; r < ROWS; r++)
                acc[u][r] = _mm512_setzero_si512();
        const int64_t step = four ? 8 : 4;
        int64_t k = k0, u = 0;
        for (; k < k1; k += step, u = u + 1 == U ? 0 : u + 1) {
            __m512i v = _mm512_load_si512((const void *)(wp + (size_t)(k / step) * 64));
            if (four) {
                __m512i lo = _mm512_and_si512(v, nib);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
                for (int r = 0; r < ROWS; r++) {
                    const int8_t *q = xq + (m0 + r) * g->K_pad + k;
                    int32_t q0, q1;
                    memcpy(&q0, q, 4);
                    memcpy(&q1, q + 4, 4);
                    acc[u][r] = _mm512_dpbusd_epi32(acc[u][r], lo, _mm512_set1_epi32(q0));
                    acc[u][r] = _mm512_dpbusd_epi32(acc[u][r], hi, _mm512_set1_epi32(q1));
                }
            } else {
                for (int r = 0; r < ROWS; r++) {
                    int32_t q0;
                    memcpy(&q0, xq + (m0 + r) * g->K_pad + k, 4);
                    acc[u][r] = _mm512_dpbusd_epi32(acc[u][r], v, _mm512_set1_epi32(q0));
                }
            }
        }
        for (int uu = 1; uu < U; uu++)
            for (int r = 0; r < ROWS; r++)
                acc[0][r] = _mm512_add_epi32(acc[0][r], acc[uu][r]);
        int64_t b = k0 / g->wblock;
        size_t at = ((size_t)p * (size_t)g->n_wblocks + (size_t)b) * PANEL;
        __m512 s = _mm512_load_ps(g->scale + at);
        for (int r = 0; r < ROWS; r++) {
            size_t i = (size_t)(m0 + r) * (size_t)g->n_xblocks + (size_t)c;
            __m512 d = _mm512_cvtepi32_ps(acc[0][r]);
            out[r] = _mm512_fmadd_ps(d, _mm512_mul_ps(s, _mm512_set1_ps(sx[i])), out[r]);
            if (g->zs)
                out[r] =
                    _mm512_fnmadd_ps(_mm512_load_ps(g->zs + at), _mm512_set1_ps(sxs[i]), out[r]);
            else if (g->offset != 0.0f)
                out[r] = _mm512_fnmadd_ps(s, _mm512_set1_ps(g->offset * sxs[i]), out[r]);
        }
    }
    int64_t n0 = p * PANEL, n = g->N - n0 < PANEL ? g->N - n0 : PANEL;
    __mmask16 mask = (__mmask16)(n >= PANEL ? 0xFFFF : (1u << n) - 1);
    for (int r = 0; r < ROWS; r++) {
        float *yr = y + (m0 + r) * g->N + n0;
        _mm512_mask_storeu_ps(yr, mask, out[r]);
        dqg_epilogue_apply(e, yr, m0 + r, n0, n, g->N, rt);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static void
panel(const dqg_wo_q8 *g, int64_t p, int64_t m0, int rows, const int8_t *xq, const float *sx,
      const float *sxs, float *y, const dqg_epilogue *e, const void *const *rt)
{
#define ROWS_OF(four)                                                                              \
    switch (rows) {                                                                                \
    case 1:                                                                                        \
        panel_rows(g, four, p, m0, 1, 4, xq, sx, sxs, y, e, rt);                                   \
        break;                                                                                     \
    case 2:                                                                                        \
        panel_rows(g, four, p, m0, 2, 2, xq, sx, sxs, y, e, rt);                                   \
        break;                                                                                     \
    case 3:                                                                                        \
        panel_rows(g, four, p, m0, 3, 1, xq, sx, sxs, y, e, rt);                                   \
        break;                                                                                     \
    default:                                                                                       \
        panel_rows(g, four, p, m0, 4, 1, xq, sx, sxs, y, e, rt);                                   \
        break;                                                                                     \
    }
    if (g->four_bit) {
        ROWS_OF(true)
    } else {
        ROWS_OF(false)
    }
#undef ROWS_OF
}

dqg_status dqg_wo_q8_run(const dqg_wo_q8 *g, int64_t M, const float *x, float *y, void *scratch,
                         const dqg_epilogue *e, const void *const *rt)
{
    int8_t *xq = scratch;
    float *sx = (float *)((uint8_t *)scratch + codes_bytes(g, M));
    float *sxs = sx + round64((size_t)M * (size_t)g->n_xblocks * sizeof(float)) / sizeof(float);
    quantize_rows(g, M, x, xq, sx, sxs);
    int64_t chunks = (M + MAX_ROWS - 1) / MAX_ROWS, work = g->panels * chunks;
    int threads = g->K * g->N * M >= (1 << 16) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < work; i++) {
        int64_t p = i / chunks, c = i % chunks, m0 = c * MAX_ROWS; /* panel-major */
        int rows = (int)(M - m0 < MAX_ROWS ? M - m0 : MAX_ROWS);
        panel(g, p, m0, rows, xq, sx, sxs, y, e, rt);
    }
    return DQG_OK;
}

void dqg_wo_q8_destroy(dqg_wo_q8 *g)
{
    if (!g)
        return;
    free(g->w);
    free(g->scale);
    free(g->zs);
    free(g);
}
