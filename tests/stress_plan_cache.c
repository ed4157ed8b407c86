/* Concurrency stress of whole-graph plans, written without Criterion so it
 * also runs under ThreadSanitizer: 4 threads compile, execute and destroy
 * graphs drawn from a small set (constant folding, an int8 element-wise
 * chain, a weight-only MatMul) while the cache holds only 3 entries, so
 * plans are built once per miss, shared, evicted while in use and rebuilt.
 * Every result must equal the single-threaded one. Ends with the line
 * "N passed, N failed". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"

#define N_THREADS 4
#define N_ROUNDS  150
#define N_GRAPHS  6
#define ROWS      4
#define COLS      32

static int passed, failed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void check(bool ok, const char *what)
{
    pthread_mutex_lock(&lock);
    if (ok)
        passed++;
    else {
        failed++;
        fprintf(stderr, "FAIL %s: %s\n", what, dqg_last_error());
    }
    pthread_mutex_unlock(&lock);
}

/* Graph k: y = Q(ReLU(DQ(x) * c_k)) for even k; y = x @ DQ(W_k int4) for
 * odd k, with W_k behind a constant Transpose (folded when compiled). */
static dqg_graph *graph_k(int k)
{
    dqg_graph *g;
    if (dqg_graph_create(&g) != DQG_OK)
        return NULL;
    int64_t xd[] = {ROWS, COLS}, one = 1;
    float s = 0.05f + 0.01f * (float)k, c = 1.0f + 0.25f * (float)k;
    uint8_t z = (uint8_t)(100 + k);
    dqg_dequantize_linear_attrs da = {.opset = 21};
    dqg_tensor_id sc = dqg_constant(g, "s", DQG_F32, 0, &one, &s, sizeof s);
    if (k % 2 == 0) {
        dqg_quantize_linear_attrs qa = {.opset = 13};
        dqg_tensor_id zp = dqg_constant(g, "z", DQG_U8, 0, &one, &z, 1);
        dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
        dqg_tensor_id t = dqg_mul(g, "m", dqg_dequantize_linear(g, "dq", x, sc, zp, &da),
                                  dqg_constant(g, "c", DQG_F32, 0, &one, &c, sizeof c));
        dqg_output(g, dqg_quantize_linear(g, "q", dqg_relu(g, "r", t), sc, zp, &qa), "y");
    } else {
        int64_t wd[] = {COLS, COLS};
        uint8_t w[COLS * COLS / 2];
        for (int i = 0; i < COLS * COLS / 2; i++)
            w[i] = (uint8_t)(i * 7 + k);
        dqg_tensor_id wt =
            dqg_transpose(g, "wt", dqg_constant(g, "w", DQG_S4, 2, wd, w, sizeof w), NULL);
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
        dqg_output(
            g, dqg_matmul(g, "mm", x, dqg_dequantize_linear(g, "wdq", wt, sc, DQG_NONE, &da), NULL),
            "y");
    }
    if (dqg_graph_finalize(g) != DQG_OK) {
        fprintf(stderr, "graph %d: %s\n", k, dqg_last_error());
        dqg_graph_destroy(g);
        return NULL;
    }
    return g;
}

static dqg_graph *graphs[N_GRAPHS];
static unsigned char expected[N_GRAPHS][ROWS * COLS * 4];

static bool run(dqg_compiled *c, int k, unsigned char *out)
{
    unsigned char in[ROWS * COLS * 4];
    for (int i = 0; i < ROWS * COLS; i++) {
        if (k % 2 == 0)
            in[i] = (unsigned char)(i * 13 + k);
        else
            ((float *)in)[i] = (float)(i % 17) * 0.25f - 2.0f;
    }
    size_t n = k % 2 == 0 ? ROWS * COLS : ROWS * COLS * 4;
    dqg_buffer ib = {.name = "x", .data = in, .size = n};
    dqg_buffer ob = {.name = "y", .data = out, .size = n};
    return dqg_execute(c, &ib, 1, &ob, 1) == DQG_OK;
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    dqg_compiled *held = NULL;
    int held_k = 0;
    for (int r = 0; r < N_ROUNDS; r++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)(seed >> 16) % N_GRAPHS;
        dqg_compiled *c = NULL;
        bool ok = dqg_compile(graphs[k], NULL, &c) == DQG_OK;
        unsigned char out[ROWS * COLS * 4];
        size_t n = k % 2 == 0 ? ROWS * COLS : ROWS * COLS * 4;
        check(ok && run(c, k, out) && memcmp(out, expected[k], n) == 0, "shared plan");
        /* Keep one compiled graph across rounds: its plan gets evicted
         * while it is still in use. */
        if (r % 10 == 0) {
            if (held) {
                size_t hn = held_k % 2 == 0 ? ROWS * COLS : ROWS * COLS * 4;
                check(run(held, held_k, out) && memcmp(out, expected[held_k], hn) == 0,
                      "evicted plan still in use");
                dqg_compiled_destroy(held);
            }
            held = c;
            held_k = k;
        } else {
            dqg_compiled_destroy(c);
        }
    }
    dqg_compiled_destroy(held);
    return NULL;
}

int main(void)
{
    for (int k = 0; k < N_GRAPHS; k++) {
        graphs[k] = graph_k(k);
        if (!graphs[k])
            return 1;
        dqg_compiled *c = NULL;
        dqg_cache_set_capacity(0);
        check(dqg_compile(graphs[k], NULL, &c) == DQG_OK && run(c, k, expected[k]),
              "single-threaded run");
        dqg_compiled_destroy(c);
    }
    dqg_cache_set_capacity(3);
    dqg_cache_clear();
    pthread_t t[N_THREADS];
    for (uintptr_t i = 0; i < N_THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(t[i], NULL);
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    check(s.plan_hits > 0 && s.plan_misses >= N_GRAPHS, "plans were shared and rebuilt");
    printf("plans: %llu hits, %llu misses; partitions: %llu hits, %llu misses\n",
           (unsigned long long)s.plan_hits, (unsigned long long)s.plan_misses,
           (unsigned long long)s.hits, (unsigned long long)s.misses);
    for (int k = 0; k < N_GRAPHS; k++)
        dqg_graph_destroy(graphs[k]);
    dqg_cache_clear();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
