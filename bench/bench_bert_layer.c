/* The BERT encoder layer (sequence 128, hidden 768, 12 heads, FFN 3072,
 * batch 1; tests/support/transformer_zoo.c writes it as ONNX Runtime's
 * dynamic quantizer does) on dqgraph, against the same layer written
 * directly as oneDNN primitives: the six u8 x s8 projections with run-time
 * scales and source zero points, their biases and GELU / residual adds as
 * post-ops, the two f32 attention matmuls on strided head views with the
 * 1/sqrt(d) scale and the mask fused, softmax and the two layer
 * normalizations. The raw version leaves out the four dynamic
 * quantizations of the activations (oneDNN has no primitive for them):
 * it is the floor an engine built on oneDNN's primitives can reach on
 * this machine, and dqgraph's ratio to it is the room that is left.
 *
 * Usage: bench_bert_layer [--raw-only] [--iters N] [--rounds N]
 * (--raw-only prints "median_ms: X" of the raw layer, for
 * scripts/bench_ort.sh, which times ONNX Runtime against it in one run). */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "transformer_zoo.h"

#define S     128
#define H     768
#define HEADS 12
#define D     64
#define F     3072

#define DNNL(call)                                                                                 \
    do {                                                                                           \
        if ((call) != dnnl_success) {                                                              \
            fprintf(stderr, "%s:%d: oneDNN call failed: %s\n", __FILE__, __LINE__, #call);         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != DQG_OK) {                                                                    \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, dqg_last_error());                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static dnnl_engine_t eng;
static dnnl_stream_t strm;

typedef struct prim {
    const char *name;
    dnnl_primitive_t p;
    dnnl_exec_arg_t args[8];
    int n;
} prim;

static dnnl_memory_t mem(const dnnl_memory_desc_t *md, void *handle)
{
    dnnl_memory_t m;
    DNNL(dnnl_memory_create(&m, md, eng, handle ? handle : DNNL_MEMORY_ALLOCATE));
    return m;
}

static dnnl_memory_desc_t md_tag(int rank, const dnnl_dim_t *d, dnnl_data_type_t dt)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {0};
    memcpy(dims, d, sizeof(dnnl_dim_t) * (size_t)rank);
    dnnl_format_tag_t tag = rank == 1   ? dnnl_a
                            : rank == 2 ? dnnl_ab
                            : rank == 3 ? dnnl_abc
                                        : dnnl_abcd;
    DNNL(dnnl_memory_desc_init_by_tag(&md, rank, dims, dt, tag));
    return md;
}

static void fill_f32(dnnl_memory_t m, size_t n, float v)
{
    float *p;
    DNNL(dnnl_memory_get_data_handle(m, (void **)&p));
    for (size_t i = 0; i < n; i++)
        p[i] = v * (float)((i * 7919) % 17) / 17.0f;
}

static void fill_bytes(dnnl_memory_t m, const dnnl_memory_desc_t *md, int v)
{
    void *p;
    DNNL(dnnl_memory_get_data_handle(m, &p));
    memset(p, v, dnnl_memory_desc_get_size(md));
}

static void add_arg(prim *p, int kind, dnnl_memory_t m)
{
    p->args[p->n].arg = kind;
    p->args[p->n].memory = m;
    p->n++;
}

static dnnl_primitive_t create(const void *desc, dnnl_primitive_attr_t attr,
                               dnnl_primitive_desc_t *pd_out)
{
    dnnl_primitive_desc_t pd;
    DNNL(dnnl_primitive_desc_create(&pd, desc, attr, eng, NULL));
    dnnl_primitive_t p;
    DNNL(dnnl_primitive_create(&p, pd));
    if (pd_out)
        *pd_out = pd;
    else
        dnnl_primitive_desc_destroy(pd);
    return p;
}

/* A dynamic-int8 projection: u8 src [S, K] (run-time zero point) x s8
 * weights [K, N] -> f32 dst [S, N] * run-time scale + bias, then `post`
 * (0: none, 1: GELU-erf, 2: add the f32 residual [S, N]). */
static prim projection(const char *name, int64_t K, int64_t N, dnnl_memory_t src, dnnl_memory_t dst,
                       int post, dnnl_memory_t residual)
{
    prim r = {.name = name};
    dnnl_dims_t sd = {S, K}, wd = {K, N}, bd = {1, N}, dd = {S, N};
    dnnl_memory_desc_t smd = md_tag(2, sd, dnnl_u8), dmd = md_tag(2, dd, dnnl_f32),
                       bmd = md_tag(2, bd, dnnl_f32), wmd;
    DNNL(dnnl_memory_desc_init_by_tag(&wmd, 2, wd, dnnl_s8, dnnl_format_tag_any));
    dnnl_matmul_desc_t d;
    DNNL(dnnl_matmul_desc_init(&d, &smd, &wmd, &bmd, &dmd));
    dnnl_primitive_attr_t a;
    DNNL(dnnl_primitive_attr_create(&a));
    DNNL(dnnl_primitive_attr_set_output_scales(a, 1, 0, &DNNL_RUNTIME_F32_VAL));
    DNNL(dnnl_primitive_attr_set_zero_points(a, DNNL_ARG_SRC, 1, 0, &DNNL_RUNTIME_S32_VAL));
    dnnl_post_ops_t po;
    DNNL(dnnl_post_ops_create(&po));
    if (post == 1)
        DNNL(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_gelu_erf, 0, 0));
    if (post == 2)
        DNNL(dnnl_post_ops_append_binary(po, dnnl_binary_add, &dmd));
    DNNL(dnnl_primitive_attr_set_post_ops(a, po));
    dnnl_primitive_desc_t pd;
    r.p = create(&d, a, &pd);
    const dnnl_memory_desc_t *packed = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t w = mem(packed, NULL), b = mem(&bmd, NULL);
    fill_bytes(w, packed, 1);
    fill_f32(b, (size_t)N, 0.1f);
    dnnl_dim_t one[] = {1};
    dnnl_memory_desc_t scmd = md_tag(1, one, dnnl_f32), zpmd = md_tag(1, one, dnnl_s32);
    dnnl_memory_t sc = mem(&scmd, NULL), zp = mem(&zpmd, NULL);
    float *scp;
    int32_t *zpp;
    DNNL(dnnl_memory_get_data_handle(sc, (void **)&scp));
    DNNL(dnnl_memory_get_data_handle(zp, (void **)&zpp));
    *scp = 1e-4f;
    *zpp = 128;
    add_arg(&r, DNNL_ARG_SRC, src);
    add_arg(&r, DNNL_ARG_WEIGHTS, w);
    add_arg(&r, DNNL_ARG_BIAS, b);
    add_arg(&r, DNNL_ARG_DST, dst);
    add_arg(&r, DNNL_ARG_ATTR_OUTPUT_SCALES, sc);
    add_arg(&r, DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp);
    if (post == 2)
        add_arg(&r, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, residual);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(a);
    dnnl_primitive_desc_destroy(pd);
    return r;
}

/* A [S, H] buffer seen as heads [1, HEADS, S, D] (or [1, HEADS, D, S]
 * when `transposed`). */
static dnnl_memory_desc_t head_view(bool transposed)
{
    dnnl_dims_t dims = {1, HEADS, transposed ? D : S, transposed ? S : D};
    dnnl_dims_t strides = {(dnnl_dim_t)S * H, D, transposed ? 1 : H, transposed ? H : 1};
    dnnl_memory_desc_t md;
    DNNL(dnnl_memory_desc_init_by_strides(&md, 4, dims, dnnl_f32, strides));
    return md;
}

static prim layer_norm(const char *name, dnnl_memory_t src, dnnl_memory_t dst)
{
    prim r = {.name = name};
    dnnl_dim_t dd[] = {S, H}, cd[] = {H};
    dnnl_memory_desc_t md = md_tag(2, dd, dnnl_f32), cmd = md_tag(1, cd, dnnl_f32);
    dnnl_layer_normalization_desc_t d;
    DNNL(dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &md, NULL, 1e-12f,
                                                    dnnl_use_scale | dnnl_use_shift));
    r.p = create(&d, NULL, NULL);
    dnnl_memory_t sc = mem(&cmd, NULL), sh = mem(&cmd, NULL);
    fill_f32(sc, H, 1.0f);
    fill_f32(sh, H, 0.1f);
    add_arg(&r, DNNL_ARG_SRC, src);
    add_arg(&r, DNNL_ARG_DST, dst);
    add_arg(&r, DNNL_ARG_SCALE, sc);
    add_arg(&r, DNNL_ARG_SHIFT, sh);
    return r;
}

enum { NPRIM = 11 };

static void build_raw(prim *p)
{
    dnnl_dim_t sh[] = {S, H}, sf[] = {S, F}, pd4[] = {1, HEADS, S, S}, mk[] = {1, 1, 1, S};
    dnnl_memory_desc_t u8h = md_tag(2, sh, dnnl_u8), f32h = md_tag(2, sh, dnnl_f32),
                       u8f = md_tag(2, sf, dnnl_u8), f32f = md_tag(2, sf, dnnl_f32),
                       probs = md_tag(4, pd4, dnnl_f32), mask = md_tag(4, mk, dnnl_f32);
    dnnl_memory_t xq = mem(&u8h, NULL), x = mem(&f32h, NULL), q = mem(&f32h, NULL),
                  k = mem(&f32h, NULL), v = mem(&f32h, NULL), ctx = mem(&f32h, NULL),
                  ctxq = mem(&u8h, NULL), h1pre = mem(&f32h, NULL), h1 = mem(&f32h, NULL),
                  h1q = mem(&u8h, NULL), g = mem(&f32f, NULL), gq = mem(&u8f, NULL),
                  ypre = mem(&f32h, NULL), y = mem(&f32h, NULL), sc = mem(&probs, NULL),
                  pr = mem(&probs, NULL), mm = mem(&mask, NULL);
    fill_bytes(xq, &u8h, 120);
    fill_bytes(ctxq, &u8h, 130);
    fill_bytes(h1q, &u8h, 140);
    fill_bytes(gq, &u8f, 110);
    fill_f32(x, (size_t)S * H, 1.0f);
    fill_f32(mm, S, -1.0f);
    p[0] = projection("Q projection", H, H, xq, q, 0, NULL);
    p[1] = projection("K projection", H, H, xq, k, 0, NULL);
    p[2] = projection("V projection", H, H, xq, v, 0, NULL);

    /* scores = Q K^T / sqrt(d) + mask, on the head views. */
    dnnl_memory_desc_t qv = head_view(false), ktv = head_view(true), vv = head_view(false);
    dnnl_memory_t qh = mem(&qv, NULL), kth = mem(&ktv, NULL), vh = mem(&vv, NULL),
                  ch = mem(&vv, NULL);
    void *hq, *hk, *hv, *hc;
    DNNL(dnnl_memory_get_data_handle(q, &hq));
    DNNL(dnnl_memory_get_data_handle(k, &hk));
    DNNL(dnnl_memory_get_data_handle(v, &hv));
    DNNL(dnnl_memory_get_data_handle(ctx, &hc));
    DNNL(dnnl_memory_set_data_handle(qh, hq));
    DNNL(dnnl_memory_set_data_handle(kth, hk));
    DNNL(dnnl_memory_set_data_handle(vh, hv));
    DNNL(dnnl_memory_set_data_handle(ch, hc));
    {
        prim *r = &p[3];
        r->name = "scores: Q K^T / 8 + mask (f32)";
        dnnl_matmul_desc_t d;
        DNNL(dnnl_matmul_desc_init(&d, &qv, &ktv, NULL, &probs));
        dnnl_primitive_attr_t a;
        DNNL(dnnl_primitive_attr_create(&a));
        float s8 = 0.125f;
        DNNL(dnnl_primitive_attr_set_output_scales(a, 1, 0, &s8));
        dnnl_post_ops_t po;
        DNNL(dnnl_post_ops_create(&po));
        DNNL(dnnl_post_ops_append_binary(po, dnnl_binary_add, &mask));
        DNNL(dnnl_primitive_attr_set_post_ops(a, po));
        r->p = create(&d, a, NULL);
        add_arg(r, DNNL_ARG_SRC, qh);
        add_arg(r, DNNL_ARG_WEIGHTS, kth);
        add_arg(r, DNNL_ARG_DST, sc);
        add_arg(r, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mm);
        dnnl_post_ops_destroy(po);
        dnnl_primitive_attr_destroy(a);
    }
    {
        prim *r = &p[4];
        r->name = "softmax";
        dnnl_softmax_desc_t d;
        DNNL(dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &probs, 3));
        r->p = create(&d, NULL, NULL);
        add_arg(r, DNNL_ARG_SRC, sc);
        add_arg(r, DNNL_ARG_DST, pr);
    }
    {
        prim *r = &p[5];
        r->name = "context: P V (f32)";
        dnnl_matmul_desc_t d;
        DNNL(dnnl_matmul_desc_init(&d, &probs, &vv, NULL, &vv));
        r->p = create(&d, NULL, NULL);
        add_arg(r, DNNL_ARG_SRC, pr);
        add_arg(r, DNNL_ARG_WEIGHTS, vh);
        add_arg(r, DNNL_ARG_DST, ch);
    }
    p[6] = projection("attention output + residual", H, H, ctxq, h1pre, 2, x);
    p[7] = layer_norm("layer norm 1", h1pre, h1);
    p[8] = projection("FFN 1 + GELU", H, F, h1q, g, 1, NULL);
    p[9] = projection("FFN 2 + residual", F, H, gq, ypre, 2, h1);
    p[10] = layer_norm("layer norm 2", ypre, y);
}

static void run_prim(const prim *p)
{
    DNNL(dnnl_primitive_execute(p->p, strm, p->n, p->args));
}

static double time_raw(const prim *p, int iters, double *each)
{
    double *t = malloc(sizeof(double) * (size_t)iters);
    double *e = malloc(sizeof(double) * (size_t)iters * NPRIM);
    if (!t || !e)
        exit(1);
    for (int w = 0; w < 5; w++)
        for (int i = 0; i < NPRIM; i++)
            run_prim(&p[i]);
    for (int it = 0; it < iters; it++) {
        double t0 = bench_now_ms();
        for (int i = 0; i < NPRIM; i++) {
            double a = bench_now_ms();
            run_prim(&p[i]);
            DNNL(dnnl_stream_wait(strm));
            e[(size_t)i * iters + it] = bench_now_ms() - a;
        }
        t[it] = bench_now_ms() - t0;
    }
    for (int i = 0; each && i < NPRIM; i++)
        each[i] = median(e + (size_t)i * iters, iters);
    double m = median(t, iters);
    free(t);
    free(e);
    return m;
}

static double time_dqgraph(dqg_compiled *c, const float *x, float *y, int iters)
{
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = sizeof(float) * S * H};
    dqg_buffer out = {.name = "y", .data = y, .size = sizeof(float) * S * H};
    double *t = malloc(sizeof(double) * (size_t)iters);
    if (!t)
        exit(1);
    for (int w = 0; w < 5; w++)
        CHECK(dqg_execute(c, &in, 1, &out, 1));
    for (int it = 0; it < iters; it++) {
        double t0 = bench_now_ms();
        CHECK(dqg_execute(c, &in, 1, &out, 1));
        t[it] = bench_now_ms() - t0;
    }
    double m = median(t, iters);
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    int iters = 50, rounds = 5;
    bool raw_only = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--raw-only"))
            raw_only = true;
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--raw-only] [--iters N] [--rounds N]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1 || rounds < 1) {
        fprintf(stderr, "--iters and --rounds take a positive number\n");
        return 2;
    }
    DNNL(dnnl_engine_create(&eng, dnnl_cpu, 0));
    DNNL(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
    prim raw[NPRIM];
    memset(raw, 0, sizeof raw);
    build_raw(raw);
    if (raw_only) {
        printf("median_ms: %.4f\n", time_raw(raw, iters, NULL));
        return 0;
    }

    double bound;
    tm_model *m = zoo_bert_layer(S, H, HEADS, F, 8, &bound);
    size_t size;
    uint8_t *bytes = tm_pack(m, &size);
    tm_free(m);
    dqg_graph *g;
    CHECK(dqg_onnx_load_memory(bytes, size, NULL, NULL, &g));
    free(bytes);
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    CHECK(dqg_compile(g, &o, &c));
    float *x = malloc(sizeof(float) * S * H), *y = malloc(sizeof(float) * S * H);
    if (!x || !y)
        return 1;
    for (int i = 0; i < S * H; i++)
        x[i] = (float)((i * 7919) % 201 - 100) / 50.0f;

    double *d = malloc(sizeof(double) * (size_t)rounds),
           *r = malloc(sizeof(double) * (size_t)rounds),
           *ratio = malloc(sizeof(double) * (size_t)rounds);
    double each[NPRIM], sum_each[NPRIM] = {0};
    if (!d || !r || !ratio)
        return 1;
    for (int k = 0; k < rounds; k++) {
        r[k] = time_raw(raw, iters, each);
        d[k] = time_dqgraph(c, x, y, iters);
        ratio[k] = d[k] / r[k];
        for (int i = 0; i < NPRIM; i++)
            sum_each[i] += each[i] / rounds;
    }
    printf("Medians of %d alternating rounds of %d runs, %d dqgraph partitions.\n\n", rounds, iters,
           (int)dqg_compiled_partition_count(c));
    printf("| BERT layer, 128 x 768 | ms | dqgraph / raw |\n|---|---|---|\n");
    double rm = median(r, rounds), dm = median(d, rounds);
    printf("| raw oneDNN primitives (no activation quantization) | %.3f | |\n", rm);
    printf("| dqgraph, the whole ONNX layer | %.3f | %.2fx |\n\n", dm, median(ratio, rounds));
    printf("| raw primitive | ms (mean of round medians) |\n|---|---|\n");
    for (int i = 0; i < NPRIM; i++)
        printf("| %s | %.4f |\n", raw[i].name, sum_each[i]);
    free(d);
    free(r);
    free(ratio);
    free(x);
    free(y);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    return 0;
}
