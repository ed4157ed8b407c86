/* ResNet's stem MaxPool (3x3, stride 2, pads 1) on 1x64x112x112, u8 and f32:
 * a compiled dqgraph graph (row-major NCHW input and output, as a graph's
 * edges are) against oneDNN's pooling primitive called directly on the same
 * row-major bytes, and on channels-last bytes (the layout dqgraph keeps
 * between convolutions). Each figure is the median of 11 repetitions of 50
 * executions; every side reads the same 64-byte-aligned input. Prints a
 * Markdown table for docs/BENCHMARKS.md. */
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "dqgraph.h"

#define REPS  11
#define ITERS 50

typedef struct timing {
    double med, lo, hi; /* ms per execution */
} timing;

static timing summarize(double *t)
{
    qsort(t, REPS, sizeof *t, bench_cmp_double);
    double k = 1e3 / ITERS;
    return (timing){t[REPS / 2] * k, t[0] * k, t[REPS - 1] * k};
}

static const int64_t X_DIMS[] = {1, 64, 112, 112};

static timing bench_dqgraph(dqg_dtype t, const void *x, size_t xn, void *y, size_t yn, char *impl,
                            size_t impl_size)
{
    dqg_graph *g = NULL;
    dqg_graph_create(&g);
    dqg_tensor_id in = dqg_input(g, "x", t, 4, X_DIMS);
    dqg_pool_attrs a = {.algorithm = DQG_POOL_MAX,
                        .spatial_rank = 2,
                        .kernel = {3, 3},
                        .strides = {2, 2},
                        .pads_begin = {1, 1},
                        .pads_end = {1, 1}};
    dqg_output(g, dqg_pool(g, "maxpool", in, &a), "y");
    dqg_compiled *c = NULL;
    if (dqg_graph_finalize(g) != DQG_OK || dqg_compile(g, NULL, &c) != DQG_OK) {
        fprintf(stderr, "dqgraph: %s\n", dqg_last_error());
        exit(1);
    }
    snprintf(impl, impl_size, "%s", dqg_compiled_partition_info(c, 0));
    dqg_buffer bi = {.name = "x", .data = (void *)x, .size = xn};
    dqg_buffer bo = {.name = "y", .data = y, .size = yn};
    double t_[REPS];
    dqg_execute(c, &bi, 1, &bo, 1);
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now_s();
        for (int i = 0; i < ITERS; i++)
            dqg_execute(c, &bi, 1, &bo, 1);
        t_[r] = bench_now_s() - t0;
    }
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    return summarize(t_);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        dnnl_status_t s_ = (call);                                                                 \
        if (s_ != dnnl_success) {                                                                  \
            fprintf(stderr, "oneDNN: %s failed (%d)\n", #call, (int)s_);                           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static timing bench_onednn(dnnl_data_type_t dt, bool nhwc, const void *x, void *y, char *impl,
                           size_t impl_size)
{
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags));
    dnnl_memory_desc_t src, dst;
    dnnl_format_tag_t tag = nhwc ? dnnl_nhwc : dnnl_nchw;
    dnnl_dims_t xd = {1, 64, 112, 112}, yd = {1, 64, 56, 56};
    CHECK(dnnl_memory_desc_init_by_tag(&src, 4, xd, dt, tag));
    CHECK(dnnl_memory_desc_init_by_tag(&dst, 4, yd, dt, tag));
    dnnl_dims_t strides = {2, 2}, kernel = {3, 3}, dil = {0, 0}, pad = {1, 1};
    dnnl_pooling_v2_desc_t d;
    CHECK(dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, dnnl_pooling_max, &src,
                                            &dst, strides, kernel, dil, pad, pad));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &d, NULL, eng, NULL));
    const char *name = "";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
    snprintf(impl, impl_size, "%s", name);
    dnnl_primitive_t prim;
    CHECK(dnnl_primitive_create(&prim, pd));
    dnnl_memory_t ms, md;
    CHECK(dnnl_memory_create(&ms, &src, eng, (void *)x));
    CHECK(dnnl_memory_create(&md, &dst, eng, y));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DST, md}};
    double t_[REPS];
    CHECK(dnnl_primitive_execute(prim, stream, 2, args));
    CHECK(dnnl_stream_wait(stream));
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now_s();
        for (int i = 0; i < ITERS; i++) {
            dnnl_primitive_execute(prim, stream, 2, args);
            dnnl_stream_wait(stream);
        }
        t_[r] = bench_now_s() - t0;
    }
    dnnl_memory_destroy(ms);
    dnnl_memory_destroy(md);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(eng);
    return summarize(t_);
}

int main(void)
{
    const size_t n_x = 64 * 112 * 112, n_y = 64 * 56 * 56;
    printf("MaxPool 3x3, stride 2, pads 1 on 1x64x112x112 (ResNet's stem); ms per execution, "
           "median of %d repetitions of %d (min-max).\n\n",
           REPS, ITERS);
    printf("| type | dqgraph, NCHW in and out (ms) | oneDNN on NCHW (ms) | oneDNN on NHWC (ms) | "
           "dqgraph / oneDNN NCHW | dqgraph / oneDNN NHWC | dqgraph kernel | oneDNN NCHW, NHWC "
           "kernels |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < 2; k++) {
        bool u8 = k == 0;
        size_t es = u8 ? 1 : 4, xn = n_x * es, yn = n_y * es;
        void *x = aligned_alloc(64, xn), *y = aligned_alloc(64, yn);
        srand(1);
        for (size_t i = 0; i < n_x; i++) {
            if (u8)
                ((uint8_t *)x)[i] = (uint8_t)rand();
            else
                ((float *)x)[i] = (float)rand() / (float)RAND_MAX - 0.5f;
        }
        memset(y, 0, yn);
        char i_dqg[300], i_nchw[100], i_nhwc[100];
        timing d = bench_dqgraph(u8 ? DQG_U8 : DQG_F32, x, xn, y, yn, i_dqg, sizeof i_dqg);
        dnnl_data_type_t dt = u8 ? dnnl_u8 : dnnl_f32;
        timing a = bench_onednn(dt, false, x, y, i_nchw, sizeof i_nchw);
        timing b = bench_onednn(dt, true, x, y, i_nhwc, sizeof i_nhwc);
        const char *impl = strstr(i_dqg, "-> ") ? strstr(i_dqg, "-> ") + 3 : i_dqg;
        printf("| %s | %.4f (%.4f-%.4f) | %.4f (%.4f-%.4f) | %.4f (%.4f-%.4f) | %.2fx | %.2fx | "
               "%s | %s, %s |\n",
               u8 ? "u8" : "f32", d.med, d.lo, d.hi, a.med, a.lo, a.hi, b.med, b.lo, b.hi,
               d.med / a.med, d.med / b.med, impl, i_nchw, i_nhwc);
        free(x);
        free(y);
    }
    printf("\nA graph's inputs and outputs are row-major, so dqgraph's u8 pooling reorders its "
           "source to channels-last and back around oneDNN's jit kernel (on NCHW oneDNN has "
           "only its reference loop for int8); between convolutions the layout pass keeps the "
           "activations channels-last and the pooling runs as the NHWC column.\n");
    return 0;
}
