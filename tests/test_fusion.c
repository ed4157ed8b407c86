/* Randomized differential suite for the int8 fusion passes, with fixed
 * seeds: each generated QDQ graph is compiled fused, compiled with fusion
 * off, and run on the reference interpreter. f32 outputs agree within 1e-5
 * of the output's largest magnitude, quantized outputs within one unit; the
 * explain log shows the expected fusion or refusal. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

static uint32_t rs;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return rs;
}
static int64_t rin(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1));
}

/* Shapes at the edges oneDNN's kernels have failed at (oneDNN 2.6
 * defects A-E), chosen by the tests that ask for them. */
static struct {
    bool tile_edges;     /* K around 125-130 and other tile sizes */
    bool small_m;        /* M of a GEMV, K and N up to 4096 */
    bool many_channels;  /* 1 to 80 output channels per group */
    bool partial_pad_3d; /* 3-D: no depth padding, height/width padding */
    bool oc8;            /* 8 output channels, 1 input channel per group or 1x1 kernels */
    bool other_clips;    /* Clips with different bounds */
    bool zero_scale;     /* the first output channel's weight scale is 0 */
    bool wide_u8;        /* convolutions: u8 weights whose w - zp leaves s8 */
} edge;

typedef struct gen {
    dqg_graph *g;
    dqg_tensor_id x_in, y;
    bool expect_fused;
    bool expect_weight_only; /* int8 refused: a weight-only partition instead */
    bool is_matmul;
    const char *expect_reason; /* substring of the refusal, when not fused into int8 */
    bool quantized_out;
    int64_t K;      /* MatMul reduction size (0 for convolutions) */
    int64_t gemv_m; /* the rows of a small-M MatMul, whose kernel line says M (else 0) */
    char what[256];
} gen;

static dqg_tensor_id cf32(dqg_graph *g, int rank, const int64_t *d, const float *v)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    return dqg_constant(g, NULL, DQG_F32, rank, d, v, (size_t)n * sizeof(float));
}

/* Activation DQ of a u8/s8 input `x` (per-tensor; optionally per-axis to
 * provoke a refusal). */
static dqg_tensor_id src_dq(gen *G, dqg_tensor_id x, dqg_dtype xt, bool per_axis, int axis,
                            int64_t adim)
{
    dqg_graph *g = G->g;
    float s[64];
    int64_t n = per_axis ? adim : 1;
    for (int i = 0; i < n; i++)
        s[i] = 0.01f + 0.001f * (float)rin(0, 40);
    uint8_t zp[64];
    bool has_zp = rin(0, 2) != 0;
    for (int i = 0; i < n; i++)
        zp[i] = xt == DQG_U8 ? (uint8_t)rin(0, 255) : (uint8_t)(int8_t)rin(-20, 20);
    int64_t one = 1;
    dqg_tensor_id sc = per_axis ? cf32(g, 1, &n, s) : cf32(g, 0, &one, s);
    dqg_tensor_id z = DQG_NONE;
    if (has_zp)
        z = dqg_constant(g, NULL, xt, per_axis ? 1 : 0, &n, zp, (size_t)n);
    dqg_dequantize_linear_attrs a = {.opset = 13, .has_axis = true, .axis = axis};
    return dqg_dequantize_linear(g, "x_dq", x, sc, z, &a);
}

/* Weight DQ of constant weights of shape wd, per-tensor or per channel along
 * oc_axis; u8 weights with zero point 128 (or per channel near it). */
/* The kinds of u8 weights w_dq makes: w - zp within s8 (a convolution's
 * and a matmul's int8 kernels fold it); spanning 256 values across s8's
 * bounds with one zero point (a matmul folds it with a common offset, its
 * weights zero point); spanning more than 256 values with per-channel
 * zero points (nothing folds it). */
typedef enum { W_FITS, W_WIDE, W_UNFOLDABLE } w_range;

static dqg_tensor_id w_dq(gen *G, int rank, const int64_t *wd, int oc_axis, dqg_dtype wt,
                          w_range range)
{
    dqg_graph *g = G->g;
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= wd[i];
    int8_t *w = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        w[i] = wt != DQG_U8      ? (int8_t)rin(-127, 127)
               : range == W_WIDE ? (int8_t)(uint8_t)rin(0, 255)
                                 : (int8_t)(uint8_t)rin(100, 156);
    bool per_ch = range == W_UNFOLDABLE || (range != W_WIDE && rin(0, 1));
    int64_t oc = wd[oc_axis], ns = per_ch ? oc : 1, one = 1;
    float *s = malloc((size_t)ns * sizeof *s);
    uint8_t *zp = malloc((size_t)ns);
    int wide_zp = (int)rin(0, 255);
    for (int i = 0; i < ns; i++) {
        s[i] = 0.005f + 0.0005f * (float)rin(0, 40);
        zp[i] = wt != DQG_U8            ? 0
                : range == W_UNFOLDABLE ? (uint8_t)(i % 2 ? 255 : 0)
                : range == W_WIDE       ? (uint8_t)wide_zp
                                        : (uint8_t)(128 + rin(-3, 3));
    }
    if (edge.zero_scale)
        s[0] = 0.0f;
    dqg_tensor_id wq = dqg_constant(g, "w_q", wt, rank, wd, w, (size_t)n);
    dqg_tensor_id sc = per_ch ? cf32(g, 1, &ns, s) : cf32(g, 0, &one, s);
    dqg_tensor_id z = DQG_NONE;
    if (wt == DQG_U8 || rin(0, 3) == 0)
        z = dqg_constant(g, NULL, wt, per_ch ? 1 : 0, &ns, zp, (size_t)ns);
    dqg_dequantize_linear_attrs a = {.opset = 13, .has_axis = true, .axis = oc_axis};
    free(w);
    free(s);
    free(zp);
    return dqg_dequantize_linear(g, "w_dq", wq, sc, z, &a);
}

/* Bias, post-ops and quantize after `t` (channel axis ca, C channels). */
static dqg_tensor_id epilogue(gen *G, dqg_tensor_id t, int ca, int64_t C, dqg_data_format bf,
                              bool allow_bias)
{
    dqg_graph *g = G->g;
    float *v = malloc((size_t)(C > 1 ? C : 1) * sizeof *v);
    cr_assert(v);
    int64_t one = 1;
    if (allow_bias && rin(0, 1)) {
        for (int i = 0; i < C; i++)
            v[i] = (float)rin(-100, 100) * 0.01f;
        t = dqg_bias_add(g, "bias", t, cf32(g, 1, &C, v), bf);
    }
    int n_post = (int)rin(0, 3);
    for (int i = 0; i < n_post; i++) {
        switch (rin(0, 3)) {
        case 0:
            t = dqg_relu(g, NULL, t);
            break;
        case 1:
            t = edge.other_clips
                    ? dqg_clip(g, NULL, t, -0.5f * (float)rin(0, 4), 0.5f + 0.5f * (float)rin(0, 6))
                    : dqg_clip(g, NULL, t, -1.0f, 2.5f);
            break;
        case 2:
            v[0] = 0.25f;
            t = dqg_add(g, NULL, t, cf32(g, 0, &one, v));
            break;
        default: {
            /* Per-channel multiplier shaped to broadcast on the channel axis. */
            const dqg_tensor_id tt = t;
            int rank = dqg_tensor_rank(g, tt);
            int64_t d[8];
            for (int k = 0; k < rank; k++)
                d[k] = k == ca ? C : 1;
            for (int k = 0; k < C; k++)
                v[k] = 0.5f + 0.01f * (float)k;
            t = dqg_mul(g, NULL, t, cf32(g, rank - (ca == 0 ? 0 : 0), d, v));
            break;
        }
        }
    }
    if (rin(0, 2) == 0) {
        float qs = 0.05f;
        uint8_t qz = rin(0, 1) ? 10 : 0;
        dqg_dtype qt = rin(0, 1) ? DQG_U8 : DQG_S8;
        dqg_quantize_linear_attrs qa = {.opset = 13};
        t = dqg_quantize_linear(g, "q", t, cf32(g, 0, &one, &qs),
                                dqg_constant(g, NULL, qt, 0, &one, &qz, 1), &qa);
        G->quantized_out = true;
    }
    free(v);
    return t;
}

/* Runs g three ways on deterministic inputs and checks the contract. */
static void check(gen *G)
{
    dqg_graph *g = G->g;
    cr_assert_eq(dqg_output(g, G->y, "y"), DQG_OK, "%s: %s", G->what, dqg_last_error());
    cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s: %s", G->what, dqg_last_error());
    size_t xb = dqg_tensor_byte_size(g, G->x_in);
    uint8_t *x = malloc(xb);
    for (size_t i = 0; i < xb; i++)
        x[i] = (uint8_t)rnd();
    int64_t n = dqg_tensor_element_count(g, G->y);
    size_t yb = dqg_tensor_byte_size(g, G->y);
    void *out[3];
    dqg_buffer in = {.id = G->x_in, .data = x, .size = xb};
    for (int way = 0; way < 3; way++) {
        out[way] = calloc(1, yb);
        dqg_buffer o = {.id = G->y, .data = out[way], .size = yb};
        if (way == 2) {
            cr_assert_eq(dqg_reference_run(g, &in, 1, &o, 1), DQG_OK, "%s: %s", G->what,
                         dqg_last_error());
            continue;
        }
        dqg_compile_options opt = dqg_compile_options_default();
        opt.disable_fusion = way == 1;
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, &opt, &c), DQG_OK, "%s: %s", G->what, dqg_last_error());
        if (way == 0) {
            size_t fused = dqg_compiled_fused_count(c);
            char log[4096] = "";
            for (size_t i = 0; i < dqg_compiled_explain_count(c); i++) {
                strncat(log, dqg_compiled_explain(c, i), sizeof log - strlen(log) - 2);
                strncat(log, "\n", sizeof log - strlen(log) - 1);
            }
            /* Without VNNI or AMX the int8 kernel is refused with that
             * reason: a MatMul then runs weight-only, a Convolution in f32. */
            bool int8 = test_int8_fusion();
            cr_assert(!strstr(log, "oneDNN 2.6 defect I") || test_avx2_vnni(),
                      "%s: defect I above AVX2-VNNI:\n%s", G->what, log);
            if (G->expect_fused &&
                (strstr(log, "oneDNN 2.6 defect C") || strstr(log, "oneDNN 2.6 defect I"))) {
                /* A known-defect refusal: the f32 path runs, and explains. */
                cr_assert_eq(fused, G->is_matmul ? 1u : 0u, "%s: fused %zu:\n%s", G->what, fused,
                             log);
            } else if (!int8 && G->expect_fused) {
                cr_assert(strstr(log, TEST_NO_INT8_REASON), "%s: no reason in:\n%s", G->what, log);
                cr_assert_eq(fused, G->is_matmul ? 1u : 0u, "%s: fused %zu:\n%s", G->what, fused,
                             log);
            } else if (G->expect_weight_only) {
                cr_assert_eq(fused, 1u, "%s: fused %zu; log:\n%s", G->what, fused, log);
                cr_assert(strstr(log, "-> weight-only matmul") &&
                              (strstr(log, G->expect_reason) || !int8),
                          "%s: no weight-only partition or no \"%s\" in:\n%s", G->what,
                          G->expect_reason, log);
            } else if (G->expect_fused) {
                cr_assert_eq(fused, 1u, "%s: fused %zu; log:\n%s", G->what, fused, log);
                cr_assert(strstr(log, "fused: Dequantize 'x_dq' + Dequantize 'w_"), "%s:\n%s",
                          G->what, log);
                if (G->gemv_m) { /* which kernel, and why */
                    char m_part[48];
                    snprintf(m_part, sizeof m_part, ": M=%lld: ", (long long)G->gemv_m);
                    const char *line = strstr(log, "kernel: MatMul 'mm' -> onednn:matmul:");
                    const char *end = line ? strchr(line, '\n') : NULL;
                    const char *at = line ? strstr(line, m_part) : NULL;
                    cr_assert(at && at < end, "%s: no kernel line with \"%s\" in:\n%s", G->what,
                              m_part, log);
                }
            } else {
                cr_assert_eq(fused, 0u, "%s: fused %zu; log:\n%s", G->what, fused, log);
                cr_assert(strstr(log, G->expect_reason), "%s: no \"%s\" in:\n%s", G->what,
                          G->expect_reason, log);
            }
        } else {
            cr_assert_eq(dqg_compiled_fused_count(c), 0);
        }
        cr_assert_eq(dqg_execute(c, &in, 1, &o, 1), DQG_OK, "%s: %s", G->what, dqg_last_error());
        dqg_compiled_destroy(c);
    }
    if (G->quantized_out) {
        dqg_dtype t = dqg_tensor_dtype(g, G->y);
        for (int64_t i = 0; i < n; i++) {
            int r = t == DQG_U8 ? ((uint8_t *)out[2])[i] : ((int8_t *)out[2])[i];
            for (int way = 0; way < 2; way++) {
                int v = t == DQG_U8 ? ((uint8_t *)out[way])[i] : ((int8_t *)out[way])[i];
                /* One step; an f32 MatMul's rounded sums may move a value
                 * across more steps as K grows. */
                int steps = way == 0 && test_int8_fusion() ? 1 : 1 + (int)(G->K / 1024);
                cr_assert(abs(v - r) <= steps, "%s: way %d element %lld: %d vs reference %d",
                          G->what, way, (long long)i, v, r);
            }
        }
    } else {
        const float *r = out[2];
        double maxabs = 1e-30;
        for (int64_t i = 0; i < n; i++)
            maxabs = fmax(maxabs, fabs(r[i]));
        /* The fused int8 kernels accumulate in integers: the contract's
         * 1e-5. The unfused graph (and the fused one where int8 is refused,
         * and a weight-only MatMul, whose sums are f32) runs an f32 MatMul
         * on the dequantized operands, whose summation error grows with K
         * (as the reference's own does). */
        for (int way = 0; way < 2; way++) {
            const float *v = out[way];
            bool integer = way == 0 && test_int8_fusion() && !G->expect_weight_only;
            double tol = 1e-5 * maxabs * (integer ? 1.0 : fmax(1.0, (double)G->K / 16));
            for (int64_t i = 0; i < n; i++)
                cr_assert(fabs((double)v[i] - r[i]) <= tol,
                          "%s: way %d element %lld: %.9g vs reference %.9g (max %.3g)", G->what,
                          way, (long long)i, v[i], r[i], maxabs);
        }
    }
    for (int way = 0; way < 3; way++)
        free(out[way]);
    free(x);
    dqg_graph_destroy(g);
}

/* One MatMul case; `mode`: 0 fusable (s8 weights, or u8 with any
 * per-tensor zero point), 1 src per-axis, 2 per-channel weight zero points
 * no common offset brings into s8 (fused with a row term), 3 s4 weights:
 * modes 1 and 3 are refused as int8 and run as a weight-only MatMul. */
static void matmul_case(int mode)
{
    gen G = {0};
    cr_assert_eq(dqg_graph_create(&G.g), DQG_OK);
    int64_t M = rin(1, 23), K = rin(1, 61), N = rin(1, 37);
    if (edge.tile_edges) {
        static const int64_t ks[] = {15,  16,  17,  31,  32,  33,  63,  64,  65, 124,
                                     125, 126, 127, 128, 129, 130, 255, 256, 257};
        K = ks[rin(0, (int64_t)(sizeof ks / sizeof *ks) - 1)];
        M = rin(1, 40);
        N = rin(1, 90);
    }
    if (edge.small_m) {
        static const int64_t ms[] = {1, 2, 3, 4, 7, 8, 15, 16};
        static const int64_t sizes[] = {1, 3, 17, 61, 64, 127, 509, 1000, 1021, 2048, 4093, 4096};
        M = ms[rin(0, 7)];
        K = sizes[rin(0, 11)];
        N = sizes[rin(0, 11)];
        if (K * N > (1 << 22)) /* keep the reference's work bounded */
            N = sizes[rin(0, 6)];
    }
    if (mode == 2 && N < 2)
        N = 2; /* two channels, zero points 0 and 255 */
    if (mode == 1 && K < 2)
        K = 2; /* per-axis along one value is per-tensor */
    int brank = edge.small_m ? 0 : (int)rin(0, 2);
    int64_t xd[4];
    int xr = 0;
    for (int i = 0; i < brank; i++)
        xd[xr++] = rin(1, 3);
    xd[xr++] = M;
    xd[xr++] = K;
    dqg_dtype xt = rin(0, 1) ? DQG_U8 : DQG_S8;
    G.x_in = dqg_input(G.g, "x", xt, xr, xd);
    bool tb = rin(0, 3) == 0;
    int64_t wd[2] = {tb ? N : K, tb ? K : N};
    dqg_tensor_id a = src_dq(&G, G.x_in, xt, mode == 1, xr - 1, K);
    dqg_tensor_id b;
    if (mode == 3) {
        int64_t nw = K * N;
        uint8_t *w4 = malloc((size_t)(nw + 1) / 2);
        for (int64_t i = 0; i < (nw + 1) / 2; i++)
            w4[i] = (uint8_t)rnd();
        float s = 0.02f;
        int64_t one = 1;
        dqg_dequantize_linear_attrs wa = {.opset = 21};
        b = dqg_dequantize_linear(G.g, "w_dq",
                                  dqg_constant(G.g, "w_q", DQG_S4, 2, wd, w4, (size_t)(nw + 1) / 2),
                                  cf32(G.g, 0, &one, &s), DQG_NONE, &wa);
        free(w4);
    } else {
        int kind = mode == 2 ? 3 : (int)rin(0, 5);
        b = w_dq(&G, 2, wd, tb ? 0 : 1, kind >= 2 ? DQG_U8 : DQG_S8,
                 mode == 2   ? W_UNFOLDABLE
                 : kind == 2 ? W_FITS
                             : W_WIDE);
    }
    dqg_matmul_attrs at = {.transpose_b = tb};
    dqg_tensor_id y = dqg_matmul(G.g, "mm", a, b, &at);
    G.y = epilogue(&G, y, xr - 1, N, DQG_FORMAT_NXC, true);
    G.expect_fused = mode == 0 || mode == 2;
    G.expect_weight_only = mode == 1 || mode == 3;
    G.is_matmul = true;
    G.K = K;
    G.gemv_m = edge.small_m ? M : 0;
    G.expect_reason = mode == 1   ? "activation scales vary along axis"
                      : mode == 2 ? "more than one s8 range"
                                  : "weights are s4";
    snprintf(G.what, sizeof G.what, "matmul mode %d M=%lld K=%lld N=%lld batch=%d %s tb=%d", mode,
             (long long)M, (long long)K, (long long)N, brank, dqg_dtype_name(xt), tb);
    check(&G);
}

static void conv_case(int sr, bool depthwise)
{
    gen G = {0};
    cr_assert_eq(dqg_graph_create(&G.g), DQG_OK);
    int64_t groups = depthwise ? rin(2, 6) : rin(1, 2);
    int64_t cg = depthwise ? 1 : rin(1, 5), og = depthwise ? 1 : rin(1, 5);
    if (edge.many_channels)
        og = rin(1, 80);
    if (edge.oc8) {
        groups = rin(0, 1) ? 1 : rin(0, 1) ? 2 : 8;
        og = 8 / groups;
        cg = rin(0, 1) ? 1 : rin(1, 3);
    }
    int64_t C = groups * cg, O = groups * og;
    dqg_conv_attrs a = {.spatial_rank = sr,
                        .groups = groups,
                        .data_format = rin(0, 1) ? DQG_FORMAT_NXC : DQG_FORMAT_NCX};
    int64_t xd[5], wd[5] = {O, cg};
    xd[0] = rin(1, 2);
    for (int i = 0; i < sr; i++) {
        int64_t k = edge.oc8 && cg > 1 ? 1 : rin(1, 3);
        if (edge.partial_pad_3d && i == 0)
            k = rin(2, 3); /* kernel depth >= 2 */
        a.strides[i] = rin(1, 2);
        a.dilations[i] = rin(1, 2);
        a.pads_begin[i] = rin(0, k - 1);
        a.pads_end[i] = rin(0, k - 1);
        if (edge.partial_pad_3d) {
            /* No depth padding (and no stride/dilation past the end), some
             * height/width padding. */
            a.pads_begin[i] = a.pads_end[i] = i == 0 ? 0 : rin(1, k);
            if (i == 0)
                a.strides[i] = a.dilations[i] = 1;
        }
        wd[2 + i] = k;
        xd[a.data_format == DQG_FORMAT_NCX ? 2 + i : 1 + i] =
            (k - 1) * a.dilations[i] + 1 + rin(0, sr == 3 ? 3 : 8);
    }
    int ca = a.data_format == DQG_FORMAT_NCX ? 1 : sr + 1;
    xd[ca] = C;
    dqg_dtype xt = rin(0, 1) ? DQG_U8 : DQG_S8;
    G.x_in = dqg_input(G.g, "x", xt, sr + 2, xd);
    dqg_tensor_id x = src_dq(&G, G.x_in, xt, false, 1, 1);
    dqg_tensor_id w = edge.wide_u8
                          ? w_dq(&G, sr + 2, wd, 0, DQG_U8, rin(0, 1) ? W_WIDE : W_UNFOLDABLE)
                          : w_dq(&G, sr + 2, wd, 0, rin(0, 3) == 0 ? DQG_U8 : DQG_S8, W_FITS);
    dqg_tensor_id b = DQG_NONE;
    bool own_bias = rin(0, 1);
    if (own_bias) {
        float *bv = malloc((size_t)O * sizeof *bv);
        cr_assert(bv);
        for (int i = 0; i < O; i++)
            bv[i] = 0.1f * (float)(i % 5) - 0.2f;
        b = cf32(G.g, 1, &O, bv);
        free(bv);
    }
    dqg_tensor_id y = dqg_convolution(G.g, "conv", x, w, b, &a);
    G.y = epilogue(&G, y, ca, O, a.data_format, !own_bias);
    G.expect_fused = true;
    snprintf(G.what, sizeof G.what, "conv %dD groups=%lld C=%lld O=%lld %s %s", sr,
             (long long)groups, (long long)C, (long long)O,
             a.data_format == DQG_FORMAT_NCX ? "NCX" : "NXC", dqg_dtype_name(xt));
    check(&G);
}

Test(fusion, matmul_fused_part1)
{
    rs = 1001;
    for (int i = 0; i < 80; i++)
        matmul_case(0);
}

Test(fusion, matmul_fused_part2)
{
    rs = 2002;
    for (int i = 0; i < 80; i++)
        matmul_case(0);
}

Test(fusion, matmul_refused_src_per_axis)
{
    rs = 3003;
    for (int i = 0; i < 30; i++)
        matmul_case(1);
}

Test(fusion, matmul_per_channel_weight_zero_points_beyond_s8)
{
    rs = 4004;
    for (int i = 0; i < 30; i++)
        matmul_case(2);
}

Test(fusion, matmul_int4_weights_weight_only)
{
    rs = 5005;
    for (int i = 0; i < 30; i++)
        matmul_case(3);
}

Test(fusion, conv_2d)
{
    rs = 6006;
    for (int i = 0; i < 90; i++)
        conv_case(2, false);
}

Test(fusion, conv_1d_3d)
{
    rs = 7007;
    for (int i = 0; i < 50; i++)
        conv_case(1, false);
    for (int i = 0; i < 40; i++)
        conv_case(3, false);
}

Test(fusion, matmul_tile_edges_and_other_clips)
{
    rs = 11011;
    edge.tile_edges = edge.other_clips = true;
    for (int i = 0; i < 60; i++)
        matmul_case(0);
}

/* The GEMV shapes of int8 decoders and classifier heads: M from 1 to 16,
 * K and N up to 4096 (primes, off every tile size). */
Test(fusion, matmul_small_m)
{
    rs = 15015;
    edge.small_m = true;
    for (int i = 0; i < 40; i++)
        matmul_case(0);
}

Test(fusion, conv_output_channels_per_group_1_to_80)
{
    rs = 12012;
    edge.many_channels = edge.other_clips = true;
    for (int i = 0; i < 60; i++)
        conv_case(2, false);
}

/* u8 weights whose w - zp leaves s8, with one zero point anywhere in
 * 0..255 or per-channel ones of 0 and 255: codes w - 128 and the window
 * term (each channel's 128 - zp times the source's window sums). */
Test(fusion, conv_u8_weights_zero_points_beyond_s8)
{
    rs = 16016;
    edge.wide_u8 = true;
    for (int i = 0; i < 50; i++)
        conv_case(2, false);
    for (int i = 0; i < 20; i++)
        conv_case(1, false);
    for (int i = 0; i < 20; i++)
        conv_case(3, false);
    for (int i = 0; i < 20; i++)
        conv_case(2, true);
}

Test(fusion, conv_3d_without_depth_padding)
{
    rs = 13013;
    edge.partial_pad_3d = true;
    for (int i = 0; i < 40; i++)
        conv_case(3, false);
}

Test(fusion, conv_eight_output_channels)
{
    rs = 14014;
    edge.oc8 = true;
    for (int i = 0; i < 40; i++)
        conv_case(1, false);
    for (int i = 0; i < 20; i++)
        conv_case(2, false);
}

/* A weight scale of 0 leaves the bias alone in that channel; the bias
 * cannot then be divided into accumulator units and stays a post-op. */
Test(fusion, conv_zero_weight_scale_with_bias)
{
    rs = 0x5ca1e0u;
    edge.zero_scale = true;
    for (int i = 0; i < 24; i++)
        conv_case(2, i % 3 == 0);
    edge.zero_scale = false;
}

Test(fusion, conv_depthwise)
{
    rs = 8008;
    for (int i = 0; i < 70; i++)
        conv_case(2, true);
}

/* DQ -> MatMul -> Q -> DQ -> MatMul -> Q: two int8 partitions, and the
 * tensor between them stays u8. */
Test(fusion, chained_layers_keep_int8_between)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    rs = 9009;
    gen G = {.g = g};
    int64_t xd[] = {8, 16}, wd[] = {16, 16}, one = 1;
    G.x_in = dqg_input(g, "x", DQG_U8, 2, xd);
    float s1 = 0.02f, s2 = 0.04f;
    uint8_t z = 128;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id sc1 = cf32(g, 0, &one, &s1), sc2 = cf32(g, 0, &one, &s2);
    dqg_tensor_id zp = dqg_constant(g, "zp", DQG_U8, 0, &one, &z, 1);
    dqg_tensor_id t = dqg_dequantize_linear(g, "x_dq", G.x_in, sc1, zp, &da);
    t = dqg_matmul(g, "mm1", t, w_dq(&G, 2, wd, 1, DQG_S8, W_FITS), NULL);
    dqg_tensor_id mid = dqg_quantize_linear(g, "q1", t, sc2, zp, &qa);
    t = dqg_dequantize_linear(g, "dq2", mid, sc2, zp, &da);
    int8_t w2[256];
    for (int i = 0; i < 256; i++)
        w2[i] = (int8_t)(i % 17 - 8);
    float ws = 0.01f;
    dqg_tensor_id wq2 = dqg_constant(g, "w2", DQG_S8, 2, wd, w2, sizeof w2);
    t = dqg_matmul(g, "mm2", t,
                   dqg_dequantize_linear(g, "w2_dq", wq2, cf32(g, 0, &one, &ws), DQG_NONE, &da),
                   NULL);
    dqg_tensor_id y = dqg_quantize_linear(g, "q2", t, sc2, zp, &qa);
    dqg_output(g, y, "y");
    finalize_ok(g);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_compiled_fused_count(c), 2);
    if (!test_int8_fusion()) {
        /* Weight-only MatMuls with the quantize steps between them. */
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
        return;
    }
    cr_assert_eq(dqg_compiled_partition_count(c), 2);
    cr_assert(strstr(dqg_compiled_partition_info(c, 0), ":u8"), "%s",
              dqg_compiled_partition_info(c, 0));
    /* Only the u8 tensor q1 lives between the two partitions. */
    cr_assert_eq(dqg_compiled_peak_memory(c), (8 * 16 + 63) / 64 * 64);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* DQ(constant weights) -> Transpose or Reshape -> MatMul still fuses: the
 * layout op is applied to the quantized constant and the dequantize moves
 * after it, with identical results. */
Test(fusion, weights_through_transpose_and_reshape)
{
    for (int variant = 0; variant < 2; variant++) {
        rs = 10010 + (uint32_t)variant;
        gen G = {0};
        cr_assert_eq(dqg_graph_create(&G.g), DQG_OK);
        dqg_graph *g = G.g;
        int64_t M = 7, K = 19, N = 11, xd[] = {M, K}, one = 1;
        G.x_in = dqg_input(g, "x", DQG_U8, 2, xd);
        dqg_tensor_id a = src_dq(&G, G.x_in, DQG_U8, false, 1, 1);
        int8_t w[19 * 11];
        for (int i = 0; i < K * N; i++)
            w[i] = (int8_t)rin(-127, 127);
        dqg_tensor_id b;
        if (variant == 0) {
            /* stored [N, K], per output channel along axis 0, transposed to [K, N] */
            int64_t wd[] = {N, K};
            float ws[11];
            for (int i = 0; i < N; i++)
                ws[i] = 0.01f + 0.001f * (float)i;
            dqg_dequantize_linear_attrs wa = {.opset = 13, .has_axis = true, .axis = 0};
            dqg_tensor_id wf =
                dqg_dequantize_linear(g, "w_dq", dqg_constant(g, "w_q", DQG_S8, 2, wd, w, sizeof w),
                                      cf32(g, 1, &N, ws), DQG_NONE, &wa);
            b = dqg_transpose(g, "w_t", wf, NULL);
        } else {
            /* stored flat, per-tensor, reshaped to [K, N] */
            int64_t flat = K * N, shape[] = {K, N};
            float ws = 0.02f;
            dqg_dequantize_linear_attrs wa = {.opset = 13};
            dqg_tensor_id wf = dqg_dequantize_linear(
                g, "w_dq", dqg_constant(g, "w_q", DQG_S8, 1, &flat, w, sizeof w),
                cf32(g, 0, &one, &ws), DQG_NONE, &wa);
            b = dqg_reshape(g, "w_r", wf, 2, shape);
        }
        G.y = dqg_matmul(g, "mm", a, b, NULL);
        G.expect_fused = true;
        G.is_matmul = true;
        snprintf(G.what, sizeof G.what, "weights through %s",
                 variant == 0 ? "Transpose" : "Reshape");
        check(&G);
    }
}

/* A residual connection after an int8 convolution (ResNet, MobileNetV2):
 * Q1(conv) -> DQ -> Add(DQ(r)) [-> ReLU / Clip] -> Q2 runs as one
 * convolution whose epilogue rounds and clamps as Q1 does and adds r: every
 * element within one step of the reference, in one partition. */
Test(fusion, conv_residual_sum)
{
    rs = 0x2e5d0a1u;
    for (int it = 0; it < 40; it++) {
        dqg_graph *g = NULL;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t H = rin(1, 9), W = rin(1, 9), C = rin(1, 40), O = rin(1, 70), k = rin(0, 1) ? 1 : 3;
        bool nxc = rin(0, 3) != 0;
        int64_t xd[] = {1, nxc ? H : C, nxc ? W : H, nxc ? C : W},
                rd[] = {1, nxc ? H : O, nxc ? W : H, nxc ? O : W}, wd[] = {O, C, k, k};
        dqg_dtype xt = rin(0, 1) ? DQG_U8 : DQG_S8, q1t = rin(0, 1) ? DQG_U8 : DQG_S8,
                  rt = rin(0, 1) ? DQG_U8 : DQG_S8, q2t = rin(0, 1) ? DQG_U8 : DQG_S8;
        dqg_tensor_id x_in = dqg_input(g, "x", xt, 4, xd), r_in = dqg_input(g, "r", rt, 4, rd);
        gen G = {.g = g};
        dqg_tensor_id x = src_dq(&G, x_in, xt, false, 1, 1);
        dqg_tensor_id w = w_dq(&G, 4, wd, 0, DQG_S8, W_FITS);
        dqg_conv_attrs a = {.spatial_rank = 2,
                            .pads_begin = {k / 2, k / 2},
                            .pads_end = {k / 2, k / 2},
                            .data_format = nxc ? DQG_FORMAT_NXC : DQG_FORMAT_NCX};
        float *bv = malloc((size_t)O * sizeof *bv);
        for (int64_t i = 0; i < O; i++)
            bv[i] = 0.05f * (float)rin(-20, 20);
        dqg_tensor_id y =
            dqg_convolution(g, "conv", x, w, rin(0, 1) ? cf32(g, 1, &O, bv) : DQG_NONE, &a);
        free(bv);
        int64_t one = 1;
        float s1 = 0.02f + 0.01f * (float)rin(0, 10), s1d = rin(0, 3) ? s1 : s1 * 1.5f,
              sr = 0.02f + 0.01f * (float)rin(0, 10), s2 = 0.03f + 0.01f * (float)rin(0, 10);
        int8_t z1 = (int8_t)rin(-10, 10), z1d = rin(0, 3) ? z1 : (int8_t)rin(-5, 5),
               zr = (int8_t)rin(-10, 10), z2 = (int8_t)rin(-10, 10);
        uint8_t u1 = (uint8_t)rin(100, 150), u1d = rin(0, 3) ? u1 : (uint8_t)rin(120, 130),
                ur = (uint8_t)rin(100, 150), u2 = (uint8_t)rin(0, 30);
        dqg_quantize_linear_attrs qa = {.opset = 13};
        dqg_dequantize_linear_attrs da = {.opset = 13};
#define ZP(t, s_val, u_val)                                                                        \
    dqg_constant(g, NULL, t, 0, &one, t == DQG_S8 ? (const void *)&s_val : (const void *)&u_val, 1)
        y = dqg_quantize_linear(g, "q1", y, cf32(g, 0, &one, &s1), ZP(q1t, z1, u1), &qa);
        y = dqg_dequantize_linear(g, "dq1", y, cf32(g, 0, &one, &s1d), ZP(q1t, z1d, u1d), &da);
        dqg_tensor_id r =
            dqg_dequantize_linear(g, "dqr", r_in, cf32(g, 0, &one, &sr), ZP(rt, zr, ur), &da);
        y = rin(0, 1) ? dqg_add(g, "add", y, r) : dqg_add(g, "add", r, y);
        int post = (int)rin(0, 2);
        if (post == 1)
            y = dqg_relu(g, "relu", y);
        else if (post == 2)
            y = dqg_clip(g, "clip", y, -0.5f, 0.75f + 0.25f * (float)rin(0, 4));
        y = dqg_quantize_linear(g, "q2", y, cf32(g, 0, &one, &s2), ZP(q2t, z2, u2), &qa);
#undef ZP
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s", dqg_last_error());
        size_t xb = dqg_tensor_byte_size(g, x_in), rb = dqg_tensor_byte_size(g, r_in);
        uint8_t *xv = malloc(xb), *rv = malloc(rb);
        for (size_t i = 0; i < xb; i++)
            xv[i] = (uint8_t)rnd();
        for (size_t i = 0; i < rb; i++)
            rv[i] = (uint8_t)rnd();
        int64_t n = dqg_tensor_element_count(g, y);
        uint8_t *got = calloc(1, (size_t)n), *want = calloc(1, (size_t)n);
        dqg_buffer in[2] = {{.id = x_in, .data = xv, .size = xb},
                            {.id = r_in, .data = rv, .size = rb}};
        dqg_buffer o1 = {.id = y, .data = got, .size = (size_t)n},
                   o2 = {.id = y, .data = want, .size = (size_t)n};
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        char what[512];
        snprintf(what, sizeof what,
                 "#%d %s H=%lld W=%lld C=%lld O=%lld k=%lld %s/%s/%s/%s post %d: %s", it,
                 nxc ? "NXC" : "NCX", (long long)H, (long long)W, (long long)C, (long long)O,
                 (long long)k, dqg_dtype_name(xt), dqg_dtype_name(q1t), dqg_dtype_name(rt),
                 dqg_dtype_name(q2t), post, dqg_compiled_partition_info(c, 0));
        if (test_int8_fusion()) /* NCX too: a row-major residual is reordered for the kernel */
            cr_assert_eq(dqg_compiled_partition_count(c), 1, "%s", what);
        cr_assert_eq(dqg_execute(c, in, 2, &o1, 1), DQG_OK, "%s: %s", what, dqg_last_error());
        cr_assert_eq(dqg_reference_run(g, in, 2, &o2, 1), DQG_OK, "%s", dqg_last_error());
        /* One step at q2; a fused q1 may round the other way too (one step
         * there), which moves the sum by s1d / s2 steps of q2. */
        bool s8 = q2t == DQG_S8;
        int tol = (int)ceilf(s1d / s2 + 1e-3f);
        tol = tol > 1 ? tol : 1;
        for (int64_t i = 0; i < n; i++) {
            int gv = s8 ? (int8_t)got[i] : got[i], wv = s8 ? (int8_t)want[i] : want[i];
            cr_assert(abs(gv - wv) <= tol, "%s: element %lld: %d vs reference %d (within %d)", what,
                      (long long)i, gv, wv, tol);
        }
        dqg_compiled_destroy(c);
        free(xv);
        free(rv);
        free(got);
        free(want);
        dqg_graph_destroy(g);
    }
}

/* The residual tests below: one u8 scale (0.05) and zero point (128) for
 * every quantize and dequantize of the activations. */
typedef struct u8q {
    dqg_tensor_id s, z;
} u8q;

static u8q u8_params(dqg_graph *g)
{
    int64_t one = 1;
    float sc = 0.05f;
    uint8_t zp = 128;
    return (u8q){cf32(g, 0, &one, &sc), dqg_constant(g, NULL, DQG_U8, 0, &one, &zp, 1)};
}

static dqg_tensor_id dq8(dqg_graph *g, u8q p, const char *name, dqg_tensor_id x)
{
    dqg_dequantize_linear_attrs da = {.opset = 13};
    return dqg_dequantize_linear(g, name, x, p.s, p.z, &da);
}

static dqg_tensor_id q8(dqg_graph *g, u8q p, const char *name, dqg_tensor_id x)
{
    dqg_quantize_linear_attrs qa = {.opset = 13};
    return dqg_quantize_linear(g, name, x, p.s, p.z, &qa);
}

/* Q1(y) -> DQ -> Add(DQ(r)) [-> ReLU] -> Q2. */
static dqg_tensor_id residual_sum(dqg_graph *g, u8q p, dqg_tensor_id y, dqg_tensor_id r, bool relu)
{
    y = dqg_add(g, "add", dq8(g, p, "dq1", q8(g, p, "q1", y)), dq8(g, p, "dqr", r));
    return q8(g, p, "q2", relu ? dqg_relu(g, "relu", y) : y);
}

/* Constant s8 weights of shape wd, one scale, dequantized. */
static dqg_tensor_id s8_weights(dqg_graph *g, int rank, const int64_t *wd)
{
    int64_t n = 1, one = 1;
    for (int i = 0; i < rank; i++)
        n *= wd[i];
    int8_t *w = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        w[i] = (int8_t)rin(-60, 60);
    float ws = 0.01f;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_tensor_id t =
        dqg_dequantize_linear(g, NULL, dqg_constant(g, NULL, DQG_S8, rank, wd, w, (size_t)n),
                              cf32(g, 0, &one, &ws), DQG_NONE, &da);
    free(w);
    return t;
}

/* Makes y the output of g, finalizes and compiles it. */
static dqg_compiled *compile_with_output(dqg_graph *g, dqg_tensor_id y)
{
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    return c;
}

/* Runs c and the reference on `in`: every byte of the u8 output y within
 * one step. */
static void within_one_step(dqg_graph *g, dqg_compiled *c, const dqg_buffer *in, size_t n_in,
                            dqg_tensor_id y, const char *what)
{
    size_t nb = dqg_tensor_byte_size(g, y);
    uint8_t *got = calloc(1, nb), *want = calloc(1, nb);
    dqg_buffer o1 = {.id = y, .data = got, .size = nb}, o2 = {.id = y, .data = want, .size = nb};
    cr_assert_eq(dqg_execute(c, in, n_in, &o1, 1), DQG_OK, "%s: %s", what, dqg_last_error());
    cr_assert_eq(dqg_reference_run(g, in, n_in, &o2, 1), DQG_OK, "%s", dqg_last_error());
    for (size_t i = 0; i < nb; i++)
        cr_assert(abs((int)got[i] - (int)want[i]) <= 1, "%s: element %zu: %d vs reference %d\n%s",
                  what, i, got[i], want[i], dqg_compiled_partition_info(c, 0));
    free(got);
    free(want);
}

/* MatMul(DQ(x), DQ(w)) with transpose_a (ONNX Gemm's transA): the int8
 * kernel reads its source as rows of K, so the pattern is refused and the
 * f32 path computes it. A square x gave wrong values, any other shape a
 * failed compile. */
Test(fusion, transposed_activations_are_not_fused_as_int8)
{
    static const int64_t shapes[][3] = {{16, 16, 8}, {24, 16, 8}, {5, 40, 33}}; /* K, M, N */
    for (int c = 0; c < 3; c++) {
        int64_t K = shapes[c][0], M = shapes[c][1], N = shapes[c][2];
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        u8q p = u8_params(g);
        int64_t xd[2] = {K, M}, wd[2] = {K, N};
        dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
        dqg_matmul_attrs ma = {.transpose_a = true};
        dqg_tensor_id y = dqg_matmul(g, "mm", dq8(g, p, "x_dq", x), s8_weights(g, 2, wd), &ma);
        dqg_compiled *cc = compile_with_output(g, y);
        cr_assert(test_explain_mentions(cc, "transpose_a"), "no refusal in the explain log");
        uint8_t *xv = malloc((size_t)(K * M));
        for (int64_t i = 0; i < K * M; i++)
            xv[i] = (uint8_t)((i * 37 + 5) % 256);
        float *got = malloc((size_t)(M * N) * sizeof *got), *ref = malloc((size_t)(M * N) * 4);
        dqg_buffer in = {.name = "x", .data = xv, .size = (size_t)(K * M)};
        dqg_buffer o1 = {.name = "y", .data = got, .size = (size_t)(M * N) * 4},
                   o2 = {.name = "y", .data = ref, .size = (size_t)(M * N) * 4};
        cr_assert_eq(dqg_execute(cc, &in, 1, &o1, 1), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_reference_run(g, &in, 1, &o2, 1), DQG_OK, "%s", dqg_last_error());
        double mx = 1e-30;
        for (int64_t i = 0; i < M * N; i++)
            mx = fmax(mx, fabs(ref[i]));
        for (int64_t i = 0; i < M * N; i++)
            cr_assert(fabs(got[i] - ref[i]) <= 1e-5 * mx, "K=%lld M=%lld: [%lld] %g vs %g",
                      (long long)K, (long long)M, (long long)i, got[i], ref[i]);
        free(xv);
        free(got);
        free(ref);
        dqg_compiled_destroy(cc);
        dqg_graph_destroy(g);
    }
}

/* u8 weights 0..255 with zero point 100: w - zp spans -100..155, shifted
 * by -28 into s8, and -28 is oneDNN's weights zero point; the explain line
 * names the shift with its sign. */
Test(fusion, u8_weights_with_one_zero_point_name_their_offset)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    u8q p = u8_params(g);
    int64_t xd[2] = {4, 32}, wd[2] = {32, 16}, one = 1;
    uint8_t w[32 * 16], wz = 100;
    for (int i = 0; i < 32 * 16; i++)
        w[i] = (uint8_t)(i * 37 % 256);
    float ws = 0.01f;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_tensor_id wf = dqg_dequantize_linear(
        g, "w_dq", dqg_constant(g, NULL, DQG_U8, 2, wd, w, sizeof w), cf32(g, 0, &one, &ws),
        dqg_constant(g, NULL, DQG_U8, 0, &one, &wz, 1), &da);
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_compiled *c = compile_with_output(g, dqg_matmul(g, "mm", dq8(g, p, "x_dq", x), wf, NULL));
    if (test_int8_fusion())
        cr_assert(
            test_explain_mentions(c, "w - zp - 28 in s8, with -28 as oneDNN's weights zero point"),
            "%s", dqg_compiled_partition_info(c, 0));
    uint8_t xv[4 * 32];
    for (int i = 0; i < 4 * 32; i++)
        xv[i] = (uint8_t)(i * 91 % 256);
    float got[4 * 16], ref[4 * 16];
    dqg_buffer in = {.name = "x", .data = xv, .size = sizeof xv};
    dqg_buffer o1 = {.name = "y", .data = got, .size = sizeof got},
               o2 = {.name = "y", .data = ref, .size = sizeof ref};
    cr_assert_eq(dqg_execute(c, &in, 1, &o1, 1), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_reference_run(g, &in, 1, &o2, 1), DQG_OK, "%s", dqg_last_error());
    double mx = 1e-30;
    for (int i = 0; i < 4 * 16; i++)
        mx = fmax(mx, fabs(ref[i]));
    for (int i = 0; i < 4 * 16; i++)
        cr_assert(fabs(got[i] - ref[i]) <= 1e-5 * mx, "[%d] %g vs %g", i, got[i], ref[i]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* Conv [-> bias] [-> residual sum] -> ReLU/Clip -> Q: a final ReLU/Clip
 * whose bounds lie at or beyond what the int8 destination holds after its
 * zero point is left to the destination's saturation (the explain says
 * so); one that binds inside that range stays. Every case within one step
 * of the reference, so a bound dropped where it binds (values past it
 * appear) fails. */
Test(fusion, final_clip_left_to_the_int8_saturation_only_where_it_changes_nothing)
{
    static const struct {
        bool sum;
        int relu; /* 1: ReLU, 0: Clip(lo, hi) */
        float lo, hi, qscale;
        int32_t qzp;
        bool s8, implied;
    } cases[] = {
        {false, 0, 0.0f, 6.0f, 6.0f / 255.0f, 0, false, true},  /* ReLU6, [0, 6] -> u8 */
        {false, 1, 0, 0, 0.05f, 0, false, true},                /* ReLU -> u8, zero point 0 */
        {false, 1, 0, 0, 0.05f, 128, false, false},             /* zero point 128: binds */
        {false, 0, 0.2f, 6.0f, 6.0f / 255.0f, 0, false, false}, /* lo above 0 */
        {false, 0, -1.0f, 1.0f, 1.0f / 127.0f, 0, true, false}, /* s8: -127 > -128 */
        {false, 0, -1.1f, 1.1f, 1.0f / 127.0f, 0, true, true},  /* s8: both beyond */
        {false, 1, 0, 0, 0.05f, -128, true, true},              /* ReLU -> s8, zero point -128 */
        {false, 0, 0.0f, 5.0f, 6.0f / 255.0f, 0, false, false}, /* hi below 255 steps */
        {true, 1, 0, 0, 0.05f, 0, false, true},                 /* sum, ReLU -> u8 */
        {true, 1, 0, 0, 0.05f, 10, false, false},               /* sum, zero point 10 */
        {true, 0, -1.1f, 1.1f, 1.0f / 127.0f, 0, true, true},   /* sum, s8 both beyond */
        {true, 0, 0.2f, 6.0f, 6.0f / 255.0f, 0, false, false},  /* sum, lo above 0 */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        dqg_graph *g = NULL;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t xd[] = {1, 6, 6, 16}, rd[] = {1, 6, 6, 24}, wd[] = {24, 16, 3, 3}, O = 24, one = 1;
        dqg_tensor_id x_in = dqg_input(g, "x", DQG_U8, 4, xd);
        dqg_tensor_id r_in = cases[ci].sum ? dqg_input(g, "r", DQG_U8, 4, rd) : DQG_NONE;
        rs = 0x5a7u + (uint32_t)ci;
        u8q p = u8_params(g);
        dqg_conv_attrs a = {.spatial_rank = 2,
                            .pads_begin = {1, 1},
                            .pads_end = {1, 1},
                            .data_format = DQG_FORMAT_NXC};
        float bv[24];
        for (int i = 0; i < 24; i++)
            bv[i] = 0.05f * (float)rin(-20, 20);
        dqg_tensor_id y = dqg_convolution(g, "conv", dq8(g, p, "dqx", x_in), s8_weights(g, 4, wd),
                                          cf32(g, 1, &O, bv), &a);
        if (cases[ci].sum)
            y = dqg_add(g, "add", dq8(g, p, "dq1", q8(g, p, "q1", y)), dq8(g, p, "dqr", r_in));
        y = cases[ci].relu ? dqg_relu(g, "act", y)
                           : dqg_clip(g, "act", y, cases[ci].lo, cases[ci].hi);
        dqg_quantize_linear_attrs qa = {.opset = 13};
        int8_t zs8 = (int8_t)cases[ci].qzp;
        uint8_t zu8 = (uint8_t)cases[ci].qzp;
        dqg_tensor_id qz = cases[ci].s8 ? dqg_constant(g, NULL, DQG_S8, 0, &one, &zs8, 1)
                                        : dqg_constant(g, NULL, DQG_U8, 0, &one, &zu8, 1);
        float qs = cases[ci].qscale;
        y = dqg_quantize_linear(g, "q", y, cf32(g, 0, &one, &qs), qz, &qa);
        dqg_compiled *c = compile_with_output(g, y);
        if (test_int8_fusion()) {
            cr_assert_eq(dqg_compiled_partition_count(c), 1, "case %zu: %s", ci,
                         dqg_compiled_partition_info(c, 0));
            bool said = test_explain_mentions(c, "destination's saturation");
            cr_assert_eq(said, cases[ci].implied, "case %zu: explain %s the saturation", ci,
                         said ? "names" : "does not name");
        }
        size_t nb = dqg_tensor_byte_size(g, y);
        uint8_t *xv = malloc(36 * 16), *rv = malloc(36 * 24), *got = calloc(1, nb),
                *want = calloc(1, nb);
        for (int i = 0; i < 36 * 16; i++)
            xv[i] = (uint8_t)rin(0, 255);
        for (int i = 0; i < 36 * 24; i++)
            rv[i] = (uint8_t)rin(0, 255);
        dqg_buffer in[2] = {{.id = x_in, .data = xv, .size = 36 * 16},
                            {.id = r_in, .data = rv, .size = 36 * 24}};
        size_t n_in = cases[ci].sum ? 2 : 1;
        dqg_buffer o1 = {.id = y, .data = got, .size = nb},
                   o2 = {.id = y, .data = want, .size = nb};
        cr_assert_eq(dqg_execute(c, in, n_in, &o1, 1), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_reference_run(g, in, n_in, &o2, 1), DQG_OK, "%s", dqg_last_error());
        int lo = 1000, hi = -1000;
        for (size_t i = 0; i < nb; i++) {
            int gv = cases[ci].s8 ? (int8_t)got[i] : got[i];
            int wv = cases[ci].s8 ? (int8_t)want[i] : want[i];
            cr_assert(abs(gv - wv) <= 1, "case %zu: element %zu: %d vs reference %d", ci, i, gv,
                      wv);
            lo = wv < lo ? wv : lo;
            hi = wv > hi ? wv : hi;
        }
        /* The data reaches past both bounds, so each clamp is exercised. */
        cr_assert(lo < (cases[ci].s8 ? -100 : 20) || cases[ci].relu, "case %zu: min %d", ci, lo);
        cr_assert(hi > (cases[ci].s8 ? 100 : 200) || cases[ci].qzp != 0 || cases[ci].relu,
                  "case %zu: max %d", ci, hi);
        free(xv);
        free(rv);
        free(got);
        free(want);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* A constant source zero point becomes -zp * the weights' channel sums in
 * the bias argument when no padding reads it (the explain says so), and
 * stays oneDNN's zero point with padding. Results within one step of the
 * reference either way (a compensation folded where padding reads the
 * zero point is off at the borders). */
Test(fusion, source_zero_point_folds_into_the_bias_only_without_padding)
{
    static const struct {
        int k, pad, stride;
        uint8_t zp;
        bool bias, folded;
    } cases[] = {
        {1, 0, 1, 128, true, true},  {1, 0, 1, 128, false, true}, {3, 0, 2, 77, true, true},
        {3, 1, 1, 128, true, false}, {1, 0, 1, 0, true, false},   {3, 1, 2, 200, false, false},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        dqg_graph *g = NULL;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int k = cases[ci].k;
        int64_t xd[] = {1, 9, 9, 12}, wd[] = {20, 12, k, k}, O = 20, one = 1;
        dqg_tensor_id x_in = dqg_input(g, "x", DQG_U8, 4, xd);
        rs = 0x2e7u + (uint32_t)ci;
        float xs = 0.04f, bv[20];
        for (int i = 0; i < 20; i++)
            bv[i] = 0.05f * (float)rin(-20, 20);
        dqg_dequantize_linear_attrs da = {.opset = 13};
        dqg_tensor_id x =
            dqg_dequantize_linear(g, "dqx", x_in, cf32(g, 0, &one, &xs),
                                  dqg_constant(g, NULL, DQG_U8, 0, &one, &cases[ci].zp, 1), &da);
        dqg_conv_attrs a = {.spatial_rank = 2,
                            .strides = {cases[ci].stride, cases[ci].stride},
                            .pads_begin = {cases[ci].pad, cases[ci].pad},
                            .pads_end = {cases[ci].pad, cases[ci].pad},
                            .data_format = DQG_FORMAT_NXC};
        dqg_tensor_id y = dqg_convolution(g, "conv", x, s8_weights(g, 4, wd),
                                          cases[ci].bias ? cf32(g, 1, &O, bv) : DQG_NONE, &a);
        u8q p = u8_params(g);
        y = q8(g, p, "q", y);
        dqg_compiled *c = compile_with_output(g, y);
        if (test_int8_fusion()) {
            cr_assert_eq(dqg_compiled_partition_count(c), 1, "case %zu: %s", ci,
                         dqg_compiled_partition_info(c, 0));
            bool said = test_explain_mentions(c, "folded into the bias");
            cr_assert_eq(said, cases[ci].folded, "case %zu: explain %s the folded zero point", ci,
                         said ? "names" : "does not name");
        }
        uint8_t xv[9 * 9 * 12];
        for (size_t i = 0; i < sizeof xv; i++)
            xv[i] = (uint8_t)rin(0, 255);
        dqg_buffer in = {.id = x_in, .data = xv, .size = sizeof xv};
        char what[32];
        snprintf(what, sizeof what, "case %zu", ci);
        within_one_step(g, c, &in, 1, y, what);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* A grouped convolution keeps the sum as its own int8 partition. */
Test(fusion, grouped_conv_residual_sum_stays_separate)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, 5, 5, 12}, wd[] = {12, 6, 1, 1};
    dqg_tensor_id x_in = dqg_input(g, "x", DQG_U8, 4, xd), r_in = dqg_input(g, "r", DQG_U8, 4, xd);
    rs = 0x9a0u;
    u8q p = u8_params(g);
    dqg_conv_attrs a = {.spatial_rank = 2, .groups = 2, .data_format = DQG_FORMAT_NXC};
    dqg_tensor_id y =
        dqg_convolution(g, "conv", dq8(g, p, "dqx", x_in), s8_weights(g, 4, wd), DQG_NONE, &a);
    dqg_compiled *c = compile_with_output(g, residual_sum(g, p, y, r_in, true));
    if (test_int8_fusion()) {
        cr_assert_eq(dqg_compiled_partition_count(c), 2, "%s", dqg_compiled_partition_info(c, 0));
        cr_assert(strstr(dqg_compiled_partition_info(c, 1), "int8 element-wise"), "%s",
                  dqg_compiled_partition_info(c, 1));
    }
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* The residual comes from a graph input (row-major) while the sum feeds
 * another convolution, whose activations would go channels-last: the sum
 * must read the residual in its own layout. Results as the reference's
 * within one step, with both convolutions in int8. */
Test(fusion, conv_residual_from_a_graph_input_between_convolutions)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, 8, 6, 6}, wd[] = {8, 8, 3, 3};
    dqg_tensor_id x_in = dqg_input(g, "x", DQG_U8, 4, xd), r_in = dqg_input(g, "r", DQG_U8, 4, xd);
    rs = 0x51de;
    u8q p = u8_params(g);
    dqg_conv_attrs a = {
        .spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}, .data_format = DQG_FORMAT_NCX};
    dqg_tensor_id y =
        dqg_convolution(g, "conv1", dq8(g, p, "dqx", x_in), s8_weights(g, 4, wd), DQG_NONE, &a);
    y = residual_sum(g, p, y, r_in, true);
    y = dqg_convolution(g, "conv2", dq8(g, p, "dq2", y), s8_weights(g, 4, wd), DQG_NONE, &a);
    y = q8(g, p, "q3", y);
    dqg_compiled *c = compile_with_output(g, y);
    /* Both convolutions stay int8: the row-major residual is reordered
     * into the kernel's layout rather than the kernel refused. */
    if (test_int8_fusion())
        cr_assert(!test_explain_mentions(c, "refused the fused kernel") &&
                      !test_explain_mentions(c, "-> onednn:conv:f32"),
                  "%s", dqg_compiled_partition_info(c, 0));
    size_t nb = dqg_tensor_byte_size(g, x_in);
    uint8_t *xv = malloc(nb), *rv = malloc(nb);
    for (size_t i = 0; i < nb; i++) {
        xv[i] = (uint8_t)rnd();
        rv[i] = (uint8_t)(i * 7); /* varies along every axis */
    }
    dqg_buffer in[2] = {{.id = x_in, .data = xv, .size = nb}, {.id = r_in, .data = rv, .size = nb}};
    within_one_step(g, c, in, 2, y, "residual from a graph input");
    dqg_compiled_destroy(c);
    free(xv);
    free(rv);
    dqg_graph_destroy(g);
}

/* The residual is the convolution's own input (y = conv(x) + x), a graph
 * input; the sum is the output, or feeds another convolution. */
Test(fusion, conv_residual_of_its_own_input)
{
    for (int feed = 0; feed < 2; feed++) {
        dqg_graph *g = NULL;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t xd[] = {1, 8, 6, 6}, wd[] = {8, 8, 3, 3};
        dqg_tensor_id x_in = dqg_input(g, "x", DQG_U8, 4, xd);
        rs = 0x0ddba11u + (uint32_t)feed;
        u8q p = u8_params(g);
        dqg_conv_attrs a = {.spatial_rank = 2,
                            .pads_begin = {1, 1},
                            .pads_end = {1, 1},
                            .data_format = DQG_FORMAT_NCX};
        dqg_tensor_id y =
            dqg_convolution(g, "conv1", dq8(g, p, "dqx", x_in), s8_weights(g, 4, wd), DQG_NONE, &a);
        y = residual_sum(g, p, y, x_in, true);
        if (feed)
            y = q8(g, p, "q3",
                   dqg_convolution(g, "conv2", dq8(g, p, "dq2", y), s8_weights(g, 4, wd), DQG_NONE,
                                   &a));
        dqg_compiled *c = compile_with_output(g, y);
        size_t nb = dqg_tensor_byte_size(g, x_in);
        uint8_t *xv = malloc(nb);
        for (size_t i = 0; i < nb; i++)
            xv[i] = (uint8_t)(i * 7 + (size_t)rin(0, 3)); /* varies along every axis */
        dqg_buffer in = {.id = x_in, .data = xv, .size = nb};
        within_one_step(g, c, &in, 1, y, feed ? "conv(x) + x -> conv" : "conv(x) + x");
        dqg_compiled_destroy(c);
        free(xv);
        dqg_graph_destroy(g);
    }
}

/* A residual of another rank (broadcast against the result, same values in
 * storage) keeps the sum as its own int8 partition: the convolution reads a
 * residual only in its result's own shape and layout. */
Test(fusion, conv_residual_of_another_rank_stays_separate)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, 6, 6, 8}, rd[] = {6, 6, 8}, wd[] = {8, 8, 1, 1};
    dqg_tensor_id x_in = dqg_input(g, "x", DQG_U8, 4, xd), r_in = dqg_input(g, "r", DQG_U8, 3, rd);
    rs = 0x3a11u;
    u8q p = u8_params(g);
    dqg_conv_attrs a = {.spatial_rank = 2, .data_format = DQG_FORMAT_NXC};
    dqg_tensor_id y =
        dqg_convolution(g, "conv", dq8(g, p, "dqx", x_in), s8_weights(g, 4, wd), DQG_NONE, &a);
    dqg_compiled *c = compile_with_output(g, residual_sum(g, p, y, r_in, false));
    if (test_int8_fusion())
        cr_assert_eq(dqg_compiled_partition_count(c), 2, "%s", dqg_compiled_partition_info(c, 0));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* DQ(x: one value everywhere) -> MatMul or 1x1 Convolution with K inputs
 * per output, all weights wval: every output sums K equal products, at
 * the edge of what an int32 accumulator holds. Fused only where the sum of
 * any source cannot leave int32 (the explain names the refusal otherwise);
 * either way every output is the reference's, within what float summation
 * of K terms allows (the unfused kernels sum in f32). */
static void accumulator_case(bool conv, dqg_dtype xt, int64_t K, int xval, int wval, bool fused)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    const int64_t N = 8, one = 1;
    int64_t xd[4] = {1, K, 1, 1}, wd[4] = {K, N, 1, 1};
    if (conv) {
        wd[0] = N;
        wd[1] = K;
    }
    dqg_tensor_id x_in = dqg_input(g, "x", xt, conv ? 4 : 2, xd);
    float xs = 0.5f, ws = 1e-6f;
    uint8_t zero = 0;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_tensor_id x = dqg_dequantize_linear(g, "dqx", x_in, cf32(g, 0, &one, &xs),
                                            dqg_constant(g, NULL, xt, 0, &one, &zero, 1), &da);
    int8_t *w = malloc((size_t)(K * N));
    memset(w, wval, (size_t)(K * N));
    dqg_tensor_id wt = dqg_dequantize_linear(
        g, "dqw", dqg_constant(g, NULL, DQG_S8, conv ? 4 : 2, wd, w, (size_t)(K * N)),
        cf32(g, 0, &one, &ws), DQG_NONE, &da);
    free(w);
    dqg_conv_attrs ca = {.spatial_rank = 2};
    dqg_tensor_id y =
        conv ? dqg_convolution(g, "op", x, wt, DQG_NONE, &ca) : dqg_matmul(g, "op", x, wt, NULL);
    dqg_compiled *c = compile_with_output(g, y);
    char what[96];
    snprintf(what, sizeof what, "%s, %s source, K %lld", conv ? "conv" : "matmul",
             dqg_dtype_name(xt), (long long)K);
    if (test_int8_fusion()) {
        cr_assert_eq(strncmp(dqg_compiled_partition_info(c, 0), "int8", 4) == 0, fused, "%s: %s",
                     what, dqg_compiled_partition_info(c, 0));
        cr_assert_eq(test_explain_mentions(c, "int32 accumulator could overflow"), !fused, "%s",
                     what);
    }
    void *xv = malloc((size_t)K);
    memset(xv, xval, (size_t)K);
    float got[8], want[8];
    dqg_buffer in = {.id = x_in, .data = xv, .size = (size_t)K};
    dqg_buffer o1 = {.id = y, .data = got, .size = sizeof got},
               o2 = {.id = y, .data = want, .size = sizeof want};
    cr_assert_eq(dqg_execute(c, &in, 1, &o1, 1), DQG_OK, "%s: %s", what, dqg_last_error());
    cr_assert_eq(dqg_reference_run(g, &in, 1, &o2, 1), DQG_OK, "%s", dqg_last_error());
    double v = (xt == DQG_U8 ? (uint8_t)xval : (int8_t)xval) * (double)(int8_t)wval * (double)K *
               0.5 * 1e-6;
    for (int i = 0; i < 8; i++) {
        cr_assert_float_eq(want[i], v, fabs(v) * 1e-6, "%s: reference %g, expected %g", what,
                           (double)want[i], v);
        /* Float kernels sum K same-signed products within K 2^-24 of the
         * total; a wrapped int32 sum is off by 2^32 units. */
        cr_assert_float_eq(got[i], want[i], fabs(v) * (double)K * 0x1p-24,
                           "%s: output %d is %g, reference %g", what, i, (double)got[i],
                           (double)want[i]);
    }
    free(xv);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* u8: 255 x 128 x 65793 = 2147483520 fits int32, one more input row does
 * not, unless the weights are smaller (255 x 64 x 131000 fits); s8 (zero
 * point 0): 128 x 128 x 131071 fits, 131072 makes 2^31. */
Test(fusion, int8_layers_whose_int32_sums_could_overflow_run_unfused)
{
    accumulator_case(false, DQG_U8, 65793, 255, -128, true);
    accumulator_case(false, DQG_U8, 65794, 255, -128, false);
    accumulator_case(false, DQG_U8, 70000, 255, -128, false);
    accumulator_case(false, DQG_U8, 131000, 255, -64, true);
    accumulator_case(false, DQG_U8, 132000, 255, -64, false);
    accumulator_case(false, DQG_S8, 131071, -128, -128, true);
    accumulator_case(false, DQG_S8, 131072, -128, -128, false);
    accumulator_case(true, DQG_U8, 65793, 255, -128, true);
    accumulator_case(true, DQG_U8, 70000, 255, -128, false);
}

/* Conv -> Add(a constant of the result's shape) -> Q, in both data
 * formats, within one step of the reference. A constant's values are
 * stored row-major, so where the kernel reads the result channels-last
 * and the result is row-major (NCX), the fused kernel is refused rather
 * than given the constant in the wrong layout. */
Test(fusion, constant_operand_of_the_result_shape)
{
    for (int nxc = 0; nxc < 2; nxc++) {
        dqg_graph *g = NULL;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t C = 5, O = 7, H = 4, W = 6;
        int64_t xd[] = {1, nxc ? H : C, nxc ? W : H, nxc ? C : W},
                yd[] = {1, nxc ? H : O, nxc ? W : H, nxc ? O : W}, wd[] = {O, C, 3, 3};
        dqg_tensor_id x_in = dqg_input(g, "x", DQG_U8, 4, xd);
        rs = 0xc0ffeeu + (uint32_t)nxc;
        u8q p = u8_params(g);
        dqg_conv_attrs a = {.spatial_rank = 2,
                            .pads_begin = {1, 1},
                            .pads_end = {1, 1},
                            .data_format = nxc ? DQG_FORMAT_NXC : DQG_FORMAT_NCX};
        dqg_tensor_id y =
            dqg_convolution(g, "conv", dq8(g, p, "dqx", x_in), s8_weights(g, 4, wd), DQG_NONE, &a);
        float cv[7 * 4 * 6];
        for (int i = 0; i < 7 * 4 * 6; i++)
            cv[i] = 0.25f * (float)(i % 13) - 1.5f; /* varies along every axis */
        y = dqg_add(g, "add", y, cf32(g, 4, yd, cv));
        y = q8(g, p, "q", y);
        dqg_compiled *c = compile_with_output(g, y);
        uint8_t xv[5 * 4 * 6];
        for (size_t i = 0; i < sizeof xv; i++)
            xv[i] = (uint8_t)rin(0, 255);
        dqg_buffer in = {.id = x_in, .data = xv, .size = sizeof xv};
        within_one_step(g, c, &in, 1, y, nxc ? "NXC" : "NCX");
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}
