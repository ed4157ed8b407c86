/* Fused vs unfused vs raw oneDNN: DQ(u8, zero point 128) x DQ(s8 weights,
 * per-channel scales) -> MatMul at several sizes, and DQ -> Convolution
 * (ResNet 3x3, 64 -> 64 channels, 56x56, NHWC). "fused" is dqg_compile with
 * defaults, "unfused" the same graph with fusion off, "raw" the equivalent
 * oneDNN int8 primitive created directly. Medians (min-max) over repeated
 * runs; the ratios come from the same run.
 *
 * A second table takes the small-M shapes (M = 1 .. 16, K = N = 4096) of
 * int8 decoders and classifier heads: the fused partition against every
 * implementation oneDNN offers for the primitive, and against the two
 * floors of this machine -- reading the 16 MiB of weights once with every
 * thread, and the VNNI dot products the shape needs (M K N / 64 vpdpbusd)
 * issued from registers. */
#include <immintrin.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
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

typedef struct timing {
    double med, lo, hi;
} timing;

typedef void (*run_fn)(void *ctx);

static timing summarize(double *t, int reps)
{
    qsort(t, (size_t)reps, sizeof *t, bench_cmp_double);
    return (timing){t[reps / 2], t[0], t[reps - 1]};
}

static timing time_it(run_fn f, void *ctx, int reps)
{
    double t[64];
    f(ctx); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_ms();
        f(ctx);
        t[r] = bench_now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, bench_cmp_double);
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
    dnnl_memory_t w_mem;
    char impl[64];
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

/* The oneDNN primitive descriptor of implementation `impl` (0: the one
 * oneDNN picks) for desc and attr, or NULL past the last. */
static dnnl_primitive_desc_t nth_impl(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
                                      int impl)
{
    dnnl_primitive_desc_iterator_t it;
    DNNL(dnnl_primitive_desc_iterator_create(&it, desc, attr, engine, NULL));
    dnnl_status_t s = dnnl_success;
    for (int i = 0; i < impl && s == dnnl_success; i++)
        s = dnnl_primitive_desc_iterator_next(it);
    dnnl_primitive_desc_t pd = s == dnnl_success ? dnnl_primitive_desc_iterator_fetch(it) : NULL;
    dnnl_primitive_desc_iterator_destroy(it);
    return pd;
}

/* The raw oneDNN int8 primitive (implementation `impl`, see nth_impl):
 * weights reordered once into its layout, the source's zero point `zp`.
 * r.prim is NULL past the last implementation. */
static raw_run make_raw(const_dnnl_op_desc_t desc, const float *scales, int64_t oc, int mask,
                        const dnnl_memory_desc_t *w_plain, void *w_data, void *src, void *dst,
                        dnnl_query_t w_query, int impl, int32_t zp)
{
    dnnl_primitive_attr_t attr;
    DNNL(dnnl_primitive_attr_create(&attr));
    DNNL(dnnl_primitive_attr_set_output_scales(attr, oc, mask, scales));
    if (zp)
        DNNL(dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &zp));
    dnnl_primitive_desc_t pd = nth_impl(desc, attr, impl);
    DNNL(dnnl_primitive_attr_destroy(attr));
    if (!pd)
        return (raw_run){0};
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
    const char *name = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
    snprintf(r.impl, sizeof r.impl, "%s", name);
    DNNL(dnnl_primitive_destroy(reorder));
    DNNL(dnnl_primitive_desc_destroy(rpd));
    DNNL(dnnl_memory_destroy(w_user));
    r.w_mem = w_mem;
    DNNL(dnnl_primitive_desc_destroy(pd));
    return r;
}

static void raw_free(raw_run *r)
{
    if (!r->prim)
        return;
    DNNL(dnnl_primitive_destroy(r->prim));
    DNNL(dnnl_memory_destroy(r->args[0].memory));
    DNNL(dnnl_memory_destroy(r->args[2].memory));
    DNNL(dnnl_memory_destroy(r->w_mem));
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
        double t0 = bench_now_ms();
        run_compiled(&fused);
        double t1 = bench_now_ms();
        run_raw(raw);
        double t2 = bench_now_ms();
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

/* DQ(u8 x, zero point 128) x DQ(s8 W, per-channel scales) -> MatMul, as a
 * dqgraph graph and as the equivalent oneDNN matmul description. */
typedef struct mm_case {
    int64_t M, K, N;
    dqg_graph *g;
    int8_t *w;
    float *combined; /* x scale times the weights' scales: oneDNN's output scales */
    dnnl_matmul_desc_t md;
    dnnl_memory_desc_t wts;
    void *rx, *ry; /* the raw primitives' source and destination */
} mm_case;

static mm_case mm_case_make(int64_t M, int64_t K, int64_t N)
{
    mm_case c = {.M = M, .K = K, .N = N};
    CHECK(dqg_graph_create(&c.g));
    dqg_graph *g = c.g;
    int64_t xd[] = {M, K}, wd[] = {K, N}, nd[] = {N}, one = 1;
    c.w = malloc((size_t)(K * N));
    float *ws = malloc((size_t)N * sizeof(float));
    c.combined = malloc((size_t)N * sizeof(float));
    for (int64_t i = 0; i < K * N; i++)
        c.w[i] = (int8_t)((i * 7 + 3) % 255 - 127);
    float xs = 0.02f;
    for (int64_t i = 0; i < N; i++) {
        ws[i] = 0.001f * (float)(1 + i % 9);
        c.combined[i] = xs * ws[i];
    }
    uint8_t xz = 128;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_dequantize_linear_attrs pt = {.opset = 13}, pc = {.opset = 13, .has_axis = true, .axis = 1};
    dqg_tensor_id xf =
        dqg_dequantize_linear(g, "x_dq", x, dqg_constant(g, "xs", DQG_F32, 0, &one, &xs, 4),
                              dqg_constant(g, "xz", DQG_U8, 0, &one, &xz, 1), &pt);
    dqg_tensor_id wf = dqg_dequantize_linear(
        g, "w_dq", dqg_constant(g, "w", DQG_S8, 2, wd, c.w, (size_t)(K * N)),
        dqg_constant(g, "ws", DQG_F32, 1, nd, ws, (size_t)N * 4), DQG_NONE, &pc);
    CHECK(dqg_output(g, dqg_matmul(g, "mm", xf, wf, NULL), "y"));
    CHECK(dqg_graph_finalize(g));
    free(ws);

    dnnl_memory_desc_t src, wany, dst;
    dnnl_dims_t sd = {M, K}, wdd = {K, N}, dd = {M, N};
    DNNL(dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_u8, dnnl_ab));
    DNNL(dnnl_memory_desc_init_by_tag(&c.wts, 2, wdd, dnnl_s8, dnnl_ab));
    DNNL(dnnl_memory_desc_init_by_tag(&wany, 2, wdd, dnnl_s8, dnnl_format_tag_any));
    DNNL(dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_ab));
    DNNL(dnnl_matmul_desc_init(&c.md, &src, &wany, NULL, &dst));
    c.rx = input_bytes((size_t)(M * K));
    c.ry = output_bytes((size_t)(M * N) * 4);
    return c;
}

static raw_run mm_case_raw(mm_case *c, int impl)
{
    return make_raw(&c->md, c->combined, c->N, 2, &c->wts, c->w, c->rx, c->ry,
                    dnnl_query_weights_md, impl, 128);
}

static void mm_case_free(mm_case *c)
{
    dqg_graph_destroy(c->g);
    free(c->w);
    free(c->combined);
    free(c->rx);
    free(c->ry);
}

static void bench_matmul(int64_t M, int64_t K, int64_t N)
{
    mm_case c = mm_case_make(M, K, N);
    raw_run raw = mm_case_raw(&c, 0);
    char label[64];
    snprintf(label, sizeof label, "MatMul %lldx%lldx%lld", (long long)M, (long long)K,
             (long long)N);
    report(label, c.g, &raw, (size_t)(M * K), (size_t)(M * N) * 4,
           M * K * N > (1LL << 32) ? 9 : 21);
    raw_free(&raw);
    mm_case_free(&c);
}

/* The floors of a small-M int8 matmul on this machine, with every thread:
 * reading the weights' bytes once, and issuing the shape's VNNI dot
 * products (64 multiply-adds each) from registers. */
typedef struct floor_run {
    const uint8_t *bytes;
    size_t size;
    int64_t dots; /* vpdpbusd in all */
    int sink;
} floor_run;

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void read_floor(void *p)
{
    floor_run *f = p;
    int sink = 0;
#pragma omp parallel reduction(+ : sink)
    {
        size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
        size_t per = f->size / nt / 256 * 256,
               end = id + 1 == nt ? f->size / 256 * 256 : per * (id + 1);
        const __m512i one = _mm512_set1_epi8(1);
        __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
        for (size_t i = per * id; i < end; i += 256) {
            a0 = _mm512_dpbusd_epi32(a0, _mm512_load_si512(f->bytes + i), one);
            a1 = _mm512_dpbusd_epi32(a1, _mm512_load_si512(f->bytes + i + 64), one);
            a2 = _mm512_dpbusd_epi32(a2, _mm512_load_si512(f->bytes + i + 128), one);
            a3 = _mm512_dpbusd_epi32(a3, _mm512_load_si512(f->bytes + i + 192), one);
        }
        sink += _mm512_reduce_add_epi32(
            _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)));
    }
    f->sink += sink;
}

/* Eight independent accumulators, each with its own operand (identical
 * chains would be merged by the compiler). */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void dot_floor(void *p)
{
    floor_run *f = p;
    int sink = 0;
#pragma omp parallel reduction(+ : sink)
    {
        int64_t n = (f->dots / omp_get_num_threads() + 7) / 8;
        const __m512i x = _mm512_set1_epi8(1);
        __m512i y[8], a[8];
        for (int j = 0; j < 8; j++) {
            y[j] = _mm512_set1_epi8((char)(f->sink + j));
            a[j] = _mm512_setzero_si512();
        }
        __m512i y0 = y[0], y1 = y[1], y2 = y[2], y3 = y[3], y4 = y[4], y5 = y[5], y6 = y[6],
                y7 = y[7];
        __m512i a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6],
                a7 = a[7];
        for (int64_t i = 0; i < n; i++) {
            a0 = _mm512_dpbusd_epi32(a0, x, y0);
            a1 = _mm512_dpbusd_epi32(a1, x, y1);
            a2 = _mm512_dpbusd_epi32(a2, x, y2);
            a3 = _mm512_dpbusd_epi32(a3, x, y3);
            a4 = _mm512_dpbusd_epi32(a4, x, y4);
            a5 = _mm512_dpbusd_epi32(a5, x, y5);
            a6 = _mm512_dpbusd_epi32(a6, x, y6);
            a7 = _mm512_dpbusd_epi32(a7, x, y7);
        }
        a0 = _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3));
        a4 = _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7));
        sink += _mm512_reduce_add_epi32(_mm512_add_epi32(a0, a4));
    }
    f->sink += sink;
}

/* One row per runner: the fused partition, every oneDNN implementation
 * (but the reference loops; one per name), and the two floors. Each runner
 * runs warm -- one untimed run, then INNER timed ones in a row, as a
 * layer runs in a loop --, and the runners take turns ROUNDS times. */
static void bench_small_m(int64_t M, int64_t K, int64_t N, bool floors)
{
    enum { MAX_IMPL = 8, ROUNDS = 7, INNER = 5, REPS = ROUNDS * INNER };
    mm_case c = mm_case_make(M, K, N);
    raw_run raws[MAX_IMPL];
    int n_raw = 0;
    for (int i = 0; i < 16 && n_raw < MAX_IMPL; i++) {
        raw_run r = mm_case_raw(&c, i);
        if (!r.prim)
            break;
        bool seen = strncmp(r.impl, "ref", 3) == 0; /* seconds per run */
        for (int j = 0; j < n_raw && !seen; j++)
            seen = strcmp(raws[j].impl, r.impl) == 0;
        if (seen)
            raw_free(&r);
        else
            raws[n_raw++] = r;
    }
    size_t in_bytes = (size_t)(M * K), out_bytes = (size_t)(M * N) * 4;
    void *x = input_bytes(in_bytes), *y = output_bytes(out_bytes);
    dq_run fused = {.in = {.name = "x", .data = x, .size = in_bytes},
                    .out = {.name = "y", .data = y, .size = out_bytes}};
    dqg_compile_options opt = dqg_compile_options_default();
    CHECK(dqg_compile(c.g, &opt, &fused.c));
    floor_run fl = {.bytes = input_bytes((size_t)(K * N)),
                    .size = (size_t)(K * N),
                    .dots = (M * K * N + 63) / 64};
    int n = 1 + n_raw + (floors ? 2 : 0);
    double t[MAX_IMPL + 3][REPS];
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < n; i++)
            for (int j = -1; j < INNER; j++) {
                double t0 = bench_now_ms();
                if (i == 0)
                    run_compiled(&fused);
                else if (i <= n_raw)
                    run_raw(&raws[i - 1]);
                else if (i == n_raw + 1)
                    read_floor(&fl);
                else
                    dot_floor(&fl);
                if (j >= 0)
                    t[i][r * INNER + j] = bench_now_ms() - t0;
            }
    timing tm[MAX_IMPL + 3];
    for (int i = 0; i < n; i++)
        tm[i] = summarize(t[i], REPS);
    double floor =
        floors ? (tm[n_raw + 1].med > tm[n_raw + 2].med ? tm[n_raw + 1].med : tm[n_raw + 2].med)
               : 0.0;
    for (int i = 0; i < n; i++) {
        char what[160];
        if (i == 0)
            snprintf(what, sizeof what, "dqgraph, fused: %s",
                     dqg_compiled_partition_info(fused.c, 0));
        else if (i <= n_raw)
            snprintf(what, sizeof what, "oneDNN %s", raws[i - 1].impl);
        else if (i == n_raw + 1)
            snprintf(what, sizeof what, "floor: read the %.0f MiB of weights",
                     (double)(K * N) / (1 << 20));
        else
            snprintf(what, sizeof what, "floor: %lld vpdpbusd from registers", (long long)fl.dots);
        printf("| %lldx%lldx%lld | %s | %.3f (%.3f-%.3f) | %s%.2fx |\n", (long long)M, (long long)K,
               (long long)N, what, tm[i].med, tm[i].lo, tm[i].hi, floors ? "" : "n/a ",
               floors ? tm[i].med / floor : 0.0);
    }
    fflush(stdout);
    for (int i = 0; i < n_raw; i++)
        raw_free(&raws[i]);
    dqg_compiled_destroy(fused.c);
    free((void *)fl.bytes);
    free(x);
    free(y);
    mm_case_free(&c);
}

/* The quantized operands of a convolution case: DQ(u8 x [xd], scale 0.02,
 * zero point xz) and DQ(s8 weights [wd] of pattern codes, one scale per
 * channel of axis `axis`, n of them). w (owned): the codes; combined
 * (owned): x's scale times each weight scale over y_scale, oneDNN's output
 * scales. */
typedef struct conv_operands {
    dqg_tensor_id xf, wf;
    int8_t *w;
    float *combined;
    size_t wn;
} conv_operands;

static conv_operands conv_operands_make(dqg_graph *g, const int64_t *xd, uint8_t xz,
                                        const int64_t *wd, int axis, float y_scale)
{
    int64_t n = wd[axis], one = 1;
    float xs = 0.02f, *ws = malloc((size_t)n * sizeof *ws);
    conv_operands o = {.wn = (size_t)(wd[0] * wd[1] * wd[2] * wd[3])};
    o.w = malloc(o.wn);
    o.combined = malloc((size_t)n * sizeof *o.combined);
    for (size_t i = 0; i < o.wn; i++)
        o.w[i] = (int8_t)((i * 5 + 1) % 255 - 127);
    for (int64_t i = 0; i < n; i++) {
        ws[i] = 0.001f * (float)(1 + i % 7);
        o.combined[i] = xs * ws[i] / y_scale;
    }
    dqg_dequantize_linear_attrs pt = {.opset = 13},
                                pc = {.opset = 13, .has_axis = true, .axis = axis};
    o.xf = dqg_dequantize_linear(g, "x_dq", dqg_input(g, "x", DQG_U8, 4, xd),
                                 dqg_constant(g, "xs", DQG_F32, 0, &one, &xs, 4),
                                 dqg_constant(g, "xz", DQG_U8, 0, &one, &xz, 1), &pt);
    o.wf = dqg_dequantize_linear(g, "w_dq", dqg_constant(g, "w", DQG_S8, 4, wd, o.w, o.wn),
                                 dqg_constant(g, "ws", DQG_F32, 1, &n, ws, (size_t)n * sizeof *ws),
                                 DQG_NONE, &pc);
    free(ws);
    return o;
}

static void conv_operands_free(conv_operands *o)
{
    free(o->w);
    free(o->combined);
}

static void bench_conv(void)
{
    enum { C = 64, O = 64, H = 56, W = 56 };
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {1, H, W, C}, wd[] = {O, C, 3, 3};
    conv_operands op = conv_operands_make(g, xd, 128, wd, 0, 1.0f);
    dqg_conv_attrs ca = {.spatial_rank = 2,
                         .strides = {1, 1},
                         .pads_begin = {1, 1},
                         .pads_end = {1, 1},
                         .dilations = {1, 1},
                         .groups = 1,
                         .data_format = DQG_FORMAT_NXC};
    CHECK(dqg_output(g, dqg_convolution(g, "conv", op.xf, op.wf, DQG_NONE, &ca), "y"));
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
    raw_run raw =
        make_raw(&cd, op.combined, O, 2, &wts, op.w, rx, ry, dnnl_query_weights_md, 0, 128);
    report("Conv 3x3 64->64 56x56 NHWC", g, &raw, C * H * W, (size_t)O * H * W * 4, 21);
    raw_free(&raw);
    dqg_graph_destroy(g);
    conv_operands_free(&op);
    free(rx);
    free(ry);
}

/* A decoder's upsampling: DQ(u8 x [1, C, H, W], zero point xz) and
 * DQ(s8 W [C, O, k, k], per output channel) -> ConvTranspose stride k.
 * The graph's activations are NCHW (as ONNX has them), so the fused
 * kernel reorders them to and from channels-last, which the raw oneDNN
 * deconvolution is given directly. */
static void bench_deconv(int C, int O, int H, int k, uint8_t xz)
{
    int Y = H * k;
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {1, C, H, H}, wd[] = {C, O, k, k};
    conv_operands op = conv_operands_make(g, xd, xz, wd, 1, 1.0f);
    dqg_conv_transpose_attrs ca = {.spatial_rank = 2, .strides = {k, k}, .groups = 1};
    CHECK(dqg_output(g, dqg_conv_transpose(g, "ct", op.xf, op.wf, DQG_NONE, &ca), "y"));
    CHECK(dqg_graph_finalize(g));

    dnnl_memory_desc_t src, wts, wany, dst;
    dnnl_dims_t sd = {1, C, H, H}, wdd = {O, C, k, k}, dd = {1, O, Y, Y};
    dnnl_dims_t st = {k, k}, dl = {0, 0}, pl = {0, 0}, pr = {0, 0};
    /* ConvTranspose's [C, O, k, k] is oneDNN's (O, C, k, k) by strides. */
    dnnl_dims_t wstr = {(dnnl_dim_t)k * k, (dnnl_dim_t)O * k * k, k, 1};
    DNNL(dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_u8, dnnl_acdb));
    DNNL(dnnl_memory_desc_init_by_strides(&wts, 4, wdd, dnnl_s8, wstr));
    DNNL(dnnl_memory_desc_init_by_tag(&wany, 4, wdd, dnnl_s8, dnnl_format_tag_any));
    DNNL(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_acdb));
    dnnl_deconvolution_desc_t dsc;
    DNNL(dnnl_dilated_deconvolution_forward_desc_init(&dsc, dnnl_forward_inference,
                                                      dnnl_deconvolution_direct, &src, &wany, NULL,
                                                      &dst, st, dl, pl, pr));
    size_t in_bytes = (size_t)C * H * H, out_bytes = (size_t)O * Y * Y * 4;
    void *rx = input_bytes(in_bytes), *ry = output_bytes(out_bytes);
    raw_run raw = make_raw(&dsc, op.combined, O, 2, &wts, op.w, rx, ry, dnnl_query_weights_md, 0,
                           (int32_t)xz);
    char label[96];
    snprintf(label, sizeof label, "ConvTranspose %dx%d stride %d %d->%d %dx%d NCHW, zero point %d",
             k, k, k, C, O, H, H, (int)xz);
    report(label, g, &raw, in_bytes, out_bytes, 21);
    raw_free(&raw);
    dqg_graph_destroy(g);
    conv_operands_free(&op);
    free(rx);
    free(ry);
}

/* A depthwise 3x3 layer of MobileNetV2, as its QDQ model has it:
 * DQ(u8 x, zero point xz), DQ(s8 W [C, 1, 3, 3], per channel) ->
 * Convolution (C groups, padding 1) -> Q(u8), channels-last. The fused
 * kernel is dqgraph's own on AVX-512 VNNI, else oneDNN's. */
static void bench_dwconv(int C, int H, int stride, uint8_t xz)
{
    int Y = (H + 2 - 3) / stride + 1;
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {1, H, H, C}, wd[] = {C, 1, 3, 3}, one = 1;
    float ys = 0.05f;
    uint8_t yz = 0;
    conv_operands op = conv_operands_make(g, xd, xz, wd, 0, ys);
    dqg_conv_attrs ca = {.spatial_rank = 2,
                         .strides = {stride, stride},
                         .pads_begin = {1, 1},
                         .pads_end = {1, 1},
                         .dilations = {1, 1},
                         .groups = C,
                         .data_format = DQG_FORMAT_NXC};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id y =
        dqg_quantize_linear(g, "y_q", dqg_convolution(g, "conv", op.xf, op.wf, DQG_NONE, &ca),
                            dqg_constant(g, "ys", DQG_F32, 0, &one, &ys, 4),
                            dqg_constant(g, "yz", DQG_U8, 0, &one, &yz, 1), &qa);
    CHECK(dqg_output(g, y, "y"));
    CHECK(dqg_graph_finalize(g));

    dnnl_memory_desc_t src, wts, wany, dst;
    dnnl_dims_t sd = {1, C, H, H}, wdd = {C, 1, 1, 3, 3}, dd = {1, C, Y, Y};
    dnnl_dims_t st = {stride, stride}, dl = {0, 0}, pl = {1, 1}, pr = {1, 1};
    DNNL(dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_u8, dnnl_acdb));
    DNNL(dnnl_memory_desc_init_by_tag(&wts, 5, wdd, dnnl_s8, dnnl_abcde));
    DNNL(dnnl_memory_desc_init_by_tag(&wany, 5, wdd, dnnl_s8, dnnl_format_tag_any));
    DNNL(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_u8, dnnl_acdb));
    dnnl_convolution_desc_t cd;
    DNNL(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                    dnnl_convolution_direct, &src, &wany, NULL,
                                                    &dst, st, dl, pl, pr));
    size_t in_bytes = (size_t)C * H * H, out_bytes = (size_t)C * Y * Y;
    void *rx = input_bytes(in_bytes), *ry = output_bytes(out_bytes);
    raw_run raw =
        make_raw(&cd, op.combined, C, 2, &wts, op.w, rx, ry, dnnl_query_weights_md, 0, (int32_t)xz);
    char label[96];
    snprintf(label, sizeof label,
             "Depthwise 3x3 stride %d, %d channels %dx%d NHWC, u8 (zero point %d) -> u8", stride, C,
             H, H, (int)xz);
    report(label, g, &raw, in_bytes, out_bytes, 41);
    raw_free(&raw);
    dqg_graph_destroy(g);
    conv_operands_free(&op);
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
    bench_deconv(256, 128, 28, 2, 0);
    bench_deconv(256, 128, 28, 2, 128);
    bench_deconv(128, 64, 56, 2, 0);
    bench_dwconv(32, 112, 1, 0);
    bench_dwconv(96, 112, 2, 0);
    bench_dwconv(144, 56, 1, 0);
    bench_dwconv(144, 56, 1, 110);
    bench_dwconv(192, 28, 1, 0);
    bench_dwconv(576, 14, 1, 0);
    bench_dwconv(960, 7, 1, 0);
    /* The small-M table: its floors need AVX512-VNNI (as the int8 kernels
     * that could reach them do). */
    bool vnni = __builtin_cpu_supports("avx512vnni");
    printf("\n### Small M: int8 GEMV, K = N = 4096\n\n");
    printf("The floor of a shape is the larger of its two floor rows (%s). Each row's ratio is "
           "its median over that floor.\n\n",
           vnni ? "measured in the same run" : "not measured: no AVX512-VNNI");
    printf("| shape | runner | ms (min-max) | / floor |\n|---|---|---|---|\n");
    static const int64_t ms[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        bench_small_m(ms[i], 4096, 4096, vnni);
    DNNL(dnnl_stream_destroy(stream));
    DNNL(dnnl_engine_destroy(engine));
    return 0;
}
