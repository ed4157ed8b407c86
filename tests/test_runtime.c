/* The compiled runtime: compile and execute against the reference
 * interpreter, cache hits across graphs and misses on any key change, buffer
 * reuse, the explain log, concurrent execution, and the buffer rules. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "runtime/cpu_isa.h"
#include "test_common.h"

static dqg_graph *new_graph(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

/* x -> n ReLUs -> y, with the given shape. */
static dqg_graph *relu_chain(int n, int64_t rows, int64_t cols, dqg_dtype dt)
{
    dqg_graph *g = new_graph();
    int64_t dims[] = {rows, cols};
    dqg_tensor_id t = dqg_input(g, "x", dt, 2, dims);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "relu%d", i);
        t = dqg_relu(g, name, t);
    }
    cr_assert_eq(dqg_output(g, t, "y"), DQG_OK);
    finalize_ok(g);
    return g;
}

static dqg_compiled *compile_ok(const dqg_graph *g, const dqg_compile_options *o)
{
    dqg_compiled *c = NULL;
    dqg_status st = dqg_compile(g, o, &c);
    cr_assert_eq(st, DQG_OK, "compile: %s: %s", dqg_status_name(st), dqg_last_error());
    return c;
}

static dqg_status exec_1(dqg_compiled *c, void *in, size_t in_size, void *out, size_t out_size)
{
    dqg_buffer i = {.name = "x", .data = in, .size = in_size};
    dqg_buffer o = {.name = "y", .data = out, .size = out_size};
    return dqg_execute(c, &i, 1, &o, 1);
}

Test(runtime, relu_chain_matches_reference)
{
    dqg_cache_clear();
    dqg_graph *g = relu_chain(3, 5, 7, DQG_F32);
    dqg_compiled *c = compile_ok(g, NULL);
    float in[35], out[35], ref[35];
    for (int i = 0; i < 35; i++)
        in[i] = (float)(i - 17) * 0.5f;
    cr_assert_eq(exec_1(c, in, sizeof in, out, sizeof out), DQG_OK, "%s", dqg_last_error());
    dqg_buffer i = {.name = "x", .data = in, .size = sizeof in};
    dqg_buffer o = {.name = "y", .data = ref, .size = sizeof ref};
    cr_assert_eq(dqg_reference_run(g, &i, 1, &o, 1), DQG_OK);
    cr_assert_arr_eq(out, ref, sizeof out);
    cr_assert_eq(dqg_compiled_partition_count(c), 3);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(runtime, intermediate_buffers_are_reused)
{
    dqg_graph *g = relu_chain(6, 64, 64, DQG_F32);
    dqg_compiled *c = compile_ok(g, NULL);
    /* Five intermediates of 16 KiB: ReLU runs in place, so they share one buffer. */
    cr_assert_eq(dqg_compiled_peak_memory(c), 64 * 64 * sizeof(float));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* Two graphs that differ only in names: the plans differ (they bind and
 * explain by name), the partition is the same kernel. */
Test(runtime, identical_partitions_of_two_graphs_share_an_entry)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(64);
    dqg_graph *a = relu_chain(1, 4, 4, DQG_F32);
    dqg_graph *b = new_graph();
    int64_t dims[] = {4, 4};
    cr_assert_eq(dqg_output(b, dqg_relu(b, "other_name", dqg_input(b, "x", DQG_F32, 2, dims)), "y"),
                 DQG_OK);
    finalize_ok(b);
    dqg_compiled *ca = compile_ok(a, NULL);
    dqg_compiled *cb = compile_ok(b, NULL);
    cr_assert_eq(dqg_compiled_cache_hits(ca), 0);
    cr_assert_eq(dqg_compiled_cache_hits(cb), 1);
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(s.hits, 1);
    cr_assert_eq(s.entries, 1);
    dqg_compiled_destroy(ca);
    dqg_compiled_destroy(cb);
    dqg_graph_destroy(a);
    dqg_graph_destroy(b);
}

/* One key field changed at a time must miss. */
Test(runtime, any_key_field_change_misses)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(64);
    dqg_graph *base = relu_chain(1, 4, 4, DQG_F32);
    dqg_compiled *c0 = compile_ok(base, NULL);
    struct {
        const char *what;
        dqg_graph *g;
        dqg_compile_options o;
    } cases[] = {
        {"dtype", relu_chain(1, 4, 4, DQG_F16), dqg_compile_options_default()},
        {"one dimension", relu_chain(1, 4, 5, DQG_F32), dqg_compile_options_default()},
        {"backend", relu_chain(1, 4, 4, DQG_F32), dqg_compile_options_default()},
        {"fpmath", relu_chain(1, 4, 4, DQG_F32), dqg_compile_options_default()},
    };
    cases[2].o.backend = DQG_BACKEND_REFERENCE;
    /* (bf16 would compile as strict where bf16 is slower: see below) */
    cases[3].o.fpmath = DQG_FPMATH_INT8;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dqg_compiled *c = compile_ok(cases[i].g, &cases[i].o);
        cr_assert_eq(dqg_compiled_cache_hits(c), 0, "changing the %s must miss", cases[i].what);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(cases[i].g);
    }
    dqg_compiled_destroy(c0);
    dqg_graph_destroy(base);
}

/* fpmath bf16 where bf16 is slower than f32 compiles the strict kernels:
 * the partitions are the ones a strict compile made (cache hits); where
 * bf16 is faster they are other kernels (misses). */
Test(runtime, bf16_mode_kept_f32_shares_the_strict_kernels)
{
    setenv("DQG_BF16_DOT", "slow", 1);
    dqg_cache_clear();
    dqg_graph *g = relu_chain(1, 4, 4, DQG_F32);
    dqg_compiled *c0 = compile_ok(g, NULL);
    dqg_compile_options o = dqg_compile_options_default();
    o.fpmath = DQG_FPMATH_BF16;
    dqg_compiled *c = compile_ok(g, &o);
    if (dqg_cpu_bf16_matmul_fast())
        cr_assert_eq(dqg_compiled_cache_hits(c), 0);
    else
        cr_assert_eq(dqg_compiled_cache_hits(c), dqg_compiled_partition_count(c));
    dqg_compiled_destroy(c);
    dqg_compiled_destroy(c0);
    dqg_graph_destroy(g);
}

Test(runtime, dead_ops_are_removed_and_explained)
{
    dqg_graph *g = new_graph();
    int64_t dims[] = {3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, dims);
    dqg_tensor_id y = dqg_relu(g, "used", x);
    dqg_relu(g, "dead", x);
    dqg_output(g, y, "y");
    finalize_ok(g);
    dqg_compiled *c = compile_ok(g, NULL);
    cr_assert_eq(dqg_compiled_partition_count(c), 1);
    bool found = false;
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        found |= strstr(dqg_compiled_explain(c, i), "removed: ReLU 'dead'") != NULL;
    cr_assert(found, "the explain log names the removed op");
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(runtime, input_overlapping_output_is_rejected)
{
    dqg_graph *g = relu_chain(1, 2, 4, DQG_F32);
    dqg_compiled *c = compile_ok(g, NULL);
    float buf[12] = {0};
    expect_error(exec_1(c, buf, 8 * sizeof(float), buf + 4, 8 * sizeof(float)),
                 DQG_INVALID_ARGUMENT, "overlaps");
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(runtime, wrong_size_and_missing_buffers)
{
    dqg_graph *g = relu_chain(1, 2, 4, DQG_F32);
    dqg_compiled *c = compile_ok(g, NULL);
    float in[8] = {0}, out[8];
    expect_error(exec_1(c, in, 7 * sizeof(float), out, sizeof out), DQG_INVALID_ARGUMENT, "execute",
                 "'x'", "28 bytes", "needs 32");
    dqg_buffer o = {.name = "y", .data = out, .size = sizeof out};
    expect_error(dqg_execute(c, NULL, 0, &o, 1), DQG_INVALID_ARGUMENT, "input 'x' has no buffer");
    expect_error(dqg_execute(NULL, NULL, 0, &o, 1), DQG_INVALID_ARGUMENT, "NULL");
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(runtime, compile_rejects_bad_arguments)
{
    dqg_compiled *c = NULL;
    expect_error(dqg_compile(NULL, NULL, &c), DQG_INVALID_ARGUMENT, "graph is NULL");
    dqg_graph *g = new_graph();
    int64_t d = 2;
    dqg_output(g, dqg_relu(g, "r", dqg_input(g, "x", DQG_F32, 1, &d)), "y");
    expect_error(dqg_compile(g, NULL, &c), DQG_INVALID_ARGUMENT, "not finalized");
    finalize_ok(g);
    dqg_compile_options o = dqg_compile_options_default();
    o.threads = -1;
    expect_error(dqg_compile(g, &o, &c), DQG_INVALID_ARGUMENT, "threads");
    o.threads = DQG_MAX_THREADS + 1; /* thread creation would fail or crash in OpenMP */
    expect_error(dqg_compile(g, &o, &c), DQG_INVALID_ARGUMENT, "threads is 1025", "1 to 1024");
    o = dqg_compile_options_default();
    o.backend = (dqg_backend)7;
    expect_error(dqg_compile(g, &o, &c), DQG_INVALID_ARGUMENT, "backend");
    cr_assert_null(c);
    dqg_graph_destroy(g);
}

typedef struct exec_job {
    dqg_compiled *c;
    int seed;
    int failures;
} exec_job;

static void *exec_worker(void *arg)
{
    exec_job *j = arg;
    float in[256], out[256];
    for (int it = 0; it < 200; it++) {
        for (int i = 0; i < 256; i++)
            in[i] = (float)((i * 31 + j->seed * 7 + it) % 97) - 48.0f;
        if (exec_1(j->c, in, sizeof in, out, sizeof out) != DQG_OK) {
            j->failures++;
            continue;
        }
        for (int i = 0; i < 256; i++)
            if (out[i] != (in[i] < 0 ? 0.0f : in[i]))
                j->failures++;
    }
    return NULL;
}

Test(runtime, concurrent_execution_of_one_compiled_graph)
{
    dqg_graph *g = relu_chain(4, 16, 16, DQG_F32);
    dqg_compiled *c = compile_ok(g, NULL);
    pthread_t t[4];
    exec_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (exec_job){.c = c, .seed = i};
        pthread_create(&t[i], NULL, exec_worker, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(jobs[i].failures, 0, "thread %d saw %d wrong results", i, jobs[i].failures);
    }
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(runtime, reference_backend_and_cache_disabled)
{
    dqg_cache_set_capacity(0);
    dqg_graph *g = relu_chain(2, 3, 3, DQG_BF16);
    dqg_compile_options o = dqg_compile_options_default();
    o.backend = DQG_BACKEND_REFERENCE;
    dqg_compiled *c1 = compile_ok(g, &o);
    dqg_compiled *c2 = compile_ok(g, &o);
    cr_assert_eq(dqg_compiled_cache_hits(c2), 0, "capacity 0 disables the cache");
    cr_assert(strstr(dqg_compiled_partition_info(c1, 0), "reference"));
    uint16_t in[9], out[9];
    for (int i = 0; i < 9; i++)
        in[i] = (uint16_t)(i & 1 ? 0xBF80 : 0x3F80); /* -1.0 and 1.0 in bf16 */
    cr_assert_eq(exec_1(c1, in, sizeof in, out, sizeof out), DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < 9; i++)
        cr_assert_eq(out[i], i & 1 ? 0x0000 : 0x3F80);
    dqg_compiled_destroy(c1);
    dqg_compiled_destroy(c2);
    dqg_graph_destroy(g);
    dqg_cache_set_capacity(1024);
}

Test(runtime, compiled_dump_draws_partitions_as_clusters)
{
    dqg_graph *g = relu_chain(2, 2, 2, DQG_F32);
    dqg_compiled *c = compile_ok(g, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(dqg_compiled_dump(c, DQG_DUMP_DOT, f), DQG_OK);
    fclose(f);
    cr_assert(strstr(buf, "subgraph cluster_0"), "%s", buf);
    cr_assert(strstr(buf, "subgraph cluster_1"), "%s", buf);
    cr_assert(strstr(buf, "op0 -> op1"), "%s", buf);
    free(buf);
    f = open_memstream(&buf, &len);
    cr_assert_eq(dqg_compiled_dump(c, DQG_DUMP_TEXT, f), DQG_OK);
    fclose(f);
    cr_assert(strstr(buf, "2 partitions, 0 fused"), "%s", buf);
    cr_assert(strstr(buf, "partition 1: op [ReLU 'relu1']"), "%s", buf);
    free(buf);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* x[4,16] -> DQ(x, scale) ... as a graph whose partitions see one changed
 * key field at a time: an attribute, a scale value, one bit of a weight
 * tensor large enough to be keyed by its hash. */
static dqg_graph *keyed_graph(float clip_hi, float scale, int flip_bit)
{
    dqg_graph *g = new_graph();
    int64_t xd[] = {4, 64}, wd[] = {64, 64}, one = 1;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    static float w[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        w[i] = (float)(i % 13) * 0.125f;
    uint32_t bits;
    memcpy(&bits, &w[1000], 4);
    bits ^= (uint32_t)flip_bit;
    float flipped;
    memcpy(&flipped, &bits, 4);
    float saved = w[1000];
    w[1000] = flipped;
    dqg_tensor_id wc = dqg_constant(g, "w", DQG_F32, 2, wd, w, sizeof w);
    w[1000] = saved;
    dqg_tensor_id y = dqg_clip(g, "c", dqg_matmul(g, "mm", x, wc, NULL), -1.0f, clip_hi);
    int64_t qd[] = {4, 64};
    dqg_tensor_id q = dqg_input(g, "q", DQG_U8, 2, qd);
    dqg_dequantize_linear_attrs a = {.opset = 13};
    dqg_tensor_id d = dqg_dequantize_linear(
        g, "dq", q, dqg_constant(g, "s", DQG_F32, 0, &one, &scale, 4), DQG_NONE, &a);
    dqg_output(g, y, "y");
    dqg_output(g, d, "d");
    finalize_ok(g);
    return g;
}

Test(runtime, key_fields_attribute_scale_and_weight_bit)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(256);
    dqg_graph *base = keyed_graph(6.0f, 0.5f, 0);
    dqg_compiled *c0 = compile_ok(base, NULL);
    /* MatMul + Clip (combined, Clip as a post-op) and the Dequantize. */
    cr_assert_eq(dqg_compiled_partition_count(c0), 2);
    struct {
        const char *what;
        dqg_graph *g;
        size_t hits; /* of 2 partitions, the unchanged one hits */
    } cases[] = {
        {"same graph again", keyed_graph(6.0f, 0.5f, 0), 2},
        {"a Clip attribute", keyed_graph(5.0f, 0.5f, 0), 1},
        {"a scale value", keyed_graph(6.0f, 0.25f, 0), 1},
        {"one flipped bit in a 16 KiB weight tensor", keyed_graph(6.0f, 0.5f, 1), 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dqg_compiled *c = compile_ok(cases[i].g, NULL);
        cr_assert_eq(dqg_compiled_cache_hits(c), cases[i].hits, "%s: %zu hits", cases[i].what,
                     dqg_compiled_cache_hits(c));
        dqg_compiled_destroy(c);
        dqg_graph_destroy(cases[i].g);
    }
    dqg_compiled_destroy(c0);
    dqg_graph_destroy(base);
}

/* a = relu(x) is read by two partitions: the first may not overwrite it,
 * the second may; the sum must match the reference. */
Test(runtime, in_place_only_where_safe)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {8, 8};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d);
    dqg_tensor_id a = dqg_relu(g, "a", x);
    dqg_tensor_id b = dqg_clip(g, "b", a, 0.0f, 0.5f);
    dqg_tensor_id c = dqg_clip(g, "c", a, 0.25f, 4.0f);
    dqg_output(g, dqg_add(g, "sum", b, c), "y");
    finalize_ok(g);
    dqg_compiled *cp = compile_ok(g, NULL);
    float in[64], got[64], want[64];
    for (int i = 0; i < 64; i++)
        in[i] = (float)(i - 20) * 0.1f;
    cr_assert_eq(exec_1(cp, in, sizeof in, got, sizeof got), DQG_OK, "%s", dqg_last_error());
    dqg_buffer i1 = {.name = "x", .data = in, .size = sizeof in};
    dqg_buffer o1 = {.name = "y", .data = want, .size = sizeof want};
    cr_assert_eq(dqg_reference_run(g, &i1, 1, &o1, 1), DQG_OK);
    cr_assert_arr_eq(got, want, sizeof got);
    /* a, b and c are alive together before the sum: three buffers at most,
     * and c reuses a's. */
    cr_assert_eq(dqg_compiled_peak_memory(cp), 2 * 64 * sizeof(float));
    dqg_compiled_destroy(cp);
    dqg_graph_destroy(g);
}
