/* Dequantize throughput on 64 Mi elements: dqgraph (a compiled Dequantize
 * graph, which picks its kernel), dqgraph's own kernel, and the oneDNN
 * reorder where one exists, against a two-thread memcpy. Bandwidth counts
 * bytes read plus bytes written. Each repetition runs memcpy and every
 * kernel back to back; the ratio is the median of per-repetition ratios. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dqgraph.h"
#include "runtime/dq_kernel.h"

#define N    (64LL * 1024 * 1024)
#define REPS 11

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct result {
    double med, lo, hi; /* GB/s */
} result;

static result summarize(double *t, double bytes)
{
    qsort(t, REPS, sizeof *t, cmp);
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
    double t0 = now_s();
    dqg_dq_kernel_run(k, x, s, NULL, y);
    return now_s() - t0;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
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
            double t0 = now_s();
            run_memcpy(copy_bytes, y, src);
            tm[r] = now_s() - t0;
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
    free(x);
    free(y);
    free(src);
    free(scales);
    return 0;
}
