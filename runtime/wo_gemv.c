/* dqgraph's own weight-only kernel for small M: f32 activations times
 * constant 4-, 8- or 16-bit weights (s4, u4, f4e2m1, s8, u8, the four
 * float8 types, s16, u16) that keep their width in memory. At M of a few
 * rows the MatMul is bound by reading the weights and decoding them;
 * expanding them to f32 (as oneDNN's f32 matmul needs) reads two to eight
 * times the bytes. Here the weights are packed once into panels of 32
 * output columns, K-major (4-bit: 16 bytes per k, byte j holding columns
 * j and j + 16, or on AVX-512 64-byte lines of 8 k (to_lines); wider
 * types: column j at element j), decoded in registers (4-bit through a
 * 16-entry vpermps table, float8 through f16) and multiplied in f32, with
 * enough independent sums in flight to hide the FMA latency at M = 1 (one
 * row of 4-bit weights runs on exact bf16 dot products where the CPU has
 * fast ones: panel_bf16):
 *
 *   y[m, n] = sum_b ( s[b, n] * sum_{k in b} x[m, k] q[k, n]
 *                     - s[b, n] zp[b, n] * sum_{k in b} x[m, k] )
 *
 * over the K-blocks b of the scales (one block for per-tensor and
 * per-channel scales). 8- and 16-bit integer codes instead subtract their
 * zero point as they are decoded (q - zp is exact in f32): for them the
 * second term would be up to 2^15 times the result's magnitude (u8 codes
 * around a zero point of 128 and activations of one sign, as after a ReLU
 * or GELU), and its f32 rounding would swamp the result. 4-bit zero points
 * are at most 15, the term stays close to the result. Sums are f32; the result is within the
 * contract's 1e-5 of the reference relative to the output's magnitude for the K of real layers (the
 * reference dequantizes first and accumulates in f32 too, in another order). Threads split the
 * panels. Four copies of the loop: AVX-512 BF16 (one row of 4-bit weights), AVX-512, AVX2 (+ FMA,
 * F16C) and plain C, picked by the CPU (and DQG_MAX_ISA) when the weights
 * are packed.
 *
 * Above 16 rows the layer is bound by arithmetic, and on AVX-512 a fifth
 * copy runs (run_gemm): each thread decodes a chunk of 256 k of a panel
 * into dequantized f32 weights (32 KB, in L1; each weight decoded once per
 * 72 rows), and multiplies it by 12 rows of x at a time (packed k-major)
 * with 24 sums in registers, which runs at the FMA rate; the sums of each
 * chunk are added to y. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/cpu_isa.h"
#include "runtime/wo_gemv.h"

#define PANEL    32
#define HALF     16
#define MAX_ROWS 4 /* rows of x per pass over a panel (accumulators in registers) */
/* The AVX-512 copy's: 16 accumulators for 8 rows fit its 32 registers, and
 * each decoded row of weights then serves 16 FMAs instead of 8. */
#define AVX512_ROWS 8
#define WIDE_ROWS   16 /* ... and its copy for M = 16 (panel_wide) */
/* The longest run of k summed in one accumulator before it is scaled into
 * the result: a K-block (or a whole per-channel K) is summed in runs of at
 * most RUN, so the f32 rounding of long sums stays that of ~RUN terms plus
 * K / RUN, not of K. The vector copies keep several sums per column in
 * flight (runs of RUN / U), the plain-C copy one: its runs are shorter. */
#define RUN   128
#define RUN_C 32
/* Many rows (more than DQG_WO_GEMV_MAX_M, AVX2 and AVX-512): the layer is bound by
 * arithmetic, not by the weights' bytes. Each thread decodes a chunk of
 * GEMM_KC k of a panel into dequantized f32 weights (32 KB, in L1) and
 * multiplies it by GEMM_MR rows of x at a time, packed k-major, with
 * 2 x GEMM_MR sums in registers: each decoded weight serves GEMM_MR FMAs
 * and each broadcast row value two. x is packed GEMM_ROWS rows at a time
 * (their K floats stay in L2 while every panel passes over them). A sum
 * runs over at most GEMM_KC k before it is added to y. */
#define GEMM_MR      12
#define GEMM_KC      256
#define GEMM_ROWS    72
#define GEMM_MR_AVX2 6 /* the AVX2 copy's */

/* How a row of a panel turns into f32. */
typedef enum wo_format {
    FMT_TABLE4, /* s4, u4, f4e2m1: vpermps over a 16-entry table */
    FMT_S8,
    FMT_U8,
    FMT_E5M2, /* float8 with 5 exponent bits: the high byte of an f16 */
    FMT_E4M3, /* float8 with 4: re-spaced into an f16's bits */
    FMT_S16,
    FMT_U16,
} wo_format;
/* X(format) for each format: the dispatchers' one copy of a loop per
 * format. */
#define EACH_FORMAT(X)                                                                             \
    X(FMT_TABLE4) X(FMT_S8) X(FMT_U8) X(FMT_E5M2) X(FMT_E4M3) X(FMT_S16) X(FMT_U16)

struct dqg_wo_gemv {
    int64_t K, N, panels, block, n_blocks;
    wo_format fmt;
    dqg_isa isa; /* the copy that runs: AVX512_BF16 (M = 1, 4-bit), AVX512, AVX2 or SCALAR */
    bool gemm;   /* many rows on AVX2 or AVX-512: weights decoded to f32 a chunk at a time */
    bool has_zp;
    float table[16];      /* FMT_TABLE4: 4-bit code -> value (s4: -8 .. 7; f4e2m1) */
    uint16_t table16[32]; /* the same as bf16 (exact), twice: vpermw reads 5 bits */
    float *table8;        /* float8 code -> decoded value, for the plain-C copy */
    uint8_t *w;           /* [panels][panel_bytes] */
    size_t k_bytes;       /* 16 (4-bit), 32 (8-bit) or 64 (16-bit) */
    /* 4-bit weights on AVX-512: "lines" of 64 bytes, one per 8 k and half
     * panel (16 columns), K padded to a multiple of 8 (see to_lines). */
    bool lines;
    size_t panel_bytes;
    float *scale; /* [panels][n_blocks][32] */
    float *zs;    /* [panels][n_blocks][32]: scale * zero point (NULL without zp) */
    float *zq;    /* [panels][n_blocks][32]: the zero points 8- and 16-bit integer codes lose
                     when decoded (then zs is NULL) */
};

static size_t round64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* k-pairs of the bf16 copy's split row: K rounded up to 16, halved. */
static int64_t bf16_pairs(int64_t K)
{
    return (K + 15) / 16 * 8;
}

/* The format of a weight type, the bytes of one element in the panels, and
 * the factor its decoded value is off by (folded into the scales). */
static bool format_of(dqg_dtype t, wo_format *fmt, size_t *esize, float *mult)
{
    *mult = 1.0f;
    *esize = 1;
    switch (t) {
    case DQG_S4:
    case DQG_U4:
    case DQG_F4E2M1:
        *fmt = FMT_TABLE4;
        return true;
    case DQG_S8:
        *fmt = FMT_S8;
        return true;
    case DQG_U8:
        *fmt = FMT_U8;
        return true;
    case DQG_F8E5M2: /* exponent bias 15, as f16's */
        *fmt = FMT_E5M2;
        return true;
    case DQG_F8E5M2FNUZ: /* bias 16 */
        *fmt = FMT_E5M2;
        *mult = 0.5f;
        return true;
    case DQG_F8E4M3FN: /* bias 7: 2^(15 - 7) */
        *fmt = FMT_E4M3;
        *mult = 256.0f;
        return true;
    case DQG_F8E4M3FNUZ: /* bias 8 */
        *fmt = FMT_E4M3;
        *mult = 128.0f;
        return true;
    case DQG_S16:
        *fmt = FMT_S16;
        *esize = 2;
        return true;
    case DQG_U16:
        *fmt = FMT_U16;
        *esize = 2;
        return true;
    default:
        return false;
    }
}

/* What the kernel's decoding of float8 code c gives, times `mult`. */
static float float8_decoded(wo_format fmt, uint8_t c, float mult)
{
    uint16_t h =
        fmt == FMT_E5M2 ? (uint16_t)(c << 8) : (uint16_t)(((c & 0x80) << 8) | ((c & 0x7F) << 7));
    return dqg_load_float(DQG_F16, &h, 0) * mult;
}

/* Float8 codes the kernel decodes differently from the type (the NaN codes
 * of the E4M3 types and the FNUZ types' 0x80; E5M2FNUZ's largest binade,
 * 2^15 and up, which an f16 holds as inf and NaN): weights using any are
 * refused, the expanded path keeps them exact. */
static bool float8_codes_ok(const dqg_weights *w, wo_format fmt, float mult)
{
    bool bad[256];
    bool any = false;
    for (int c = 0; c < 256; c++) {
        uint8_t b = (uint8_t)c;
        float want = dqg_load_float(w->dtype, &b, 0), got = float8_decoded(fmt, b, mult);
        bad[c] = !(want == got || (want != want && got != got)) ||
                 (want == 0 && signbit(want) != signbit(got));
        any |= bad[c];
    }
    const uint8_t *src = w->data;
    for (int64_t i = 0; any && i < w->K * w->N; i++)
        if (bad[src[i]])
            return false;
    return true;
}

/* Eight rows of 4-bit codes in the 16-bytes-per-k layout (byte j: column
 * j in the low nibble, j + 16 in the high one) as the two 64-byte lines
 * the AVX-512 copies read: line h holds columns 16h .. 16h + 15, word
 * 2i + e (i: column, e: 0 or 1) the codes of k = 2s + e (s = 0 .. 3) of
 * column i in its bits 4s .. 4s + 3. So dword i is column i's eight k,
 * which vpermps decodes after one shift each, and word 2i + e the codes
 * vpermw decodes for bf16 pairs of k. */
static void to_lines(const uint8_t *rows, uint8_t *dst)
{
    const __m128i mask = _mm_set1_epi8(0x0F);
    __m128i r[8];
    for (int k = 0; k < 8; k++)
        r[k] = _mm_loadu_si128((const __m128i *)(rows + k * HALF));
    for (int h = 0; h < 2; h++) {
        __m128i c[8];
        for (int k = 0; k < 8; k++)
            c[k] = _mm_and_si128(h ? _mm_srli_epi16(r[k], 4) : r[k], mask);
        __m128i wl[2], wh[2];
        for (int e = 0; e < 2; e++) {
            __m128i lo = _mm_or_si128(c[e], _mm_slli_epi16(c[2 + e], 4));
            __m128i hi = _mm_or_si128(c[4 + e], _mm_slli_epi16(c[6 + e], 4));
            wl[e] = _mm_unpacklo_epi8(lo, hi); /* columns 0-7 */
            wh[e] = _mm_unpackhi_epi8(lo, hi); /* 8-15 */
        }
        __m128i *o = (__m128i *)(dst + h * 64);
        _mm_store_si128(o, _mm_unpacklo_epi16(wl[0], wl[1]));
        _mm_store_si128(o + 1, _mm_unpackhi_epi16(wl[0], wl[1]));
        _mm_store_si128(o + 2, _mm_unpacklo_epi16(wh[0], wh[1]));
        _mm_store_si128(o + 3, _mm_unpackhi_epi16(wh[0], wh[1]));
    }
}

dqg_status dqg_wo_gemv_create(const dqg_weights *w, int64_t M, dqg_wo_gemv **out, const char *what)
{
    wo_format fmt;
    size_t esize;
    float mult;
    if (!format_of(w->dtype, &fmt, &esize, &mult))
        return dqg_set_error(DQG_UNSUPPORTED, "%s: %s weights", what, dqg_dtype_name(w->dtype));
    /* The scale table: one K-block size, the scale constant across a row of
     * a block within each column. */
    if (w->block_k < 1 || w->block_n < 1)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: scale blocks", what);
    if ((fmt == FMT_E5M2 || fmt == FMT_E4M3) && !float8_codes_ok(w, fmt, mult))
        return dqg_set_error(DQG_UNSUPPORTED,
                             "%s: %s weights with NaN codes or values of 2^15 and up", what,
                             dqg_dtype_name(w->dtype));
    dqg_wo_gemv *g = calloc(1, sizeof *g);
    if (!g)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    bool four = fmt == FMT_TABLE4;
    g->K = w->K;
    g->N = w->N;
    g->panels = (w->N + PANEL - 1) / PANEL;
    g->block = w->block_k < w->K ? w->block_k : w->K;
    g->n_blocks = (w->K + g->block - 1) / g->block;
    g->fmt = fmt;
    g->isa = dqg_cpu_has(DQG_ISA_AVX512) ? DQG_ISA_AVX512
             : dqg_cpu_has(DQG_ISA_AVX2) ? DQG_ISA_AVX2
                                         : DQG_ISA_SCALAR;
    /* One row of 4-bit weights on bf16 dot products (see panel_bf16) where
     * they beat FMAs (dqg_cpu_bf16_dot_fast; on this Intel Xeon the f32
     * copy is 2.5x faster: 0.35 against 0.88 ms, float4, K = N = 4096):
     * its pairs of k must not straddle a K-block. */
    if (four && M == 1 && dqg_cpu_bf16_dot_fast() && (g->n_blocks == 1 || g->block % 8 == 0))
        g->isa = DQG_ISA_AVX512_BF16;
    g->lines = four && g->isa >= DQG_ISA_AVX512;
    g->gemm = M > DQG_WO_GEMV_MAX_M && (g->isa == DQG_ISA_AVX512 || g->isa == DQG_ISA_AVX2);
    /* The copies that scale sums of x q (all but the one for many rows,
     * which dequantizes each weight first) would multiply a non-finite
     * scale into sums the reference never forms. */
    for (int64_t i = 0; !g->gemm && i < w->scale->nelems; i++)
        if (!isfinite(dqg_load_float(w->scale->dtype, w->scale->data, i))) {
            free(g);
            return dqg_set_error(DQG_UNSUPPORTED, "%s: own kernel at %lld rows: non-finite scales",
                                 what, (long long)M);
        }
    g->has_zp = w->zp != NULL;
    for (uint8_t i = 0; four && i < 16; i++) {
        g->table[i] = dqg_load_float(w->dtype, &i, 0);
        uint32_t bits;
        memcpy(&bits, &g->table[i], sizeof bits);
        g->table16[i] = g->table16[i + 16] = (uint16_t)(bits >> 16);
    }
    if (g->isa == DQG_ISA_SCALAR && (fmt == FMT_E5M2 || fmt == FMT_E4M3)) {
        g->table8 = malloc(256 * sizeof(float));
        if (!g->table8) {
            free(g);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory (float8 table)", what);
        }
        for (int c = 0; c < 256; c++)
            g->table8[c] = float8_decoded(fmt, (uint8_t)c, 1.0f);
    }
    g->k_bytes = four ? PANEL / 2 : PANEL * esize;
    int64_t k_stored = g->lines ? (g->K + 7) / 8 * 8 : g->K;
    g->panel_bytes = (size_t)k_stored * g->k_bytes;
    size_t wbytes = round64((size_t)g->panels * g->panel_bytes);
    uint8_t *rows = NULL; /* the lines' source rows, per thread */
    if (g->lines && !(rows = aligned_alloc(64, (size_t)omp_get_max_threads() * g->panel_bytes))) {
        free(g);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory (packing)", what);
    }
    size_t sbytes = round64((size_t)g->panels * (size_t)g->n_blocks * PANEL * sizeof(float));
    dqg_status st =
        dqg_weights_panels_alloc(wbytes, sbytes, g->has_zp, &g->w, &g->scale, &g->zs, what);
    if (st != DQG_OK) {
        free(rows);
        free(g->table8);
        free(g);
        return st;
    }
    int64_t K = g->K, N = g->N;
    const uint8_t *src = w->data;
    /* Wider integer codes subtract their zero points as they are decoded
     * (see the top), and so do all codes in the copy for many rows, which
     * dequantizes each weight as the reference does, (q - zp) s. */
    bool exact_zp = g->has_zp &&
                    (fmt == FMT_S8 || fmt == FMT_U8 || fmt == FMT_S16 || fmt == FMT_U16 || g->gemm);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < g->panels; p++) {
        int64_t n0 = p * PANEL, nn = N - n0 < PANEL ? N - n0 : PANEL;
        size_t at = (size_t)p * (size_t)g->n_blocks * PANEL;
        /* Row by row of the storage's K (the [K, N] storage is read along
         * its rows; [N, K] along K within each column). */
        uint8_t *panel = g->w + (size_t)p * g->panel_bytes;
        uint8_t *dst = panel;
        if (g->lines) {
            dst = rows + (size_t)omp_get_thread_num() * g->panel_bytes;
            memset(dst, 0, g->panel_bytes);
        }
        uint8_t *row_start = dst;
        if (four && !w->nk && nn == PANEL && N % 2 == 0) {
            /* 32 consecutive nibbles of a row: even columns in the low
             * halves, odd ones in the high halves, re-interleaved. */
            const __m128i mask = _mm_set1_epi8(0x0F);
            for (int64_t k = 0; k < K; k++, dst += g->k_bytes) {
                __m128i v = _mm_loadu_si128((const __m128i *)(src + (k * N + n0) / 2));
                __m128i even = _mm_and_si128(v, mask);
                __m128i odd = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
                __m128i c0 = _mm_unpacklo_epi8(even, odd);  /* columns 0-15 */
                __m128i c16 = _mm_unpackhi_epi8(even, odd); /* 16-31 */
                _mm_store_si128((__m128i *)dst, _mm_or_si128(c0, _mm_slli_epi16(c16, 4)));
            }
        } else if (!four && !w->nk && nn == PANEL) {
            for (int64_t k = 0; k < K; k++, dst += g->k_bytes)
                memcpy(dst, src + (size_t)(k * N + n0) * esize, g->k_bytes);
        } else {
            for (int64_t k = 0; k < K; k++, dst += g->k_bytes)
                for (int j = 0; j < nn; j++) {
                    int64_t i = dqg_weights_index(w, k, n0 + j);
                    if (four)
                        dst[j % HALF] |= (uint8_t)(((src[i >> 1] >> ((i & 1) * 4)) & 0x0F)
                                                   << (j < HALF ? 0 : 4));
                    else
                        memcpy(dst + (size_t)j * esize, src + (size_t)i * esize, esize);
                }
        }
        for (int64_t k = 0; g->lines && k < K; k += 8)
            to_lines(row_start + (size_t)k * g->k_bytes, panel + (size_t)k * g->k_bytes);
        dqg_weights_panel_scales(w, n0, nn, g->block, g->n_blocks, PANEL, mult, 0.0f, g->scale + at,
                                 g->zs && !exact_zp ? g->zs + at : NULL);
        for (int64_t j = 0; exact_zp && j < nn; j++)
            for (int64_t b = 0; b < g->n_blocks; b++)
                g->zs[at + (size_t)(b * PANEL + j)] = dqg_load_float(
                    w->zp->dtype, w->zp->data, dqg_weights_scale_index(w, b * g->block, n0 + j));
    }
    if (exact_zp) { /* the table holds the zero points themselves */
        g->zq = g->zs;
        g->zs = NULL;
    }
    free(rows);
    *out = g;
    return DQG_OK;
}

size_t dqg_wo_gemv_bytes(const dqg_wo_gemv *g)
{
    size_t s = (size_t)g->panels * (size_t)g->n_blocks * PANEL * sizeof(float);
    return (size_t)g->panels * g->panel_bytes + s * (g->zs || g->zq ? 2 : 1);
}

static size_t xsum_bytes(const dqg_wo_gemv *g, int64_t M)
{
    return g->zs ? round64((size_t)M * (size_t)g->n_blocks * sizeof(float)) : 0;
}

/* Whether the AVX-512 copy runs passes of 16 rows (panel_wide). */
static bool wide_passes(const dqg_wo_gemv *g, int64_t M)
{
    return g->isa >= DQG_ISA_AVX512 && M % WIDE_ROWS == 0;
}

/* x k-major in chunks of 16 rows, for panel_wide. */
static size_t wide_bytes(const dqg_wo_gemv *g, int64_t M)
{
    return wide_passes(g, M) ? round64((size_t)(M * g->K) * 4) : 0;
}

/* x packed for run_gemm: GEMM_ROWS rows (whole groups of GEMM_MR) k-major. */
static size_t gemm_bytes(const dqg_wo_gemv *g, int64_t M)
{
    int64_t rows = ((M < GEMM_ROWS ? M : GEMM_ROWS) + GEMM_MR - 1) / GEMM_MR * GEMM_MR;
    return g->gemm ? round64((size_t)(rows * g->K) * sizeof(float)) : 0;
}

size_t dqg_wo_gemv_scratch(const dqg_wo_gemv *g, int64_t M)
{
    if (g->gemm)
        return gemm_bytes(g, M);
    /* Per-row block sums of x, for the zero-point term; the bf16 copy's
     * split row. */
    return xsum_bytes(g, M) + wide_bytes(g, M) +
           (g->isa == DQG_ISA_AVX512_BF16 && M == 1 ? round64((size_t)(3 * bf16_pairs(g->K)) * 4)
                                                    : 0);
}

/* Sixteen float8 codes as f16: E5M2 is an f16's high byte; E4M3's sign
 * goes to bit 15 and the rest to bits 7..14 (w << 7 puts the sign at bit
 * 14; adding that bit to itself carries it into 15). */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline __m512
float8_row(wo_format fmt, const uint8_t *p)
{
    __m256i w = _mm256_cvtepu8_epi16(_mm_load_si128((const __m128i *)p));
    if (fmt == FMT_E5M2)
        return _mm512_cvtph_ps(_mm256_slli_epi16(w, 8));
    __m256i v = _mm256_slli_epi16(w, 7);
    return _mm512_cvtph_ps(_mm256_add_epi16(v, _mm256_and_si256(v, _mm256_set1_epi16(0x4000))));
}

/* The 32 columns of row k of a panel of 8- or 16-bit codes as f32, in two
 * halves, less their zero points `zq` (NULL: none). */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
decode(wo_format fmt, __m512 table, const uint8_t *row, const float *zq, __m512 *lo, __m512 *hi)
{
    const __m128i *r = (const __m128i *)row;
    (void)table; /* 4-bit codes are read from lines (line_code) */
    switch (fmt) {
    case FMT_S8:
        *lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128(r)));
        *hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128(r + 1)));
        break;
    case FMT_U8:
        *lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(r)));
        *hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(r + 1)));
        break;
    case FMT_E5M2:
    case FMT_E4M3:
        *lo = float8_row(fmt, row);
        *hi = float8_row(fmt, row + HALF);
        break;
    case FMT_S16:
        *lo = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_load_si256((const __m256i *)r)));
        *hi = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_load_si256((const __m256i *)r + 1)));
        break;
    default: /* FMT_U16 */
        *lo = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)r)));
        *hi = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)r + 1)));
        break;
    }
    if (zq) {
        *lo = _mm512_sub_ps(*lo, _mm512_load_ps(zq));
        *hi = _mm512_sub_ps(*hi, _mm512_load_ps(zq + HALF));
    }
}

/* The 32 columns of row k of a panel in lines, in two halves: k's nibble
 * of each dword shifted down for vpermps, which reads the low 4 bits. */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
line_code(const uint8_t *wp, int64_t k, __m512 table, __m512 *lo, __m512 *hi)
{
    const __m512i *l = (const __m512i *)(wp + (size_t)(k & ~(int64_t)7) * HALF);
    __m128i sh = _mm_cvtsi32_si128((int)(16 * (k & 1) + 4 * ((k & 7) >> 1)));
    *lo = _mm512_permutexvar_ps(_mm512_srl_epi32(_mm512_load_si512(l), sh), table);
    *hi = _mm512_permutexvar_ps(_mm512_srl_epi32(_mm512_load_si512(l + 1), sh), table);
}

/* Rows m0 .. m0 + ROWS of panel p; U independent sums per row and half
 * (k, k + 1, ...) so that 2 x ROWS x U FMA chains are in flight. */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
panel_rows(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, const float *x, int64_t m0,
           const int ROWS, const int U, const float *xsum, float *y, const dqg_epilogue *e,
           const void *const *rt)
{
    const int64_t K = g->K, N = g->N;
    __m512 out[AVX512_ROWS][2];
    for (int r = 0; r < ROWS; r++)
        out[r][0] = out[r][1] = _mm512_setzero_ps();
    const uint8_t *wp = g->w + (size_t)p * g->panel_bytes;
    const __m512 table = _mm512_loadu_ps(g->table);
    for (int64_t b = 0; b < g->n_blocks; b++) {
        int64_t kb = b * g->block, kb1 = kb + g->block < K ? kb + g->block : K;
        size_t at = ((size_t)p * (size_t)g->n_blocks + (size_t)b) * PANEL;
        const float *zq = g->zq ? g->zq + at : NULL;
        for (int64_t k0 = kb; k0 < kb1; k0 += RUN) {
            int64_t k1 = k0 + RUN < kb1 ? k0 + RUN : kb1;
            __m512 acc[4][AVX512_ROWS][2];
            for (int u = 0; u < U; u++)
                for (int r = 0; r < ROWS; r++)
                    acc[u][r][0] = acc[u][r][1] = _mm512_setzero_ps();
            int64_t k = k0;
            /* 4-bit lines (see to_lines): whole groups of 8 k with their
             * shifts unrolled, single k where a run starts or ends inside
             * a group. */
            while (fmt == FMT_TABLE4 && k < k1) {
                if (k % 8 || k + 8 > k1) {
                    __m512 lo, hi;
                    line_code(wp, k, table, &lo, &hi);
                    for (int r = 0; r < ROWS; r++) {
                        __m512 xv = _mm512_set1_ps(x[(m0 + r) * K + k]);
                        acc[0][r][0] = _mm512_fmadd_ps(xv, lo, acc[0][r][0]);
                        acc[0][r][1] = _mm512_fmadd_ps(xv, hi, acc[0][r][1]);
                    }
                    k++;
                    continue;
                }
                const __m512i *l = (const __m512i *)(wp + (size_t)k * HALF);
                __m512i d0 = _mm512_load_si512(l), d1 = _mm512_load_si512(l + 1);
                for (int j = 0; j < 8; j++) {
                    int sh = 16 * (j & 1) + 4 * (j >> 1), u = j % U;
                    __m512 lo = _mm512_permutexvar_ps(j ? _mm512_srli_epi32(d0, sh) : d0, table);
                    __m512 hi = _mm512_permutexvar_ps(j ? _mm512_srli_epi32(d1, sh) : d1, table);
                    for (int r = 0; r < ROWS; r++) {
                        __m512 xv = _mm512_set1_ps(x[(m0 + r) * K + k + j]);
                        acc[u][r][0] = _mm512_fmadd_ps(xv, lo, acc[u][r][0]);
                        acc[u][r][1] = _mm512_fmadd_ps(xv, hi, acc[u][r][1]);
                    }
                }
                k += 8;
            }
            for (; fmt != FMT_TABLE4 && k + U <= k1; k += U)
                for (int u = 0; u < U; u++) {
                    __m512 lo, hi;
                    decode(fmt, table, wp + (size_t)(k + u) * g->k_bytes, zq, &lo, &hi);
                    for (int r = 0; r < ROWS; r++) {
                        __m512 xv = _mm512_set1_ps(x[(m0 + r) * K + k + u]);
                        acc[u][r][0] = _mm512_fmadd_ps(xv, lo, acc[u][r][0]);
                        acc[u][r][1] = _mm512_fmadd_ps(xv, hi, acc[u][r][1]);
                    }
                }
            for (; fmt != FMT_TABLE4 && k < k1; k++) {
                __m512 lo, hi;
                decode(fmt, table, wp + (size_t)k * g->k_bytes, zq, &lo, &hi);
                for (int r = 0; r < ROWS; r++) {
                    __m512 xv = _mm512_set1_ps(x[(m0 + r) * K + k]);
                    acc[0][r][0] = _mm512_fmadd_ps(xv, lo, acc[0][r][0]);
                    acc[0][r][1] = _mm512_fmadd_ps(xv, hi, acc[0][r][1]);
                }
            }
            for (int u = 1; u < U; u++)
                for (int r = 0; r < ROWS; r++) {
                    acc[0][r][0] = _mm512_add_ps(acc[0][r][0], acc[u][r][0]);
                    acc[0][r][1] = _mm512_add_ps(acc[0][r][1], acc[u][r][1]);
                }
            for (int h = 0; h < 2; h++) {
                __m512 s = _mm512_load_ps(g->scale + at + h * HALF);
                for (int r = 0; r < ROWS; r++)
                    out[r][h] = _mm512_fmadd_ps(acc[0][r][h], s, out[r][h]);
            }
        }
        for (int h = 0; h < 2 && g->zs; h++) {
            __m512 zs = _mm512_load_ps(g->zs + at + h * HALF);
            for (int r = 0; r < ROWS; r++)
                out[r][h] = _mm512_fnmadd_ps(_mm512_set1_ps(xsum[(m0 + r) * g->n_blocks + b]), zs,
                                             out[r][h]);
        }
    }
    int64_t n0 = p * PANEL, n = N - n0 < PANEL ? N - n0 : PANEL;
    __mmask16 m_lo = (__mmask16)(n >= HALF ? 0xFFFF : (1u << n) - 1);
    __mmask16 m_hi = (__mmask16)(n <= HALF ? 0 : n >= PANEL ? 0xFFFF : (1u << (n - HALF)) - 1);
    for (int r = 0; r < ROWS; r++) {
        float *yr = y + (m0 + r) * N + n0;
        _mm512_mask_storeu_ps(yr, m_lo, out[r][0]);
        _mm512_mask_storeu_ps(yr + HALF, m_hi, out[r][1]);
        dqg_epilogue_apply(e, yr, m0 + r, n0, n, N, rt);
    }
}

/* At M = 16, each half-panel (16 columns) runs all 16 rows: a decoded
 * half-row of weights serves 16 FMAs, twice as many as in panel_rows, and
 * the 16 sums stay in registers while the results go to `out` once per
 * run. x is read k-major ([k][16], a copy in scratch): 16 rows K floats
 * apart would share the L1's sets. */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
half_wide(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, int h, const float *xt, int64_t m0,
          const float *xsum, float (*out)[HALF])
{
    const int64_t K = g->K;
    const uint8_t *wp = g->w + (size_t)p * g->panel_bytes;
    const __m512 table = _mm512_loadu_ps(g->table);
    for (int r = 0; r < WIDE_ROWS; r++)
        _mm512_store_ps(out[r], _mm512_setzero_ps());
    for (int64_t b = 0; b < g->n_blocks; b++) {
        int64_t kb = b * g->block, kb1 = kb + g->block < K ? kb + g->block : K;
        size_t at = ((size_t)p * (size_t)g->n_blocks + (size_t)b) * PANEL + (size_t)h * HALF;
        for (int64_t k0 = kb; k0 < kb1; k0 += RUN) {
            int64_t k1 = k0 + RUN < kb1 ? k0 + RUN : kb1;
            __m512 acc[WIDE_ROWS];
            for (int r = 0; r < WIDE_ROWS; r++)
                acc[r] = _mm512_setzero_ps();
            int64_t k = k0;
            while (k < k1) {
                if (fmt == FMT_TABLE4 && k % 8 == 0 && k + 8 <= k1) { /* a whole line */
                    __m512i d = _mm512_load_si512(wp + (size_t)k * HALF + (size_t)h * 64);
                    for (int j = 0; j < 8; j++) {
                        int sh = 16 * (j & 1) + 4 * (j >> 1);
                        __m512 v = _mm512_permutexvar_ps(j ? _mm512_srli_epi32(d, sh) : d, table);
                        for (int r = 0; r < WIDE_ROWS; r++)
                            acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(xt[(k + j) * WIDE_ROWS + r]), v,
                                                     acc[r]);
                    }
                    k += 8;
                    continue;
                }
                __m512 v[2];
                if (fmt == FMT_TABLE4)
                    line_code(wp, k, table, &v[0], &v[1]);
                else
                    decode(fmt, table, wp + (size_t)k * g->k_bytes,
                           g->zq ? g->zq + at - (size_t)h * HALF : NULL, &v[0], &v[1]);
                for (int r = 0; r < WIDE_ROWS; r++)
                    acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(xt[k * WIDE_ROWS + r]), v[h], acc[r]);
                k++;
            }
            __m512 s = _mm512_load_ps(g->scale + at);
            for (int r = 0; r < WIDE_ROWS; r++)
                _mm512_store_ps(out[r], _mm512_fmadd_ps(acc[r], s, _mm512_load_ps(out[r])));
        }
        if (g->zs) {
            __m512 zs = _mm512_load_ps(g->zs + at);
            for (int r = 0; r < WIDE_ROWS; r++)
                _mm512_store_ps(out[r],
                                _mm512_fnmadd_ps(_mm512_set1_ps(xsum[(m0 + r) * g->n_blocks + b]),
                                                 zs, _mm512_load_ps(out[r])));
        }
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
panel_wide(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, const float *x, int64_t m0,
           const float *xsum, float *y, const dqg_epilogue *e, const void *const *rt)
{
    _Alignas(64) float out[2][WIDE_ROWS][HALF];
    const float *xt = x + m0 * g->K; /* the chunk's rows, k-major (see dqg_wo_gemv_run) */
    half_wide(g, fmt, p, 0, xt, m0, xsum, out[0]);
    half_wide(g, fmt, p, 1, xt, m0, xsum, out[1]);
    int64_t N = g->N, n0 = p * PANEL, n = N - n0 < PANEL ? N - n0 : PANEL;
    for (int r = 0; r < WIDE_ROWS; r++) {
        float *yr = y + (m0 + r) * N + n0;
        memcpy(yr, out[0][r], (size_t)(n < HALF ? n : HALF) * sizeof(float));
        if (n > HALF)
            memcpy(yr + HALF, out[1][r], (size_t)(n - HALF) * sizeof(float));
        dqg_epilogue_apply(e, yr, m0 + r, n0, n, N, rt);
    }
}

/* One copy of the loop per row count and weight format, so that neither
 * is tested inside it. */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
panel_of(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, const float *x, int64_t m0, int rows,
         const float *xsum, float *y, const dqg_epilogue *e, const void *const *rt)
{
    switch (rows) {
    case 1:
        panel_rows(g, fmt, p, x, m0, 1, 4, xsum, y, e, rt);
        break;
    case 2:
        panel_rows(g, fmt, p, x, m0, 2, 2, xsum, y, e, rt);
        break;
    case 3:
        panel_rows(g, fmt, p, x, m0, 3, 1, xsum, y, e, rt);
        break;
    case 4:
        panel_rows(g, fmt, p, x, m0, 4, 1, xsum, y, e, rt);
        break;
    case AVX512_ROWS:
        panel_rows(g, fmt, p, x, m0, AVX512_ROWS, 1, xsum, y, e, rt);
        break;
    case WIDE_ROWS:
        panel_wide(g, fmt, p, x, m0, xsum, y, e, rt);
        break;
    default: /* 5 .. 7: four rows, then the rest */
        panel_rows(g, fmt, p, x, m0, 4, 1, xsum, y, e, rt);
        if (rows == 5)
            panel_rows(g, fmt, p, x, m0 + 4, 1, 4, xsum, y, e, rt);
        else if (rows == 6)
            panel_rows(g, fmt, p, x, m0 + 4, 2, 2, xsum, y, e, rt);
        else
            panel_rows(g, fmt, p, x, m0 + 4, 3, 1, xsum, y, e, rt);
        break;
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void
panel(const dqg_wo_gemv *g, int64_t p, const float *x, int64_t m0, int rows, const float *xsum,
      float *y, const dqg_epilogue *e, const void *const *rt)
{
    switch (g->fmt) {
#define FORMAT(f)                                                                                  \
    case f:                                                                                        \
        panel_of(g, f, p, x, m0, rows, xsum, y, e, rt);                                            \
        break;
        EACH_FORMAT(FORMAT)
#undef FORMAT
    }
}

/* The bf16 copy, for one row of 4-bit weights (M = 1, where decoding costs
 * as much as the arithmetic: a shift, a vpermps and an FMA per 16
 * weights). x is split exactly into three bf16 parts, x = xh + xm + xl
 * (24 significant bits as three of 8), and vdpbf16ps multiplies 32 codes
 * decoded by one vpermw (bf16 holds every s4, u4 and f4e2m1 value
 * exactly) by a pair of k of each part. Every product is exact and every
 * sum an f32 sum, as in the f32 copy, at three dot products and one
 * lookup per 32 weights instead of two FMAs and two lookups. A row
 * holding NaN or infinity, a magnitude of 2^125 or more (bf16 rounding
 * could overflow) or only magnitudes under 2^-100 (bf16 arithmetic flushes
 * denormal parts) takes the f32 copy. */
#define BF16_HUGE 0x1p125f
#define BF16_TINY 0x1p-100f

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), always_inline)) static inline __m512
bf16_to_f32(__m256bh h)
{
    __m256i v;
    memcpy(&v, &h, sizeof v);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

/* The row's parts: part c of k-pair P (its two bf16s, k even in the low
 * half) at xs[c * pairs + P], zero past K. False for a row the copy does
 * not take. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static bool
split_bf16(const float *x, int64_t K, uint32_t *xs, int64_t pairs)
{
    __m512 amax = _mm512_setzero_ps();
    __mmask16 bad = 0;
    for (int64_t k = 0; k < 2 * pairs; k += 16) {
        __mmask16 m = k + 16 <= K ? 0xFFFF : k < K ? (__mmask16)((1u << (K - k)) - 1) : 0;
        __m512 v = _mm512_maskz_loadu_ps(m, x + k), a = _mm512_abs_ps(v);
        bad |= _mm512_cmp_ps_mask(a, _mm512_set1_ps(BF16_HUGE), _CMP_NLT_UQ); /* NaN too */
        amax = _mm512_max_ps(amax, a);
        for (int c = 0; c < 3; c++) {
            __m256bh h = _mm512_cvtneps_pbh(v);
            memcpy(xs + c * pairs + k / 2, &h, sizeof h);
            v = _mm512_sub_ps(v, bf16_to_f32(h));
        }
    }
    float most = _mm512_reduce_max_ps(amax);
    return !bad && (most == 0.0f || most >= BF16_TINY);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void
panel_bf16(const dqg_wo_gemv *g, int64_t p, const uint32_t *xs, int64_t pairs, const float *xsum,
           float *y, const dqg_epilogue *e, const void *const *rt)
{
    const int64_t K = g->K, N = g->N;
    const uint8_t *wp = g->w + (size_t)p * g->panel_bytes;
    const __m512i table = _mm512_loadu_si512(g->table16);
    __m512 out[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < g->n_blocks; b++) {
        int64_t kb = b * g->block, kb1 = kb + g->block < K ? kb + g->block : K;
        size_t at = ((size_t)p * (size_t)g->n_blocks + (size_t)b) * PANEL;
        /* Runs start at multiples of 8 (K-blocks are, for this copy); a
         * run ending inside a line ends at K, past which xs is 0. */
        for (int64_t k0 = kb; k0 < kb1; k0 += RUN) {
            int64_t k1 = k0 + RUN < kb1 ? k0 + RUN : kb1;
            __m512 acc[4][2];
            for (int s = 0; s < 4; s++)
                acc[s][0] = acc[s][1] = _mm512_setzero_ps();
            for (int64_t k = k0; k < k1; k += 8) {
                const __m512i *l = (const __m512i *)(wp + (size_t)k * HALF);
                __m512i d[2] = {_mm512_load_si512(l), _mm512_load_si512(l + 1)};
                for (int s = 0; s < 4; s++)
                    for (int h = 0; h < 2; h++) {
                        __m512i q = _mm512_permutexvar_epi16(
                            s ? _mm512_srli_epi16(d[h], 4 * s) : d[h], table);
                        __m512bh qb;
                        memcpy(&qb, &q, sizeof qb);
                        for (int c = 0; c < 3; c++) {
                            __m512i xv = _mm512_set1_epi32((int)xs[c * pairs + k / 2 + s]);
                            __m512bh xb;
                            memcpy(&xb, &xv, sizeof xb);
                            acc[s][h] = _mm512_dpbf16_ps(acc[s][h], qb, xb);
                        }
                    }
            }
            for (int h = 0; h < 2; h++) {
                __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[0][h], acc[1][h]),
                                           _mm512_add_ps(acc[2][h], acc[3][h]));
                out[h] = _mm512_fmadd_ps(sum, _mm512_load_ps(g->scale + at + h * HALF), out[h]);
            }
        }
        for (int h = 0; h < 2 && g->zs; h++)
            out[h] = _mm512_fnmadd_ps(_mm512_set1_ps(xsum[b]),
                                      _mm512_load_ps(g->zs + at + h * HALF), out[h]);
    }
    int64_t n0 = p * PANEL, n = N - n0 < PANEL ? N - n0 : PANEL;
    __mmask16 m_lo = (__mmask16)(n >= HALF ? 0xFFFF : (1u << n) - 1);
    __mmask16 m_hi = (__mmask16)(n <= HALF ? 0 : n >= PANEL ? 0xFFFF : (1u << (n - HALF)) - 1);
    _mm512_mask_storeu_ps(y + n0, m_lo, out[0]);
    _mm512_mask_storeu_ps(y + n0 + HALF, m_hi, out[1]);
    dqg_epilogue_apply(e, y + n0, 0, n0, n, N, rt);
}

/* The AVX2 (+ FMA, F16C) copy: the same panels read as four groups of
 * eight columns; 4-bit codes through two 8-entry vpermps tables and a
 * blend on the code's bit 3; at most two rows per pass (sixteen ymm
 * registers). */
#define AVX2_ROWS 2

__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256
table4_avx2(__m256i code, __m256 t_lo, __m256 t_hi)
{
    __m256 lo = _mm256_permutevar8x32_ps(t_lo, code), hi = _mm256_permutevar8x32_ps(t_hi, code);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(code, 28)));
}

/* Eight float8 codes as f32 (see float8_row). */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256
float8_avx2(wo_format fmt, const uint8_t *p)
{
    __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p));
    if (fmt == FMT_E5M2)
        return _mm256_cvtph_ps(_mm_slli_epi16(w, 8));
    __m128i v = _mm_slli_epi16(w, 7);
    return _mm256_cvtph_ps(_mm_add_epi16(v, _mm_and_si128(v, _mm_set1_epi16(0x4000))));
}

/* The 32 columns of row k of a panel as f32, eight per register, less the
 * zero points `zq` of 8- and 16-bit integer codes (NULL: none). */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
decode_avx2(wo_format fmt, __m256 t_lo, __m256 t_hi, const uint8_t *row, const float *zq,
            __m256 q[4])
{
    switch (fmt) {
    case FMT_TABLE4: { /* byte j: columns j (low nibble) and j + 16 (high) */
        __m256i d0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)row));
        __m256i d1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(row + 8)));
        q[0] = table4_avx2(d0, t_lo, t_hi);
        q[1] = table4_avx2(d1, t_lo, t_hi);
        q[2] = table4_avx2(_mm256_srli_epi32(d0, 4), t_lo, t_hi);
        q[3] = table4_avx2(_mm256_srli_epi32(d1, 4), t_lo, t_hi);
        break;
    }
    case FMT_S8:
    case FMT_U8:
        for (int i = 0; i < 4; i++) {
            __m128i b = _mm_loadl_epi64((const __m128i *)(row + 8 * i));
            q[i] = _mm256_cvtepi32_ps(fmt == FMT_S8 ? _mm256_cvtepi8_epi32(b)
                                                    : _mm256_cvtepu8_epi32(b));
        }
        break;
    case FMT_E5M2:
    case FMT_E4M3:
        for (int i = 0; i < 4; i++)
            q[i] = float8_avx2(fmt, row + 8 * i);
        break;
    default: /* FMT_S16, FMT_U16 */
        for (int i = 0; i < 4; i++) {
            __m128i h = _mm_load_si128((const __m128i *)row + i);
            q[i] = _mm256_cvtepi32_ps(fmt == FMT_S16 ? _mm256_cvtepi16_epi32(h)
                                                     : _mm256_cvtepu16_epi32(h));
        }
        break;
    }
    for (int i = 0; zq && i < 4; i++)
        q[i] = _mm256_sub_ps(q[i], _mm256_load_ps(zq + 8 * i));
}

__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
panel_rows_avx2(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, const float *x, int64_t m0,
                const int ROWS, const int U, const float *xsum, float *y, const dqg_epilogue *e,
                const void *const *rt)
{
    const int64_t K = g->K, N = g->N;
    __m256 out[AVX2_ROWS][4];
    for (int r = 0; r < ROWS; r++)
        for (int i = 0; i < 4; i++)
            out[r][i] = _mm256_setzero_ps();
    const uint8_t *wp = g->w + (size_t)p * g->panel_bytes;
    const __m256 t_lo = _mm256_loadu_ps(g->table), t_hi = _mm256_loadu_ps(g->table + 8);
    for (int64_t b = 0; b < g->n_blocks; b++) {
        int64_t kb = b * g->block, kb1 = kb + g->block < K ? kb + g->block : K;
        size_t at = ((size_t)p * (size_t)g->n_blocks + (size_t)b) * PANEL;
        const float *zq = g->zq ? g->zq + at : NULL;
        for (int64_t k0 = kb; k0 < kb1; k0 += RUN) {
            int64_t k1 = k0 + RUN < kb1 ? k0 + RUN : kb1;
            __m256 acc[2][AVX2_ROWS][4];
            for (int u = 0; u < U; u++)
                for (int r = 0; r < ROWS; r++)
                    for (int i = 0; i < 4; i++)
                        acc[u][r][i] = _mm256_setzero_ps();
            int64_t k = k0;
            for (; k + U <= k1; k += U)
                for (int u = 0; u < U; u++) {
                    __m256 q[4];
                    decode_avx2(fmt, t_lo, t_hi, wp + (size_t)(k + u) * g->k_bytes, zq, q);
                    for (int r = 0; r < ROWS; r++) {
                        __m256 xv = _mm256_broadcast_ss(x + (m0 + r) * K + k + u);
                        for (int i = 0; i < 4; i++)
                            acc[u][r][i] = _mm256_fmadd_ps(xv, q[i], acc[u][r][i]);
                    }
                }
            for (; k < k1; k++) {
                __m256 q[4];
                decode_avx2(fmt, t_lo, t_hi, wp + (size_t)k * g->k_bytes, zq, q);
                for (int r = 0; r < ROWS; r++) {
                    __m256 xv = _mm256_broadcast_ss(x + (m0 + r) * K + k);
                    for (int i = 0; i < 4; i++)
                        acc[0][r][i] = _mm256_fmadd_ps(xv, q[i], acc[0][r][i]);
                }
            }
            for (int i = 0; i < 4; i++) {
                __m256 s = _mm256_load_ps(g->scale + at + 8 * i);
                for (int r = 0; r < ROWS; r++) {
                    __m256 a = U > 1 ? _mm256_add_ps(acc[0][r][i], acc[1][r][i]) : acc[0][r][i];
                    out[r][i] = _mm256_fmadd_ps(a, s, out[r][i]);
                }
            }
        }
        for (int i = 0; i < 4 && g->zs; i++)
            for (int r = 0; r < ROWS; r++)
                out[r][i] = _mm256_fnmadd_ps(_mm256_broadcast_ss(xsum + (m0 + r) * g->n_blocks + b),
                                             _mm256_load_ps(g->zs + at + 8 * i), out[r][i]);
    }
    int64_t n0 = p * PANEL, n = N - n0 < PANEL ? N - n0 : PANEL;
    for (int r = 0; r < ROWS; r++) {
        float *yr = y + (m0 + r) * N + n0;
        if (n == PANEL) {
            for (int i = 0; i < 4; i++)
                _mm256_storeu_ps(yr + 8 * i, out[r][i]);
        } else {
            float tmp[PANEL];
            for (int i = 0; i < 4; i++)
                _mm256_storeu_ps(tmp + 8 * i, out[r][i]);
            memcpy(yr, tmp, (size_t)n * sizeof(float));
        }
        dqg_epilogue_apply(e, yr, m0 + r, n0, n, N, rt);
    }
}

__attribute__((target("avx2,fma,f16c"))) static void
panel_avx2(const dqg_wo_gemv *g, int64_t p, const float *x, int64_t m0, int rows, const float *xsum,
           float *y, const dqg_epilogue *e, const void *const *rt)
{
    switch (g->fmt) {
#define FORMAT(f)                                                                                  \
    case f:                                                                                        \
        if (rows == 1)                                                                             \
            panel_rows_avx2(g, f, p, x, m0, 1, 2, xsum, y, e, rt);                                 \
        else                                                                                       \
            panel_rows_avx2(g, f, p, x, m0, 2, 1, xsum, y, e, rt);                                 \
        break;
        EACH_FORMAT(FORMAT)
#undef FORMAT
    }
}

/* The plain-C copy, for CPUs (or a DQG_MAX_ISA cap) below AVX2: a panel's
 * row decoded into 32 floats (float8 through a table of what the vector
 * copies' f16 decoding gives, so every copy refuses and decodes the same
 * codes), then one multiply-add per column and row, which compilers
 * vectorize. */
static void decode_c(const dqg_wo_gemv *g, const uint8_t *row, const float *zq, float q[PANEL])
{
    switch (g->fmt) {
    case FMT_TABLE4:
        for (int j = 0; j < HALF; j++) {
            q[j] = g->table[row[j] & 0x0F];
            q[j + HALF] = g->table[row[j] >> 4];
        }
        break;
    case FMT_S8:
        for (int j = 0; j < PANEL; j++)
            q[j] = (float)(int8_t)row[j];
        break;
    case FMT_U8:
        for (int j = 0; j < PANEL; j++)
            q[j] = (float)row[j];
        break;
    case FMT_E5M2:
    case FMT_E4M3:
        for (int j = 0; j < PANEL; j++)
            q[j] = g->table8[row[j]];
        break;
    case FMT_S16:
        for (int j = 0; j < PANEL; j++) {
            int16_t v;
            memcpy(&v, row + 2 * j, 2);
            q[j] = (float)v;
        }
        break;
    default: /* FMT_U16 */
        for (int j = 0; j < PANEL; j++) {
            uint16_t v;
            memcpy(&v, row + 2 * j, 2);
            q[j] = (float)v;
        }
        break;
    }
    for (int j = 0; zq && j < PANEL; j++)
        q[j] -= zq[j];
}

static void panel_c(const dqg_wo_gemv *g, int64_t p, const float *x, int64_t m0, int rows,
                    const float *xsum, float *y, const dqg_epilogue *e, const void *const *rt)
{
    const int64_t K = g->K, N = g->N;
    float out[MAX_ROWS][PANEL] = {{0}}, acc[MAX_ROWS][PANEL], q[PANEL];
    const uint8_t *wp = g->w + (size_t)p * g->panel_bytes;
    for (int64_t b = 0; b < g->n_blocks; b++) {
        int64_t kb = b * g->block, kb1 = kb + g->block < K ? kb + g->block : K;
        size_t at = ((size_t)p * (size_t)g->n_blocks + (size_t)b) * PANEL;
        for (int64_t k0 = kb; k0 < kb1; k0 += RUN_C) {
            int64_t k1 = k0 + RUN_C < kb1 ? k0 + RUN_C : kb1;
            memset(acc, 0, sizeof acc);
            for (int64_t k = k0; k < k1; k++) {
                decode_c(g, wp + (size_t)k * g->k_bytes, g->zq ? g->zq + at : NULL, q);
                for (int r = 0; r < rows; r++) {
                    float xv = x[(m0 + r) * K + k];
                    for (int j = 0; j < PANEL; j++)
                        acc[r][j] += xv * q[j];
                }
            }
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < PANEL; j++)
                    out[r][j] += acc[r][j] * g->scale[at + j];
        }
        for (int r = 0; r < rows && g->zs; r++)
            for (int j = 0; j < PANEL; j++)
                out[r][j] -= xsum[(m0 + r) * g->n_blocks + b] * g->zs[at + j];
    }
    int64_t n0 = p * PANEL, n = N - n0 < PANEL ? N - n0 : PANEL;
    for (int r = 0; r < rows; r++) {
        float *yr = y + (m0 + r) * N + n0;
        memcpy(yr, out[r], (size_t)n * sizeof(float));
        dqg_epilogue_apply(e, yr, m0 + r, n0, n, N, rt);
    }
}

/* Rows k0 .. k1 - 1 (a chunk of at most GEMM_KC, k0 a multiple of 8) of
 * panel p dequantized into bw[k - k0][32]: (q - zp) s, as the reference
 * dequantizes (the copy keeps the zero points themselves, zq). */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
gemm_decode(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, int64_t k0, int64_t k1, float *bw)
{
    const uint8_t *wp = g->w + (size_t)p * g->panel_bytes;
    const __m512 table = _mm512_loadu_ps(g->table);
    for (int64_t kb = k0; kb < k1;) {
        int64_t b = kb / g->block, ke = (b + 1) * g->block < k1 ? (b + 1) * g->block : k1;
        size_t at = ((size_t)p * (size_t)g->n_blocks + (size_t)b) * PANEL;
        const __m512 s0 = _mm512_load_ps(g->scale + at), s1 = _mm512_load_ps(g->scale + at + HALF);
        const float *zq = g->zq ? g->zq + at : NULL;
        /* 4-bit zero points (0 without them) */
        const __m512 q0 = zq ? _mm512_load_ps(zq) : _mm512_setzero_ps();
        const __m512 q1 = zq ? _mm512_load_ps(zq + HALF) : _mm512_setzero_ps();
        for (int64_t k = kb; k < ke;) {
            float *o = bw + (k - k0) * PANEL;
            if (fmt == FMT_TABLE4 && k % 8 == 0 && k + 8 <= ke) { /* a whole line */
                const __m512i *l = (const __m512i *)(wp + (size_t)k * HALF);
                __m512i d0 = _mm512_load_si512(l), d1 = _mm512_load_si512(l + 1);
                for (int j = 0; j < 8; j++, o += PANEL) {
                    int sh = 16 * (j & 1) + 4 * (j >> 1);
                    __m512 lo = _mm512_permutexvar_ps(j ? _mm512_srli_epi32(d0, sh) : d0, table);
                    __m512 hi = _mm512_permutexvar_ps(j ? _mm512_srli_epi32(d1, sh) : d1, table);
                    if (zq) {
                        lo = _mm512_sub_ps(lo, q0);
                        hi = _mm512_sub_ps(hi, q1);
                    }
                    _mm512_store_ps(o, _mm512_mul_ps(lo, s0));
                    _mm512_store_ps(o + HALF, _mm512_mul_ps(hi, s1));
                }
                k += 8;
                continue;
            }
            __m512 lo, hi;
            if (fmt == FMT_TABLE4) {
                line_code(wp, k, table, &lo, &hi);
                lo = _mm512_sub_ps(lo, q0);
                hi = _mm512_sub_ps(hi, q1);
            } else
                decode(fmt, table, wp + (size_t)k * g->k_bytes, zq, &lo, &hi);
            _mm512_store_ps(o, _mm512_mul_ps(lo, s0));
            _mm512_store_ps(o + HALF, _mm512_mul_ps(hi, s1));
            k++;
        }
        kb = ke;
    }
}

/* y[rows, 32] (+)= xp . bw over kc k: xp GEMM_MR rows k-major, bw [kc][32];
 * `first` stores, later chunks add to what is there. */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
gemm_tile(const float *xp, const float *bw, int64_t kc, float *yt, int64_t N, const int rows,
          __mmask16 m_lo, __mmask16 m_hi, bool first)
{
    __m512 acc[GEMM_MR][2];
    for (int r = 0; r < rows; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++, xp += GEMM_MR, bw += PANEL) {
        __m512 b0 = _mm512_load_ps(bw), b1 = _mm512_load_ps(bw + HALF);
        for (int r = 0; r < rows; r++) {
            __m512 xv = _mm512_set1_ps(xp[r]);
            acc[r][0] = _mm512_fmadd_ps(xv, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(xv, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < rows; r++, yt += N) {
        if (!first) {
            acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_maskz_loadu_ps(m_lo, yt));
            acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_maskz_loadu_ps(m_hi, yt + HALF));
        }
        _mm512_mask_storeu_ps(yt, m_lo, acc[r][0]);
        _mm512_mask_storeu_ps(yt + HALF, m_hi, acc[r][1]);
    }
}

/* Rows m0 .. m0 + rb - 1 of panel p (x packed in xp, see gemm_pack): chunk
 * by chunk of K, decoded once and multiplied by every group of rows; the
 * epilogue once the sums are whole. */
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void
gemm_panel_of(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, const float *xp, int64_t m0,
              int64_t rb, float *y, const dqg_epilogue *e, const void *const *rt)
{
    _Alignas(64) float bw[GEMM_KC * PANEL];
    const int64_t K = g->K, N = g->N, n0 = p * PANEL, n = N - n0 < PANEL ? N - n0 : PANEL;
    __mmask16 m_lo = (__mmask16)(n >= HALF ? 0xFFFF : (1u << n) - 1);
    __mmask16 m_hi = (__mmask16)(n <= HALF ? 0 : n >= PANEL ? 0xFFFF : (1u << (n - HALF)) - 1);
    for (int64_t k0 = 0; k0 < K; k0 += GEMM_KC) {
        int64_t k1 = k0 + GEMM_KC < K ? k0 + GEMM_KC : K;
        gemm_decode(g, fmt, p, k0, k1, bw);
        for (int64_t t = 0; t < rb; t += GEMM_MR) {
            const float *xt = xp + t * K + k0 * GEMM_MR;
            float *yt = y + (m0 + t) * N + n0;
            int rows = (int)(rb - t < GEMM_MR ? rb - t : GEMM_MR);
            /* the full group, else the rows left in groups of 4 */
            if (rows == GEMM_MR)
                gemm_tile(xt, bw, k1 - k0, yt, N, GEMM_MR, m_lo, m_hi, k0 == 0);
            else
                for (int r = 0; r < rows; r += 4) {
                    int left = rows - r;
                    if (left >= 4)
                        gemm_tile(xt + r, bw, k1 - k0, yt + r * N, N, 4, m_lo, m_hi, k0 == 0);
                    else if (left == 3)
                        gemm_tile(xt + r, bw, k1 - k0, yt + r * N, N, 3, m_lo, m_hi, k0 == 0);
                    else if (left == 2)
                        gemm_tile(xt + r, bw, k1 - k0, yt + r * N, N, 2, m_lo, m_hi, k0 == 0);
                    else
                        gemm_tile(xt + r, bw, k1 - k0, yt + r * N, N, 1, m_lo, m_hi, k0 == 0);
                }
        }
    }
    for (int64_t m = m0; m < m0 + rb; m++)
        dqg_epilogue_apply(e, y + m * N + n0, m, n0, n, N, rt);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void
gemm_panel(const dqg_wo_gemv *g, int64_t p, const float *xp, int64_t m0, int64_t rb, float *y,
           const dqg_epilogue *e, const void *const *rt)
{
    switch (g->fmt) {
#define FORMAT(f)                                                                                  \
    case f:                                                                                        \
        gemm_panel_of(g, f, p, xp, m0, rb, y, e, rt);                                              \
        break;
        EACH_FORMAT(FORMAT)
#undef FORMAT
    }
}

/* The AVX2 copy (16 registers): chunks decoded the same way, then blocks
 * of GEMM_MR_AVX2 rows by half a panel (16 columns), 12 sums. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
gemm_decode_avx2(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, int64_t k0, int64_t k1,
                 float *bw)
{
    const uint8_t *wp = g->w + (size_t)p * g->panel_bytes;
    const __m256 t_lo = _mm256_loadu_ps(g->table), t_hi = _mm256_loadu_ps(g->table + 8);
    for (int64_t kb = k0; kb < k1;) {
        int64_t b = kb / g->block, ke = (b + 1) * g->block < k1 ? (b + 1) * g->block : k1;
        size_t at = ((size_t)p * (size_t)g->n_blocks + (size_t)b) * PANEL;
        __m256 sc[4];
        for (int i = 0; i < 4; i++)
            sc[i] = _mm256_load_ps(g->scale + at + 8 * i);
        const float *zq = g->zq ? g->zq + at : NULL;
        for (int64_t k = kb; k < ke; k++) {
            __m256 q[4];
            decode_avx2(fmt, t_lo, t_hi, wp + (size_t)k * g->k_bytes, zq, q);
            float *o = bw + (k - k0) * PANEL;
            for (int i = 0; i < 4; i++)
                _mm256_store_ps(o + 8 * i, _mm256_mul_ps(q[i], sc[i]));
        }
        kb = ke;
    }
}

/* y[rows, n] (+)= xp . bw over kc k, 16 columns of the chunk (bw: [kc][32]
 * from the half's first); n < 16 columns go through a copy. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
gemm_tile_avx2(const float *xp, const float *bw, int64_t kc, float *yt, int64_t N, const int rows,
               int n, bool first)
{
    __m256 acc[GEMM_MR_AVX2][2];
    for (int r = 0; r < rows; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < kc; k++, xp += GEMM_MR_AVX2, bw += PANEL) {
        __m256 b0 = _mm256_load_ps(bw), b1 = _mm256_load_ps(bw + 8);
        for (int r = 0; r < rows; r++) {
            __m256 xv = _mm256_broadcast_ss(xp + r);
            acc[r][0] = _mm256_fmadd_ps(xv, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(xv, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < rows; r++, yt += N) {
        _Alignas(32) float t[HALF];
        float *o = n == HALF ? yt : t;
        if (!first && n < HALF)
            memcpy(t, yt, (size_t)n * sizeof(float));
        if (!first) {
            acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(o));
            acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(o + 8));
        }
        _mm256_storeu_ps(o, acc[r][0]);
        _mm256_storeu_ps(o + 8, acc[r][1]);
        if (n < HALF)
            memcpy(yt, t, (size_t)n * sizeof(float));
    }
}

__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
gemm_panel_of_avx2(const dqg_wo_gemv *g, const wo_format fmt, int64_t p, const float *xp,
                   int64_t m0, int64_t rb, float *y, const dqg_epilogue *e, const void *const *rt)
{
    _Alignas(64) float bw[GEMM_KC * PANEL];
    const int64_t K = g->K, N = g->N, n0 = p * PANEL, n = N - n0 < PANEL ? N - n0 : PANEL;
    for (int64_t k0 = 0; k0 < K; k0 += GEMM_KC) {
        int64_t k1 = k0 + GEMM_KC < K ? k0 + GEMM_KC : K;
        gemm_decode_avx2(g, fmt, p, k0, k1, bw);
        for (int64_t t = 0; t < rb; t += GEMM_MR_AVX2) {
            const float *xt = xp + t * K + k0 * GEMM_MR_AVX2;
            int rows = (int)(rb - t < GEMM_MR_AVX2 ? rb - t : GEMM_MR_AVX2);
            for (int h = 0; h < 2 && n > h * HALF; h++) {
                float *yt = y + (m0 + t) * N + n0 + h * HALF;
                int nh = (int)(n - h * HALF < HALF ? n - h * HALF : HALF);
                switch (rows) {
#define ROWS(R)                                                                                    \
    case R:                                                                                        \
        gemm_tile_avx2(xt, bw + h * HALF, k1 - k0, yt, N, R, nh, k0 == 0);                         \
        break;
                    ROWS(1)
                    ROWS(2)
                    ROWS(3)
                    ROWS(4)
                    ROWS(5)
                    ROWS(6)
#undef ROWS
                }
            }
        }
    }
    for (int64_t m = m0; m < m0 + rb; m++)
        dqg_epilogue_apply(e, y + m * N + n0, m, n0, n, N, rt);
}

__attribute__((target("avx2,fma,f16c"))) static void
gemm_panel_avx2(const dqg_wo_gemv *g, int64_t p, const float *xp, int64_t m0, int64_t rb, float *y,
                const dqg_epilogue *e, const void *const *rt)
{
    switch (g->fmt) {
#define FORMAT(f)                                                                                  \
    case f:                                                                                        \
        gemm_panel_of_avx2(g, f, p, xp, m0, rb, y, e, rt);                                         \
        break;
        EACH_FORMAT(FORMAT)
#undef FORMAT
    }
}

/* Rows 0 .. rows - 1 of x in groups of mr, each group k-major ([k][mr],
 * rows past the last zero) at xp + (first row) * K. */
static void gemm_pack(const float *x, int64_t K, int64_t rows, int mr, float *xp, int threads)
{
    int64_t groups = (rows + mr - 1) / mr;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t t = 0; t < groups; t++)
        for (int r = 0; r < mr; r++) {
            int64_t m = t * mr + r;
            float *o = xp + t * mr * K + r;
            if (m < rows)
                for (int64_t k = 0; k < K; k++)
                    o[k * mr] = x[m * K + k];
            else
                for (int64_t k = 0; k < K; k++)
                    o[k * mr] = 0.0f;
        }
}

/* Many rows: GEMM_ROWS at a time, packed, then every panel over them
 * (threads take whole panels). */
static void run_gemm(const dqg_wo_gemv *g, int64_t M, const float *x, float *y, void *scratch,
                     const dqg_epilogue *e, const void *const *rt, int threads)
{
    float *xp = scratch;
    bool avx512 = g->isa == DQG_ISA_AVX512;
    for (int64_t mb = 0; mb < M; mb += GEMM_ROWS) {
        int64_t rb = M - mb < GEMM_ROWS ? M - mb : GEMM_ROWS;
        gemm_pack(x + mb * g->K, g->K, rb, avx512 ? GEMM_MR : GEMM_MR_AVX2, xp, threads);
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t p = 0; p < g->panels; p++)
            if (avx512)
                gemm_panel(g, p, xp, mb, rb, y, e, rt);
            else
                gemm_panel_avx2(g, p, xp, mb, rb, y, e, rt);
    }
}

/* Rows holding NaN, infinity or a magnitude of 2^64 and up: the copies
 * for few rows scale sums of x q (and subtract s zp times the sum of x),
 * which overflow or form inf - inf where the reference, dequantizing each
 * weight first, does not. Below 2^64 the sums of x q stay finite (|q| <
 * 2^16, K < 2^31). */
#define EXACT_ROW_MAX 0x1p64f

static bool row_needs_exact(const float *xr, int64_t K)
{
    for (int64_t k = 0; k < K; k++)
        if (!(fabsf(xr[k]) < EXACT_ROW_MAX))
            return true;
    return false;
}

/* The code (4-bit) of weight (k, column j) of panel p, rows or lines. */
static uint8_t code4_at(const dqg_wo_gemv *g, int64_t p, int64_t k, int j)
{
    const uint8_t *wp = g->w + (size_t)p * g->panel_bytes;
    if (!g->lines) /* byte j % 16: column j (low nibble) and j + 16 (high) */
        return (uint8_t)((wp[(size_t)k * g->k_bytes + (size_t)(j % HALF)] >> (j < HALF ? 0 : 4)) &
                         0x0F);
    uint32_t d; /* dword j % 16 of the half's line (see line_code) */
    memcpy(&d,
           wp + (size_t)(k & ~(int64_t)7) * HALF + (size_t)(j / HALF) * 64 + (size_t)(j % HALF) * 4,
           4);
    return (uint8_t)((d >> (16 * (k & 1) + 4 * ((k & 7) >> 1))) & 0x0F);
}

/* Row m of y as the reference computes it: each weight dequantized,
 * (q - zp) s (4-bit zero points are s zp / s, rounded: exact for the
 * integers they are), and summed over k in order. */
static void exact_row(const dqg_wo_gemv *g, int64_t m, const float *x, float *y,
                      const dqg_epilogue *e, const void *const *rt)
{
    const int64_t K = g->K, N = g->N;
    const float *xr = x + m * K;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < g->panels; p++) {
        int64_t n0 = p * PANEL, nn = N - n0 < PANEL ? N - n0 : PANEL;
        float acc[PANEL] = {0}, q[PANEL];
        for (int64_t k = 0; k < K; k++) {
            size_t at = ((size_t)p * (size_t)g->n_blocks + (size_t)(k / g->block)) * PANEL;
            const float *zq = g->zq ? g->zq + at : NULL;
            if (g->fmt == FMT_TABLE4)
                for (int j = 0; j < PANEL; j++)
                    q[j] = g->table[code4_at(g, p, k, j)];
            else if (g->fmt == FMT_E5M2 || g->fmt == FMT_E4M3)
                for (int j = 0; j < PANEL; j++) /* the code as stored, through f16 */
                    q[j] = float8_decoded(
                        g->fmt,
                        g->w[(size_t)p * g->panel_bytes + (size_t)k * g->k_bytes + (size_t)j],
                        1.0f);
            else
                decode_c(g, g->w + (size_t)p * g->panel_bytes + (size_t)k * g->k_bytes, zq, q);
            for (int j = 0; j < nn; j++) {
                float sc = g->scale[at + (size_t)j];
                if (g->zs) /* 4-bit zero point */
                    q[j] -= sc != 0.0f ? nearbyintf(g->zs[at + (size_t)j] / sc) : 0.0f;
                acc[j] += xr[k] * (q[j] * sc);
            }
        }
        float *yr = y + m * N + n0;
        memcpy(yr, acc, (size_t)nn * sizeof(float));
        dqg_epilogue_apply(e, yr, m, n0, nn, N, rt);
    }
}

dqg_status dqg_wo_gemv_run(const dqg_wo_gemv *g, int64_t M, const float *x, float *y, void *scratch,
                           const dqg_epilogue *e, const void *const *rt)
{
    /* Small layers stay on one thread: a fork costs more than they do. */
    int threads = g->K * g->N * M >= (1 << 16) ? omp_get_max_threads() : 1;
    if (g->gemm) {
        run_gemm(g, M, x, y, scratch, e, rt, threads);
        return DQG_OK;
    }
    float *xsum = scratch;
    if (g->zs)
        for (int64_t m = 0; m < M; m++)
            for (int64_t b = 0; b < g->n_blocks; b++) {
                int64_t k0 = b * g->block, k1 = k0 + g->block < g->K ? k0 + g->block : g->K;
                float s = 0.0f;
                for (int64_t k = k0; k < k1; k++)
                    s += x[m * g->K + k];
                xsum[m * g->n_blocks + b] = s;
            }
    int64_t pairs = bf16_pairs(g->K);
    uint32_t *xs = NULL;
    bool bf16 = false;
    if (g->isa == DQG_ISA_AVX512_BF16 && M == 1) {
        xs = (uint32_t *)((char *)scratch + xsum_bytes(g, M));
        bf16 = split_bf16(x, g->K, xs, pairs);
    }
    const float *xk = x; /* what the panels read: x, or x k-major in chunks of 16 rows */
    if (wide_passes(g, M)) {
        float *t = (float *)((char *)scratch + xsum_bytes(g, M));
        for (int64_t c = 0; c < M; c += WIDE_ROWS)
            for (int64_t k = 0; k < g->K; k++)
                for (int r = 0; r < WIDE_ROWS; r++)
                    t[c * g->K + k * WIDE_ROWS + r] = x[(c + r) * g->K + k];
        xk = t;
    }
    int per = wide_passes(g, M)          ? WIDE_ROWS
              : g->isa >= DQG_ISA_AVX512 ? AVX512_ROWS
              : g->isa == DQG_ISA_AVX2   ? AVX2_ROWS
                                         : MAX_ROWS; /* rows per pass */
    int64_t chunks = (M + per - 1) / per, work = g->panels * chunks;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < work; i++) {
        /* Panel-major: each thread takes whole panels, every chunk of rows
         * of a panel while its weights are in cache (chunk-major would give
         * one thread all full chunks and the other the short last one). */
        int64_t p = i / chunks, c = i % chunks, m0 = c * per;
        int rows = (int)(M - m0 < per ? M - m0 : per);
        if (bf16)
            panel_bf16(g, p, xs, pairs, xsum, y, e, rt);
        else if (g->isa >= DQG_ISA_AVX512)
            panel(g, p, xk, m0, rows, xsum, y, e, rt);
        else if (g->isa == DQG_ISA_AVX2)
            panel_avx2(g, p, x, m0, rows, xsum, y, e, rt);
        else
            panel_c(g, p, x, m0, rows, xsum, y, e, rt);
    }
    for (int64_t m = 0; m < M; m++)
        if (row_needs_exact(x + m * g->K, g->K))
            exact_row(g, m, x, y, e, rt);
    return DQG_OK;
}

const char *dqg_wo_gemv_isa(const dqg_wo_gemv *g)
{
    return dqg_isa_name(g->isa);
}

bool dqg_wo_gemv_gemm(const dqg_wo_gemv *g)
{
    return g->gemm;
}

void dqg_wo_gemv_destroy(dqg_wo_gemv *g)
{
    if (!g)
        return;
    free(g->w);
    free(g->scale);
    free(g->zs);
    free(g->zq);
    free(g->table8);
    free(g);
}
