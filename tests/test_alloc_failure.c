/* Allocation failures anywhere in import, build, compile and execute: each
 * allocation of the library in turn is made to fail (once, and from there
 * on), and the call must return DQG_OUT_OF_MEMORY with an "out of memory"
 * message — or succeed when the failure is recoverable — and leave the
 * graph, the cache and the caller's buffers usable: the same call without
 * the failure gives the exact result. Under ASan these runs also prove that
 * no failure path leaks. */
#include <math.h>
#include <stdlib.h>

#include "dqgraph_onnx.h"
#include "graph/fault_injection.h"
#include "support/onnx_model.h"
#include "test_common.h"

enum { M = 8, K = 32, N = 16 };

/* x -> Q(u8) -> DQ -> MatMul(DQ(w s8 per-channel)) -> + b -> ReLU -> y1,
 * a leftover int4 dequantize (dqgraph's own kernel) -> y2, the same source
 * times u8 weights with per-column zero points (a row term) -> y3, and as
 * [1, M, K] into a 1-D convolution of u8 weights with one zero point that
 * leaves s8 (a window term) -> y4. */
static dqg_graph *build(void)
{
    dqg_graph *g = NULL;
    if (dqg_graph_create(&g) != DQG_OK)
        return NULL;
    static int8_t w[K * N];
    static float ws[N], b[N];
    static uint8_t w4[K * N / 2], wu[K * N], wz[N];
    for (int i = 0; i < K * N; i++) {
        w[i] = (int8_t)((i * 29) % 255 - 127);
        wu[i] = (uint8_t)(i * 37);
    }
    for (int i = 0; i < N; i++) /* per-column zero points beyond s8: a row term */
        wz[i] = (uint8_t)(i % 2 ? 20 : 230);
    for (int i = 0; i < K * N / 2; i++)
        w4[i] = (uint8_t)(i * 7);
    for (int i = 0; i < N; i++) {
        ws[i] = 0.01f * (float)(1 + i % 3);
        b[i] = 0.1f * (float)(i % 5) - 0.2f;
    }
    int64_t xd[] = {M, K}, wd[] = {K, N}, nd[] = {N};
    const float xs = 0.05f, one = 0.5f;
    const uint8_t xz = 128;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    dqg_tensor_id s = dqg_constant(g, "xs", DQG_F32, 0, NULL, &xs, 4);
    dqg_tensor_id z = dqg_constant(g, "xz", DQG_U8, 0, NULL, &xz, 1);
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_tensor_id xq = dqg_quantize_linear(g, "q_x", x, s, z, &qa);
    dqg_tensor_id xf = dqg_dequantize_linear(g, "dq_x", xq, s, z, &da);
    dqg_dequantize_linear_attrs wa = {.opset = 13, .has_axis = true, .axis = 1};
    dqg_tensor_id wf =
        dqg_dequantize_linear(g, "dq_w", dqg_constant(g, "w", DQG_S8, 2, wd, w, sizeof w),
                              dqg_constant(g, "ws", DQG_F32, 1, nd, ws, sizeof ws), DQG_NONE, &wa);
    dqg_tensor_id y = dqg_relu(g, "relu",
                               dqg_add(g, "bias", dqg_matmul(g, "mm", xf, wf, NULL),
                                       dqg_constant(g, "b", DQG_F32, 1, nd, b, sizeof b)));
    dqg_dequantize_linear_attrs a21 = {.opset = 21};
    dqg_tensor_id y2 =
        dqg_dequantize_linear(g, "dq4", dqg_constant(g, "w4", DQG_S4, 2, wd, w4, sizeof w4),
                              dqg_constant(g, "half", DQG_F32, 0, NULL, &one, 4), DQG_NONE, &a21);
    dqg_tensor_id y3 = dqg_matmul(
        g, "mm_u8", xf,
        dqg_dequantize_linear(g, "dq_wu", dqg_constant(g, "wu", DQG_U8, 2, wd, wu, sizeof wu),
                              dqg_constant(g, "wus", DQG_F32, 1, nd, ws, sizeof ws),
                              dqg_constant(g, "wuz", DQG_U8, 1, nd, wz, sizeof wz), &wa),
        NULL);
    static uint8_t cw[4 * M * 3];
    for (int i = 0; i < 4 * M * 3; i++)
        cw[i] = (uint8_t)(i * 53 + 7);
    const int64_t xd3[] = {1, M, K}, cwd[] = {4, M, 3};
    const uint8_t cz = 100;
    dqg_conv_attrs ca = {.spatial_rank = 1, .pads_begin = {1}, .pads_end = {1}};
    dqg_tensor_id y4 = dqg_convolution(
        g, "conv_u8",
        dqg_dequantize_linear(g, "dq_x3", dqg_reshape(g, "r3", xq, 3, xd3), s, z, &da),
        dqg_dequantize_linear(g, "dq_cw", dqg_constant(g, "cw", DQG_U8, 3, cwd, cw, sizeof cw),
                              dqg_constant(g, "cws", DQG_F32, 0, NULL, &ws[1], 4),
                              dqg_constant(g, "cwz", DQG_U8, 0, NULL, &cz, 1), &da),
        DQG_NONE, &ca);
    dqg_output(g, y, "y1");
    dqg_output(g, y2, "y2");
    dqg_output(g, y3, "y3");
    dqg_output(g, y4, "y4");
    dqg_status st = dqg_graph_finalize(g);
    if (st != DQG_OK) {
        dqg_graph_destroy(g);
        return NULL;
    }
    return g;
}

static float X[M * K];

/* Executes c and compares with the reference interpreter's results. */
static void check_results(dqg_graph *g, dqg_compiled *c)
{
    static float y1[M * N], y2[K * N], y3[M * N], y4[4 * K], r1[M * N], r2[K * N], r3[M * N],
        r4[4 * K];
    dqg_buffer in = {.name = "x", .data = X, .size = sizeof X};
    dqg_buffer out[4] = {{.name = "y1", .data = y1, .size = sizeof y1},
                         {.name = "y2", .data = y2, .size = sizeof y2},
                         {.name = "y3", .data = y3, .size = sizeof y3},
                         {.name = "y4", .data = y4, .size = sizeof y4}};
    dqg_buffer ref[4] = {{.name = "y1", .data = r1, .size = sizeof r1},
                         {.name = "y2", .data = r2, .size = sizeof r2},
                         {.name = "y3", .data = r3, .size = sizeof r3},
                         {.name = "y4", .data = r4, .size = sizeof r4}};
    cr_assert_eq(dqg_reference_run(g, &in, 1, ref, 4), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, 1, out, 4), DQG_OK, "%s", dqg_last_error());
    /* The numerical contract: within 1e-5 of the output's largest
     * magnitude (a per-element bound trips on cancellation where the layer
     * runs in f32, as it does without VNNI). */
    float maxabs = 0;
    for (int i = 0; i < M * N; i++)
        maxabs = fmaxf(maxabs, fabsf(r1[i]));
    for (int i = 0; i < M * N; i++)
        cr_assert(fabsf(y1[i] - r1[i]) <= 1e-5f * maxabs, "y1[%d] %g vs %g (max %g)", i, y1[i],
                  r1[i], maxabs);
    cr_assert_eq(memcmp(y2, r2, sizeof y2), 0, "y2 differs from the reference");
    float max3 = 0;
    for (int i = 0; i < M * N; i++)
        max3 = fmaxf(max3, fabsf(r3[i]));
    for (int i = 0; i < M * N; i++)
        cr_assert(fabsf(y3[i] - r3[i]) <= 1e-5f * max3, "y3[%d] %g vs %g (max %g)", i, y3[i], r3[i],
                  max3);
    float max4 = 0;
    for (int i = 0; i < 4 * K; i++)
        max4 = fmaxf(max4, fabsf(r4[i]));
    for (int i = 0; i < 4 * K; i++)
        cr_assert(fabsf(y4[i] - r4[i]) <= 1e-5f * max4, "y4[%d] %g vs %g (max %g)", i, y4[i], r4[i],
                  max4);
}

static void init_x(void)
{
    for (int i = 0; i < M * K; i++)
        X[i] = sinf((float)i * 0.3f) * 4.0f;
}

static void expect_oom_or_ok(dqg_status st, const char *what, long nth)
{
    cr_assert(st == DQG_OK || st == DQG_OUT_OF_MEMORY,
              "%s with allocation %ld failing: %s (%s), expected ok or out of memory", what, nth,
              dqg_status_name(st), dqg_last_error());
    if (st == DQG_OUT_OF_MEMORY) {
        cr_assert(strstr(dqg_last_error(), "out of memory") != NULL, "%s: message \"%s\"", what,
                  dqg_last_error());
        /* The message says what could not be allocated, once. */
        cr_assert(strstr(dqg_last_error(), "out of memory: out of memory") == NULL,
                  "%s: message \"%s\"", what, dqg_last_error());
    }
}

Test(alloc_failure, build_and_finalize)
{
    long tried = 0;
    for (int sticky = 0; sticky < 2; sticky++)
        for (long nth = 1;; nth++) {
            dqg_fault_inject_allocations(nth, sticky);
            dqg_graph *g = build();
            long injected = dqg_fault_injected_count();
            dqg_fault_inject_allocations(0, false);
            if (!injected) {
                cr_assert_not_null(g, "no failure injected, yet the build failed: %s",
                                   dqg_last_error());
                dqg_graph_destroy(g);
                break;
            }
            tried++;
            if (g) /* a failure the builder recovered from */
                dqg_graph_destroy(g);
            else
                cr_assert(strstr(dqg_last_error(), "out of memory") != NULL, "nth %ld: \"%s\"", nth,
                          dqg_last_error());
        }
    cr_assert_gt(tried, 20, "only %ld allocations were exercised", tried);
}

Test(alloc_failure, compile_leaves_graph_and_cache_usable)
{
    init_x();
    dqg_graph *g = build();
    cr_assert_not_null(g, "%s", dqg_last_error());
    long tried = 0, failed = 0;
    for (int sticky = 0; sticky < 2; sticky++)
        for (long nth = 1;; nth++) {
            dqg_cache_clear(); /* every compile does the whole work */
            dqg_compiled *c = NULL;
            dqg_fault_inject_allocations(nth, sticky);
            dqg_status st = dqg_compile(g, NULL, &c);
            long injected = dqg_fault_injected_count();
            dqg_fault_inject_allocations(0, false);
            if (!injected) {
                cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
                check_results(g, c);
                dqg_compiled_destroy(c);
                break;
            }
            tried++;
            expect_oom_or_ok(st, "dqg_compile", nth);
            if (st == DQG_OK) {
                check_results(g, c);
                dqg_compiled_destroy(c);
            } else {
                failed++;
                cr_assert_null(c, "a failed compile must leave *out NULL");
            }
            /* The graph and the cache still work: compile again, run, compare. */
            cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "after nth %ld: %s", nth,
                         dqg_last_error());
            check_results(g, c);
            dqg_compiled_destroy(c);
        }
    cr_assert_gt(tried, 50, "only %ld allocations were exercised", tried);
    cr_assert_gt(failed, 0);
    dqg_graph_destroy(g);
}

Test(alloc_failure, execute_leaves_compiled_usable)
{
    init_x();
    dqg_graph *g = build();
    cr_assert_not_null(g);
    for (int backend = 0; backend < 2; backend++) {
        dqg_compile_options o = dqg_compile_options_default();
        o.backend = backend ? DQG_BACKEND_REFERENCE : DQG_BACKEND_ONEDNN;
        for (int sticky = 0; sticky < 2; sticky++)
            for (long nth = 1;; nth++) {
                /* A fresh compiled graph each time: its first execute
                 * allocates the execution context. */
                dqg_compiled *c = NULL;
                cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
                static float y1[M * N], y2[K * N], y3[M * N], y4[4 * K];
                dqg_buffer in = {.name = "x", .data = X, .size = sizeof X};
                dqg_buffer out[4] = {{.name = "y1", .data = y1, .size = sizeof y1},
                                     {.name = "y2", .data = y2, .size = sizeof y2},
                                     {.name = "y3", .data = y3, .size = sizeof y3},
                                     {.name = "y4", .data = y4, .size = sizeof y4}};
                dqg_fault_inject_allocations(nth, sticky);
                dqg_status st = dqg_execute(c, &in, 1, out, 4);
                long injected = dqg_fault_injected_count();
                dqg_fault_inject_allocations(0, false);
                expect_oom_or_ok(st, "dqg_execute", nth);
                check_results(g, c);
                dqg_compiled_destroy(c);
                if (!injected)
                    break;
            }
    }
    dqg_graph_destroy(g);
}

/* MatMul and Convolution results cast to s32 (MatMulInteger, ConvInteger):
 * the integer partition's kernels (chunked oneDNN f32, reference in
 * double) fail cleanly at every allocation of compile and execute, on both
 * backends, and the results stay exact afterwards. */
enum { IK = 300, IC = 33 };
static float IA[2 * IK], IB[IK * 3], IX[IC * 4 * 4], IW[2 * IC * 9];

static dqg_graph *build_integer(void)
{
    dqg_graph *g = NULL;
    if (dqg_graph_create(&g) != DQG_OK)
        return NULL;
    int64_t ad[] = {2, IK}, bd[] = {IK, 3}, xd[] = {1, IC, 4, 4}, wd[] = {2, IC, 3, 3};
    dqg_conv_attrs ca = {.spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 2, bd);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd);
    dqg_tensor_id w = dqg_constant(g, "w", DQG_F32, 4, wd, IW, sizeof IW);
    dqg_output(g, dqg_typecast(g, "c1", dqg_matmul(g, "mm", a, b, NULL), DQG_S32), "y1");
    dqg_output(g, dqg_typecast(g, "c2", dqg_convolution(g, "cv", x, w, DQG_NONE, &ca), DQG_S32),
               "y2");
    if (dqg_graph_finalize(g) != DQG_OK) {
        dqg_graph_destroy(g);
        return NULL;
    }
    return g;
}

/* Executes c; the results must be the reference's exactly. */
static void check_integer(dqg_graph *g, dqg_compiled *c)
{
    static int32_t y1[6], y2[32], r1[6], r2[32];
    dqg_buffer in[3] = {{.name = "a", .data = IA, .size = sizeof IA},
                        {.name = "b", .data = IB, .size = sizeof IB},
                        {.name = "x", .data = IX, .size = sizeof IX}};
    dqg_buffer out[2] = {{.name = "y1", .data = y1, .size = sizeof y1},
                         {.name = "y2", .data = y2, .size = sizeof y2}};
    dqg_buffer ref[2] = {{.name = "y1", .data = r1, .size = sizeof r1},
                         {.name = "y2", .data = r2, .size = sizeof r2}};
    cr_assert_eq(dqg_reference_run(g, in, 3, ref, 2), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, in, 3, out, 2), DQG_OK, "%s", dqg_last_error());
    cr_assert_arr_eq(y1, r1, sizeof y1);
    cr_assert_arr_eq(y2, r2, sizeof y2);
    /* Sums past 2^24 that f32 would have rounded: the exact values. */
    int64_t s = 0;
    for (int k = 0; k < IK; k++)
        s += (int64_t)IA[k] * (int64_t)IB[k * 3];
    cr_assert_eq(r1[0], s, "reference y1[0] = %d, want %lld", r1[0], (long long)s);
}

Test(alloc_failure, integer_results)
{
    for (int i = 0; i < 2 * IK; i++)
        IA[i] = (float)(250 - i % 7);
    for (int i = 0; i < IK * 3; i++)
        IB[i] = (float)(i % 5 ? 255 - i % 3 : -17);
    for (int i = 0; i < IC * 16; i++)
        IX[i] = (float)(251 + i % 5);
    for (int i = 0; i < 2 * IC * 9; i++)
        IW[i] = (float)(i % 4 ? 254 : 9 - i % 11);
    dqg_graph *g = build_integer();
    cr_assert_not_null(g, "%s", dqg_last_error());
    long tried = 0;
    for (int backend = 0; backend < 2; backend++) {
        dqg_compile_options o = dqg_compile_options_default();
        o.backend = backend ? DQG_BACKEND_REFERENCE : DQG_BACKEND_ONEDNN;
        for (int stage = 0; stage < 2; stage++)
            for (long nth = 1;; nth++) {
                dqg_cache_clear();
                dqg_compiled *c = NULL;
                if (stage == 1)
                    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
                static int32_t y1[6], y2[32];
                dqg_buffer in[3] = {{.name = "a", .data = IA, .size = sizeof IA},
                                    {.name = "b", .data = IB, .size = sizeof IB},
                                    {.name = "x", .data = IX, .size = sizeof IX}};
                dqg_buffer out[2] = {{.name = "y1", .data = y1, .size = sizeof y1},
                                     {.name = "y2", .data = y2, .size = sizeof y2}};
                dqg_fault_inject_allocations(nth, true);
                dqg_status st = stage == 0 ? dqg_compile(g, &o, &c) : dqg_execute(c, in, 3, out, 2);
                long injected = dqg_fault_injected_count();
                dqg_fault_inject_allocations(0, false);
                expect_oom_or_ok(st, stage ? "dqg_execute" : "dqg_compile", nth);
                if (stage == 0 && st != DQG_OK) {
                    cr_assert_null(c);
                    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
                }
                check_integer(g, c);
                dqg_compiled_destroy(c);
                if (!injected)
                    break;
                tried++;
            }
    }
    cr_assert_gt(tried, 20, "only %ld allocations were exercised", tried);
    dqg_graph_destroy(g);
}

Test(alloc_failure, onnx_import)
{
    tm_model *m = tm_new(13);
    int64_t xd[] = {2, 4}, wd[] = {4, 3}, yd[] = {2, 3};
    const int8_t w[12] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12};
    const float ws = 0.5f;
    tm_input(m, "x", 1, 2, xd, NULL);
    tm_init(m, "w", 3, 2, wd, w, sizeof w);
    tm_init(m, "ws", 1, 0, NULL, &ws, 4);
    tm_node(m, "DequantizeLinear", NULL, "dq", "w,ws", "wf");
    tm_node(m, "MatMul", NULL, "mm", "x,wf", "h");
    tm_node(m, "Relu", NULL, "r", "h", "y");
    tm_output(m, "y", 1, 2, yd);
    size_t n;
    uint8_t *bytes = tm_pack(m, &n);
    long tried = 0;
    for (long nth = 1;; nth++) {
        dqg_graph *g = NULL;
        dqg_fault_inject_allocations(nth, true);
        dqg_status st = dqg_onnx_load_memory(bytes, n, NULL, NULL, &g);
        long injected = dqg_fault_injected_count();
        dqg_fault_inject_allocations(0, false);
        if (!injected) {
            cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
            dqg_graph_destroy(g);
            break;
        }
        tried++;
        expect_oom_or_ok(st, "dqg_onnx_load_memory", nth);
        if (st == DQG_OK)
            dqg_graph_destroy(g);
        else
            cr_assert_null(g);
    }
    cr_assert_gt(tried, 10);
    free(bytes);
    tm_free(m);
}
