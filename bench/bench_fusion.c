/* Fused vs unfused vs raw oneDNN: DQ(u8, zero point 128) x DQ(s8 weights,
 * per-channel scales) -> MatMul at several sizes, and DQ -> Convolution
 * (ResNet 3x3, 64 -> 64 channels, 56x56, NHWC). "fused" is dqg_compile with
 * defaults, "unfused" the same graph with fusion off, "raw" the equivalent
 * oneDNN int8 primitive created directly. Medians (min-max) over repeated
 * runs; the ratios come from the same run. */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dqgraph.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        dqg_status st_ = (call);                                                                   \
        if (st_ != DQG_OK) {                                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, dqg_last_error());                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define DNNL(call)                                                                                 \
    do {                                                                                           \
        if ((call) != dnnl_success) {                                                              \
            fprintf(stderr, "%s:%d: oneDNN call failed\n", __FILE__, __LINE__);                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct timing {
    double med, lo, hi;
} timing;

typedef void (*run_fn)(void *ctx);

static timing summarize(double *t, int reps)
{
    qsort(t, (size_t)reps, sizeof *t, cmp);
    return (timing){t[reps / 2], t[0], t[reps - 1]};
}

static timing time_it(run_fn f, void *ctx, int reps)
{
    double t[64];
    f(ctx); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        f(ctx);
        t[r] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    return (timing){t[reps / 2], t[0], t[reps - 1]};
}

typedef struct dq_run {
    dqg_compiled *c;
    dqg_buffer in, out;
} dq_run;

static void run_compiled(void *p)
{
    dq_run *r = p;
    CHECK(dqg_execute(r->c, &r->in, 1, &r->out, 1));
}

typedef struct raw_run {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    int n;
    dnnl_exec_arg_t args[4];
} raw_run;

static void run_raw(void *p)
{
    raw_run *r = p;
    DNNL(dnnl_primitive_execute(r->prim, r->stream, r->n, r->args));
    DNNL(dnnl_stream_wait(r->stream));
}

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static dnnl_memory_t mem(const dnnl_memory_desc_t *md, void *data)
{
    dnnl_memory_t m;
    DNNL(dnnl_memory_create(&m, md, engine, data));
    return m;
}

/* The raw oneDNN int8 primitive: weights reordered once into its layout. */
static raw_run make_raw(const_dnnl_op_desc_t desc, const float *scales, int64_t oc, int mask,
                        const dnnl_memory_desc_t *w_plain, void *w_data, void *src, void *dst,
                        dnnl_query_t w_query)
{
    dnnl_primitive_attr_t attr;
    DNNL(dnnl_primitive_attr_create(&attr));
    DNNL(dnnl_primitive_attr_set_output_scales(attr, oc, mask, scales));
    int32_t zp = 128;
    DNNL(dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &zp));
    dnnl_primitive_desc_t pd;
    DNNL(dnnl_primitive_desc_create(&pd, desc, attr, engine, NULL));
    const dnnl_memory_desc_t *w_md = dnnl_primitive_desc_query_md(pd, w_query, 0);
    dnnl_memory_t w_user = mem(w_plain, w_data), w_mem = mem(w_md, DNNL_MEMORY_ALLOCATE);
    dnnl_primitive_desc_t rpd;
    DNNL(dnnl_reorder_primitive_desc_create(&rpd, w_plain, engine, w_md, engine, NULL));
    dnnl_primitive_t reorder;
    DNNL(dnnl_primitive_create(&reorder, rpd));
    dnnl_exec_arg_t rargs[] = {{DNNL_ARG_FROM, w_user}, {DNNL_ARG_TO, w_mem}};
    DNNL(dnnl_primitive_execute(reorder, stream, 2, rargs));
    DNNL(dnnl_stream_wait(stream));
    raw_run r = {.stream = stream, .n = 3};
    DNNL(dnnl_primitive_create(&r.prim, pd));
    r.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC,
                                  mem(dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), src)};
    r.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, w_mem};
    r.args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST,
                                  mem(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), dst)};
    return r;
}

/* Inputs of both sides: the same bytes in 64-byte-aligned buffers (AMX
 * kernels run about 1.6x faster on all-zero data and about 20% faster from
 * 64-byte-aligned sources, so anything else compares unlike with unlike). */
static void *input_bytes(size_t n)
{
    uint8_t *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
    for (size_t i = 0; p && i < n; i++)
        p[i] = (uint8_t)(i * 131 + 7);
    return p;
}

static void *output_bytes(size_t n)
{
    return aligned_alloc(64, (n + 63) & ~(size_t)63);
}

static void report(const char *label, dqg_graph *g, raw_run *raw, size_t in_bytes, size_t out_bytes,
                   int reps)
{
    void *x = input_bytes(in_bytes), *y = output_bytes(out_bytes);
    dq_run fused = {.in = {.name = "x", .data = x, .size = in_bytes},
                    .out = {.name = "y", .data = y, .size = out_bytes}};
    dq_run unfused = fused;
    dqg_compile_options opt = dqg_compile_options_default();
    CHECK(dqg_compile(g, &opt, &fused.c));
    opt.disable_fusion = true;
    CHECK(dqg_compile(g, &opt, &unfused.c));
    /* Fused and raw alternate within each repetition, so their ratio is
     * measured like with like on a shared machine. */
    double f[64], rr[64], ratio[64];
    run_compiled(&fused);
    run_raw(raw);
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        run_compiled(&fused);
        double t1 = now_ms();
        run_raw(raw);
        double t2 = now_ms();
        f[r] = t1 - t0;
        rr[r] = t2 - t1;
        ratio[r] = f[r] / rr[r];
    }
    timing tf = summarize(f, reps), tr = summarize(rr, reps), fr = summarize(ratio, reps);
    timing tu = time_it(run_compiled, &unfused, reps > 7 ? 7 : reps);
    printf("| %s | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.1fx | %.2fx | %s |\n",
           label, tf.med, tf.lo, tf.hi, tu.med, tu.lo, tu.hi, tr.med, tr.lo, tr.hi, tu.med / tf.med,
           fr.med, dqg_compiled_partition_info(fused.c, 0));
    fflush(stdout);
    dqg_compiled_destroy(fused.c);
    dqg_compiled_destroy(unfused.c);
    free(x);
    free(y);
}

static void bench_matmul(int64_t M, int64_t K, int64_t N)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {M, K}, wd[] = {K, N}, nd[] = {N}, one = 1;
    int8_t *w = malloc((size_t)(K * N));
    float *ws = malloc((size_t)N * sizeof(float)), *combined = malloc((size_t)N * sizeof(float));
    for (int64_t i = 0; i < K * N; i++)
        w[i] = (int8_t)((i * 7 + 3) % 255 - 127);
    float xs = 0.02f;
    for (int64_t i = 0; i < N; i++) {
        ws[i] = 0.001f * (float)(1 + i % 9);
        combined[i] = xs * ws[i];
    }
    uint8_t xz = 128;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_dequantize_linear_attrs pt = {.opset = 13}, pc = {.opset = 13, .has_axis = true, .axis = 1};
    dqg_tensor_id xf =
        dqg_dequantize_linear(g, "x_dq", x, dqg_constant(g, "xs", DQG_F32, 0, &one, &xs, 4),
                              dqg_constant(g, "xz", DQG_U8, 0, &one, &xz, 1), &pt);
    dqg_tensor_id wf = dqg_dequantize_linear(
        g, "w_dq", dqg_constant(g, "w", DQG_S8, 2, wd, w, (size_t)(K * N)),
        dqg_constant(g, "ws", DQG_F32, 1, nd, ws, (size_t)N * 4), DQG_NONE, &pc);
    CHECK(dqg_output(g, dqg_matmul(g, "mm", xf, wf, NULL), "y"));
    CHECK(dqg_graph_finalize(g));

    dnnl_memory_desc_t src, wts, wany, dst;
    dnnl_dims_t sd = {M, K}, wdd = {K, N}, dd = {M, N};
    DNNL(dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_u8, dnnl_ab));
    DNNL(dnnl_memory_desc_init_by_tag(&wts, 2, wdd, dnnl_s8, dnnl_ab));
    DNNL(dnnl_memory_desc_init_by_tag(&wany, 2, wdd, dnnl_s8, dnnl_format_tag_any));
    DNNL(dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    DNNL(dnnl_matmul_desc_init(&md, &src, &wany, NULL, &dst));
    void *rx = input_bytes((size_t)(M * K)), *ry = output_bytes((size_t)(M * N) * 4);
    raw_run raw = make_raw(&md, combined, N, 2, &wts, w, rx, ry, dnnl_query_weights_md);
    char label[64];
    snprintf(label, sizeof label, "MatMul %lldx%lldx%lld", (long long)M, (long long)K,
             (long long)N);
    report(label, g, &raw, (size_t)(M * K), (size_t)(M * N) * 4, M * K * N > (1LL << 32) ? 9 : 21);
    dqg_graph_destroy(g);
    free(w);
    free(ws);
    free(combined);
    free(rx);
    free(ry);
}

static void bench_conv(void)
{
    enum { C = 64, O = 64, H = 56, W = 56 };
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {1, H, W, C}, wd[] = {O, C, 3, 3}, od[] = {O}, one = 1;
    int8_t *w = malloc(O * C * 9);
    float ws[O], combined[O], xs = 0.02f;
    for (int i = 0; i < O * C * 9; i++)
        w[i] = (int8_t)((i * 5 + 1) % 255 - 127);
    for (int i = 0; i < O; i++) {
        ws[i] = 0.001f * (float)(1 + i % 7);
        combined[i] = xs * ws[i];
    }
    uint8_t xz = 128;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
    dqg_dequantize_linear_attrs pt = {.opset = 13}, pc = {.opset = 13, .has_axis = true, .axis = 0};
    dqg_tensor_id xf =
        dqg_dequantize_linear(g, "x_dq", x, dqg_constant(g, "xs", DQG_F32, 0, &one, &xs, 4),
                              dqg_constant(g, "xz", DQG_U8, 0, &one, &xz, 1), &pt);
    dqg_tensor_id wf =
        dqg_dequantize_linear(g, "w_dq", dqg_constant(g, "w", DQG_S8, 4, wd, w, O * C * 9),
                              dqg_constant(g, "ws", DQG_F32, 1, od, ws, sizeof ws), DQG_NONE, &pc);
    dqg_conv_attrs ca = {.spatial_rank = 2,
                         .strides = {1, 1},
                         .pads_begin = {1, 1},
                         .pads_end = {1, 1},
                         .dilations = {1, 1},
                         .groups = 1,
                         .data_format = DQG_FORMAT_NXC};
    CHECK(dqg_output(g, dqg_convolution(g, "conv", xf, wf, DQG_NONE, &ca), "y"));
    CHECK(dqg_graph_finalize(g));

    dnnl_memory_desc_t src, wts, wany, dst;
    dnnl_dims_t sd = {1, C, H, W}, wdd = {O, C, 3, 3}, dd = {1, O, H, W};
    dnnl_dims_t st = {1, 1}, dl = {0, 0}, pl = {1, 1}, pr = {1, 1};
    DNNL(dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_u8, dnnl_acdb));
    DNNL(dnnl_memory_desc_init_by_tag(&wts, 4, wdd, dnnl_s8, dnnl_abcd));
    DNNL(dnnl_memory_desc_init_by_tag(&wany, 4, wdd, dnnl_s8, dnnl_format_tag_any));
    DNNL(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_acdb));
    dnnl_convolution_desc_t cd;
    DNNL(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                    dnnl_convolution_direct, &src, &wany, NULL,
                                                    &dst, st, dl, pl, pr));
    void *rx = input_bytes(C * H * W), *ry = output_bytes((size_t)O * H * W * 4);
    raw_run raw = make_raw(&cd, combined, O, 2, &wts, w, rx, ry, dnnl_query_weights_md);
    report("Conv 3x3 64->64 56x56 NHWC", g, &raw, C * H * W, (size_t)O * H * W * 4, 21);
    dqg_graph_destroy(g);
    free(w);
    free(rx);
    free(ry);
}

int main(void)
{
    DNNL(dnnl_engine_create(&engine, dnnl_cpu, 0));
    DNNL(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    printf("| case | fused (ms) | unfused (ms) | raw oneDNN int8 (ms) | unfused / fused | fused / "
           "raw | fused kernel |\n|---|---|---|---|---|---|---|\n");
    bench_matmul(512, 512, 512);
    bench_matmul(1024, 1024, 1024);
    bench_matmul(2048, 2048, 2048);
    bench_matmul(1, 4096, 4096);
    bench_conv();
    return 0;
}
