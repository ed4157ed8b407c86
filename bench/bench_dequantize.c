/* Dequantize throughput on 64 Mi elements: dqgraph (the kernel a compiled
 * Dequantize picks), dqgraph's own kernel, and the oneDNN reorder where one
 * exists, against a two-thread memcpy. Then QuantizeLinear f32 -> u8: a
 * compiled dqgraph graph (its own kernel) against oneDNN's reorder with
 * output scale 1/scale and a destination zero point, and the number of
 * elements where the reorder misses the definition's result. Bandwidth
 * counts bytes read plus bytes written. Each repetition runs memcpy and
 * every kernel back to back; ratios are medians of per-repetition ratios. */
#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "dqgraph.h"
#include "runtime/dq_kernel.h"

#define N    (64LL * 1024 * 1024)
#define REPS 11

typedef struct result {
    double med, lo, hi; /* GB/s */
} result;

static result summarize(double *t, double bytes)
{
    qsort(t, REPS, sizeof *t, bench_cmp_double);
    return (result){bytes / t[REPS / 2] / 1e9, bytes / t[REPS - 1] / 1e9, bytes / t[0] / 1e9};
}

static void *page_alloc(size_t n)
{
    void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
    memset(p, 1, n); /* fault the pages in before timing */
    return p;
}

static void run_memcpy(size_t bytes, void *dst, const void *src)
{
#pragma omp parallel num_threads(2)
    {
        int id = omp_get_thread_num();
        size_t half = bytes / 2;
        memcpy((char *)dst + id * half, (const char *)src + id * half, id ? bytes - half : half);
    }
}

typedef struct bcase {
    const char *label;
    dqg_dtype xt, ot;
    dqg_granularity gran;
    int64_t block;
} bcase;

static double time_kernel(dqg_dq_kernel *k, const void *x, const void *s, void *y)
{
    double t0 = bench_now_s();
    dqg_dq_kernel_run(k, x, s, NULL, y);
    return bench_now_s() - t0;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

/* QuantizeLinear f32 -> u8 with one scale and zero point, or per column
 * scales (no zero point): dqgraph vs a oneDNN reorder vs memcpy. */
static void bench_quantize(int64_t rows, int64_t cols, const float *src, void *y, void *y2,
                           bool per_axis)
{
    int64_t n = rows * cols, dims[2] = {rows, cols};
    float *sc = malloc((size_t)cols * sizeof(float)), *inv = malloc((size_t)cols * sizeof(float));
    for (int64_t i = 0; i < cols; i++) {
        sc[i] = per_axis ? 0.01f + 0.001f * (float)(i % 13) : 0.0137f;
        inv[i] = 1.0f / sc[i];
    }
    int32_t zp = per_axis ? 0 : 127;
    uint8_t zp8 = (uint8_t)zp;
    /* dqgraph: a one-node graph, compiled. */
    dqg_graph *g = NULL;
    dqg_graph_create(&g);
    int64_t one = 1;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, dims);
    dqg_quantize_linear_attrs qa = {.opset = 13, .has_axis = true, .axis = 1};
    dqg_tensor_id q = dqg_quantize_linear(
        g, "q", x,
        per_axis ? dqg_constant(g, "s", DQG_F32, 1, &cols, sc, (size_t)cols * 4)
                 : dqg_constant(g, "s", DQG_F32, 0, &one, sc, 4),
        per_axis ? DQG_NONE : dqg_constant(g, "z", DQG_U8, 0, &one, &zp8, 1), &qa);
    dqg_output(g, q, "y");
    dqg_compiled *c = NULL;
    if (dqg_graph_finalize(g) != DQG_OK || dqg_compile(g, NULL, &c) != DQG_OK) {
        fprintf(stderr, "bench_quantize: %s\n", dqg_last_error());
        exit(1);
    }
    dqg_buffer in = {.id = x, .data = (void *)src, .size = (size_t)n * 4};
    dqg_buffer out = {.id = q, .data = y, .size = (size_t)n};
    /* oneDNN: the same reorder the int8 primitives use for requantization. */
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_engine_create(&eng, dnnl_cpu, 0);
    dnnl_stream_create(&strm, eng, dnnl_stream_default_flags);
    dnnl_memory_desc_t smd, dmd;
    dnnl_dims_t dd = {rows, cols};
    dnnl_memory_desc_init_by_tag(&smd, 2, dd, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&dmd, 2, dd, dnnl_u8, dnnl_ab);
    dnnl_primitive_attr_t attr;
    dnnl_primitive_attr_create(&attr);
    dnnl_primitive_attr_set_output_scales(attr, per_axis ? cols : 1, per_axis ? 2 : 0, inv);
    if (zp)
        dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &zp);
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t sm, dm;
    if (dnnl_reorder_primitive_desc_create(&pd, &smd, eng, &dmd, eng, attr) != dnnl_success ||
        dnnl_primitive_create(&prim, pd) != dnnl_success) {
        fprintf(stderr, "bench_quantize: oneDNN reorder creation failed\n");
        exit(1);
    }
    dnnl_memory_create(&sm, &smd, eng, (void *)src);
    dnnl_memory_create(&dm, &dmd, eng, y2);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, sm}, {DNNL_ARG_TO, dm}};
    double bytes = 5.0 * (double)n, tm[REPS], tq[REPS], tr[REPS], ratio[REPS], vs[REPS];
    dqg_execute(c, &in, 1, &out, 1);
    dnnl_primitive_execute(prim, strm, 2, args);
    dnnl_stream_wait(strm);
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now_s();
        run_memcpy((size_t)n * 4, y2, src);
        tm[r] = bench_now_s() - t0;
        t0 = bench_now_s();
        dqg_execute(c, &in, 1, &out, 1);
        tq[r] = bench_now_s() - t0;
        t0 = bench_now_s();
        dnnl_primitive_execute(prim, strm, 2, args);
        dnnl_stream_wait(strm);
        tr[r] = bench_now_s() - t0;
        ratio[r] = (bytes / tq[r]) / (8.0 * (double)n / tm[r]);
        vs[r] = tr[r] / tq[r];
    }
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++)
        differ += ((uint8_t *)y)[i] != ((uint8_t *)y2)[i];
    result mc = summarize(tm, 8.0 * (double)n), rq = summarize(tq, bytes),
           rr = summarize(tr, bytes);
    printf("| f32 -> u8, %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.2fx | "
           "%.2fx | %lld of %lld | %s |\n",
           per_axis ? "per-axis" : "per-tensor, zero point 127", rq.med, rq.lo, rq.hi, rr.med,
           rr.lo, rr.hi, mc.med, mc.lo, mc.hi, median(vs, REPS), median(ratio, REPS),
           (long long)differ, (long long)n, dqg_compiled_partition_info(c, 0));
    fflush(stdout);
    dnnl_memory_destroy(sm);
    dnnl_memory_destroy(dm);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    free(sc);
    free(inv);
}

int main(void)
{
    omp_set_num_threads(2);
    const bcase cases[] = {
        {"u8 -> f32, per-tensor", DQG_U8, DQG_F32, DQG_PER_TENSOR, 0},
        {"s8 -> f32, per-axis", DQG_S8, DQG_F32, DQG_PER_AXIS, 0},
        {"s4 -> f32, blocked (32)", DQG_S4, DQG_F32, DQG_BLOCKED, 32},
        {"f8e4m3fn -> f32, per-tensor", DQG_F8E4M3FN, DQG_F32, DQG_PER_TENSOR, 0},
        {"u16 -> f16, per-tensor", DQG_U16, DQG_F16, DQG_PER_TENSOR, 0},
    };
    int64_t rows = 4096, cols = N / 4096;
    void *x = page_alloc((size_t)N * 2), *y = page_alloc((size_t)N * 4);
    void *src = page_alloc((size_t)N * 4);
    float *scales = malloc((size_t)(rows * cols / 32 + cols) * sizeof(float));
    for (int64_t i = 0; i < rows * cols / 32 + cols; i++)
        scales[i] = 0.01f + 0.001f * (float)(i % 13);
    printf(
        "| case | dqgraph (GB/s) | own kernel (GB/s) | oneDNN reorder (GB/s) | memcpy, 2 threads "
        "(GB/s) | dqgraph / memcpy (median of per-run ratios) | kernel used "
        "|\n|---|---|---|---|---|---|---|\n");
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const bcase *b = &cases[c];
        dqg_dq_desc d = {.x_dtype = b->xt,
                         .scale_dtype = DQG_F32,
                         .zp_dtype = DQG_DTYPE_UNDEF,
                         .out_dtype = b->ot,
                         .granularity = b->gran,
                         .rank = 2,
                         .dims = {rows, cols},
                         .axis = 1,
                         .block_size = b->block,
                         .scale_is_constant = true,
                         .const_scale = scales};
        double bytes =
            (double)dqg_dtype_storage_size(b->xt, N) + (double)dqg_dtype_storage_size(b->ot, N);
        size_t copy_bytes = (size_t)dqg_dtype_storage_size(b->ot, N);
        dqg_dq_kernel *auto_k = NULL, *own = NULL, *dnnl = NULL;
        dqg_dq_kernel_create(&d, DQG_DQ_IMPL_AUTO, &auto_k);
        dqg_dq_kernel_create(&d, DQG_DQ_IMPL_OWN, &own);
        bool has_dnnl = dqg_dq_kernel_create(&d, DQG_DQ_IMPL_ONEDNN, &dnnl) == DQG_OK;
        /* Interleaved: each repetition times memcpy and every kernel back to
         * back, so the ratios compare like with like on a shared machine. */
        double tm[REPS], ta[REPS], to[REPS], td[REPS], ratio[REPS];
        run_memcpy(copy_bytes, y, src);
        time_kernel(auto_k, x, scales, y);
        time_kernel(own, x, scales, y);
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now_s();
            run_memcpy(copy_bytes, y, src);
            tm[r] = bench_now_s() - t0;
            ta[r] = time_kernel(auto_k, x, scales, y);
            to[r] = time_kernel(own, x, scales, y);
            td[r] = has_dnnl ? time_kernel(dnnl, x, scales, y) : 1.0;
            ratio[r] = (bytes / ta[r]) / (2.0 * (double)copy_bytes / tm[r]);
        }
        result mc = summarize(tm, 2.0 * (double)copy_bytes), ra = summarize(ta, bytes),
               ro = summarize(to, bytes);
        char dn[64] = "n/a";
        if (has_dnnl) {
            result rd = summarize(td, bytes);
            snprintf(dn, sizeof dn, "%.1f (%.1f-%.1f)", rd.med, rd.lo, rd.hi);
        }
        printf("| %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %s | %.1f (%.1f-%.1f) | %.2fx | %s "
               "|\n",
               b->label, ra.med, ra.lo, ra.hi, ro.med, ro.lo, ro.hi, dn, mc.med, mc.lo, mc.hi,
               median(ratio, REPS), dqg_dq_kernel_impl_name(auto_k));
        fflush(stdout);
        dqg_dq_kernel_destroy(auto_k);
        dqg_dq_kernel_destroy(own);
        dqg_dq_kernel_destroy(dnnl);
    }
    /* Inputs for quantize: values in about [-2, 2], with ties (x / scale
     * exactly k + 0.5) every 16th element. */
    float *fx = src;
    for (int64_t i = 0; i < N; i++)
        fx[i] = (i % 16 == 0) ? ((float)(i % 64) - 31.5f) * 0.0137f
                              : (float)((int64_t)(i * 2654435761u % 4001) - 2000) / 1000.0f;
    printf("\n### QuantizeLinear\n\n"
           "| case | dqgraph (GB/s) | oneDNN reorder (GB/s) | memcpy, 2 threads (GB/s) | "
           "oneDNN time / dqgraph time | dqgraph / memcpy | elements where the reorder misses "
           "the definition | dqgraph kernel |\n|---|---|---|---|---|---|---|---|\n");
    bench_quantize(rows, cols, fx, x, y, false);
    bench_quantize(rows, cols, fx, x, y, true);
    free(x);
    free(y);
    free(src);
    free(scales);
    return 0;
}
