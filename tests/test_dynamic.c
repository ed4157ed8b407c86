/* Dynamic quantization, fused end to end: run-time activation scales and
 * zero points in every form a model writes them -- DynamicQuantizeLinear ->
 * DequantizeLinear, oneDNN Graph's DynamicDequantize with run-time scales
 * and its DynamicQuantize/DynamicDequantize pair, and ONNX Runtime's
 * dynamic quantizer (MatMulInteger -> Cast -> Mul(x_scale * w_scale) ->
 * Add) -- each compiled fused and unfused and run on the reference
 * interpreter (fixed seeds). f32 outputs agree within 1e-5 of the output's
 * largest magnitude; the fused partition keeps oneDNN's constant-scale
 * implementation. */
#include <math.h>
#include <stdlib.h>

#include "runtime/gelu_kernel.h"
#include "test_common.h"

static int64_t rin(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(test_rnd() % (uint32_t)(hi - lo + 1));
}
static float rf(float lo, float hi)
{
    return lo + (hi - lo) * (float)(test_rnd() % 100000) / 100000.0f;
}

typedef enum { FORM_DQL, FORM_DYN_DEQ, FORM_DYN_PAIR, FORM_ORT } form;
static const char *form_name[] = {"DynamicQuantizeLinear", "DynamicDequantize",
                                  "DynamicQuantize+DynamicDequantize", "MatMulInteger"};

typedef struct input {
    const char *name;
    dqg_dtype dtype;
    int64_t n;
    void *data;
} input;

typedef struct dyn_case {
    dqg_graph *g;
    dqg_tensor_id y;
    int64_t K;
    int n_in;
    input in[4];
    char what[200];
} dyn_case;

static dqg_tensor_id add_input(dyn_case *c, const char *name, dqg_dtype dt, int rank,
                               const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    input *in = &c->in[c->n_in++];
    in->name = name;
    in->dtype = dt;
    in->n = n;
    in->data = calloc((size_t)n, 4);
    return dqg_input(c->g, name, dt, rank, dims);
}

/* Activations with constant rows, all-zero rows and a wide range. */
static void fill_activations(float *x, int64_t M, int64_t K)
{
    for (int64_t m = 0; m < M; m++) {
        int kind = (int)rin(0, 9);
        float c = rf(-3, 3);
        for (int64_t k = 0; k < K; k++)
            x[m * K + k] = kind == 0 ? 0.0f : kind == 1 ? c : rf(-4, 4) * (kind == 2 ? 40 : 1);
    }
}

/* u8 weights over their whole range with a zero point anywhere in it
 * (ONNX Runtime's QUInt8 weight type), not s8. */
static bool u8_weights;

/* A GELU (erf form) last in the epilogue. */
static bool gelu_last;

/* DQ of such u8 weights [K, N] with scales s (ns values: one, or one per
 * column) and as many zero points: w - zp spans 256 values, past s8's
 * bounds unless zp = 128; per column (as MatMulInteger allows) they span
 * more. */
static dqg_tensor_id u8_weights_dq(dqg_graph *g, const char *name, int64_t K, int64_t N, int64_t ns,
                                   const float *s)
{
    int64_t wd[] = {K, N};
    uint8_t *wu = malloc((size_t)(K * N)), z[4096];
    for (int64_t i = 0; i < K * N; i++)
        wu[i] = (uint8_t)rin(0, 255);
    for (int64_t i = 0; i < ns; i++)
        z[i] = (uint8_t)rin(0, 255);
    int r = ns > 1 ? 1 : 0;
    dqg_dequantize_linear_attrs za = {.opset = 13, .has_axis = ns > 1, .axis = 1};
    dqg_tensor_id b = dqg_dequantize_linear(
        g, name, dqg_constant(g, NULL, DQG_U8, 2, wd, wu, (size_t)(K * N)),
        test_const_f32(g, r, &ns, s), dqg_constant(g, NULL, DQG_U8, r, &ns, z, (size_t)ns), &za);
    free(wu);
    return b;
}

/* Builds one case: the activations' side in form `f`, MatMul with constant
 * weights, bias and post-ops. */
static void build(dyn_case *c, form f, int64_t M, int64_t K, int64_t N, bool per_channel, bool w_zp,
                  bool s8_src, int n_post)
{
    memset(c, 0, sizeof *c);
    cr_assert_eq(dqg_graph_create(&c->g), DQG_OK);
    dqg_graph *g = c->g;
    int64_t xd[] = {M, K}, wd[] = {K, N}, one = 1;
    int8_t *w = malloc((size_t)(K * N));
    for (int64_t i = 0; i < K * N; i++)
        w[i] = (int8_t)rin(-127, 127);
    float *ws = malloc((size_t)N * sizeof(float));
    for (int64_t i = 0; i < N; i++)
        ws[i] = rf(0.001f, 0.02f);
    int64_t ns = per_channel ? N : 1;
    dqg_tensor_id wq = dqg_constant(g, "w_q", DQG_S8, 2, wd, w, (size_t)(K * N));
    dqg_tensor_id wzp = DQG_NONE;
    if (w_zp) {
        int8_t z[4096] = {0};
        wzp = dqg_constant(g, "w_zp", DQG_S8, per_channel ? 1 : 0, &ns, z, (size_t)ns);
    }
    dqg_dequantize_linear_attrs wa = {.opset = 13, .has_axis = per_channel, .axis = 1};
    dqg_tensor_id y;
    if (f == FORM_ORT) {
        /* DQL -> MatMulInteger (unit scales) -> Cast(s32) -> Cast(f32) ->
         * Mul(x_scale * w_scale). */
        dqg_tensor_id x = add_input(c, "x", DQG_F32, 2, xd), xs, xz;
        fill_activations(c->in[0].data, M, K);
        dqg_tensor_id xq = dqg_dynamic_quantize_linear(g, "dql", x, &xs, &xz);
        float u = 1.0f;
        dqg_dequantize_linear_attrs ua = {.opset = 13};
        dqg_tensor_id a =
            dqg_dequantize_linear(g, "a_dq", xq, test_const_f32(g, 0, &one, &u), xz, &ua);
        dqg_tensor_id b;
        if (u8_weights) {
            float ones[4096];
            for (int64_t i = 0; i < ns; i++)
                ones[i] = 1.0f;
            b = u8_weights_dq(g, "b_dq", K, N, ns, ones);
        } else {
            b = dqg_dequantize_linear(g, "b_dq", wq, test_const_f32(g, 0, &one, &u), DQG_NONE, &ua);
        }
        y = dqg_matmul(g, "mmi", a, b, NULL);
        y = dqg_typecast(g, "to_int32", y, DQG_S32);
        y = dqg_typecast(g, "cast", y, DQG_F32);
        dqg_tensor_id f_scale =
            dqg_mul(g, "scale", xs, test_const_f32(g, per_channel ? 1 : 0, &ns, ws));
        y = rin(0, 1) ? dqg_mul(g, "mul", y, f_scale) : dqg_mul(g, "mul", f_scale, y);
    } else {
        dqg_tensor_id a;
        if (f == FORM_DQL) {
            dqg_tensor_id x = add_input(c, "x", DQG_F32, 2, xd), xs, xz;
            fill_activations(c->in[0].data, M, K);
            dqg_tensor_id xq = dqg_dynamic_quantize_linear(g, "dql", x, &xs, &xz);
            dqg_dequantize_linear_attrs da = {.opset = 13};
            a = dqg_dequantize_linear(g, "x_dq", xq, xs, xz, &da);
        } else {
            dqg_dtype qt = s8_src ? DQG_S8 : DQG_U8;
            dqg_tensor_id sc = add_input(c, "scales", DQG_F32, 1, &one);
            dqg_tensor_id zp = add_input(c, "zps", s8_src ? DQG_S8 : DQG_U8, 1, &one);
            ((float *)c->in[0].data)[0] = rf(0.005f, 0.05f);
            if (s8_src)
                ((int8_t *)c->in[1].data)[0] = (int8_t)rin(-20, 20);
            else
                ((uint8_t *)c->in[1].data)[0] = (uint8_t)rin(0, 255);
            dqg_tensor_id xq;
            if (f == FORM_DYN_PAIR) {
                dqg_tensor_id x = add_input(c, "x", DQG_F32, 2, xd);
                fill_activations(c->in[2].data, M, K);
                xq = dqg_dynamic_quantize(g, "dq_x", x, sc, zp, "per_tensor", 0, qt);
            } else {
                xq = add_input(c, "x", qt, 2, xd);
                for (int64_t i = 0; i < M * K; i++)
                    ((uint8_t *)c->in[2].data)[i] = (uint8_t)test_rnd();
            }
            a = dqg_dynamic_dequantize(g, "x_dq", xq, sc, zp, "per_tensor", 0);
        }
        dqg_tensor_id b =
            u8_weights
                ? u8_weights_dq(g, "w_dq", K, N, ns, ws)
                : dqg_dequantize_linear(g, "w_dq", wq,
                                        test_const_f32(g, per_channel ? 1 : 0, &ns, ws), wzp, &wa);
        y = dqg_matmul(g, "mm", a, b, NULL);
    }
    float bias[4096];
    for (int64_t i = 0; i < N; i++)
        bias[i] = rf(-1, 1);
    y = dqg_add(g, "bias", y, test_const_f32(g, 1, &N, bias));
    for (int i = 0; i < n_post; i++)
        y = i % 2 ? dqg_clip(g, NULL, y, -2.0f, 3.0f) : dqg_relu(g, NULL, y);
    if (gelu_last)
        y = dqg_unary(g, "gelu", DQG_UNARY_GELU_ERF, y, 0.0f, 0.0f);
    c->y = y;
    c->K = K;
    dqg_output(g, y, "y");
    finalize_ok(g);
    snprintf(c->what, sizeof c->what, "%s M=%lld K=%lld N=%lld %s%s%s post=%d", form_name[f],
             (long long)M, (long long)K, (long long)N, per_channel ? "per-channel" : "per-tensor",
             w_zp ? " w_zp" : "", s8_src ? " s8" : "", n_post);
    free(w);
    free(ws);
}

static void free_case(dyn_case *c)
{
    for (int i = 0; i < c->n_in; i++)
        free(c->in[i].data);
    dqg_graph_destroy(c->g);
}

static dqg_status run(dyn_case *c, int way, float *out, char *log, size_t log_size)
{
    dqg_buffer in[4];
    for (int i = 0; i < c->n_in; i++)
        in[i] = (dqg_buffer){
            .name = c->in[i].name,
            .data = c->in[i].data,
            .size = dqg_tensor_byte_size(c->g, dqg_graph_find_tensor(c->g, c->in[i].name))};
    size_t yb = dqg_tensor_byte_size(c->g, c->y);
    dqg_buffer o = {.name = "y", .data = out, .size = yb};
    if (way == 2)
        return dqg_reference_run(c->g, in, (size_t)c->n_in, &o, 1);
    dqg_compile_options opt = dqg_compile_options_default();
    opt.disable_fusion = way == 1;
    dqg_compiled *cc = NULL;
    dqg_status st = dqg_compile(c->g, &opt, &cc);
    cr_assert_eq(st, DQG_OK, "%s: %s", c->what, dqg_last_error());
    if (log) {
        log[0] = 0;
        for (size_t i = 0; i < dqg_compiled_partition_count(cc); i++) {
            strncat(log, dqg_compiled_partition_info(cc, i), log_size - strlen(log) - 2);
            strncat(log, "\n", log_size - strlen(log) - 1);
        }
        for (size_t i = 0; i < dqg_compiled_explain_count(cc); i++) {
            strncat(log, dqg_compiled_explain(cc, i), log_size - strlen(log) - 2);
            strncat(log, "\n", log_size - strlen(log) - 1);
        }
    }
    st = dqg_execute(cc, in, (size_t)c->n_in, &o, 1);
    dqg_compiled_destroy(cc);
    return st;
}

/* Fused, unfused and reference agree; the fused graph has one int8 matmul,
 * and no TypeCast or Mul of the MatMulInteger form is left. `scale` is the
 * largest magnitude of the MatMul's result before the epilogue: ReLU and
 * Clip do not amplify an error, but a Clip to a narrow range makes the
 * output's own magnitude too small a yardstick for the reference's
 * rounding of the dequantized operands. */
static void check(dyn_case *c, double scale)
{
    int64_t n = dqg_tensor_element_count(c->g, c->y);
    float *out[3];
    static char log[16384];
    for (int way = 0; way < 3; way++) {
        out[way] = malloc((size_t)n * sizeof(float));
        dqg_status st = run(c, way, out[way], way == 0 ? log : NULL, sizeof log);
        cr_assert_eq(st, DQG_OK, "%s: way %d: %s", c->what, way, dqg_last_error());
    }
    cr_assert(strstr(log, "-> int8 matmul") || strstr(log, "-> int8 convolution"),
              "%s: not fused:\n%s", c->what, log);
    if (strstr(log, "oneDNN 2.6 defect I"))
        cr_assert(test_avx2_vnni(), "%s: defect I refused a kernel above AVX2-VNNI:\n%s", c->what,
                  log);
    else if (test_int8_fusion())
        cr_assert(!strstr(log, "op [TypeCast") && !strstr(log, "op [Mul") &&
                      !strstr(log, "op [DynamicQuantizeLinear") && !strstr(log, "op [Quantize"),
                  "%s: a cast, scale multiply or quantization runs on its own:\n%s", c->what, log);
    else
        cr_assert(strstr(log, TEST_NO_INT8_REASON), "%s:\n%s", c->what, log);
    if (gelu_last && test_int8_fusion())
        cr_assert(!strstr(log, "op [Unary") &&
                      !strstr(log, "+own:avx512:gelu") == !dqg_gelu_own_available(),
                  "%s: the GELU is not where it belongs:\n%s", c->what, log);
    double maxabs = scale;
    for (int64_t i = 0; i < n; i++)
        maxabs = fmax(maxabs, fabs(out[2][i]));
    /* The fused kernel accumulates in integers: the contract's 1e-5. The
     * unfused one runs an f32 MatMul, whose summation error grows with K
     * (cancellation against the reference's double sums). */
    int64_t K = c->K;
    for (int way = 0; way < 2; way++)
        for (int64_t i = 0; i < n; i++)
            cr_assert(fabs((double)out[way][i] - out[2][i]) <=
                          1e-5 * maxabs * (way == 0 ? 1.0 : fmax(1.0, (double)K / 64)),
                      "%s: way %d element %lld: %.9g vs reference %.9g (max %.3g)\n%s", c->what,
                      way, (long long)i, out[way][i], out[2][i], maxabs, way ? "" : log);
    for (int way = 0; way < 3; way++)
        free(out[way]);
}

/* The largest magnitude of the case's result without its post-ops (the
 * same case rebuilt from the same random state, on the reference). */
static double pre_epilogue_scale(uint32_t state, form f, int64_t M, int64_t K, int64_t N,
                                 bool per_channel, bool w_zp, bool s8_src)
{
    uint32_t saved = test_rng;
    test_rng = state;
    dyn_case c;
    build(&c, f, M, K, N, per_channel, w_zp, s8_src, 0);
    int64_t n = dqg_tensor_element_count(c.g, c.y);
    float *out = malloc((size_t)n * sizeof(float));
    double m = 1e-30;
    if (run(&c, 2, out, NULL, 0) == DQG_OK)
        for (int64_t i = 0; i < n; i++)
            m = fmax(m, fabs(out[i]));
    free(out);
    free_case(&c);
    test_rng = saved;
    return m;
}

static void one_case(form f, int64_t M, int64_t K, int64_t N, bool per_channel, bool w_zp,
                     bool s8_src, int n_post)
{
    uint32_t state = test_rng;
    dyn_case c;
    build(&c, f, M, K, N, per_channel, w_zp, s8_src, n_post);
    check(&c, pre_epilogue_scale(state, f, M, K, N, per_channel, w_zp, s8_src));
    free_case(&c);
}

static void random_cases(form f, uint32_t seed, int count)
{
    test_rng = seed;
    for (int i = 0; i < count; i++) {
        static const int64_t Ms[] = {1, 2, 3, 7, 16, 31, 64, 97, 128, 257, 300};
        int64_t M = Ms[rin(0, 10)], K = rin(1, 300), N = rin(1, 200);
        bool pc = rin(0, 1), wz = rin(0, 3) == 0;
        bool s8 = f != FORM_DQL && f != FORM_ORT && rin(0, 1);
        one_case(f, M, K, N, pc, wz, s8, (int)rin(0, 2));
    }
}

Test(dynamic, dynamic_quantize_linear_then_dequantize)
{
    random_cases(FORM_DQL, 101, 25);
}

Test(dynamic, dynamic_dequantize_runtime_scale_and_zero_point)
{
    random_cases(FORM_DYN_DEQ, 202, 25);
}

Test(dynamic, dynamic_quantize_dequantize_pair)
{
    random_cases(FORM_DYN_PAIR, 303, 25);
}

Test(dynamic, matmulinteger_cast_mul_as_written_by_onnxruntime)
{
    random_cases(FORM_ORT, 404, 25);
}

/* The same with u8 weights: they run on the int8 kernel, within the
 * contract; as w - zp + c in s8 with c as oneDNN's weights zero point
 * (one zero point), or as w - 128 with a row term per column (one per
 * column), whose row sums take the source zero point the kernel computed. */
Test(dynamic, matmulinteger_with_u8_weights_as_written_by_onnxruntime)
{
    u8_weights = true;
    random_cases(FORM_ORT, 414, 25);
    u8_weights = false;
}

/* u8 weights behind DynamicDequantize and a DynamicQuantize pair: the row
 * term's source zero point is a graph input. */
Test(dynamic, u8_weights_with_a_run_time_source_zero_point)
{
    u8_weights = true;
    random_cases(FORM_DYN_DEQ, 424, 25);
    random_cases(FORM_DYN_PAIR, 434, 25);
    u8_weights = false;
}

/* The bias rides in the int8 matmul's bias argument divided by the
 * run-time scale, per execution; a scale that leaves no finite, normal
 * quotient (0, 1e-38 and a denormal against biases near 1) runs the matmul
 * built with the bias as a post-op, and a huge one (1e30) the argument:
 * every one the reference's results, per tensor and per channel. */
Test(dynamic, run_time_scales_past_the_bias_argument_take_the_post_op)
{
    static const float scales[] = {0.0f, 1e-38f, 3e-39f, 1e30f, 0.02f};
    for (int i = 0; i < 5; i++)
        for (int pc = 0; pc < 2; pc++) {
            test_rng = 606 + (uint32_t)(i * 2 + pc);
            dyn_case c;
            build(&c, FORM_DYN_DEQ, 16, 64, 48, pc, false, false, 0);
            ((float *)c.in[0].data)[0] = scales[i];
            snprintf(c.what + strlen(c.what), sizeof c.what - strlen(c.what), " x_scale %g",
                     (double)scales[i]);
            check(&c, 0.0);
            free_case(&c);
        }
}

/* A GELU last in the chain of an f32 result runs as dqgraph's own pass
 * over the result after the primitive where the CPU has AVX-512 (oneDNN's
 * gelu_erf post-op below it), after the primitive with the bias argument
 * and after the one with the bias as a post-op (a zero scale) alike. The
 * pass is within 2e-7 |x| of GELU (tests/test_nn_ops.c), far inside the
 * contract's 1e-5 of the largest magnitude. */
Test(dynamic, a_final_gelu_runs_after_the_primitive)
{
    gelu_last = true;
    random_cases(FORM_ORT, 515, 10);
    random_cases(FORM_DQL, 525, 10);
    static const float scales[] = {0.0f, 3e-39f, 0.02f};
    for (int i = 0; i < 3; i++) {
        test_rng = 535 + (uint32_t)i;
        dyn_case c;
        build(&c, FORM_DYN_DEQ, 16, 64, 2100, i == 2, false, false, 0);
        ((float *)c.in[0].data)[0] = scales[i];
        snprintf(c.what + strlen(c.what), sizeof c.what - strlen(c.what), " x_scale %g",
                 (double)scales[i]);
        check(&c, 0.0);
        free_case(&c);
    }
    gelu_last = false;
}

/* A few large layers, K and N up to 4096. */
Test(dynamic, large_layers)
{
    test_rng = 505;
    static const int64_t shapes[][3] = {{1, 4096, 512}, {33, 1024, 768}, {4, 768, 4096}};
    for (int s = 0; s < 3; s++)
        for (int f = 0; f < 4; f++)
            one_case((form)f, shapes[s][0], shapes[s][1], shapes[s][2], true, false, false, 1);
}

/* DynamicQuantizeLinear -> DequantizeLinear -> Conv (-> ReLU), both data
 * formats, 1-D and 2-D, grouped: the quantization runs inside the int8
 * convolution, on the source in whichever layout the convolution reads. A
 * second convolution after the first makes the channels-last choice
 * matter. */
static void conv_case(int sr, dqg_data_format fmt, int64_t groups, bool chain, bool ort, bool u8w)
{
    dyn_case c;
    memset(&c, 0, sizeof c);
    cr_assert_eq(dqg_graph_create(&c.g), DQG_OK);
    dqg_graph *g = c.g;
    int64_t cg = rin(1, 6), og = rin(1, 6), C = groups * cg, O = groups * og, one = 1;
    int64_t xd[4] = {rin(1, 2)}, wd[4] = {O, cg}, n_x = xd[0] * C;
    dqg_conv_attrs a = {.spatial_rank = sr, .groups = groups, .data_format = fmt};
    for (int i = 0; i < sr; i++) {
        int64_t k = rin(1, 3), d = k + rin(0, 6);
        a.strides[i] = a.dilations[i] = 1;
        a.pads_begin[i] = a.pads_end[i] = rin(0, k - 1);
        wd[2 + i] = k;
        xd[fmt == DQG_FORMAT_NCX ? 2 + i : 1 + i] = d;
        n_x *= d;
    }
    xd[fmt == DQG_FORMAT_NCX ? 1 : sr + 1] = C;
    dqg_tensor_id x = add_input(&c, "x", DQG_F32, sr + 2, xd), xs, xz;
    fill_activations(c.in[0].data, 1, n_x);
    dqg_tensor_id xq = dqg_dynamic_quantize_linear(g, "dql", x, &xs, &xz);
    dqg_dequantize_linear_attrs da = {.opset = 13};
    float unit = 1.0f;
    dqg_tensor_id t =
        dqg_dequantize_linear(g, "x_dq", xq, ort ? test_const_f32(g, 0, &one, &unit) : xs, xz, &da);
    int64_t nw = O * cg;
    for (int i = 0; i < sr; i++)
        nw *= wd[2 + i];
    int8_t *w = malloc((size_t)nw);
    for (int64_t i = 0; i < nw; i++)
        w[i] = u8w ? (int8_t)(uint8_t)rin(0, 255) : (int8_t)rin(-127, 127);
    float ws = rf(0.002f, 0.02f);
    /* u8 weights: one zero point anywhere in 0..255 (w - zp leaves s8) */
    uint8_t wz = (uint8_t)rin(0, 255);
    dqg_tensor_id wdq = dqg_dequantize_linear(
        g, "w_dq", dqg_constant(g, "w_q", u8w ? DQG_U8 : DQG_S8, sr + 2, wd, w, (size_t)nw),
        test_const_f32(g, 0, &one, ort ? &unit : &ws),
        u8w ? dqg_constant(g, NULL, DQG_U8, 0, &one, &wz, 1) : DQG_NONE, &da);
    free(w);
    t = dqg_convolution(g, "conv", t, wdq, DQG_NONE, &a);
    if (ort) {
        /* ConvInteger -> Cast -> Mul(x_scale * w_scale), as ONNX Runtime's
         * dynamic quantizer writes it. */
        t = dqg_typecast(g, "cast", dqg_typecast(g, "to_int32", t, DQG_S32), DQG_F32);
        t = dqg_mul(g, "mul", t, dqg_mul(g, "scale", xs, test_const_f32(g, 0, &one, &ws)));
    }
    t = dqg_relu(g, "relu", t);
    if (chain) {
        /* A 1x1 f32 convolution reading the result: the layout pass puts
         * both in channels-last. */
        int64_t w2d[4] = {O, 1, 1, 1};
        float *w2 = malloc((size_t)O * sizeof *w2);
        for (int64_t i = 0; i < O; i++)
            w2[i] = rf(-1, 1);
        dqg_conv_attrs a2 = {.spatial_rank = sr, .groups = O, .data_format = fmt};
        for (int i = 0; i < sr; i++)
            a2.strides[i] = a2.dilations[i] = 1;
        t = dqg_convolution(g, "conv2", t, test_const_f32(g, sr + 2, w2d, w2), DQG_NONE, &a2);
        free(w2);
    }
    c.y = t;
    c.K = cg * wd[2] * (sr > 1 ? wd[3] : 1);
    dqg_output(g, t, "y");
    finalize_ok(g);
    snprintf(c.what, sizeof c.what,
             "DynamicQuantizeLinear conv %dD %s groups=%lld C=%lld O=%lld%s%s%s", sr,
             fmt == DQG_FORMAT_NCX ? "NCX" : "NXC", (long long)groups, (long long)C, (long long)O,
             chain ? " chained" : "", ort ? " ConvInteger" : "", u8w ? " u8 weights" : "");
    check(&c, 0.0);
    free_case(&c);
}

Test(dynamic, dynamic_quantize_linear_into_convolution)
{
    test_rng = 606;
    for (int i = 0; i < 24; i++)
        conv_case((int)rin(1, 2), rin(0, 1) ? DQG_FORMAT_NCX : DQG_FORMAT_NXC, rin(1, 3),
                  i % 3 == 0, i % 2 == 1, false);
}

/* The same with u8 weights whose zero point leaves s8 (ONNX Runtime's
 * QUInt8 weights): the window term reads the source zero point the
 * kernel computes quantizing its source. */
Test(dynamic, u8_weights_into_convolution)
{
    test_rng = 707;
    for (int i = 0; i < 24; i++)
        conv_case((int)rin(1, 2), rin(0, 1) ? DQG_FORMAT_NCX : DQG_FORMAT_NXC, rin(1, 3),
                  i % 3 == 0, i % 2 == 1, true);
}

/* The implementation oneDNN picks for a run-time-scale fused MatMul is the
 * one it picks for the same layer with constant scales: the run-time scale
 * is a post-op, not run-time output scales (which send oneDNN 2.6 from
 * brgemm to gemm:jit). */
static const char *impl_of(dqg_compiled *c)
{
    for (size_t i = 0; i < dqg_compiled_partition_count(c); i++) {
        const char *info = dqg_compiled_partition_info(c, i);
        const char *p = strstr(info, "-> onednn:matmul:");
        if (p)
            return p;
    }
    return "";
}

Test(dynamic, runtime_scale_keeps_the_constant_scale_implementation)
{
    if (!test_int8_fusion())
        return; /* no int8 kernel to compare (the fusion tests check the refusal) */
    static const int64_t shapes[][3] = {{1, 1024, 1024}, {128, 1024, 1024}, {16, 512, 256}};
    for (int s = 0; s < 3; s++) {
        int64_t M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
        char impl[2][200];
        for (int runtime = 0; runtime < 2; runtime++) {
            dqg_graph *g;
            cr_assert_eq(dqg_graph_create(&g), DQG_OK);
            int64_t xd[] = {M, K}, wd[] = {K, N}, one = 1;
            int8_t *w = calloc((size_t)(K * N), 1);
            float *ws = malloc((size_t)N * sizeof(float));
            for (int64_t i = 0; i < N; i++)
                ws[i] = 0.01f;
            float xs = 0.02f;
            uint8_t xz = 3;
            dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
            dqg_tensor_id sc =
                runtime ? dqg_input(g, "s", DQG_F32, 1, &one) : test_const_f32(g, 1, &one, &xs);
            dqg_tensor_id zp = runtime ? dqg_input(g, "z", DQG_U8, 1, &one)
                                       : dqg_constant(g, "z", DQG_U8, 1, &one, &xz, 1);
            dqg_tensor_id a = dqg_dynamic_dequantize(g, "x_dq", x, sc, zp, "per_tensor", 0);
            dqg_dequantize_linear_attrs wa = {.opset = 13, .has_axis = true, .axis = 1};
            dqg_tensor_id b = dqg_dequantize_linear(
                g, "w_dq", dqg_constant(g, "w", DQG_S8, 2, wd, w, (size_t)(K * N)),
                test_const_f32(g, 1, &N, ws), DQG_NONE, &wa);
            dqg_output(g, dqg_matmul(g, "mm", a, b, NULL), "y");
            finalize_ok(g);
            dqg_compiled *c = NULL;
            cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(dqg_compiled_fused_count(c), 1);
            snprintf(impl[runtime], sizeof impl[runtime], "%s", impl_of(c));
            dqg_compiled_destroy(c);
            dqg_graph_destroy(g);
            free(w);
            free(ws);
        }
        /* Without VNNI int8 is not fused at all (see the fusion tests). */
        cr_assert(impl[0][0], "no int8 matmul for M=%lld", (long long)M);
        cr_assert_str_eq(impl[0], impl[1], "M=%lld K=%lld N=%lld: constant %s, run-time %s",
                         (long long)M, (long long)K, (long long)N, impl[0], impl[1]);
        /* AVX-512 has a brgemm int8 matmul; AVX2-VNNI only gemm:jit. */
        if (!test_avx2_vnni())
            cr_assert(!strstr(impl[1], "gemm:jit"), "%s", impl[1]);
    }
}

/* NaN or infinite activations: DynamicQuantizeLinear has no defined range;
 * every path refuses with the same message. */
Test(dynamic, nan_and_inf_activations_are_refused_alike)
{
    for (int bad = 0; bad < 3; bad++) {
        test_rng = 606;
        dyn_case c;
        build(&c, FORM_DQL, 4, 8, 5, false, false, false, 0);
        ((float *)c.in[0].data)[9] = bad == 0 ? NAN : bad == 1 ? INFINITY : -INFINITY;
        char msg[3][512];
        float out[20];
        for (int way = 0; way < 3; way++) {
            dqg_status st = run(&c, way, out, NULL, 0);
            cr_assert_eq(st, DQG_INVALID_ARGUMENT, "way %d: %s", way, dqg_status_name(st));
            snprintf(msg[way], sizeof msg[way], "%s", dqg_last_error());
            cr_assert(strstr(msg[way], "DynamicQuantizeLinear 'dql'"), "%s", msg[way]);
        }
        cr_assert_str_eq(msg[0], msg[2]);
        cr_assert_str_eq(msg[1], msg[2]);
        free_case(&c);
    }
}
