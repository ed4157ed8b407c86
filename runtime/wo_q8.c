/* The weight-only kernel on integer dot products: f32 activations turned
 * into int8 codes at run time, per row and block of K, multiplied with the
 * 4- or 8-bit weights by VNNI (vpdpbusd: 64 multiply-adds per instruction
 * where an FMA does 16). Two modes:
 *
 * - one part (fpmath = DQG_FPMATH_INT8, never the default): x rounded to
 *   one int8 code per element (symmetric, scale sx = max|x| / 127 of the
 *   block, rounding half to even), what ONNX Runtime's MatMulNBits does by
 *   default. |x - sx xq| <= sx / 2 per element.
 * - three parts (the exact mode's kernel at small M): x split into three
 *   int8 codes, x ~ sx (q0 + q1 / 254 + q2 / 254^2): q0 as above, q1 the
 *   rounded remainder times 254, q2 the next one's, each in [-127, 127].
 *   What is left, |x - x~| <= sx / (2 x 254^2) ~ 2^-24 max|x| of the block,
 *   is the size of one f32 rounding at the block's magnitude, so the
 *   result stays within the contract's 1e-5 of the reference (relative to
 *   the output's largest magnitude) as an f32 dot product does. Three
 *   parts cost three dot products where the f32 kernel decodes each weight
 *   to f32 and spends an FMA per 16.
 *
 * Weights are stored unsigned: u = q + offset (s4: +8, s8: +128), the
 * offset joining the zero point: zpo = zero point + offset. Panels of 16
 * output columns; within a panel, k runs in quads (vpdpbusd sums four
 * adjacent bytes into a 32-bit lane): 8-bit weights give 64 bytes per quad
 * (byte 4n + i: column n, k = 4j + i); 4-bit weights put quad j in the low
 * nibbles and quad j + 1 in the high nibbles of the same 64 bytes. For row
 * m, x-block c (part l: scale sx[l], codes xq[l], their sum xs[l]) and its
 * weight block b (scale s):
 *
 *   d[l][n] = sum_{k in c} xq[l][k] u[k, n]             (exact, 32 bits)
 *   one part:    y[m, n] += s[n] sx[0] (d[0][n] - zpo[n] xs[0])
 *   three parts: y[m, n] += s[n] sx[2] (D[n] - zpo[n] XS),
 *                D = d[0] 254^2 + (d[1] 254 + d[2]),  XS the same of xs
 *
 * The sums d are exact in 32-bit integers (the block is capped so that
 * 127 x 255 x its length stays below 2^31), and so is d[1] 254 + d[2]
 * (x-blocks of at most 256); D and the zero-point term are f32, each one
 * rounding at the block's magnitude (what an f32 dot product's own sums
 * cost). An x-block is the weights' K-block when that is shorter than K
 * (it must then hold whole quads; three parts take its largest divisor up
 * to 256), else 128.
 *
 * Rows the codes cannot carry (NaN or infinity, a magnitude of 2^64 or
 * more, or only magnitudes under 2^-64) send the call to a plain f32 loop
 * over the same packed weights, which dequantizes each weight as the
 * reference does (NaN and infinity reach the columns they reach there). */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/cpu_isa.h"
#include "runtime/wo_q8.h"

#define PANEL            16
#define MAX_ROWS         4
#define MAX_PARTS        3
#define XBLOCK           128 /* x-block of per-tensor and per-channel weights */
#define PART_BASE        254.0f
#define MAX_PARTS_XBLOCK 256
#define MAX_NP           4   /* panels per pass */
#define MAX_U            2   /* independent sums per panel and row of codes */
#define ROW_BLOCK        256 /* rows of x turned into codes at a time */
/* Rows whose block maxima leave [2^-64, 2^64) (or hold NaN or infinity)
 * take the f32 loop. */
#define CODES_MIN 0x1p-64f
#define CODES_MAX 0x1p64f

struct dqg_wo_q8 {
    int64_t K, N, K_pad, panels;
    int64_t wblock, n_wblocks; /* the scales' K-block */
    int64_t xblock, n_xblocks;
    int parts; /* codes per activation: 1 (fpmath int8) or 3 (exact) */
    bool four_bit;
    int32_t offset; /* without zero points: the offset, subtracted per block */
    uint8_t *w;     /* [panels][K_pad / 4][64] (4-bit: [K_pad / 8][64]) */
    float *scale;   /* [panels][n_wblocks][16] */
    float *zpo;     /* [panels][n_wblocks][16]: zero point + offset (NULL without
                     * zero points) */
};

static size_t round64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

int64_t dqg_wo_q8_xblock(const dqg_wo_q8 *g)
{
    return g->xblock;
}

int dqg_wo_q8_parts(const dqg_wo_q8 *g)
{
    return g->parts;
}

static size_t panel_bytes(const dqg_wo_q8 *g)
{
    return (size_t)(g->four_bit ? g->K_pad / 8 : g->K_pad / 4) * 64;
}

size_t dqg_wo_q8_bytes(const dqg_wo_q8 *g)
{
    size_t per = (size_t)g->panels * (size_t)g->n_wblocks * PANEL * sizeof(float);
    return (size_t)g->panels * panel_bytes(g) + per * (g->zpo ? 2 : 1);
}

/* Columns n0 .. n0 + nn - 1 of the weights into one panel (zeroed): the
 * stored value plus the offset (flip: its sign bit, as unsigned), 4-bit
 * ones quad j in the low nibbles and quad j + 1 in the high ones. */
static void pack_panel(const dqg_weights *w, bool four, uint8_t flip, int64_t n0, int64_t nn,
                       uint8_t *dst)
{
    const uint8_t *src = w->data;
    const int64_t K = w->K, N = w->N;
    /* element (k, n) at k * kstep + n * nstep of the storage */
    const int64_t kstep = w->nk ? 1 : N, nstep = w->nk ? K : 1;
    int64_t k = 0;
    if (four && !w->nk && N % 2 == 0 && nn % 2 == 0)
        /* row-major with whole bytes per column pair: each output byte
         * from the two bytes holding its k and k + 4, written once */
        for (; k + 8 <= K; k += 8) {
            uint8_t *line = dst + (size_t)(k / 8) * 64;
            for (int64_t j = 0; j < nn; j += 2)
                for (int q = 0; q < 4; q++) {
                    uint8_t a = src[((k + q) * N + n0 + j) >> 1];
                    uint8_t b = src[((k + 4 + q) * N + n0 + j) >> 1];
                    line[j * 4 + q] = (uint8_t)(((a & 0x0F) ^ flip) | (((b & 0x0F) ^ flip) << 4));
                    line[j * 4 + 4 + q] = (uint8_t)(((a >> 4) ^ flip) | (((b >> 4) ^ flip) << 4));
                }
        }
    for (; k < K; k++) {
        uint8_t *line = dst + (size_t)(four ? k / 8 : k / 4) * 64 + (size_t)(k % 4);
        const int shift = four && k % 8 >= 4 ? 4 : 0;
        int64_t i = k * kstep + n0 * nstep;
        if (four)
            for (int64_t j = 0; j < nn; j++, i += nstep)
                line[j * 4] |= (uint8_t)((((src[i >> 1] >> ((i & 1) * 4)) & 0x0F) ^ flip) << shift);
        else
            for (int64_t j = 0; j < nn; j++, i += nstep)
                line[j * 4] = (uint8_t)(src[i] ^ flip);
    }
}

dqg_status dqg_wo_q8_create(const dqg_weights *w, int parts, dqg_wo_q8 **out, const char *what)
{
    bool four = w->dtype == DQG_S4 || w->dtype == DQG_U4;
    bool eight = w->dtype == DQG_S8 || w->dtype == DQG_U8;
    const char *mode = parts == 1 ? "int8 activations" : "int8 parts of the activations";
    if (!four && !eight)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: %s take 4- and 8-bit integer weights, not %s",
                             what, mode, dqg_dtype_name(w->dtype));
    if (!dqg_cpu_has(DQG_ISA_AVX512_VNNI))
        return dqg_set_error(DQG_UNSUPPORTED, "%s: %s need AVX512-VNNI", what, mode);
    if (w->block_k < 1 || w->block_n < 1)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: scale blocks", what);
    int64_t quad = four ? 8 : 4; /* k per 64-byte load */
    int64_t wblock = w->block_k < w->K ? w->block_k : w->K;
    if (wblock < w->K && wblock % quad)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "%s: %s need K-blocks of a multiple of %lld (not %lld)", what, mode,
                             (long long)quad, (long long)wblock);
    int64_t xblock = wblock < w->K ? wblock : XBLOCK;
    /* Three parts join their second and third sums in 32 bits: x-blocks of
     * at most 256, a divisor of the K-block (a multiple of the quad, so the
     * search ends there at the latest). */
    if (parts > 1 && wblock < w->K)
        while (xblock > MAX_PARTS_XBLOCK || wblock % xblock)
            xblock -= quad;
    /* The integer sum of an x-block: |codes| <= 127 times |u| <= 255 */
    if (xblock > ((int64_t)1 << 31) / (127 * 255) - 1)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: K-blocks of %lld would overflow %s' 32-bit sums",
                             what, (long long)wblock, mode);
    /* The exact mode keeps NaN and infinity where the reference has them:
     * a non-finite scale multiplies integer sums the reference never forms. */
    if (parts > 1)
        for (int64_t i = 0; i < w->scale->nelems; i++)
            if (!isfinite(dqg_load_float(w->scale->dtype, w->scale->data, i)))
                return dqg_set_error(DQG_UNSUPPORTED, "%s: %s need finite scales", what, mode);
    dqg_wo_q8 *g = calloc(1, sizeof *g);
    if (!g)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    g->K = w->K;
    g->N = w->N;
    g->K_pad = (w->K + quad - 1) / quad * quad;
    g->panels = (w->N + PANEL - 1) / PANEL;
    g->wblock = wblock;
    g->n_wblocks = (w->K + wblock - 1) / wblock;
    g->xblock = xblock;
    g->n_xblocks = (w->K + g->xblock - 1) / g->xblock;
    g->parts = parts;
    g->four_bit = four;
    bool is_signed = w->dtype == DQG_S4 || w->dtype == DQG_S8;
    g->offset = !is_signed ? 0 : four ? 8 : 128;
    size_t pbytes = panel_bytes(g);
    size_t wbytes = round64((size_t)g->panels * pbytes);
    size_t sbytes = round64((size_t)g->panels * (size_t)g->n_wblocks * PANEL * sizeof(float));
    dqg_status st =
        dqg_weights_panels_alloc(wbytes, sbytes, w->zp != NULL, &g->w, &g->scale, &g->zpo, what);
    if (st != DQG_OK) {
        dqg_wo_q8_destroy(g);
        return st;
    }
    int64_t N = g->N;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < g->panels; p++) {
        int64_t n0 = p * PANEL, nn = N - n0 < PANEL ? N - n0 : PANEL;
        pack_panel(w, four, (uint8_t)(is_signed ? (four ? 8 : 128) : 0), n0, nn,
                   g->w + (size_t)p * pbytes);
        size_t at = (size_t)p * (size_t)g->n_wblocks * PANEL;
        dqg_weights_panel_scales(w, n0, nn, wblock, g->n_wblocks, PANEL, 1.0f, 0.0f, g->scale + at,
                                 NULL);
        if (g->zpo)
            for (int64_t j = 0; j < nn; j++)
                for (int64_t b = 0; b < g->n_wblocks; b++) {
                    int64_t si = dqg_weights_scale_index(w, b * wblock, n0 + j);
                    g->zpo[at + (size_t)b * PANEL + (size_t)j] =
                        dqg_load_float(w->zp->dtype, w->zp->data, si) + (float)g->offset;
                }
    }
    *out = g;
    return DQG_OK;
}

/* Scratch: the codes (per row and part, K_pad bytes, zero beyond K), then
 * per row, part and x-block the scale, then per row and x-block the
 * codes' sums times their scales (the zero-point term's factor). */
static size_t codes_bytes(const dqg_wo_q8 *g, int64_t M)
{
    return round64((size_t)M * (size_t)g->parts * (size_t)g->K_pad);
}

static size_t block_bytes(const dqg_wo_q8 *g, int64_t M)
{
    return round64((size_t)M * (size_t)g->parts * (size_t)g->n_xblocks * sizeof(float));
}

size_t dqg_wo_q8_scratch(const dqg_wo_q8 *g, int64_t M)
{
    M = M < ROW_BLOCK ? M : ROW_BLOCK;
    return codes_bytes(g, M) + 2 * block_bytes(g, M);
}

/* Row m of x as codes (part l: codes row m * parts + l): sx = max|x| / 127
 * per x-block for the first part, / 254 for each further one (1 for an
 * all-zero block, whose codes are all 0); sxs: one part, sx times the sum
 * of the codes; three parts, the codes' sums at the third part's scale
 * (xs0 254^2 + xs1 254 + xs2). False when the row holds a value the codes
 * cannot carry (see CODES_MIN). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static bool
quantize_row(const dqg_wo_q8 *g, int64_t m, const float *x, int8_t *xq, float *sx, float *sxs)
{
    const int P = g->parts;
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    const __m512 base = _mm512_set1_ps(PART_BASE);
    bool fits = true;
    const float *xr = x + m * g->K;
    for (int64_t c = 0; c < g->n_xblocks; c++) {
        int64_t k0 = c * g->xblock, k1 = k0 + g->xblock < g->K ? k0 + g->xblock : g->K;
        __m512 vmax = _mm512_setzero_ps();
        __mmask16 bad = 0;
        for (int64_t k = k0; k < k1; k += 16) {
            __mmask16 mk = (__mmask16)(k1 - k >= 16 ? 0xFFFF : (1u << (k1 - k)) - 1);
            __m512 v = _mm512_maskz_loadu_ps(mk, xr + k);
            bad |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            vmax = _mm512_max_ps(vmax, _mm512_abs_ps(v));
        }
        float amax = _mm512_reduce_max_ps(vmax);
        if (bad || !(amax < CODES_MAX) || (amax > 0.0f && amax < CODES_MIN)) {
            fits = false;
            amax = 0.0f; /* zero codes: the f32 loop computes the call */
        }
        float s = amax > 0.0f ? amax / 127.0f : 1.0f, s0 = s;
        __m512 inv = _mm512_set1_ps(amax > 0.0f ? 1.0f / s : 0.0f);
        __m512i sum[MAX_PARTS];
        for (int l = 0; l < P; l++) {
            size_t i = ((size_t)m * (size_t)P + (size_t)l) * (size_t)g->n_xblocks + (size_t)c;
            sx[i] = s;
            s /= PART_BASE;
            sum[l] = _mm512_setzero_si512();
        }
        for (int64_t k = k0; k < k1; k += 16) {
            __mmask16 mk = (__mmask16)(k1 - k >= 16 ? 0xFFFF : (1u << (k1 - k)) - 1);
            __m512 t = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, xr + k), inv);
            for (int l = 0; l < P; l++) {
                __m512 a = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                a = _mm512_min_ps(_mm512_max_ps(a, lo), hi);
                __m512i q = _mm512_cvttps_epi32(a);
                sum[l] = _mm512_add_epi32(sum[l], q);
                _mm_mask_storeu_epi8(xq + (m * P + l) * g->K_pad + k, mk, _mm512_cvtepi32_epi8(q));
                /* the remainder, in [-1/2, 1/2], exact; times 254 */
                t = _mm512_mul_ps(_mm512_sub_ps(t, a), base);
            }
        }
        /* one part: sx xs; three: the sums at the third part's scale,
         * xs0 254^2 + xs1 254 + xs2 */
        float t = 0.0f;
        for (int l = 0; l < P; l++)
            t = P == 1 ? s0 * (float)_mm512_reduce_add_epi32(sum[l])
                       : t * PART_BASE + (float)_mm512_reduce_add_epi32(sum[l]);
        sxs[(size_t)m * (size_t)g->n_xblocks + (size_t)c] = t;
    }
    for (int l = 0; l < P; l++)
        memset(xq + (m * P + l) * g->K_pad + g->K, 0, (size_t)(g->K_pad - g->K));
    return fits;
}

/* Rows 0 .. M - 1 of x as codes (quantize_row), in parallel from 8 rows
 * (outside the AVX-512 function: an OpenMP region does not inherit its
 * target attribute). */
static bool quantize_rows(const dqg_wo_q8 *g, int64_t M, const float *x, int8_t *xq, float *sx,
                          float *sxs, int threads)
{
    bool fits = true;
#pragma omp parallel for num_threads(M >= 8 ? threads : 1) schedule(static) reduction(&& : fits)
    for (int64_t m = 0; m < M; m++)
        fits = quantize_row(g, m, x, xq, sx, sxs) && fits;
    return fits;
}

/* The products of one 64-byte load of weights per panel at wk, NP panels
 * `pb` bytes apart (k .. k + 7 of 4-bit ones, k .. k + 3 of 8-bit ones),
 * with R rows of codes from qk (codes k .., rows K_pad apart): each
 * broadcast code serves the NP panels. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), always_inline)) static inline void
quad_step(const bool four, const uint8_t *wk, size_t pb, const int NP, const int8_t *qk,
          size_t K_pad, const int R, __m512i acc[][MAX_ROWS * MAX_PARTS])
{
    __m512i lo[MAX_NP], hi[MAX_NP];
    for (int j = 0; j < NP; j++) {
        __m512i v = _mm512_load_si512((const void *)(wk + (size_t)j * pb));
        lo[j] = four ? _mm512_and_si512(v, _mm512_set1_epi8(0x0F)) : v;
        if (four)
            hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
    }
    for (int r = 0; r < R; r++) {
        int32_t q0;
        memcpy(&q0, qk + r * K_pad, 4);
        __m512i b0 = _mm512_set1_epi32(q0);
        for (int j = 0; j < NP; j++)
            acc[j][r] = _mm512_dpbusd_epi32(acc[j][r], lo[j], b0);
        if (four) {
            int32_t q1;
            memcpy(&q1, qk + r * K_pad + 4, 4);
            __m512i b1 = _mm512_set1_epi32(q1);
            for (int j = 0; j < NP; j++)
                acc[j][r] = _mm512_dpbusd_epi32(acc[j][r], hi[j], b1);
        }
    }
}

/* Rows m0 .. m0 + ROWS of panels p0 .. p0 + NP - 1, P parts per row, U
 * independent sums per part and panel; the codes are those of rows mb ..
 * (row m's at m - mb). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), always_inline)) static inline void
panel_rows(const dqg_wo_q8 *g, const bool four, int64_t p0, const int NP, int64_t m0,
           const int ROWS, const int P, const int U, int64_t mb, const int8_t *xq, const float *sx,
           const float *sxs, float *y, const dqg_epilogue *e, const void *const *rt)
{
    const size_t pb = panel_bytes(g);
    const uint8_t *wp = g->w + (size_t)p0 * pb;
    const int R = ROWS * P;
    __m512 out[MAX_NP][MAX_ROWS];
    for (int j = 0; j < NP; j++)
        for (int r = 0; r < ROWS; r++)
            out[j][r] = _mm512_setzero_ps();
    for (int64_t c = 0; c < g->n_xblocks; c++) {
        int64_t k0 = c * g->xblock, k1 = k0 + g->xblock < g->K_pad ? k0 + g->xblock : g->K_pad;
        __m512i acc[MAX_U][MAX_NP][MAX_ROWS * MAX_PARTS];
        for (int u = 0; u < U; u++)
            for (int j = 0; j < NP; j++)
                for (int r = 0; r < R; r++)
                    acc[u][j][r] = _mm512_setzero_si512();
        const size_t step = four ? 8 : 4, K_pad = (size_t)g->K_pad;
        const size_t loads = (size_t)(k1 - k0) / step; /* k1 - k0: whole quads */
        const uint8_t *wk = wp + (size_t)k0 / step * 64;
        const int8_t *qk = xq + (size_t)(m0 - mb) * (size_t)P * K_pad + (size_t)k0;
        /* U loads per round, each into its own sums (indices known at
         * compile time, so the sums stay in registers) */
        size_t i = 0;
        for (; i + (size_t)U <= loads; i += (size_t)U, wk += 64 * (size_t)U, qk += step * (size_t)U)
            for (int u = 0; u < U; u++)
                quad_step(four, wk + 64 * (size_t)u, pb, NP, qk + step * (size_t)u, K_pad, R,
                          acc[u]);
        for (; i < loads; i++, wk += 64, qk += step)
            quad_step(four, wk, pb, NP, qk, K_pad, R, acc[0]);
        for (int u = 1; u < U; u++)
            for (int j = 0; j < NP; j++)
                for (int r = 0; r < R; r++)
                    acc[0][j][r] = _mm512_add_epi32(acc[0][j][r], acc[u][j][r]);
        int64_t b = k0 / g->wblock;
        for (int j = 0; j < NP; j++) {
            size_t at = ((size_t)(p0 + j) * (size_t)g->n_wblocks + (size_t)b) * PANEL;
            __m512 s = _mm512_load_ps(g->scale + at);
            /* zero point + offset, for the codes' sums */
            __m512 zf = g->zpo ? _mm512_load_ps(g->zpo + at) : _mm512_set1_ps((float)g->offset);
            for (int r = 0; r < ROWS; r++) {
                const float *sr =
                    sx + (size_t)(m0 - mb + r) * (size_t)P * (size_t)g->n_xblocks + (size_t)c;
                __m512 xs =
                    _mm512_set1_ps(sxs[(size_t)(m0 - mb + r) * (size_t)g->n_xblocks + (size_t)c]);
                if (P == 1) {
                    out[j][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[0][j][r]),
                                                _mm512_mul_ps(s, _mm512_set1_ps(sr[0])), out[j][r]);
                    out[j][r] = _mm512_fnmadd_ps(_mm512_mul_ps(s, zf), xs, out[j][r]);
                } else {
                    /* the three parts' sums at the third part's scale: d0
                     * 254^2 + (d1 254 + d2), the bracket exact in 32 bits
                     * (x-blocks of at most 256), less zpo times theirs */
                    __m512i d = _mm512_add_epi32(
                        _mm512_mullo_epi32(acc[0][j][r * P + 1], _mm512_set1_epi32((int)PART_BASE)),
                        acc[0][j][r * P + 2]);
                    __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[0][j][r * P]),
                                               _mm512_set1_ps(PART_BASE * PART_BASE),
                                               _mm512_cvtepi32_ps(d));
                    f = _mm512_fnmadd_ps(zf, xs, f);
                    out[j][r] = _mm512_fmadd_ps(
                        f, _mm512_mul_ps(s, _mm512_set1_ps(sr[2 * (size_t)g->n_xblocks])),
                        out[j][r]);
                }
            }
        }
    }
    for (int j = 0; j < NP; j++) {
        int64_t n0 = (p0 + j) * PANEL, n = g->N - n0 < PANEL ? g->N - n0 : PANEL;
        __mmask16 mask = (__mmask16)(n >= PANEL ? 0xFFFF : (1u << n) - 1);
        for (int r = 0; r < ROWS; r++) {
            float *yr = y + (m0 + r) * g->N + n0;
            _mm512_mask_storeu_ps(yr, mask, out[j][r]);
            dqg_epilogue_apply(e, yr, m0 + r, n0, n, g->N, rt);
        }
    }
}

/* Rows of x per pass over a group of panels. */
static int rows_per_pass(const dqg_wo_q8 *g)
{
    return g->parts == 1 ? MAX_ROWS : 2;
}

/* Panels per pass over the codes: enough for each broadcast code to serve
 * several dot products, few enough for the sums to stay in registers. */
static int panels_per_pass(const dqg_wo_q8 *g, int rows)
{
    if (g->parts == 1)
        return rows <= 2 ? 4 : 2;
    return rows == 1 && g->four_bit ? 4 : rows == 1 ? 1 : 2;
}

/* Rows m0 .. m0 + rows of panels p0 .. p0 + np - 1 (np: panels_per_pass
 * for the first chunk's rows, or 1 for the panels left over; the rows of
 * any chunk are at most the first one's). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static void
panels(const dqg_wo_q8 *g, int64_t p0, int np, int64_t m0, int rows, int64_t mb, const int8_t *xq,
       const float *sx, const float *sxs, float *y, const dqg_epilogue *e, const void *const *rt)
{
#define CALL(four, NP, ROWS, P, U)                                                                 \
    panel_rows(g, four, p0, NP, m0, ROWS, P, U, mb, xq, sx, sxs, y, e, rt)
#define ROWS_1_TO_4(four, NP, P, U1)                                                               \
    if (rows == 1)                                                                                 \
        CALL(four, NP, 1, P, U1);                                                                  \
    else if (rows == 2)                                                                            \
        CALL(four, NP, 2, P, 1);                                                                   \
    else if (rows == 3)                                                                            \
        CALL(four, NP, 3, P, 1);                                                                   \
    else                                                                                           \
        CALL(four, NP, 4, P, 1);
#define ONE_PART(four)                                                                             \
    if (np == 1) {                                                                                 \
        ROWS_1_TO_4(four, 1, 1, 2)                                                                 \
    } else if (np == 2) {                                                                          \
        ROWS_1_TO_4(four, 2, 1, 2)                                                                 \
    } else if (rows == 1)                                                                          \
        CALL(four, 4, 1, 1, 2);                                                                    \
    else                                                                                           \
        CALL(four, 4, 2, 1, 1);
#define THREE_PARTS(four)                                                                          \
    if (np == 1 && rows == 1)                                                                      \
        CALL(four, 1, 1, MAX_PARTS, 2);                                                            \
    else if (np == 1)                                                                              \
        CALL(four, 1, 2, MAX_PARTS, 1);                                                            \
    else if (np == 2 && rows == 1)                                                                 \
        CALL(four, 2, 1, MAX_PARTS, 1);                                                            \
    else if (np == 2)                                                                              \
        CALL(four, 2, 2, MAX_PARTS, 1);                                                            \
    else                                                                                           \
        CALL(four, 4, 1, MAX_PARTS, 1);
    /* one part: 4 panels up to 2 rows (8 sums), else 2 (6 and 8 sums);
     * three parts: 12 sums (4 panels at 1 row of 4-bit weights, 2 panels
     * at 2 rows), 6 for one panel */
    if (g->parts == 1) {
        if (g->four_bit) {
            ONE_PART(true)
        } else {
            ONE_PART(false)
        }
    } else {
        if (g->four_bit) {
            THREE_PARTS(true)
        } else {
            THREE_PARTS(false)
        }
    }
#undef THREE_PARTS
#undef ONE_PART
#undef ROWS_1_TO_4
#undef CALL
}

/* The code of weight (k, column j) of panel p, as stored (u = q + offset). */
static int32_t code_at(const dqg_wo_q8 *g, int64_t p, int64_t k, int64_t j)
{
    const uint8_t *wp = g->w + (size_t)p * panel_bytes(g);
    if (!g->four_bit)
        return wp[(size_t)(k / 4) * 64 + (size_t)j * 4 + (size_t)(k % 4)];
    uint8_t v = wp[(size_t)(k / 8) * 64 + (size_t)j * 4 + (size_t)(k % 4)];
    return k % 8 >= 4 ? v >> 4 : v & 0x0F;
}

/* The f32 loop, for rows the codes cannot carry: each weight dequantized
 * as the reference does, (q - zero point) x scale, and summed in f32. */
static void rows_f32(const dqg_wo_q8 *g, int64_t m_first, int64_t m_end, const float *x, float *y,
                     const dqg_epilogue *e, const void *const *rt)
{
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < g->panels; p++) {
        int64_t n0 = p * PANEL, nn = g->N - n0 < PANEL ? g->N - n0 : PANEL;
        for (int64_t m = m_first; m < m_end; m++) {
            float *yr = y + m * g->N + n0;
            for (int64_t j = 0; j < nn; j++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < g->K; k++) {
                    size_t at =
                        ((size_t)p * (size_t)g->n_wblocks + (size_t)(k / g->wblock)) * PANEL +
                        (size_t)j;
                    float z = g->zpo ? g->zpo[at] : (float)g->offset;
                    acc += x[m * g->K + k] * (((float)code_at(g, p, k, j) - z) * g->scale[at]);
                }
                yr[j] = acc;
            }
            dqg_epilogue_apply(e, yr, m, n0, nn, g->N, rt);
        }
    }
}

dqg_status dqg_wo_q8_run(const dqg_wo_q8 *g, int64_t M, const float *x, float *y, void *scratch,
                         const dqg_epilogue *e, const void *const *rt)
{
    const int64_t rpp = rows_per_pass(g), rb_max = M < ROW_BLOCK ? M : ROW_BLOCK;
    int8_t *xq = scratch;
    float *sx = (float *)((uint8_t *)scratch + codes_bytes(g, rb_max));
    float *sxs = (float *)((uint8_t *)sx + block_bytes(g, rb_max));
    int threads = g->K * g->N * M >= (1 << 16) ? omp_get_max_threads() : 1;
    /* Blocks of up to ROW_BLOCK rows: their codes, then every panel for
     * them (the scratch stays that of ROW_BLOCK rows at any M). */
    for (int64_t mb = 0; mb < M; mb += ROW_BLOCK) {
        int64_t rb = M - mb < ROW_BLOCK ? M - mb : ROW_BLOCK;
        if (!quantize_rows(g, rb, x + mb * g->K, xq, sx, sxs, threads)) {
            rows_f32(g, mb, mb + rb, x, y, e, rt);
            continue;
        }
        int64_t chunks = (rb + rpp - 1) / rpp;
        int np = panels_per_pass(g, (int)(rb < rpp ? rb : rpp));
        int64_t groups = g->panels / np, left = g->panels % np; /* + `left` single panels */
        int64_t work = (groups + left) * chunks;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < work; i++) {
            int64_t gi = i / chunks, c = i % chunks, m0 = mb + c * rpp; /* panel-major */
            int rows = (int)(mb + rb - m0 < rpp ? mb + rb - m0 : rpp);
            if (gi < groups)
                panels(g, gi * np, np, m0, rows, mb, xq, sx, sxs, y, e, rt);
            else
                panels(g, groups * np + (gi - groups), 1, m0, rows, mb, xq, sx, sxs, y, e, rt);
        }
    }
    return DQG_OK;
}

void dqg_wo_q8_destroy(dqg_wo_q8 *g)
{
    if (!g)
        return;
    free(g->w);
    free(g->scale);
    free(g->zpo);
    free(g);
}
