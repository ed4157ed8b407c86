/* The int8 ConvTranspose: DQ(u8/s8 activations) and DQ(constant 8-bit
 * weights) around a ConvTranspose, with a bias, a ReLU and a quantize of
 * the result, run as one int8 transposed convolution. Randomized against
 * the reference interpreter with fixed seeds: quantized results within one
 * unit (the reference sums dequantized values in f32, the kernel exact
 * integers, so a value on a rounding tie may land on either side), f32
 * results within 1e-5 of their largest magnitude. The patterns the kernel
 * does not take stay in f32, and the explain log says why. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

typedef struct qdeconv_case {
    int sr; /* spatial rank */
    int64_t n, c, m, groups, in[3], k[3];
    dqg_conv_transpose_attrs a;
    dqg_dtype xt, wt, yt; /* yt: DQG_F32 for a float result */
    bool per_channel, bias, relu, x_zp;
    bool usual; /* as networks have them (random_case) */
} qdeconv_case;

/* The graph of case k: x -> DQ -> ConvTranspose(DQ(w), bias) [-> ReLU]
 * [-> Q]; the result is the graph's output "y". */
static dqg_graph *build(const qdeconv_case *k)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[5] = {k->n, k->c}, wd[5] = {k->c, k->m / k->groups};
    int64_t wn = wd[0] * wd[1];
    for (int d = 0; d < k->sr; d++) {
        xd[2 + d] = k->in[d];
        wd[2 + d] = k->k[d];
        wn *= k->k[d];
    }
    dqg_tensor_id x = dqg_input(g, "x", k->xt, 2 + k->sr, xd);
    dqg_dequantize_linear_attrs dqa = {.opset = 13};
    int xz = k->xt == DQG_U8 ? (int)test_rin(0, 255) : (int)test_rin(-30, 30);
    dqg_tensor_id xf =
        dqg_dequantize_linear(g, "x_dq", x, test_scalar_f32(g, test_uniform(0.005f, 0.05f)),
                              k->x_zp ? test_scalar_8bit(g, k->xt, xz) : DQG_NONE, &dqa);
    /* Weights: s8 codes, or u8 codes near a zero point near 128. */
    int64_t ns = k->per_channel ? k->m : 1;
    uint8_t *wv = malloc((size_t)wn), zp[64];
    float sc[64];
    for (int64_t i = 0; i < ns; i++) {
        sc[i] = test_uniform(0.002f, 0.02f);
        zp[i] = k->wt == DQG_U8 ? (uint8_t)test_rin(120, 136) : 0;
    }
    for (int64_t i = 0; i < wn; i++)
        wv[i] = k->wt == DQG_U8 ? (uint8_t)test_rin(8, 248) : (uint8_t)(int8_t)test_rin(-127, 127);
    dqg_tensor_id w = dqg_constant(g, "w", k->wt, 2 + k->sr, wd, wv, (size_t)wn);
    free(wv);
    dqg_dequantize_linear_attrs wa = {.opset = 13, .has_axis = k->per_channel, .axis = 1};
    dqg_tensor_id ws = k->per_channel ? test_const_f32(g, 1, &ns, sc) : test_scalar_f32(g, sc[0]);
    dqg_tensor_id wz = DQG_NONE;
    if (k->wt == DQG_U8)
        wz = k->per_channel ? dqg_constant(g, NULL, DQG_U8, 1, &ns, zp, (size_t)ns)
                            : test_scalar_8bit(g, DQG_U8, zp[0]);
    dqg_tensor_id wf = dqg_dequantize_linear(g, "w_dq", w, ws, wz, &wa);
    dqg_tensor_id b = DQG_NONE;
    if (k->bias) {
        float bv[64];
        for (int64_t i = 0; i < k->m; i++)
            bv[i] = test_uniform(-1.0f, 1.0f);
        int64_t bm = k->m;
        b = test_const_f32(g, 1, &bm, bv);
    }
    dqg_tensor_id y = dqg_conv_transpose(g, "ct", xf, wf, b, &k->a);
    if (k->relu)
        y = dqg_relu(g, "relu", y);
    if (k->yt != DQG_F32) {
        dqg_quantize_linear_attrs qa = {.opset = 13};
        int yz = k->yt == DQG_U8 ? (int)test_rin(0, 100) : (int)test_rin(-20, 20);
        y = dqg_quantize_linear(g, "y_q", y, test_scalar_f32(g, test_uniform(0.01f, 0.1f)),
                                test_scalar_8bit(g, k->yt, yz), &qa);
    }
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    return g;
}

/* A random case: shapes, strides, dilations, pads and output_padding
 * oneDNN's kernels handle differently at their edges. Three in four are
 * as networks have them (a stride within the dilated kernel, pads within
 * it, an output_padding within the end padding), which the int8 kernel
 * mostly takes; the others include what oneDNN 2.6 gets wrong (rule K). */
static qdeconv_case random_case(void)
{
    qdeconv_case k = {0};
    bool usual = k.usual = test_rin(0, 3) != 0;
    k.sr = test_rin(1, 10) == 1 ? 1 : test_rin(1, 12) == 1 ? 3 : 2;
    k.groups = test_rin(1, 4) == 1 ? 2 : 1;
    k.c = k.groups * test_rin(1, 24);
    k.m = k.groups * test_rin(1, 24);
    k.n = test_rin(1, 5) == 1 ? 2 : 1;
    k.a.spatial_rank = k.sr;
    k.a.groups = k.groups;
    for (int d = 0; d < k.sr; d++) {
        k.in[d] = test_rin(1, k.sr == 3 ? 5 : 9);
        k.k[d] = test_rin(1, 4);
        k.a.dilations[d] = test_rin(1, 5) == 1 ? 2 : 1;
        int64_t extent = (k.k[d] - 1) * k.a.dilations[d] + 1;
        k.a.strides[d] = test_rin(1, usual ? (extent < 3 ? extent : 3) : 3);
        int64_t full = (k.in[d] - 1) * k.a.strides[d] + (k.k[d] - 1) * k.a.dilations[d] + 1;
        int64_t s = k.a.strides[d], dl = k.a.dilations[d];
        k.a.output_padding[d] = test_rin(0, (s > dl ? s : dl) - 1);
        /* Pads that leave at least one output element. */
        int64_t room = full + k.a.output_padding[d] - 1, most = usual ? extent - 1 : 3;
        most = most < 3 ? most : 3;
        k.a.pads_begin[d] = test_rin(0, room < most ? room : most);
        room -= k.a.pads_begin[d];
        k.a.pads_end[d] = test_rin(0, room < most ? room : most);
        if (usual && k.a.output_padding[d] > k.a.pads_end[d]) {
            /* The end padding takes the output_padding back, when the
             * output keeps an element. */
            if (full - k.a.pads_begin[d] >= 1 && k.a.output_padding[d] <= most)
                k.a.pads_end[d] = k.a.output_padding[d];
            else
                k.a.output_padding[d] = k.a.pads_begin[d] = k.a.pads_end[d] = 0;
        }
    }
    k.xt = test_rin(0, 3) == 0 ? DQG_S8 : DQG_U8;
    k.wt = test_rin(0, 3) == 0 ? DQG_U8 : DQG_S8;
    int r = (int)test_rin(0, 2);
    k.yt = r == 0 ? DQG_F32 : r == 1 ? DQG_U8 : DQG_S8;
    k.per_channel = k.groups == 1 && test_rin(0, 1);
    k.bias = test_rin(0, 1);
    k.relu = test_rin(0, 1);
    k.x_zp = test_rin(0, 2) != 0;
    return k;
}

static void fill(void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)p)[i] = (uint8_t)test_rnd();
}

/* Runs g fused and on the reference; `int8` (1 or 0; -1: either): the
 * int8 transposed convolution must (not) have run, and *ran says whether
 * it did. Returns the largest difference in units (a quantized result) or
 * relative to the largest magnitude (f32). */
static double run_case(dqg_graph *g, int int8, bool *ran_out, const char *what)
{
    dqg_tensor_id xi = dqg_graph_input_id(g, 0), yi = dqg_graph_output_id(g, 0);
    size_t xb = dqg_tensor_byte_size(g, xi), yb = dqg_tensor_byte_size(g, yi);
    void *x = malloc(xb), *ref = malloc(yb), *got = malloc(yb);
    fill(x, xb);
    cr_assert_eq(run_ref_1(g, xi, x, xb, yi, ref, yb), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s: %s", what, dqg_last_error());
    bool ran = false;
    for (size_t p = 0; p < dqg_compiled_partition_count(c); p++) {
        const char *info = dqg_compiled_partition_info(c, p);
        ran |= strstr(info, "int8 conv [") && strstr(info, "onednn:deconv:") && strstr(info, "s8:");
    }
    if (int8 >= 0)
        cr_assert_eq(ran, int8 == 1, "%s: int8 transposed convolution %s; partition 0: %s", what,
                     ran ? "ran" : "did not run", dqg_compiled_partition_info(c, 0));
    /* Left to f32 by the backend, the explain log says why. */
    if (!ran && int8 < 0)
        cr_assert(test_explain_mentions(c, "not fused: ConvTranspose 'ct'"), "%s", what);
    if (ran_out)
        *ran_out = ran;
    dqg_buffer bi = {.id = xi, .data = x, .size = xb}, bo = {.id = yi, .data = got, .size = yb};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s: %s", what, dqg_last_error());
    double worst = 0;
    dqg_dtype yt = dqg_tensor_dtype(g, yi);
    if (yt == DQG_F32) {
        const float *r = ref, *o = got;
        double big = 1e-30;
        for (size_t i = 0; i < yb / 4; i++)
            big = fmax(big, fabs(r[i]));
        for (size_t i = 0; i < yb / 4; i++)
            worst = fmax(worst, fabs((double)o[i] - r[i]) / big);
    } else {
        worst = test_max_diff_8bit(ref, got, yb, yt == DQG_S8);
    }
    dqg_compiled_destroy(c);
    free(x);
    free(ref);
    free(got);
    return worst;
}

static void describe(const qdeconv_case *k, char *buf, size_t n)
{
    int at = snprintf(buf, n, "%dD n%lld c%lld m%lld g%lld %s x %s w -> %s%s%s%s%s:", k->sr,
                      (long long)k->n, (long long)k->c, (long long)k->m, (long long)k->groups,
                      dqg_dtype_name(k->xt), dqg_dtype_name(k->wt), dqg_dtype_name(k->yt),
                      k->per_channel ? " per-channel" : "", k->bias ? " bias" : "",
                      k->relu ? " relu" : "", k->x_zp ? " x-zp" : "");
    for (int d = 0; d < k->sr && at > 0 && (size_t)at < n; d++)
        at += snprintf(buf + at, n - (size_t)at,
                       " [in %lld k %lld s %lld d %lld p %lld,%lld op %lld]", (long long)k->in[d],
                       (long long)k->k[d], (long long)k->a.strides[d], (long long)k->a.dilations[d],
                       (long long)k->a.pads_begin[d], (long long)k->a.pads_end[d],
                       (long long)k->a.output_padding[d]);
}

Test(int8_deconv, random_layers_match_the_reference)
{
    uint32_t first = 1, count = 150;
    test_seed_range("DQG_QDECONV_CASES", &first, &count);
    uint32_t ran = 0, usual = 0, ran_usual = 0;
    for (uint32_t seed = first; seed < first + count; seed++) {
        test_rng = seed * 2654435761u + 7;
        qdeconv_case k = random_case();
        char what[512];
        describe(&k, what, sizeof what);
        dqg_graph *g = build(&k);
        bool r = false;
        double worst = run_case(g, test_int8_fusion() ? -1 : 0, &r, what);
        ran += r;
        usual += k.usual;
        ran_usual += r && k.usual;
        if (k.yt == DQG_F32)
            cr_assert_leq(worst, 1e-5, "seed %u: %s: relative error %g", seed, what, worst);
        else
            cr_assert_leq(worst, 1.0, "seed %u: %s: %g units off", seed, what, worst);
        dqg_graph_destroy(g);
    }
    /* The usual layers run in int8 (those oneDNN's jit kernel declines
     * too, in f32). */
    printf("int8 transposed convolutions: %u of %u random layers, %u of the %u usual ones\n", ran,
           count, ran_usual, usual);
    if (test_int8_fusion())
        cr_assert_geq(ran_usual, usual / 2, "the int8 kernel ran %u of %u usual layers", ran_usual,
                      usual);
}

/* A U-Net decoder's upsampling: 2x2 stride 2, u8 in and out after a ReLU,
 * per-channel weights, a bias; one partition, the result exact to a unit,
 * and the explain log names the fusion and its MACs as int8. */
Test(int8_deconv, unet_upsampling_is_one_int8_partition)
{
    if (!test_int8_fusion())
        cr_skip_test("this CPU " TEST_NO_INT8_REASON);
    test_rng = 99;
    qdeconv_case k = {.sr = 2,
                      .n = 1,
                      .c = 64,
                      .m = 32,
                      .groups = 1,
                      .in = {14, 14},
                      .k = {2, 2},
                      .a = {.spatial_rank = 2, .strides = {2, 2}, .groups = 1},
                      .xt = DQG_U8,
                      .wt = DQG_S8,
                      .yt = DQG_U8,
                      .per_channel = true,
                      .bias = true,
                      .relu = true,
                      .x_zp = false};
    dqg_graph *g = build(&k);
    cr_assert_leq(run_case(g, 1, NULL, "unet"), 1.0);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_compiled_partition_count(c), 1, "%s", dqg_compiled_partition_info(c, 0));
    cr_assert(test_explain_mentions(c, "-> int8 transposed convolution"));
    cr_assert(test_explain_mentions(c, "(100.0%) run in int8 kernels"));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* What the int8 kernel does not take stays f32, and says why: weight
 * scales along the input channels (axis 0), per output channel of a
 * grouped layer, a run-time activation scale, and u8 weights whose codes
 * minus the zero point leave s8 (refused by the kernel, then split). */
Test(int8_deconv, refusals_stay_float_and_say_why)
{
    test_rng = 5;
    int64_t xd[] = {1, 4, 5, 5}, wd[] = {4, 6, 3, 3}, n4 = 4;
    uint8_t wv[4 * 6 * 9];
    for (size_t i = 0; i < sizeof wv; i++)
        wv[i] = (uint8_t)test_rnd();
    float s4[4] = {0.01f, 0.02f, 0.03f, 0.04f}, s6[6] = {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f};
    const struct {
        int axis; /* per-axis weights: 0 or 1; -1 per-tensor */
        int64_t groups;
        bool rt_scale, wide_u8;
        const char *why;
    } cases[] = {
        {0, 1, false, false, "weight scales vary along the reduction dimension (per-axis, axis 0)"},
        {1, 2, false, false, "grouped, with weight scales per output channel of a group"},
        {-1, 1, true, false, "the activations' scale or zero point arrives at run time"},
        {-1, 1, false, true, "leaves s8"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t one = 1;
        dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
        dqg_tensor_id xs =
            cases[t].rt_scale ? dqg_input(g, "xs", DQG_F32, 0, &one) : test_scalar_f32(g, 0.02f);
        dqg_dequantize_linear_attrs dqa = {.opset = 13};
        dqg_tensor_id xf = dqg_dequantize_linear(g, "x_dq", x, xs, DQG_NONE, &dqa);
        int64_t gwd[] = {4, cases[t].groups == 2 ? 3 : 6, 3, 3};
        dqg_tensor_id w =
            dqg_constant(g, "w", cases[t].wide_u8 ? DQG_U8 : DQG_S8, 4,
                         cases[t].groups == 2 ? gwd : wd, wv, (size_t)(4 * gwd[1] * 9));
        dqg_dequantize_linear_attrs wa = {
            .opset = 13, .has_axis = cases[t].axis >= 0, .axis = cases[t].axis};
        int64_t ns = cases[t].axis == 0 ? 4 : gwd[1];
        dqg_tensor_id ws = cases[t].axis < 0    ? test_scalar_f32(g, 0.01f)
                           : cases[t].axis == 0 ? test_const_f32(g, 1, &n4, s4)
                                                : test_const_f32(g, 1, &ns, s6);
        dqg_tensor_id wz = cases[t].wide_u8 ? test_scalar_8bit(g, DQG_U8, 100) : DQG_NONE;
        dqg_tensor_id wf = dqg_dequantize_linear(g, "w_dq", w, ws, wz, &wa);
        dqg_conv_transpose_attrs a = {
            .spatial_rank = 2, .strides = {2, 2}, .groups = cases[t].groups};
        cr_assert_eq(dqg_output(g, dqg_conv_transpose(g, "ct", xf, wf, DQG_NONE, &a), "y"), DQG_OK,
                     "%s", dqg_last_error());
        finalize_ok(g);
        if (!cases[t].rt_scale) {
            char what[64];
            snprintf(what, sizeof what, "refusal %zu", t);
            cr_assert_leq(run_case(g, 0, NULL, what), 1e-5);
        }
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        bool said = test_explain_mentions(c, cases[t].why) &&
                    test_explain_mentions(c, "not fused: ConvTranspose 'ct'");
        if (cases[t].wide_u8 && !test_int8_fusion())
            said = test_explain_mentions(c, TEST_NO_INT8_REASON);
        cr_assert(said, "case %zu: the explain log lacks \"%s\"", t, cases[t].why);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* An Add of a run-time tensor of the result's shape after the ConvTranspose
 * (a decoder's lateral connection): the int8 kernel reads channels-last,
 * the tensor is stored row-major, so the layer stays in f32, says why, and
 * matches the reference. */
Test(int8_deconv, an_operand_of_the_result_shape_stays_float)
{
    test_rng = 17;
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, 4, 3, 3}, wd[] = {4, 5, 2, 2}, rd[] = {1, 5, 6, 6};
    int8_t wv[4 * 5 * 4];
    for (size_t i = 0; i < sizeof wv; i++)
        wv[i] = (int8_t)test_rin(-100, 100);
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd), r = dqg_input(g, "r", DQG_F32, 4, rd);
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_tensor_id xf = dqg_dequantize_linear(g, "x_dq", x, test_scalar_f32(g, 0.02f),
                                             test_scalar_8bit(g, DQG_U8, 3), &da);
    dqg_tensor_id wf =
        dqg_dequantize_linear(g, "w_dq", dqg_constant(g, "w", DQG_S8, 4, wd, wv, sizeof wv),
                              test_scalar_f32(g, 0.01f), DQG_NONE, &da);
    dqg_conv_transpose_attrs a = {.spatial_rank = 2, .strides = {2, 2}};
    dqg_tensor_id y = dqg_add(g, "lateral", dqg_conv_transpose(g, "ct", xf, wf, DQG_NONE, &a), r);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    uint8_t xv[36];
    float rv[180], ref[180], got[180];
    for (int i = 0; i < 36; i++)
        xv[i] = (uint8_t)test_rnd();
    for (int i = 0; i < 180; i++)
        rv[i] = (float)i; /* each position its own value: a misplaced one shows */
    dqg_buffer in[2] = {{.name = "x", .data = xv, .size = sizeof xv},
                        {.name = "r", .data = rv, .size = sizeof rv}};
    dqg_buffer out = {.name = "y", .data = ref, .size = sizeof ref};
    cr_assert_eq(dqg_reference_run(g, in, 2, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    out.data = got;
    cr_assert_eq(dqg_execute(c, in, 2, &out, 1), DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < 180; i++)
        cr_assert(fabsf(got[i] - ref[i]) <= 1e-5f * 180.0f, "y[%d]: %g, reference %g", i, got[i],
                  ref[i]);
    if (test_int8_fusion())
        cr_assert(test_explain_mentions(c, "an operand of the result's shape"));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* Q then DQ of t with one scale and u8 zero point: the quantized
 * activations between two layers. */
static dqg_tensor_id requantize(dqg_graph *g, const char *qname, const char *dqname,
                                dqg_tensor_id t, float scale, int zp)
{
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    t = dqg_quantize_linear(g, qname, t, test_scalar_f32(g, scale), test_scalar_8bit(g, DQG_U8, zp),
                            &qa);
    return dqg_dequantize_linear(g, dqname, t, test_scalar_f32(g, scale),
                                 test_scalar_8bit(g, DQG_U8, zp), &da);
}

/* DQ of constant s8 weights of shape wd (rank 4), drawn in [-100, 100],
 * scale 0.01. */
static dqg_tensor_id weights_dq(dqg_graph *g, const char *name, const int64_t *wd)
{
    int64_t n = wd[0] * wd[1] * wd[2] * wd[3];
    int8_t *w = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        w[i] = (int8_t)test_rin(-100, 100);
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_tensor_id t =
        dqg_dequantize_linear(g, name, dqg_constant(g, NULL, DQG_S8, 4, wd, w, (size_t)n),
                              test_scalar_f32(g, 0.01f), DQG_NONE, &da);
    free(w);
    return t;
}

/* Inside a network: int8 convolution -> ConvTranspose -> int8 convolution,
 * whose activations are channels-last. With stride 2 the ConvTranspose runs
 * in int8 between them; with stride 3 (past its 2x2 kernel) or an
 * output_padding past its end padding (defect K) it is refused and runs in
 * f32 on the channels-last neighbours' tensors. One-unit differences of
 * the inner quantizations travel through the last convolution, so the
 * result is compared as a network's: cosine similarity of the dequantized
 * outputs at least 0.999, and 97% of them within one unit (a value read
 * from a wrong position fails both by far). */
Test(int8_deconv, refused_layers_between_channels_last_convolutions)
{
    static const struct {
        int64_t stride, opad;
        bool int8;
    } cases[] = {{2, 0, true}, {3, 0, false}, {2, 1, false}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        test_rng = 23;
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t xd[] = {1, 8, 6, 6}, w1d[] = {16, 8, 3, 3}, w2d[] = {16, 8, 2, 2},
                w3d[] = {4, 8, 3, 3};
        dqg_dequantize_linear_attrs da = {.opset = 13};
        dqg_quantize_linear_attrs qa = {.opset = 13};
        dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
        dqg_tensor_id t = dqg_dequantize_linear(g, "dq0", x, test_scalar_f32(g, 0.02f),
                                                test_scalar_8bit(g, DQG_U8, 10), &da);
        dqg_conv_attrs ca = {.spatial_rank = 2,
                             .pads_begin = {1, 1},
                             .pads_end = {1, 1},
                             .data_format = DQG_FORMAT_NCX};
        t = dqg_relu(g, "r1",
                     dqg_convolution(g, "conv1", t, weights_dq(g, "wdq1", w1d), DQG_NONE, &ca));
        t = requantize(g, "q1", "dq1", t, 0.05f, 0);
        dqg_conv_transpose_attrs ta = {.spatial_rank = 2,
                                       .strides = {cases[k].stride, cases[k].stride},
                                       .output_padding = {cases[k].opad, cases[k].opad}};
        t = dqg_conv_transpose(g, "ct", t, weights_dq(g, "wdq2", w2d), DQG_NONE, &ta);
        t = requantize(g, "q2", "dq2", t, 0.1f, 100);
        t = dqg_convolution(g, "conv2", t, weights_dq(g, "wdq3", w3d), DQG_NONE, &ca);
        t = dqg_quantize_linear(g, "q3", t, test_scalar_f32(g, 0.1f),
                                test_scalar_8bit(g, DQG_U8, 128), &qa);
        cr_assert_eq(dqg_output(g, t, "y"), DQG_OK, "%s", dqg_last_error());
        finalize_ok(g);
        char what[64];
        snprintf(what, sizeof what, "stride %lld output_padding %lld", (long long)cases[k].stride,
                 (long long)cases[k].opad);
        size_t xb = dqg_tensor_byte_size(g, x), yb = dqg_tensor_byte_size(g, t);
        uint8_t *xv = malloc(xb), *ref = malloc(yb), *got = malloc(yb);
        fill(xv, xb);
        cr_assert_eq(run_ref_1(g, x, xv, xb, t, ref, yb), DQG_OK, "%s", dqg_last_error());
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s: %s", what, dqg_last_error());
        bool ran = false;
        for (size_t p = 0; p < dqg_compiled_partition_count(c); p++)
            ran |= strstr(dqg_compiled_partition_info(c, p), "onednn:deconv:u8s8:") != NULL;
        cr_assert_eq(ran, cases[k].int8 && test_int8_fusion(), "%s: int8 deconvolution %d", what,
                     ran);
        dqg_buffer bi = {.id = x, .data = xv, .size = xb}, bo = {.id = t, .data = got, .size = yb};
        cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
        double dot = 0, nr = 0, ng = 0;
        size_t close = 0;
        for (size_t i = 0; i < yb; i++) {
            double a = ((double)ref[i] - 128) * 0.1, b = ((double)got[i] - 128) * 0.1;
            dot += a * b;
            nr += a * a;
            ng += b * b;
            close += abs((int)ref[i] - (int)got[i]) <= 1;
        }
        double cosine = dot / sqrt(nr * ng + 1e-30);
        cr_assert(cosine >= 0.999, "%s: cosine %.6f", what, cosine);
        cr_assert_geq(close, yb * 97 / 100, "%s: %zu of %zu within one unit", what, close, yb);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
        free(xv);
        free(ref);
        free(got);
    }
}
