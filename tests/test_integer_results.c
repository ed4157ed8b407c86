/* MatMul and Convolution results that only a TypeCast to an integer type
 * reads (the ONNX front end's MatMulInteger and ConvInteger) are exact: the
 * cast rounds the exact sum once, however long the reduction. Randomized
 * over shapes (reductions around the kernels' 256-product chunks),
 * transposes, batch broadcasting, layouts, strides, padding, dilation,
 * groups, biases, constant or run-time operands and the cast's target,
 * against sums in 64-bit integers, on the reference interpreter and on
 * compiled graphs with fusion, without it and on the reference backend.
 * Operands are integers in [-255, 255], the dequantized 8-bit values these
 * results come from, so sums pass 2^24 (where f32 stops holding every
 * integer). DQG_INTEGER_CASES=FIRST:COUNT widens the search. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

static const dqg_compile_options configs[3] = {
    {.backend = DQG_BACKEND_ONEDNN},
    {.backend = DQG_BACKEND_ONEDNN, .disable_fusion = true},
    {.backend = DQG_BACKEND_REFERENCE},
};

static const dqg_dtype targets[3] = {DQG_S32, DQG_S16, DQG_U16};

/* Operand values: integers in [-255, 255], mostly near the ends; with
 * `same_sign`, nine in ten near +255 (or all near -255), so that the sums
 * grow with the reduction and pass 2^24 from 258 products on. */
static void fill(float *v, int64_t n, bool same_sign, bool negative)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t r = test_rin(0, 9);
        float f = (float)(same_sign ? (r < 9 ? test_rin(240, 255) : test_rin(-255, 255))
                          : r < 4   ? test_rin(240, 255)
                          : r < 8   ? -test_rin(240, 255)
                                    : test_rin(-255, 255));
        v[i] = negative ? -f : f;
    }
}

/* The cast of an exact sum (plus a bias in double): rounding half to even
 * and saturating, as TypeCast does. */
static int64_t cast_of(double v, dqg_dtype to)
{
    double lo = to == DQG_S32 ? -2147483648.0 : to == DQG_S16 ? -32768.0 : 0.0;
    double hi = to == DQG_S32 ? 2147483647.0 : to == DQG_S16 ? 32767.0 : 65535.0;
    v = rint(v);
    return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

static int64_t load_result(dqg_dtype to, const void *y, int64_t i)
{
    return to == DQG_S32   ? ((const int32_t *)y)[i]
           : to == DQG_S16 ? ((const int16_t *)y)[i]
                           : ((const uint16_t *)y)[i];
}

/* Runs g (finalized, output 0 of type `to`) with inputs in[0..n_in) on the
 * reference interpreter and in every configuration; checks every element
 * against want. */
static void check(dqg_graph *g, dqg_buffer *in, int n_in, const int64_t *want, int64_t n,
                  dqg_dtype to, const char *what)
{
    size_t size = (size_t)n * (to == DQG_S32 ? 4 : 2);
    void *y = malloc(size);
    cr_assert_not_null(y);
    for (int cfg = -1; cfg < 3; cfg++) {
        memset(y, 0x5a, size);
        dqg_buffer out = {.id = dqg_graph_output_id(g, 0), .data = y, .size = size};
        dqg_compiled *c = NULL;
        if (cfg < 0) {
            cr_assert_eq(dqg_reference_run(g, in, (size_t)n_in, &out, 1), DQG_OK, "%s: %s", what,
                         dqg_last_error());
        } else {
            cr_assert_eq(dqg_compile(g, &configs[cfg], &c), DQG_OK, "%s: %s", what,
                         dqg_last_error());
            cr_assert_eq(dqg_execute(c, in, (size_t)n_in, &out, 1), DQG_OK, "%s: %s", what,
                         dqg_last_error());
            /* On oneDNN every MatMul and Convolution (grouped ones too)
             * runs a oneDNN kernel, none the scalar reference kernel. */
            for (size_t p = 0; cfg < 2 && p < dqg_compiled_partition_count(c); p++) {
                const char *info = dqg_compiled_partition_info(c, p);
                cr_assert(!(strstr(info, "-> reference") &&
                            (strstr(info, "MatMul") || strstr(info, "Convolution"))),
                          "%s, configuration %d: %s", what, cfg, info);
            }
            dqg_compiled_destroy(c);
        }
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(load_result(to, y, i), want[i],
                         "%s, configuration %d: y[%lld] = %lld, want %lld", what, cfg, (long long)i,
                         (long long)load_result(to, y, i), (long long)want[i]);
    }
    free(y);
}

/* Reduction lengths: short, around one and two chunks of 256, and long. */
static int64_t reduction_length(void)
{
    switch (test_rin(0, 4)) {
    case 0:
        return test_rin(1, 9);
    case 1:
        return test_rin(250, 262);
    case 2:
        return test_rin(508, 516);
    default:
        return test_rin(263, 900);
    }
}

/* A DequantizeLinear of 8-bit codes of a 2-D operand with a unit scale and
 * zero point zp (per tensor when axis < 0, else one per index along axis 0
 * or 1): the MatMulInteger form, whose values are code - zp. Codes are
 * chosen from `values` (integers in [-255, 255]) so that code - zp
 * reproduces them where the type allows, clamped where it does not. */
static dqg_tensor_id dequantized(dqg_graph *g, const char *name, bool constant, bool s8, int rank,
                                 const int64_t *dims, float *values, int64_t n, int axis,
                                 void **codes_out)
{
    int64_t n_zp = axis < 0 ? 1 : dims[axis];
    uint8_t *codes = malloc((size_t)n), zp[16];
    cr_assert_not_null(codes);
    int64_t cols = dims[rank - 1];
    cr_assert(rank == 2 && n_zp <= 16);
    for (int64_t j = 0; j < n_zp; j++)
        zp[j] = s8 ? (uint8_t)(int8_t)test_rin(-3, 3) : (uint8_t)test_rin(0, 255);
    for (int64_t i = 0; i < n; i++) {
        int64_t zi = axis < 0 ? 0 : axis == 1 ? i % cols : i / cols;
        int64_t z = s8 ? (int8_t)zp[zi] : zp[zi];
        int64_t lo = s8 ? -128 : 0, hi = s8 ? 127 : 255, c = (int64_t)values[i] + z;
        c = c < lo ? lo : c > hi ? hi : c;
        codes[i] = (uint8_t)c;
        values[i] = (float)(c - z);
    }
    dqg_dtype t = s8 ? DQG_S8 : DQG_U8;
    dqg_tensor_id x = constant ? dqg_constant(g, NULL, t, rank, dims, codes, (size_t)n)
                               : dqg_input(g, name, t, rank, dims);
    float ones[16];
    for (int j = 0; j < 16; j++)
        ones[j] = 1.0f;
    int zr = axis < 0 ? 0 : 1; /* a 1-D scale and zero point along axis, else scalars */
    dqg_tensor_id sc = test_const_f32(g, zr, &n_zp, ones);
    dqg_tensor_id z = dqg_constant(g, NULL, t, zr, &n_zp, zp, (size_t)n_zp);
    dqg_dequantize_linear_attrs a = {.opset = 13, .has_axis = axis >= 0, .axis = axis};
    *codes_out = codes;
    return dqg_dequantize_linear(g, NULL, x, sc, z, &a);
}

static void matmul_case(uint32_t seed)
{
    test_rng = seed * 2654435761u + 1;
    int64_t M = test_rin(1, 7), K = reduction_length(), N = test_rin(1, 9);
    /* Operands: f32 (0), or dequantized codes (1) as MatMulInteger writes
     * them; B constant or at run time. Dequantized ones take no
     * transposes or batches (MatMulInteger's int8 fusion, its refusals and
     * the weight-only matcher's are then in play). */
    int form = (int)test_rin(0, 1);
    bool ta = !form && test_rin(0, 2) == 0, tb = !form && test_rin(0, 1), const_b = test_rin(0, 1);
    /* Batch: none, A's only (B broadcast), or both with a broadcast dim. */
    int batch = form ? 0 : (int)test_rin(0, 2);
    int64_t B0 = batch ? test_rin(1, 3) : 1, B1 = batch == 2 ? test_rin(1, 2) : 1;
    int ra = batch ? 4 : 2, rb = batch == 2 ? 4 : 2;
    int64_t ad[4], bd[4];
    int p = 0;
    if (batch) {
        ad[p++] = B0;
        ad[p++] = B1;
    }
    ad[p++] = ta ? K : M;
    ad[p++] = ta ? M : K;
    p = 0;
    if (batch == 2) {
        bd[p++] = 1; /* broadcast against A's B0 */
        bd[p++] = B1;
    }
    bd[p++] = tb ? N : K;
    bd[p++] = tb ? K : N;
    int64_t nb = B0 * B1, na = nb * M * K, nbv = (batch == 2 ? B1 : 1) * K * N;
    float *A = malloc((size_t)na * sizeof *A), *Bv = malloc((size_t)nbv * sizeof *Bv);
    cr_assert(A && Bv);
    bool same = test_rin(0, 2) != 0;
    fill(A, na, same, test_rin(0, 1));
    fill(Bv, nbv, same, test_rin(0, 1));
    dqg_dtype to = targets[test_rin(0, 9) < 8 ? 0 : test_rin(1, 2)];
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    void *a_codes = NULL, *b_codes = NULL;
    bool b_s8 = form && test_rin(0, 1);
    dqg_tensor_id a_in, b_in = DQG_NONE, a, b;
    if (form) {
        /* A's zero point per tensor or per row, B's per tensor or per column. */
        a = dequantized(g, "a", false, false, ra, ad, A, na, test_rin(0, 2) ? -1 : 0, &a_codes);
        a_in = dqg_graph_input_id(g, 0);
        b = dequantized(g, "b", const_b, b_s8, rb, bd, Bv, nbv, test_rin(0, 1) ? 1 : -1, &b_codes);
        if (!const_b)
            b_in = dqg_graph_input_id(g, 1);
    } else {
        a = a_in = dqg_input(g, "a", DQG_F32, ra, ad);
        b = const_b ? test_const_f32(g, rb, bd, Bv) : dqg_input(g, "b", DQG_F32, rb, bd);
        b_in = b;
    }
    dqg_matmul_attrs at = {.transpose_a = ta, .transpose_b = tb};
    dqg_tensor_id y = dqg_typecast(g, "cast", dqg_matmul(g, "mm", a, b, &at), to);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    int64_t n = nb * M * N, *want = malloc((size_t)n * sizeof *want);
    cr_assert_not_null(want);
    for (int64_t i0 = 0; i0 < B0; i0++)
        for (int64_t i1 = 0; i1 < B1; i1++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t j = 0; j < N; j++) {
                    int64_t s = 0, ab = (i0 * B1 + i1) * M * K, bb = (batch == 2 ? i1 : 0) * K * N;
                    for (int64_t k = 0; k < K; k++) {
                        int64_t av = (int64_t)A[ab + (ta ? k * M + m : m * K + k)];
                        int64_t bv = (int64_t)Bv[bb + (tb ? j * K + k : k * N + j)];
                        s += av * bv;
                    }
                    want[((i0 * B1 + i1) * M + m) * N + j] = cast_of((double)s, to);
                }
    dqg_buffer in[2] = {{.id = a_in,
                         .data = form ? a_codes : (void *)A,
                         .size = (size_t)na * (form ? 1 : sizeof *A)},
                        {.id = b_in,
                         .data = form ? b_codes : (void *)Bv,
                         .size = (size_t)nbv * (form ? 1 : sizeof *Bv)}};
    char what[200];
    snprintf(what, sizeof what,
             "seed %u: MatMul%s M=%lld K=%lld N=%lld batch %d ta %d tb %d %s b%s -> %s", seed,
             form ? " of dequantized codes" : "", (long long)M, (long long)K, (long long)N, batch,
             ta, tb, const_b ? "constant" : "run-time", b_s8 ? " (s8)" : "", dqg_dtype_name(to));
    check(g, in, const_b ? 1 : 2, want, n, to, what);
    dqg_graph_destroy(g);
    free(A);
    free(Bv);
    free(a_codes);
    free(b_codes);
    free(want);
}

static void conv_case(uint32_t seed)
{
    test_rng = seed * 2246822519u + 7;
    int64_t groups = test_rin(0, 3) ? 1 : 2, N = test_rin(1, 2);
    int64_t KH = test_rin(1, 3) * 2 - 1, KW = test_rin(0, 2) ? KH : 1;
    /* Input channels per group: around the chunk of 256 / window. */
    int64_t window = KH * KW, per = 256 / window;
    int64_t Cg = test_rin(0, 2) ? test_rin(per - 2 > 1 ? per - 2 : 1, 2 * per + 3) : test_rin(1, 6);
    if (test_rin(0, 7) == 0) { /* depthwise */
        groups = test_rin(2, 9);
        Cg = 1;
    }
    int64_t C = Cg * groups, O = groups * test_rin(1, 3), H = test_rin(KH, KH + 4),
            W = test_rin(KW, KW + 4);
    dqg_conv_attrs at = {.spatial_rank = 2,
                         .groups = groups,
                         .data_format = test_rin(0, 1) ? DQG_FORMAT_NXC : DQG_FORMAT_NCX};
    for (int i = 0; i < 2; i++) {
        at.strides[i] = test_rin(1, 2);
        at.dilations[i] = test_rin(0, 3) ? 1 : 2;
        at.pads_begin[i] = test_rin(0, 1);
        at.pads_end[i] = test_rin(0, 1);
    }
    int64_t KHe = (KH - 1) * at.dilations[0] + 1, KWe = (KW - 1) * at.dilations[1] + 1;
    if (H + at.pads_begin[0] + at.pads_end[0] < KHe)
        H = KHe;
    if (W + at.pads_begin[1] + at.pads_end[1] < KWe)
        W = KWe;
    int64_t OH = (H + at.pads_begin[0] + at.pads_end[0] - KHe) / at.strides[0] + 1;
    int64_t OW = (W + at.pads_begin[1] + at.pads_end[1] - KWe) / at.strides[1] + 1;
    bool nxc = at.data_format == DQG_FORMAT_NXC, const_w = test_rin(0, 1),
         bias = test_rin(0, 2) == 0;
    int64_t xd[4] = {N, nxc ? H : C, nxc ? W : H, nxc ? C : W}, wd[4] = {O, Cg, KH, KW};
    int64_t nx = N * C * H * W, nw = O * Cg * KH * KW;
    float *X = malloc((size_t)nx * sizeof *X), *Wv = malloc((size_t)nw * sizeof *Wv), Bias[27];
    cr_assert(X && Wv);
    bool same = test_rin(0, 2) != 0;
    fill(X, nx, same, test_rin(0, 1));
    fill(Wv, nw, same, test_rin(0, 1));
    for (int i = 0; i < 27; i++)                                /* O <= 9 groups x 3 */
        Bias[i] = (float)test_rin(-64 * 300, 64 * 300) / 64.0f; /* halves and other fractions */
    dqg_dtype to = targets[test_rin(0, 9) < 8 ? 0 : test_rin(1, 2)];
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd);
    dqg_tensor_id w = const_w ? test_const_f32(g, 4, wd, Wv) : dqg_input(g, "w", DQG_F32, 4, wd);
    dqg_tensor_id bt = bias ? test_const_f32(g, 1, &O, Bias) : DQG_NONE;
    dqg_tensor_id y = dqg_typecast(g, "cast", dqg_convolution(g, "conv", x, w, bt, &at), to);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    int64_t n = N * O * OH * OW, *want = malloc((size_t)n * sizeof *want);
    cr_assert_not_null(want);
    for (int64_t b = 0; b < N; b++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t s = 0, grp = o / (O / groups);
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t ih =
                                    oh * at.strides[0] - at.pads_begin[0] + kh * at.dilations[0];
                                int64_t iw =
                                    ow * at.strides[1] - at.pads_begin[1] + kw * at.dilations[1];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                    continue;
                                int64_t ci = grp * Cg + c;
                                int64_t xo = nxc ? ((b * H + ih) * W + iw) * C + ci
                                                 : ((b * C + ci) * H + ih) * W + iw;
                                s += (int64_t)X[xo] *
                                     (int64_t)Wv[((o * Cg + c) * KH + kh) * KW + kw];
                            }
                    int64_t yo =
                        nxc ? ((b * OH + oh) * OW + ow) * O + o : ((b * O + o) * OH + oh) * OW + ow;
                    want[yo] = cast_of((double)s + (bias ? (double)Bias[o] : 0.0), to);
                }
    dqg_buffer in[2] = {{.id = x, .data = X, .size = (size_t)nx * sizeof *X},
                        {.id = w, .data = Wv, .size = (size_t)nw * sizeof *Wv}};
    char what[240];
    snprintf(what, sizeof what,
             "seed %u: Conv %s N=%lld C=%lld HxW=%lldx%lld O=%lld k=%lldx%lld groups=%lld "
             "stride %lldx%lld dilation %lldx%lld %s w%s -> %s",
             seed, nxc ? "NXC" : "NCX", (long long)N, (long long)C, (long long)H, (long long)W,
             (long long)O, (long long)KH, (long long)KW, (long long)groups,
             (long long)at.strides[0], (long long)at.strides[1], (long long)at.dilations[0],
             (long long)at.dilations[1], const_w ? "constant" : "run-time", bias ? " + bias" : "",
             dqg_dtype_name(to));
    check(g, in, const_w ? 1 : 2, want, n, to, what);
    dqg_graph_destroy(g);
    free(X);
    free(Wv);
    free(want);
}

/* Seeds 1..60 of each (DQG_INTEGER_CASES=FIRST:COUNT runs others). */
Test(integer_results, matmul_cast_is_the_exact_sum)
{
    uint32_t first = 1, count = 60;
    test_seed_range("DQG_INTEGER_CASES", &first, &count);
    for (uint32_t s = first; s < first + count; s++)
        matmul_case(s);
}

Test(integer_results, convolution_cast_is_the_exact_sum)
{
    uint32_t first = 1, count = 60;
    test_seed_range("DQG_INTEGER_CASES", &first, &count);
    for (uint32_t s = first; s < first + count; s++)
        conv_case(s);
}
