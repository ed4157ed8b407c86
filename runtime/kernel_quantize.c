/* A lone QUANTIZE, f32 to u8/s8/u16/s16, per tensor or per axis, with
 * constant or run-time scales and zero points: dqgraph's own kernel
 * (AVX-512 or plain C, chosen at run time; OpenMP over rows), bit-identical
 * to the definition y = saturate(round_half_even(x / scale) + zp), NaN
 * giving 0 as in the reference. A row-major image (a graph input of at
 * most 4 channels) whose 8-bit result the layout pass stores channels-last
 * is transposed as it is quantized: 16 pixels of 3 channels at a time on
 * AVX-512, else per block of 64 pixels.
 *
 * oneDNN 2.6's reorder is not used: it multiplies by 1 / scale and rounds
 * x / scale + zp as one value, which differs from the definition by one
 * unit on ties (odd zero points) and for scales whose reciprocal is
 * inexact, and it turns NaN into the type's maximum. Other cases (blocked,
 * float outputs, 4-bit, f16 inputs) return DQG_UNSUPPORTED and run on the
 * reference kernel. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernel.h"
#include "runtime/quotient.h"

#define PARALLEL_MIN (64 * 1024)

typedef struct quantize_kernel {
    dqg_kernel base;
    int x_arg, scale_arg, zp_arg, y_arg; /* -1: constant (or no zero point) */
    float *const_scale, *const_zp;       /* constant parameters as f32 */
    dqg_dtype y_dtype, zp_dtype;
    int64_t ns;              /* scales: 1 or the axis length */
    int64_t outer, D, inner; /* x as [outer, D, inner] around the axis */
    float lo, hi;            /* the output type's range */
    bool avx512;
    /* Per tensor, 8-bit: a row-major x [N, C, spatial] into a
     * channels-last y [N, spatial, C] (choose_layouts: an image input). */
    bool to_channels_last;
    int64_t N, C, S;
} quantize_kernel;

/* ---- Rows: n elements at y[first..], one scale (vec = false) or one per
 * element (vec = true) -------------------------------------------------- */

static void row_scalar(const quantize_kernel *k, const float *x, const float *s, const float *z,
                       bool vec, void *y, int64_t first, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float q = x[first + i] / s[vec ? i : 0];
        float r;
        if (isnan(q)) {
            r = 0.0f;
        } else {
            r = nearbyintf(q) + z[vec ? i : 0]; /* default rounding: to nearest even */
            r = r < k->lo ? k->lo : r > k->hi ? k->hi : r;
        }
        dqg_store_int(k->y_dtype, y, first + i, (int64_t)r);
    }
}

/* The codes of x[0..16) as dwords: the quotient (without a division when
 * `fast`: runtime/quotient.h), rounded half to even, plus the zero point,
 * saturated; NaN gives 0. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static __m512i
codes16(const quantize_kernel *k, const float *x, __m512 vs, __m512 vr, bool fast, __m512 vz)
{
    const __m512 lo = _mm512_set1_ps(k->lo), hi = _mm512_set1_ps(k->hi);
    __m512 xv = _mm512_loadu_ps(x);
    __m512 q = fast ? dqg_quotient512(xv, vs, vr) : _mm512_div_ps(xv, vs);
    __mmask16 nan = _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q);
    __m512 r = _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(r, vz), lo), hi);
    return _mm512_cvtps_epi32(_mm512_maskz_mov_ps((__mmask16)~nan, r));
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void
row_avx512(const quantize_kernel *k, const float *x, const float *s, const float *z, bool vec,
           void *y, int64_t first, int64_t n)
{
    __m512 vs = _mm512_set1_ps(s[0]), vz = _mm512_set1_ps(z[0]);
    /* one scale: the quotient without a division (runtime/quotient.h) */
    bool fast = !vec && dqg_quotient_safe(s[0]);
    __m512 vr = _mm512_set1_ps(1.0f / s[0]);
    bool wide = k->y_dtype == DQG_U16 || k->y_dtype == DQG_S16;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        if (vec) {
            vs = _mm512_loadu_ps(s + i);
            vz = _mm512_loadu_ps(z + i);
        }
        __m512i v = codes16(k, x + first + i, vs, vr, fast, vz);
        if (wide)
            _mm256_storeu_si256((__m256i *)((uint16_t *)y + first + i), _mm512_cvtepi32_epi16(v));
        else
            _mm_storeu_si128((__m128i *)((uint8_t *)y + first + i), _mm512_cvtepi32_epi8(v));
    }
    if (i < n)
        row_scalar(k, x, vec ? s + i : s, vec ? z + i : z, vec, y, first + i, n - i);
}

static void row(const quantize_kernel *k, const float *x, const float *s, const float *z, bool vec,
                void *y, int64_t first, int64_t n)
{
    if (k->avx512)
        row_avx512(k, x, s, z, vec, y, first, n);
    else
        row_scalar(k, x, s, z, vec, y, first, n);
}

/* ---- Row-major image to channels-last ---------------------------------- */

#define PIXELS 64 /* pixels per block: the channels' codes in L1, then interleaved */

/* Three channels of 16 pixels (codes in the low bytes of the dwords of
 * q0, q1, q2) as 48 interleaved bytes at y: each pixel's three bytes
 * joined in a dword, each 128-bit lane's four pixels packed to 12 bytes,
 * the lanes' 12 bytes packed to 48. */
__attribute__((target("avx512f,avx512bw"))) static void interleave3(__m512i q0, __m512i q1,
                                                                    __m512i q2, uint8_t *y)
{
    __m512i v = _mm512_or_si512(
        _mm512_and_si512(q0, _mm512_set1_epi32(0xFF)),
        _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(q1, _mm512_set1_epi32(0xFF)), 8),
                        _mm512_slli_epi32(_mm512_and_si512(q2, _mm512_set1_epi32(0xFF)), 16)));
    const __m512i lane = _mm512_set4_epi32(-1, 0x0E0D0C0A, 0x09080605, 0x04020100);
    v = _mm512_shuffle_epi8(v, lane);
    v = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15, 15, 15, 15), v);
    _mm512_mask_storeu_epi32(y, 0x0FFF, v);
}

/* The first whole groups of 16 of the n pixels of a 3-channel image
 * (x: its first channel at the first pixel, y: that pixel's first byte);
 * returns how many pixels it wrote. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static int64_t
block3_avx512(const quantize_kernel *k, const float *x, const float *s, const float *z, uint8_t *y,
              int64_t n)
{
    __m512 vs = _mm512_set1_ps(s[0]), vr = _mm512_set1_ps(1.0f / s[0]), vz = _mm512_set1_ps(z[0]);
    bool fast = dqg_quotient_safe(s[0]);
    int64_t p = 0;
    for (; p + 16 <= n; p += 16)
        interleave3(codes16(k, x + p, vs, vr, fast, vz), codes16(k, x + k->S + p, vs, vr, fast, vz),
                    codes16(k, x + 2 * k->S + p, vs, vr, fast, vz), y + 3 * p);
    return p;
}

/* Pixels p0 .. p0 + n of one image x [C, S] into y [S, C]: 16 at a time
 * with 3 channels on AVX-512, the rest each channel's codes into `tmp`
 * and then interleaved. */
static void block_to_channels_last(const quantize_kernel *k, const float *x, const float *s,
                                   const float *z, uint8_t *y, int64_t p0, int64_t n)
{
    int64_t done = 0;
    if (k->avx512 && k->C == 3)
        done = block3_avx512(k, x + p0, s, z, y + p0 * 3, n);
    if (done == n)
        return;
    uint8_t tmp[4 * PIXELS];
    for (int64_t c = 0; c < k->C; c++)
        row_scalar(k, x + c * k->S + p0 + done, s, z, false, tmp + c * PIXELS, 0, n - done);
    for (int64_t p = 0; p < n - done; p++)
        for (int64_t c = 0; c < k->C; c++)
            y[(p0 + done + p) * k->C + c] = tmp[c * PIXELS + p];
}

static dqg_status quantize_into(const quantize_kernel *k, void *const *args, void *scratch, void *y)
{
    const float *x = args[k->x_arg];
    const float *s = k->scale_arg >= 0 ? args[k->scale_arg] : k->const_scale;
    const float *z = k->const_zp;
    if (k->zp_arg >= 0) { /* run-time zero points, as f32 in the scratch */
        float *zf = scratch;
        for (int64_t i = 0; i < k->ns; i++)
            zf[i] = (float)dqg_load_int(k->zp_dtype, args[k->zp_arg], i);
        z = zf;
    }
    int64_t total = k->outer * k->D * k->inner;
    int threads = total >= PARALLEL_MIN ? omp_get_max_threads() : 1;
    if (k->to_channels_last) {
        int64_t blocks = (k->S + PIXELS - 1) / PIXELS;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t b = 0; b < k->N * blocks; b++) {
            int64_t img = b / blocks, p0 = (b % blocks) * PIXELS;
            int64_t n = k->S - p0 < PIXELS ? k->S - p0 : PIXELS;
            block_to_channels_last(k, x + img * k->C * k->S, s, z, (uint8_t *)y + img * k->C * k->S,
                                   p0, n);
        }
    } else if (k->ns == 1) {
        int64_t per = (total + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int t = 0; t < threads; t++) {
            int64_t a = t * per, b = a + per < total ? a + per : total;
            if (a < b)
                row(k, x, s, z, false, y, a, b - a);
        }
    } else if (k->inner == 1) { /* along the last axis: a scale per element of a row */
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t o = 0; o < k->outer; o++)
            row(k, x, s, z, true, y, o * k->D, k->D);
    } else {
        int64_t rows = k->outer * k->D;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t r = 0; r < rows; r++)
            row(k, x, s + r % k->D, z + r % k->D, false, y, r * k->inner, k->inner);
    }
    return DQG_OK;
}

static dqg_status quantize_execute(dqg_kernel *base, void *const *args, void *scratch)
{
    const quantize_kernel *k = (const quantize_kernel *)base;
    return quantize_into(k, args, scratch, args[k->y_arg]);
}

dqg_status dqg_quantize_kernel_run_into(const dqg_kernel *k, void *const *args, void *scratch,
                                        void *y)
{
    return quantize_into((const quantize_kernel *)k, args, scratch, y);
}

static void quantize_destroy(dqg_kernel *base)
{
    quantize_kernel *k = (quantize_kernel *)base;
    free(k->const_scale);
    free(k->const_zp);
    free(k);
}

dqg_status dqg_kernel_quantize_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    return dqg_kernel_quantize_build_op(req, dqg_req_op(req, DQG_ROLE_MAIN), out);
}

dqg_status dqg_kernel_quantize_build_op(const dqg_kernel_request *req, const dqg_op *op,
                                        dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_quant_attrs *qa = &op->attrs.quant;
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *s = &g->tensors[op->inputs[1]];
    const dqg_tensor *z = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    dqg_dtype yt = y->dtype;
    bool ok = x->dtype == DQG_F32 && s->dtype == DQG_F32 &&
              (yt == DQG_U8 || yt == DQG_S8 || yt == DQG_U16 || yt == DQG_S16) &&
              (!z || z->dtype == yt) &&
              (qa->granularity == DQG_PER_TENSOR || qa->granularity == DQG_PER_AXIS) &&
              dqg_kernel_arg_index(g, op->inputs[0]) >= 0;
    /* A change of layout only as choose_layouts asks for it: a row-major
     * image of at most 4 channels into a channels-last 8-bit result. */
    bool to_cl = y->channels_last && !x->channels_last;
    ok = ok && (x->channels_last == y->channels_last ||
                (to_cl && qa->granularity == DQG_PER_TENSOR && x->rank >= 3 && x->dims[1] <= 4 &&
                 dqg_dtype_bits(yt) == 8));
    if (!ok)
        return dqg_set_error(DQG_UNSUPPORTED, "no own kernel for this quantize");
    quantize_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "quantize kernel: out of memory");
    k->base.execute = quantize_execute;
    k->base.destroy = quantize_destroy;
    k->x_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    k->scale_arg = dqg_kernel_arg_index(g, op->inputs[1]);
    k->zp_arg = z ? dqg_kernel_arg_index(g, op->inputs[2]) : -1;
    k->y_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    k->y_dtype = yt;
    k->zp_dtype = z ? z->dtype : yt;
    k->lo = (float)dqg_int_min(yt);
    k->hi = (float)dqg_int_max(yt);
    int axis = qa->granularity == DQG_PER_AXIS ? qa->axis : 0;
    k->outer = 1;
    k->inner = 1;
    k->D = qa->granularity == DQG_PER_AXIS ? x->dims[axis] : 1;
    for (int i = 0; i < x->rank; i++) {
        if (qa->granularity == DQG_PER_AXIS && i < axis)
            k->outer *= x->dims[i];
        else if (qa->granularity == DQG_PER_TENSOR || i > axis)
            k->inner *= x->dims[i];
    }
    k->ns = k->D;
    k->avx512 = dqg_cpu_has(DQG_ISA_AVX512);
    if (to_cl) {
        k->to_channels_last = true;
        k->N = x->dims[0];
        k->C = x->dims[1];
        k->S = x->nelems / (k->N * k->C);
    }
    /* Constant parameters as f32 (a zero point converts exactly). */
    size_t bytes = (size_t)k->ns * sizeof(float);
    bool oom = false;
    if (k->scale_arg < 0) {
        oom |= !(k->const_scale = malloc(bytes));
        for (int64_t i = 0; !oom && i < k->ns; i++)
            k->const_scale[i] = dqg_load_float(DQG_F32, s->data, i);
    }
    if (k->zp_arg < 0) {
        oom |= !(k->const_zp = calloc((size_t)k->ns, sizeof(float)));
        for (int64_t i = 0; !oom && z && i < k->ns; i++)
            k->const_zp[i] = (float)dqg_load_int(z->dtype, z->data, i);
    } else {
        k->base.scratch_size = bytes;
    }
    if (oom) {
        quantize_destroy(&k->base);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "quantize kernel: out of memory");
    }
    k->base.bytes = 2 * bytes;
    snprintf(k->base.impl, sizeof k->base.impl, "own:%s:quantize:f32->%s%s",
             k->avx512 ? "avx512" : "scalar", dqg_dtype_name(yt), to_cl ? ":to-channels-last" : "");
    *out = &k->base;
    return DQG_OK;
}
