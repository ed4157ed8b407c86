/* Compile once: a second compile of the same graph returns its plan after
 * one hash and one comparison; a different graph with an identical
 * partition reuses that partition's kernel. Neither runs a constant
 * transform (fold, pack, zero-point fold, relayout) again, and both give
 * bit-identical results. Refusals are remembered too. */
#include <stdlib.h>

#include "test_common.h"

static dqg_tensor_id cf32(dqg_graph *g, const char *name, int rank, const int64_t *d,
                          const float *v)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    return dqg_constant(g, name, DQG_F32, rank, d, v, (size_t)n * sizeof(float));
}

/* A graph with every kind of constant work: an int8 MatMul (zero-point
 * fold, packing), a weight-only int4 MatMul, and a constant Transpose
 * folded into an f32 MatMul's weights. `tag` changes every name, not the
 * partitions. */
static dqg_graph *model(const char *tag)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    char n[64];
#define NAME(s) (snprintf(n, sizeof n, "%s%s", tag, s), n)
    enum { M = 3, K = 64, N = 48 };
    int64_t xd[] = {M, K}, wd[] = {K, N}, wt[] = {N, K}, one = 1, nn = N;
    static int8_t w8[K * N];
    static uint8_t w4[K * N / 2];
    static float wf[N * K], ws[N];
    for (int i = 0; i < K * N; i++) {
        w8[i] = (int8_t)(i * 37 % 251 - 125);
        wf[i] = (float)(i % 13) * 0.01f - 0.05f;
    }
    for (int i = 0; i < K * N / 2; i++)
        w4[i] = (uint8_t)(i * 29);
    for (int i = 0; i < N; i++)
        ws[i] = 0.001f * (float)(i + 1);
    float xs = 0.05f, w4s = 0.02f;
    uint8_t xz = 7;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_dequantize_linear_attrs pt = {.opset = 21}, pc = {.opset = 21, .has_axis = true, .axis = 1};
    dqg_tensor_id a =
        dqg_dequantize_linear(g, NAME("x_dq"), x, cf32(g, NAME("xs"), 0, &one, &xs),
                              dqg_constant(g, NAME("xz"), DQG_U8, 0, &one, &xz, 1), &pt);
    dqg_tensor_id b8 = dqg_dequantize_linear(
        g, NAME("w8_dq"), dqg_constant(g, NAME("w8"), DQG_S8, 2, wd, w8, sizeof w8),
        cf32(g, NAME("ws"), 1, &nn, ws), DQG_NONE, &pc);
    dqg_tensor_id y8 = dqg_matmul(g, NAME("mm8"), a, b8, NULL);
    /* weight-only int4 [48, 64] on the int8 layer's f32 output */
    int64_t wd4[] = {N, K};
    dqg_tensor_id b4 = dqg_dequantize_linear(
        g, NAME("w4_dq"), dqg_constant(g, NAME("w4"), DQG_S4, 2, wd4, w4, (size_t)(N * K / 2)),
        cf32(g, NAME("w4s"), 0, &one, &w4s), DQG_NONE, &pt);
    dqg_tensor_id y4 = dqg_matmul(g, NAME("mm4"), y8, b4, NULL);
    /* f32 weights behind a constant Transpose (folded) */
    dqg_tensor_id wtr = dqg_transpose(g, NAME("wt"), cf32(g, NAME("wf"), 2, wt, wf), NULL);
    dqg_tensor_id y = dqg_matmul(g, NAME("mmf"), y4, wtr, NULL);
#undef NAME
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
    finalize_ok(g);
    return g;
}

static void run(dqg_compiled *c, float *y)
{
    uint8_t x[3 * 64];
    for (int i = 0; i < 3 * 64; i++)
        x[i] = (uint8_t)(i * 13);
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = y, .size = 3 * 48 * sizeof(float)};
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
}

static dqg_compiled *compile_ok(const dqg_graph *g)
{
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    return c;
}

Test(compile_cache, second_compile_of_a_graph_runs_no_pass_and_no_transform)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(64);
    dqg_graph *g = model("a_");
    dqg_compiled *c1 = compile_ok(g);
    dqg_cache_stats s1;
    dqg_cache_get_stats(&s1);
    cr_assert_eq(s1.plan_misses, 1);
    cr_assert(s1.constant_transforms >= 3, "the first compile folds and packs (%llu)",
              (unsigned long long)s1.constant_transforms);
    cr_assert(s1.passes_ms > 0 && s1.hash_ms > 0 && s1.compile_ms > 0);
    dqg_compiled *c2 = compile_ok(g);
    dqg_cache_stats s2;
    dqg_cache_get_stats(&s2);
    cr_assert_eq(s2.plan_hits, 1);
    cr_assert_eq(s2.plan_misses, 1, "no second run of the passes");
    cr_assert_eq(s2.constant_transforms, s1.constant_transforms);
    cr_assert_eq(s2.misses, s1.misses, "no kernel built");
    cr_assert_eq(s2.passes_ms, s1.passes_ms, "no time in the passes");
    cr_assert_eq(dqg_compiled_cache_hits(c2), dqg_compiled_partition_count(c2));
    float y1[144], y2[144];
    run(c1, y1);
    run(c2, y2);
    cr_assert_arr_eq(y1, y2, sizeof y1);
    dqg_compiled_destroy(c1);
    /* The plan outlives the compiled graph that built it, and the graph. */
    dqg_graph_destroy(g);
    run(c2, y2);
    cr_assert_arr_eq(y1, y2, sizeof y1);
    dqg_compiled_destroy(c2);
}

Test(compile_cache, identical_partitions_of_another_graph_run_no_transform)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(64);
    dqg_graph *a = model("a_"), *b = model("b_");
    dqg_compiled *ca = compile_ok(a);
    dqg_cache_stats s1;
    dqg_cache_get_stats(&s1);
    dqg_compiled *cb = compile_ok(b);
    dqg_cache_stats s2;
    dqg_cache_get_stats(&s2);
    cr_assert_eq(s2.plan_misses, 2, "names differ: another plan");
    cr_assert_eq(s2.misses, s1.misses, "every partition is found");
    cr_assert_eq(s2.constant_transforms, s1.constant_transforms,
                 "folded constants and packed weights come from the cache");
    cr_assert_eq(dqg_compiled_cache_hits(cb), dqg_compiled_partition_count(cb));
    float ya[144], yb[144];
    run(ca, ya);
    run(cb, yb);
    cr_assert_arr_eq(ya, yb, sizeof ya);
    dqg_compiled_destroy(ca);
    dqg_compiled_destroy(cb);
    dqg_graph_destroy(a);
    dqg_graph_destroy(b);
}

Test(compile_cache, every_option_and_isa_keys_the_plan)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(64);
    dqg_graph *g = model("a_");
    dqg_compile_options o[4];
    for (int i = 0; i < 4; i++)
        o[i] = dqg_compile_options_default();
    o[1].disable_fusion = true;
    o[2].threads = 1;
    o[3].backend = DQG_BACKEND_REFERENCE;
    for (int i = 0; i < 4; i++) {
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, &o[i], &c), DQG_OK, "%s", dqg_last_error());
        dqg_compiled_destroy(c);
    }
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.plan_misses, 4);
    cr_assert_eq(s.plan_hits, 0);
    dqg_graph_destroy(g);
}

Test(compile_cache, capacity_zero_keeps_plans_private)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(0);
    dqg_graph *g = model("a_");
    dqg_compiled *c1 = compile_ok(g), *c2 = compile_ok(g);
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.plans, 0);
    cr_assert_eq(s.plan_hits, 0);
    float y1[144], y2[144];
    run(c1, y1);
    run(c2, y2);
    cr_assert_arr_eq(y1, y2, sizeof y1);
    dqg_compiled_destroy(c1);
    dqg_compiled_destroy(c2);
    dqg_graph_destroy(g);
    dqg_cache_set_capacity(1024);
}

/* A refused int8 kernel (weights whose int32 sums could overflow: K =
 * 70000 of |w| = 127 against u8 sources) is remembered: the next graph with
 * that partition gets the refusal from the cache, without folding the
 * weights again, and the same fallback. */
Test(compile_cache, a_refusal_is_remembered)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(64);
    dqg_graph *gs[2];
    enum { K = 70000, N = 2 };
    static int8_t w[K * N];
    for (int i = 0; i < K * N; i++)
        w[i] = (int8_t)(i % 3 ? 127 : -127);
    for (int v = 0; v < 2; v++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t xd[] = {2, K}, wd[] = {K, N}, one = 1;
        uint8_t xz = 1;
        float xs = 0.1f, ws = 0.01f;
        dqg_dequantize_linear_attrs at = {.opset = 13};
        dqg_tensor_id a = dqg_dequantize_linear(
            g, v ? "xdq_b" : "xdq_a", dqg_input(g, "x", DQG_U8, 2, xd), cf32(g, NULL, 0, &one, &xs),
            dqg_constant(g, NULL, DQG_U8, 0, &one, &xz, 1), &at);
        dqg_tensor_id b = dqg_dequantize_linear(g, v ? "wdq_b" : "wdq_a",
                                                dqg_constant(g, NULL, DQG_S8, 2, wd, w, sizeof w),
                                                cf32(g, NULL, 0, &one, &ws), DQG_NONE, &at);
        dqg_output(g, dqg_matmul(g, v ? "mm_b" : "mm_a", a, b, NULL), "y");
        finalize_ok(g);
        gs[v] = g;
    }
    dqg_compiled *c0 = compile_ok(gs[0]);
    dqg_cache_stats s1;
    dqg_cache_get_stats(&s1);
    dqg_compiled *c1 = compile_ok(gs[1]);
    dqg_cache_stats s2;
    dqg_cache_get_stats(&s2);
    cr_assert_eq(s2.constant_transforms, s1.constant_transforms);
    cr_assert_eq(s2.misses, s1.misses);
    bool refused = false;
    for (size_t i = 0; i < dqg_compiled_explain_count(c1); i++)
        refused |= strstr(dqg_compiled_explain(c1, i),
                          test_int8_fusion() ? "could overflow" : TEST_NO_INT8_REASON) != NULL;
    cr_assert(refused, "the remembered refusal is explained");
    cr_assert_eq(dqg_compiled_fused_count(c1), 1, "the weight-only fallback");
    dqg_compiled_destroy(c0);
    dqg_compiled_destroy(c1);
    dqg_graph_destroy(gs[0]);
    dqg_graph_destroy(gs[1]);
}
