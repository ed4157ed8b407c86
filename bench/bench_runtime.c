/* Runtime benchmark: compile (cache miss) vs cache hit for a fused int8
 * MatMul partition and for a dequantize partition, whole-graph compile vs
 * recompile, and execute overhead per partition on tiny tensors. Prints a
 * Markdown table; each figure is the median of repeated runs with min-max. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "dqgraph.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        dqg_status st_ = (call);                                                                   \
        if (st_ != DQG_OK) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, dqg_status_name(st_),           \
                    dqg_last_error());                                                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef struct stat3 {
    double median, min, max;
} stat3;

static stat3 summarize(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return (stat3){v[n / 2], v[0], v[n - 1]};
}

/* DQ(x u8) + DQ(w s8 per-channel) -> MatMul [m,k]x[k,n]; `salt` changes a
 * weight value so each call can make a distinct partition. */
static dqg_graph *qmatmul_graph(int64_t m, int64_t k, int64_t n, int salt)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {m, k}, wd[] = {k, n}, nd[] = {n}, one = 1;
    int8_t *w = malloc((size_t)(k * n));
    float *ws = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < k * n; i++)
        w[i] = (int8_t)((i * 13 + 7) % 255 - 127);
    w[0] = (int8_t)salt;
    for (int64_t i = 0; i < n; i++)
        ws[i] = 0.01f + 0.001f * (float)(i % 7);
    float xs = 0.05f;
    uint8_t xz = 128;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_tensor_id xsc = dqg_constant(g, "xs", DQG_F32, 0, &one, &xs, sizeof xs);
    dqg_tensor_id xzp = dqg_constant(g, "xz", DQG_U8, 0, &one, &xz, 1);
    dqg_dequantize_linear_attrs a = {.opset = 21};
    dqg_tensor_id xf = dqg_dequantize_linear(g, "x_dq", x, xsc, xzp, &a);
    dqg_tensor_id wq = dqg_constant(g, "w", DQG_S8, 2, wd, w, (size_t)(k * n));
    dqg_tensor_id wsc = dqg_constant(g, "ws", DQG_F32, 1, nd, ws, (size_t)n * sizeof(float));
    a.has_axis = true;
    a.axis = 1;
    dqg_tensor_id wf = dqg_dequantize_linear(g, "w_dq", wq, wsc, DQG_NONE, &a);
    CHECK(dqg_output(g, dqg_matmul(g, "mm", xf, wf, NULL), "y"));
    CHECK(dqg_graph_finalize(g));
    free(w);
    free(ws);
    return g;
}

/* A lone per-axis dequantize u8 [rows, 64] -> f32. */
static dqg_graph *dq_graph(int64_t rows, int salt)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {rows, 64}, nd[] = {64};
    float s[64];
    for (int i = 0; i < 64; i++)
        s[i] = 0.5f + (float)(i + salt) * 0.01f;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_tensor_id sc = dqg_constant(g, "s", DQG_F32, 1, nd, s, sizeof s);
    dqg_dequantize_linear_attrs a = {.opset = 13, .has_axis = true, .axis = 1};
    CHECK(dqg_output(g, dqg_dequantize_linear(g, "dq", x, sc, DQG_NONE, &a), "y"));
    CHECK(dqg_graph_finalize(g));
    return g;
}

/* Compile `make(salt)` fresh (miss) and again (hit), `reps` times. */
static void bench_compile(const char *label, dqg_graph *(*make)(int), int reps)
{
    double *miss = malloc((size_t)reps * sizeof(double));
    double *hit = malloc((size_t)reps * sizeof(double));
    size_t parts = 0;
    for (int r = 0; r < reps; r++) {
        dqg_graph *g = make(r + 1);
        dqg_compiled *c1, *c2;
        double t0 = bench_now_us();
        CHECK(dqg_compile(g, NULL, &c1));
        double t1 = bench_now_us();
        CHECK(dqg_compile(g, NULL, &c2));
        double t2 = bench_now_us();
        parts = dqg_compiled_partition_count(c1);
        miss[r] = t1 - t0;
        hit[r] = t2 - t1;
        dqg_compiled_destroy(c1);
        dqg_compiled_destroy(c2);
        dqg_graph_destroy(g);
    }
    stat3 m = summarize(miss, reps), h = summarize(hit, reps);
    printf("| %s | %zu | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.1f (per partition) | %.0fx |\n",
           label, parts, m.median, m.min, m.max, h.median, h.min, h.max,
           h.median / (double)(parts ? parts : 1), m.median / h.median);
    free(miss);
    free(hit);
}

static dqg_graph *make_qmm(int salt)
{
    return qmatmul_graph(64, 256, 256, salt);
}
static dqg_graph *make_dq(int salt)
{
    return dq_graph(32, salt);
}

/* A chain of n tiny ReLU partitions: execute time / n is the per-partition
 * dispatch overhead (kernel work on 16 floats is negligible). */
static void bench_overhead(int n, int iters)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t d[] = {16};
    dqg_tensor_id t = dqg_input(g, "x", DQG_F32, 1, d);
    for (int i = 0; i < n; i++)
        t = dqg_clip(g, NULL, t, -1.0f, (float)i);
    CHECK(dqg_output(g, t, "y"));
    CHECK(dqg_graph_finalize(g));
    dqg_compiled *c;
    CHECK(dqg_compile(g, NULL, &c));
    float in[16] = {0}, out[16];
    dqg_buffer ib = {.name = "x", .data = in, .size = sizeof in};
    dqg_buffer ob = {.name = "y", .data = out, .size = sizeof out};
    double *v = malloc((size_t)iters * sizeof(double));
    for (int i = 0; i < 100; i++)
        CHECK(dqg_execute(c, &ib, 1, &ob, 1));
    for (int i = 0; i < iters; i++) {
        double t0 = bench_now_us();
        CHECK(dqg_execute(c, &ib, 1, &ob, 1));
        v[i] = (bench_now_us() - t0) / n;
    }
    stat3 s = summarize(v, iters);
    printf("| execute, %d tiny partitions | per partition | %.3f us (%.3f-%.3f) |\n", n, s.median,
           s.min, s.max);
    free(v);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

int main(void)
{
    printf("### Compiled-partition cache\n\n");
    printf("| graph | partitions | compile, miss (us) | compile, hit (us) | hit per partition (us) "
           "| miss/hit |\n|---|---|---|---|---|---|\n");
    bench_compile("DQ->MatMul u8xs8 64x256x256", make_qmm, 21);
    bench_compile("DQ u8->f32 per-axis 32x64", make_dq, 21);
    printf("\n### Execute overhead\n\n| case | unit | median (min-max) |\n|---|---|---|\n");
    bench_overhead(64, 2001);
    return 0;
}
