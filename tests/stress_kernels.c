/* Executing real kernels from any thread, written without Criterion so it
 * also runs under ThreadSanitizer: one graph per partition kind -- int8
 * Convolution (row-major, with channels-last activations inside) and
 * MatMul, weight-only int4 MatMul (exact and on int8 activations), int8
 * element-wise chain, f32 Convolution and MatMul with epilogues, single
 * dequantize and quantize, a folded constant, a reference fallback -- is
 * compiled on the main thread and executed from 4 other threads at once,
 * while those threads also compile private copies under a cache of 2
 * entries (evictions of kernels in use). Every result must equal, bit for bit, the one a single
 * thread computed first. Ends with the line "N passed, N failed". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"

#define N_THREADS 4
#define N_ROUNDS  250
#define MAX_BYTES (64 * 1024)

static int passed, failed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void check(bool ok, const char *what, int k)
{
    pthread_mutex_lock(&lock);
    if (ok)
        passed++;
    else {
        failed++;
        fprintf(stderr, "FAIL %s (graph %d): %s\n", what, k, dqg_last_error());
    }
    pthread_mutex_unlock(&lock);
}

static dqg_tensor_id scalar(dqg_graph *g, float v)
{
    int64_t one = 1;
    return dqg_constant(g, NULL, DQG_F32, 0, &one, &v, sizeof v);
}

static dqg_tensor_id zero_point(dqg_graph *g, uint8_t v)
{
    int64_t one = 1;
    return dqg_constant(g, NULL, DQG_U8, 0, &one, &v, 1);
}

static dqg_tensor_id weights_s8(dqg_graph *g, int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    int8_t *w = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        w[i] = (int8_t)(i * 37 % 251 - 125);
    dqg_tensor_id t = dqg_constant(g, NULL, DQG_S8, rank, d, w, (size_t)n);
    free(w);
    return t;
}

static dqg_tensor_id weights_f32(dqg_graph *g, int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    float *w = malloc((size_t)n * sizeof *w);
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)(i % 13) * 0.01f - 0.06f;
    dqg_tensor_id t = dqg_constant(g, NULL, DQG_F32, rank, d, w, (size_t)n * sizeof(float));
    free(w);
    return t;
}

/* Graph k; its single input is "x", its single output "y". */
static dqg_graph *graph_k(int k)
{
    dqg_graph *g;
    if (dqg_graph_create(&g) != DQG_OK)
        return NULL;
    dqg_dequantize_linear_attrs da = {.opset = 21};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_conv_attrs ca = {.spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    dqg_tensor_id y = DQG_NONE;
    switch (k) {
    case 0: { /* two int8 convolutions, channels-last between them */
        int64_t xd[] = {1, 8, 12, 12}, wd[] = {8, 8, 3, 3};
        dqg_tensor_id t = dqg_input(g, "x", DQG_U8, 4, xd);
        for (int i = 0; i < 2; i++) {
            dqg_tensor_id f =
                dqg_dequantize_linear(g, NULL, t, scalar(g, 0.05f), zero_point(g, 100), &da);
            dqg_tensor_id w = dqg_dequantize_linear(g, NULL, weights_s8(g, 4, wd),
                                                    scalar(g, 0.004f), DQG_NONE, &da);
            t = dqg_quantize_linear(
                g, NULL, dqg_relu(g, NULL, dqg_convolution(g, NULL, f, w, DQG_NONE, &ca)),
                scalar(g, 0.05f), zero_point(g, 100), &qa);
        }
        y = t;
        break;
    }
    case 1: { /* int8 MatMul with bias */
        int64_t xd[] = {64, 256}, wd[] = {256, 128}, n = 128;
        dqg_tensor_id a = dqg_dequantize_linear(g, NULL, dqg_input(g, "x", DQG_U8, 2, xd),
                                                scalar(g, 0.02f), zero_point(g, 128), &da);
        dqg_tensor_id b =
            dqg_dequantize_linear(g, NULL, weights_s8(g, 2, wd), scalar(g, 0.01f), DQG_NONE, &da);
        y = dqg_add(g, NULL, dqg_matmul(g, NULL, a, b, NULL), weights_f32(g, 1, &n));
        break;
    }
    case 2:   /* weight-only int4, blocks of 16 */
    case 8: { /* the same under fpmath int8 (see options_k) */
        int64_t xd[] = {3, 64}, wd[] = {64, 32}, sd[] = {4, 32};
        uint8_t w[64 * 32 / 2];
        for (int i = 0; i < (int)sizeof w; i++)
            w[i] = (uint8_t)(i * 29);
        dqg_dequantize_linear_attrs ba = {
            .opset = 21, .has_axis = true, .axis = 0, .block_size = 16};
        dqg_tensor_id b =
            dqg_dequantize_linear(g, NULL, dqg_constant(g, NULL, DQG_S4, 2, wd, w, sizeof w),
                                  weights_f32(g, 2, sd), DQG_NONE, &ba);
        y = dqg_matmul(g, NULL, dqg_input(g, "x", DQG_F32, 2, xd), b, NULL);
        break;
    }
    case 3: { /* int8 element-wise chain */
        int64_t xd[] = {2, 999};
        dqg_tensor_id a = dqg_dequantize_linear(g, NULL, dqg_input(g, "x", DQG_U8, 2, xd),
                                                scalar(g, 0.03f), zero_point(g, 90), &da);
        y = dqg_quantize_linear(g, NULL,
                                dqg_clip(g, NULL, dqg_mul(g, NULL, a, scalar(g, 1.5f)), 0, 5),
                                scalar(g, 0.02f), zero_point(g, 0), &qa);
        break;
    }
    case 4: { /* f32 convolution with epilogue */
        int64_t xd[] = {1, 8, 10, 10}, wd[] = {16, 8, 3, 3}, o = 16;
        y = dqg_clip(g, NULL,
                     dqg_convolution(g, NULL, dqg_input(g, "x", DQG_F32, 4, xd),
                                     weights_f32(g, 4, wd), weights_f32(g, 1, &o), &ca),
                     -1.0f, 1.0f);
        break;
    }
    case 5: { /* f32 MatMul of run-time operands after a folded Transpose */
        int64_t xd[] = {2, 3, 8, 16}, wd[] = {24, 16};
        dqg_tensor_id w = dqg_transpose(g, NULL, weights_f32(g, 2, wd), NULL);
        y = dqg_relu(g, NULL, dqg_matmul(g, NULL, dqg_input(g, "x", DQG_F32, 4, xd), w, NULL));
        break;
    }
    case 6: { /* lone dequantize, then quantize per axis */
        int64_t xd[] = {6, 300}, six = 6;
        float s[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
        dqg_tensor_id f = dqg_dequantize_linear(g, NULL, dqg_input(g, "x", DQG_U8, 2, xd),
                                                scalar(g, 0.05f), zero_point(g, 7), &da);
        dqg_quantize_linear_attrs pa = {.opset = 13, .has_axis = true, .axis = 0};
        y = dqg_quantize_linear(g, NULL, dqg_relu(g, NULL, f),
                                dqg_constant(g, NULL, DQG_F32, 1, &six, s, sizeof s), DQG_NONE,
                                &pa);
        break;
    }
    default: { /* integer Add: the reference kernel */
        int64_t xd[] = {5, 40};
        int8_t c[200];
        for (int i = 0; i < 200; i++)
            c[i] = (int8_t)(i * 3);
        y = dqg_add(g, NULL, dqg_input(g, "x", DQG_S8, 2, xd),
                    dqg_constant(g, NULL, DQG_S8, 2, xd, c, sizeof c));
        break;
    }
    }
    dqg_output(g, y, "y");
    if (dqg_graph_finalize(g) != DQG_OK) {
        fprintf(stderr, "graph %d: %s\n", k, dqg_last_error());
        dqg_graph_destroy(g);
        return NULL;
    }
    return g;
}

#define N_GRAPHS 9

/* Graph 8 runs the weight-only kernel on int8 activations. */
static dqg_compile_options options_k(int k)
{
    dqg_compile_options o = dqg_compile_options_default();
    if (k == 8)
        o.fpmath = DQG_FPMATH_INT8;
    return o;
}
static dqg_graph *graphs[N_GRAPHS];
static dqg_compiled *shared[N_GRAPHS];
static unsigned char input[N_GRAPHS][MAX_BYTES], expected[N_GRAPHS][MAX_BYTES];
static size_t in_bytes[N_GRAPHS], out_bytes[N_GRAPHS];

static bool run(dqg_compiled *c, int k, unsigned char *out)
{
    dqg_buffer ib = {.name = "x", .data = input[k], .size = in_bytes[k]};
    dqg_buffer ob = {.name = "y", .data = out, .size = out_bytes[k]};
    return dqg_execute(c, &ib, 1, &ob, 1) == DQG_OK;
}

/* Every thread runs the same compiled graph at once (one primitive,
 * executed concurrently), then the mixed rounds. */
static pthread_barrier_t start;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 7;
    static __thread unsigned char out[MAX_BYTES];
    pthread_barrier_wait(&start);
    for (int r = 0; r < N_ROUNDS / 4; r++)
        check(run(shared[1], 1, out) && memcmp(out, expected[1], out_bytes[1]) == 0,
              "one graph from all threads at once", 1);
    for (int r = 0; r < N_ROUNDS; r++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)(seed >> 16) % N_GRAPHS;
        /* Compiled on the main thread, run here. */
        check(run(shared[k], k, out) && memcmp(out, expected[k], out_bytes[k]) == 0,
              "graph compiled on another thread", k);
        /* Compiled here, with evictions all around. */
        if (r % 3 == 0) {
            dqg_compiled *c = NULL;
            dqg_compile_options o = options_k(k);
            check(dqg_compile(graphs[k], &o, &c) == DQG_OK && run(c, k, out) &&
                      memcmp(out, expected[k], out_bytes[k]) == 0,
                  "graph compiled here", k);
            dqg_compiled_destroy(c);
        }
    }
    return NULL;
}

int main(void)
{
    for (int k = 0; k < N_GRAPHS; k++) {
        if (!(graphs[k] = graph_k(k)))
            return 1;
        in_bytes[k] = dqg_tensor_byte_size(graphs[k], dqg_graph_find_tensor(graphs[k], "x"));
        out_bytes[k] = dqg_tensor_byte_size(graphs[k], dqg_graph_find_tensor(graphs[k], "y"));
        if (in_bytes[k] > MAX_BYTES || out_bytes[k] > MAX_BYTES)
            return 1;
        for (size_t i = 0; i < in_bytes[k]; i++)
            input[k][i] = (unsigned char)(i * 131 + 17 * k);
        if (dqg_tensor_dtype(graphs[k], dqg_graph_find_tensor(graphs[k], "x")) == DQG_F32)
            for (size_t i = 0; i < in_bytes[k] / 4; i++)
                ((float *)input[k])[i] = (float)((int)(i * 7 % 23) - 11) * 0.125f;
        dqg_compile_options o = options_k(k);
        check(dqg_compile(graphs[k], &o, &shared[k]) == DQG_OK && run(shared[k], k, expected[k]),
              "single-threaded run", k);
    }
    dqg_cache_set_capacity(2);
    pthread_barrier_init(&start, NULL, N_THREADS);
    pthread_t t[N_THREADS];
    for (uintptr_t i = 0; i < N_THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int k = 0; k < N_GRAPHS; k++) {
        dqg_compiled_destroy(shared[k]);
        dqg_graph_destroy(graphs[k]);
    }
    dqg_cache_clear();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
