/* dqgraph's own int8 depthwise 3x3 convolution (runtime/qdw_kernel.h).
 * Two ways, with fixed seeds: whole layers DQ -> Conv (groups = channels)
 * [-> ReLU/Clip] -> Q against the reference interpreter (within one unit:
 * the reference sums dequantized values in f32, the kernel exact integers,
 * so a value on a rounding tie may land on either side), with the kernel
 * running wherever it takes the layer; and the kernel itself against
 * oneDNN's int8 convolution given the same attribute (scales, zero points,
 * ReLU/Clip post-ops, bias), which it must match bit for bit. */
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu_isa.h"
#include "runtime/qdw_kernel.h"
#include "test_common.h"

typedef struct dw_case {
    int64_t n, c, h, w, k, mult; /* mult: output channels per group */
    dqg_conv_attrs a;
    dqg_dtype xt, yt;
    int post; /* 0 none, 1 ReLU, 2 Clip(0, 6), 3 Clip narrower than the result's range */
    bool per_channel, bias, int_bias, x_zp;
    bool own; /* a layer the own kernel takes */
} dw_case;

static dw_case random_case(void)
{
    dw_case k = {0};
    k.n = test_rin(1, 6) == 1 ? 2 : 1;
    static const int64_t channels[] = {1, 3, 8, 16, 17, 31, 32, 48, 63, 64, 65, 96, 130, 144, 200};
    k.c = channels[test_rin(0, sizeof channels / sizeof *channels - 1)];
    k.h = test_rin(1, 12);
    k.w = test_rin(1, 12);
    k.k = 3;
    k.mult = 1;
    k.own = true;
    int odd = (int)test_rin(0, 9); /* 1 in 10: a layer the own kernel leaves to oneDNN */
    if (odd == 0) {
        k.k = test_rin(0, 1) ? 5 : 1;
        k.own = false;
    } else if (odd == 1) {
        k.mult = 2;
        k.own = false;
    }
    k.a.spatial_rank = 2;
    k.a.groups = k.c;
    k.a.data_format = test_rin(0, 2) ? DQG_FORMAT_NXC : DQG_FORMAT_NCX;
    int64_t in[2] = {k.h, k.w};
    for (int d = 0; d < 2; d++) {
        k.a.strides[d] = test_rin(1, 6) == 1 ? 3 : test_rin(1, 2);
        k.a.dilations[d] = 1;
        if (odd == 2 && d == 0) {
            k.a.dilations[d] = 2;
            k.own = false;
        }
        int64_t extent = (k.k - 1) * k.a.dilations[d] + 1;
        /* Pads that leave at least one output element. */
        k.a.pads_begin[d] = test_rin(0, k.k / 2 + (test_rin(0, 4) == 0));
        int64_t need = extent - in[d] - k.a.pads_begin[d];
        k.a.pads_end[d] = test_rin(need > 0 ? need : 0, (need > 0 ? need : 0) + 2);
    }
    k.xt = test_rin(0, 3) == 0 ? DQG_S8 : DQG_U8;
    k.yt = test_rin(0, 3) == 0 ? DQG_S8 : DQG_U8;
    k.post = (int)test_rin(0, 3);
    k.per_channel = test_rin(0, 3) != 0;
    k.bias = test_rin(0, 2) != 0;
    k.int_bias = k.bias && test_rin(0, 1);
    k.x_zp = test_rin(0, 3) != 0;
    return k;
}

static void describe(const dw_case *k, char *buf, size_t n)
{
    snprintf(buf, n,
             "n%lld c%lld x%lld %lldx%lld k%lld s%lld,%lld d%lld p%lld,%lld/%lld,%lld %s %s -> %s "
             "post %d%s%s%s%s",
             (long long)k->n, (long long)k->c, (long long)k->mult, (long long)k->h, (long long)k->w,
             (long long)k->k, (long long)k->a.strides[0], (long long)k->a.strides[1],
             (long long)k->a.dilations[0], (long long)k->a.pads_begin[0],
             (long long)k->a.pads_begin[1], (long long)k->a.pads_end[0],
             (long long)k->a.pads_end[1], k->a.data_format == DQG_FORMAT_NXC ? "NHWC" : "NCHW",
             dqg_dtype_name(k->xt), dqg_dtype_name(k->yt), k->post,
             k->per_channel ? " per-channel" : "",
             k->bias ? (k->int_bias ? " int32-bias" : " bias") : "", k->x_zp ? " x-zp" : "",
             k->own ? "" : " (not the own kernel's)");
}

/* x -> DQ -> Conv(DQ(w), bias) [-> ReLU/Clip] -> Q -> "y". An int32 bias
 * is DQ(b, x_scale * w_scale), as ONNX Runtime's quantizer writes it. */
static dqg_graph *build(const dw_case *k)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    const int64_t m = k->c * k->mult;
    bool nxc = k->a.data_format == DQG_FORMAT_NXC;
    int64_t xd[4] = {k->n, nxc ? k->h : k->c, nxc ? k->w : k->h, nxc ? k->c : k->w};
    int64_t wd[4] = {m, 1, k->k, k->k}, wn = m * k->k * k->k;
    dqg_tensor_id x = dqg_input(g, "x", k->xt, 4, xd);
    dqg_dequantize_linear_attrs pt = {.opset = 13}, pc = {.opset = 13, .has_axis = true, .axis = 0};
    float xs = test_uniform(0.005f, 0.05f);
    int xz = k->xt == DQG_U8 ? (int)test_rin(0, 255) : (int)test_rin(-128, 127);
    dqg_tensor_id xf =
        dqg_dequantize_linear(g, "x_dq", x, test_scalar_f32(g, xs),
                              k->x_zp ? test_scalar_8bit(g, k->xt, xz) : DQG_NONE, &pt);
    int8_t *wv = malloc((size_t)wn);
    float *ws = malloc((size_t)m * sizeof *ws), *bf = malloc((size_t)m * sizeof *bf);
    int32_t *bi = malloc((size_t)m * sizeof *bi);
    for (int64_t i = 0; i < wn; i++)
        wv[i] = (int8_t)test_rin(-127, 127);
    int64_t ns = k->per_channel ? m : 1;
    for (int64_t i = 0; i < ns; i++)
        ws[i] = test_uniform(0.002f, 0.05f);
    dqg_tensor_id wf = dqg_dequantize_linear(
        g, "w_dq", dqg_constant(g, "w", DQG_S8, 4, wd, wv, (size_t)wn),
        k->per_channel ? test_const_f32(g, 1, &ns, ws) : test_scalar_f32(g, ws[0]), DQG_NONE,
        k->per_channel ? &pc : &pt);
    dqg_tensor_id b = DQG_NONE;
    if (k->int_bias) {
        for (int64_t i = 0; i < m; i++) {
            bi[i] = (int32_t)test_rin(-3000, 3000);
            bf[i] = xs * ws[k->per_channel ? i : 0];
        }
        dqg_tensor_id bq = dqg_constant(g, "b", DQG_S32, 1, &m, bi, (size_t)m * sizeof *bi);
        b = dqg_dequantize_linear(g, "b_dq", bq,
                                  k->per_channel ? test_const_f32(g, 1, &m, bf)
                                                 : test_scalar_f32(g, bf[0]),
                                  DQG_NONE, k->per_channel ? &pc : &pt);
    } else if (k->bias) {
        for (int64_t i = 0; i < m; i++)
            bf[i] = test_uniform(-1.0f, 1.0f);
        b = test_const_f32(g, 1, &m, bf);
    }
    free(wv);
    free(ws);
    free(bf);
    free(bi);
    dqg_tensor_id y = dqg_convolution(g, "conv", xf, wf, b, &k->a);
    float ys = test_uniform(0.01f, 0.08f);
    if (k->post == 1)
        y = dqg_relu(g, "relu", y);
    else if (k->post >= 2)
        y = dqg_clip(g, "clip", y, k->post == 2 ? 0.0f : -20 * ys, k->post == 2 ? 6.0f : 30 * ys);
    dqg_quantize_linear_attrs qa = {.opset = 13};
    int yz = k->yt == DQG_U8 ? (int)test_rin(0, 128) : (int)test_rin(-30, 30);
    y = dqg_quantize_linear(g, "y_q", y, test_scalar_f32(g, ys), test_scalar_8bit(g, k->yt, yz),
                            &qa);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    return g;
}

/* Runs g compiled and on the reference: the largest difference in units;
 * *own says whether the own kernel ran. */
static int run_case(dqg_graph *g, bool *own, const char *what)
{
    dqg_tensor_id xi = dqg_graph_input_id(g, 0), yi = dqg_graph_output_id(g, 0);
    size_t xb = dqg_tensor_byte_size(g, xi), yb = dqg_tensor_byte_size(g, yi);
    uint8_t *x = malloc(xb), *ref = malloc(yb), *got = malloc(yb);
    for (size_t i = 0; i < xb; i++)
        x[i] = (uint8_t)test_rnd();
    cr_assert_eq(run_ref_1(g, xi, x, xb, yi, ref, yb), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s: %s", what, dqg_last_error());
    *own = false;
    for (size_t p = 0; p < dqg_compiled_partition_count(c); p++)
        *own |= strstr(dqg_compiled_partition_info(c, p), "int8-depthwise3x3") != NULL;
    dqg_buffer bi = {.id = xi, .data = x, .size = xb}, bo = {.id = yi, .data = got, .size = yb};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s: %s", what, dqg_last_error());
    int worst = test_max_diff_8bit(ref, got, yb, dqg_tensor_dtype(g, yi) == DQG_S8);
    dqg_compiled_destroy(c);
    free(x);
    free(ref);
    free(got);
    return worst;
}

/* Every layer within one unit of the reference; the own kernel runs every
 * layer it takes where the CPU (and DQG_MAX_ISA) has AVX-512 VNNI and
 * dqgraph fuses int8, and no other. */
Test(int8_dwconv, random_layers_match_the_reference)
{
    uint32_t first = 1, count = 300;
    test_seed_range("DQG_QDW_CASES", &first, &count);
    bool expect = dqg_cpu_has(DQG_ISA_AVX512_VNNI) && test_int8_fusion();
    uint32_t ran = 0;
    for (uint32_t seed = first; seed < first + count; seed++) {
        test_rng = seed * 2654435761u + 11;
        dw_case k = random_case();
        char what[256];
        describe(&k, what, sizeof what);
        dqg_graph *g = build(&k);
        bool own;
        int worst = run_case(g, &own, what);
        cr_assert_leq(worst, 1, "seed %u: %s: %d units off", seed, what, worst);
        cr_assert_eq(own, expect && k.own, "seed %u: %s: the own kernel %s", seed, what,
                     own ? "ran" : "did not run");
        ran += own;
        dqg_graph_destroy(g);
    }
    cr_log_info("own depthwise kernel: %u of %u layers", ran, count);
}

/* The kernel against oneDNN's convolution with the same attribute. */
typedef struct attr_case {
    dqg_qdw_shape s;
    dqg_dtype xt, yt;
    int n_scales, post;
    int32_t zp_src, zp_dst;
    bool bias, int_bias;
} attr_case;

static dnnl_data_type_t dnnl_type(dqg_dtype t)
{
    return t == DQG_S8 ? dnnl_s8 : dnnl_u8;
}

static void against_onednn(const attr_case *k, const char *what)
{
    const dqg_qdw_shape *s = &k->s;
    const int64_t C = s->c, xn = s->n * s->h * s->w * C, yn = s->n * s->oh * s->ow * C;
    int8_t *w = malloc((size_t)C * 9);
    float *scales = malloc((size_t)C * sizeof *scales), *bias = malloc((size_t)C * sizeof *bias);
    uint8_t *x = malloc((size_t)xn), *own = malloc((size_t)yn), *ref = malloc((size_t)yn);
    for (int64_t i = 0; i < C * 9; i++)
        w[i] = (int8_t)test_rin(-128, 127);
    for (int i = 0; i < k->n_scales; i++)
        scales[i] = test_uniform(0.0005f, 0.02f);
    for (int64_t i = 0; i < C; i++)
        bias[i] = k->int_bias ? (float)test_rin(-5000, 5000) : test_uniform(-4000.0f, 4000.0f);
    for (int64_t i = 0; i < xn; i++)
        x[i] = (uint8_t)test_rnd();

    dqg_qattr q = {.row_term_binary = -1, .bias = k->bias ? bias : NULL};
    cr_assert_eq(dnnl_primitive_attr_create(&q.attr), dnnl_success);
    cr_assert_eq(
        dnnl_primitive_attr_set_output_scales(q.attr, k->n_scales, k->n_scales > 1 ? 2 : 0, scales),
        dnnl_success);
    if (k->zp_src)
        dnnl_primitive_attr_set_zero_points(q.attr, DNNL_ARG_SRC, 1, 0, &k->zp_src);
    if (k->zp_dst)
        dnnl_primitive_attr_set_zero_points(q.attr, DNNL_ARG_DST, 1, 0, &k->zp_dst);
    dnnl_post_ops_t po;
    cr_assert_eq(dnnl_post_ops_create(&po), dnnl_success);
    if (k->post == 1)
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
    if (k->post >= 2)
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, -40.5f, 60.25f);
    if (k->post == 3) /* a second clip, in oneDNN's own algorithm (defect E) */
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, -10.0f, 100.0f);
    dnnl_primitive_attr_set_post_ops(q.attr, po);
    dnnl_post_ops_destroy(po);

    dqg_qdw *d = NULL;
    cr_assert_eq(dqg_qdw_create(s, k->xt, k->yt, w, &q, &d, what), DQG_OK, "%s: %s", what,
                 dqg_last_error());
    dqg_qdw_run(d, x, own);
    dqg_qdw_destroy(d);

    /* oneDNN's convolution: the same weights as goihw [C, 1, 1, 3, 3]. */
    dnnl_engine_t eng;
    dnnl_stream_t str;
    cr_assert_eq(dnnl_engine_create(&eng, dnnl_cpu, 0), dnnl_success);
    cr_assert_eq(dnnl_stream_create(&str, eng, dnnl_stream_default_flags), dnnl_success);
    dnnl_memory_desc_t xm, wm, bm, ym;
    dnnl_dims_t xd = {s->n, C, s->h, s->w}, wd = {C, 1, 1, 3, 3}, bd = {C},
                yd = {s->n, C, s->oh, s->ow};
    dnnl_memory_desc_init_by_tag(&xm, 4, xd, dnnl_type(k->xt), dnnl_acdb);
    dnnl_memory_desc_init_by_tag(&wm, 5, wd, dnnl_s8, dnnl_abcde);
    dnnl_memory_desc_init_by_tag(&bm, 1, bd, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&ym, 4, yd, dnnl_type(k->yt), dnnl_acdb);
    dnnl_dims_t st = {s->stride_h, s->stride_w}, dl = {0, 0}, pl = {s->pad_t, s->pad_l};
    dnnl_dims_t pr = {(s->oh - 1) * s->stride_h + 3 - s->h - s->pad_t,
                      (s->ow - 1) * s->stride_w + 3 - s->w - s->pad_l};
    dnnl_convolution_desc_t cd;
    cr_assert_eq(dnnl_dilated_convolution_forward_desc_init(
                     &cd, dnnl_forward_inference, dnnl_convolution_direct, &xm, &wm,
                     k->bias ? &bm : NULL, &ym, st, dl, pl, pr),
                 dnnl_success, "%s", what);
    dnnl_primitive_desc_t pd;
    cr_assert_eq(dnnl_primitive_desc_create(&pd, &cd, q.attr, eng, NULL), dnnl_success, "%s", what);
    dnnl_primitive_t p;
    cr_assert_eq(dnnl_primitive_create(&p, pd), dnnl_success);
    dnnl_memory_t mx, mw, mb, my;
    dnnl_memory_create(&mx, &xm, eng, x);
    dnnl_memory_create(&mw, &wm, eng, w);
    dnnl_memory_create(&mb, &bm, eng, bias);
    dnnl_memory_create(&my, &ym, eng, ref);
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, my}, {DNNL_ARG_BIAS, mb}};
    cr_assert_eq(dnnl_primitive_execute(p, str, k->bias ? 4 : 3, args), dnnl_success);
    dnnl_stream_wait(str);
    int64_t diff = 0, first = -1;
    for (int64_t i = 0; i < yn; i++)
        if (own[i] != ref[i]) {
            diff++;
            first = first < 0 ? i : first;
        }
    cr_assert_eq(diff, 0,
                 "%s: %lld of %lld outputs differ from oneDNN's; the first, %lld: %d "
                 "against %d",
                 what, (long long)diff, (long long)yn, (long long)first,
                 first >= 0 ? own[first] : 0, first >= 0 ? ref[first] : 0);
    dnnl_memory_destroy(mx);
    dnnl_memory_destroy(mw);
    dnnl_memory_destroy(mb);
    dnnl_memory_destroy(my);
    dnnl_primitive_destroy(p);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(str);
    dnnl_engine_destroy(eng);
    dnnl_primitive_attr_destroy(q.attr);
    free(w);
    free(scales);
    free(bias);
    free(x);
    free(own);
    free(ref);
}

/* Bit for bit what oneDNN's int8 convolution gives for the same
 * attribute: per-tensor and per-channel scales, source and destination
 * zero points, ReLU, a Clip and two, integer and fractional biases,
 * strides 1 to 3 and padding of 0 to 2 on each side, u8 and s8 both
 * ways, channels in whole blocks of 64, groups of 16 and tails. */
Test(int8_dwconv, kernel_matches_onednn_bit_for_bit)
{
    if (!dqg_cpu_has(DQG_ISA_AVX512_VNNI))
        cr_skip("no AVX512-VNNI at this DQG_MAX_ISA");
    static const int64_t channels[] = {1, 7, 16, 40, 64, 77, 128, 144, 200};
    for (uint32_t seed = 1; seed <= 120; seed++) {
        test_rng = seed * 2246822519u + 3;
        attr_case k = {0};
        dqg_qdw_shape *s = &k.s;
        s->n = test_rin(1, 2);
        s->c = channels[test_rin(0, sizeof channels / sizeof *channels - 1)];
        s->h = test_rin(1, 11);
        s->w = test_rin(1, 11);
        s->stride_h = test_rin(1, 3);
        s->stride_w = test_rin(1, 3);
        s->pad_t = test_rin(0, 2);
        s->pad_l = test_rin(0, 2);
        /* Bottom and right padding of 0 to 2 (and enough for one output). */
        int64_t pb = test_rin(0, 2), pr = test_rin(0, 2);
        pb = s->h + s->pad_t + pb < 3 ? 3 - s->h - s->pad_t : pb;
        pr = s->w + s->pad_l + pr < 3 ? 3 - s->w - s->pad_l : pr;
        s->oh = (s->h + s->pad_t + pb - 3) / s->stride_h + 1;
        s->ow = (s->w + s->pad_l + pr - 3) / s->stride_w + 1;
        k.xt = test_rin(0, 1) ? DQG_S8 : DQG_U8;
        k.yt = test_rin(0, 1) ? DQG_S8 : DQG_U8;
        k.n_scales = test_rin(0, 1) ? (int)s->c : 1;
        k.post = (int)test_rin(0, 3);
        k.zp_src = k.xt == DQG_U8 ? (int32_t)test_rin(0, 255) : (int32_t)test_rin(-128, 127);
        k.zp_src = test_rin(0, 3) ? k.zp_src : 0;
        k.zp_dst = (int32_t)test_rin(-20, 20);
        k.bias = test_rin(0, 2) != 0;
        k.int_bias = test_rin(0, 1);
        char what[200];
        snprintf(what, sizeof what,
                 "seed %u: n%lld c%lld %lldx%lld -> %lldx%lld s%lld,%lld p%lld,%lld %s -> %s "
                 "scales %d post %d zp %d/%d%s",
                 seed, (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w,
                 (long long)s->oh, (long long)s->ow, (long long)s->stride_h, (long long)s->stride_w,
                 (long long)s->pad_t, (long long)s->pad_l, dqg_dtype_name(k.xt),
                 dqg_dtype_name(k.yt), k.n_scales, k.post, k.zp_src, k.zp_dst,
                 k.bias ? (k.int_bias ? " integer bias" : " bias") : "");
        against_onednn(&k, what);
    }
}

/* What the kernel does not take, it says, and the primitive runs it. */
Test(int8_dwconv, refuses_what_it_does_not_compute)
{
    if (!dqg_cpu_has(DQG_ISA_AVX512_VNNI))
        cr_skip("no AVX512-VNNI at this DQG_MAX_ISA");
    dqg_qdw_shape s = {.n = 1,
                       .c = 8,
                       .h = 4,
                       .w = 4,
                       .oh = 4,
                       .ow = 4,
                       .stride_h = 1,
                       .stride_w = 1,
                       .pad_t = 1,
                       .pad_l = 1};
    int8_t w[72] = {0};
    float sc = 0.5f;
    dqg_qattr q = {.row_term_binary = -1};
    cr_assert_eq(dnnl_primitive_attr_create(&q.attr), dnnl_success);
    dnnl_primitive_attr_set_output_scales(q.attr, 1, 0, &sc);
    dqg_qdw *d = NULL;
    cr_assert_eq(dqg_qdw_create(&s, DQG_U8, DQG_F32, w, &q, &d, "dw"), DQG_UNSUPPORTED);
    cr_assert(strstr(dqg_last_error(), "not u8/s8 in and out"), "%s", dqg_last_error());
    dnnl_post_ops_t po;
    dnnl_post_ops_create(&po);
    dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_logistic, 0.0f, 0.0f);
    dnnl_primitive_attr_set_post_ops(q.attr, po);
    dnnl_post_ops_destroy(po);
    cr_assert_eq(dqg_qdw_create(&s, DQG_U8, DQG_U8, w, &q, &d, "dw"), DQG_UNSUPPORTED);
    cr_assert(strstr(dqg_last_error(), "a post-op other than ReLU or Clip"), "%s",
              dqg_last_error());
    dnnl_post_ops_create(&po);
    dnnl_primitive_attr_set_post_ops(q.attr, po);
    dnnl_post_ops_destroy(po);
    int32_t rt = DNNL_RUNTIME_S32_VAL;
    dnnl_primitive_attr_set_zero_points(q.attr, DNNL_ARG_SRC, 1, 0, &rt);
    cr_assert_eq(dqg_qdw_create(&s, DQG_U8, DQG_U8, w, &q, &d, "dw"), DQG_UNSUPPORTED);
    cr_assert(strstr(dqg_last_error(), "at run time"), "%s", dqg_last_error());
    q.n_factors = 1;
    cr_assert_eq(dqg_qdw_create(&s, DQG_U8, DQG_U8, w, &q, &d, "dw"), DQG_UNSUPPORTED);
    cr_assert(strstr(dqg_last_error(), "run-time scales"), "%s", dqg_last_error());
    cr_assert_null(d);
    dnnl_primitive_attr_destroy(q.attr);
}
