/* Concurrency stress, written without Criterion so that it also runs under
 * ThreadSanitizer (Criterion's forking runner cannot start under TSan):
 * 8 threads x 1000 compiles over 20 distinct partitions must compile each
 * partition exactly once and give the single-threaded results, and 4
 * threads executing one compiled graph must each get correct outputs. Ends
 * with the line "N passed, N failed". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"

#define N_THREADS  8
#define N_COMPILES 1000
#define N_DISTINCT 20

static int passed, failed;

static void check(bool ok, const char *what)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL %s: %s\n", what, dqg_last_error());
    }
}

/* Graph k: x[k+1, 3] -> Clip(-k, k) -> ReLU -> y; distinct per k. */
static dqg_graph *graph_k(int k)
{
    dqg_graph *g;
    if (dqg_graph_create(&g) != DQG_OK)
        return NULL;
    int64_t dims[] = {k + 1, 3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, dims);
    dqg_tensor_id y = dqg_relu(g, "r", dqg_clip(g, "c", x, -(float)k, (float)k));
    dqg_output(g, y, "y");
    if (dqg_graph_finalize(g) != DQG_OK) {
        dqg_graph_destroy(g);
        return NULL;
    }
    return g;
}

static dqg_graph *graphs[N_DISTINCT];
static float expected[N_DISTINCT][(N_DISTINCT + 1) * 3];

static bool run_graph(dqg_compiled *c, int k, float *out)
{
    float in[(N_DISTINCT + 1) * 3];
    int n = (k + 1) * 3;
    for (int i = 0; i < n; i++)
        in[i] = (float)(i - n / 2) * 1.5f;
    dqg_buffer ib = {.name = "x", .data = in, .size = (size_t)n * sizeof(float)};
    dqg_buffer ob = {.name = "y", .data = out, .size = (size_t)n * sizeof(float)};
    return dqg_execute(c, &ib, 1, &ob, 1) == DQG_OK;
}

static void *compile_worker(void *arg)
{
    intptr_t seed = (intptr_t)arg;
    intptr_t bad = 0;
    for (int i = 0; i < N_COMPILES; i++) {
        int k = (int)((seed * 7 + i * 13) % N_DISTINCT);
        dqg_compiled *c = NULL;
        float out[(N_DISTINCT + 1) * 3];
        if (dqg_compile(graphs[k], NULL, &c) != DQG_OK || !run_graph(c, k, out) ||
            memcmp(out, expected[k], (size_t)(k + 1) * 3 * sizeof(float)) != 0)
            bad++;
        dqg_compiled_destroy(c);
    }
    return (void *)bad;
}

static dqg_compiled *shared;

static void *exec_worker(void *arg)
{
    intptr_t bad = 0;
    (void)arg;
    for (int i = 0; i < 500; i++) {
        float out[(N_DISTINCT + 1) * 3];
        if (!run_graph(shared, N_DISTINCT - 1, out) ||
            memcmp(out, expected[N_DISTINCT - 1], (size_t)N_DISTINCT * 3 * sizeof(float)) != 0)
            bad++;
    }
    return (void *)bad;
}

int main(void)
{
    for (int k = 0; k < N_DISTINCT; k++) {
        graphs[k] = graph_k(k);
        if (!graphs[k]) {
            fprintf(stderr, "building graph %d: %s\n", k, dqg_last_error());
            return 1;
        }
    }
    /* Single-threaded expectations, with the cache off. */
    dqg_cache_set_capacity(0);
    for (int k = 0; k < N_DISTINCT; k++) {
        dqg_compiled *c = NULL;
        check(dqg_compile(graphs[k], NULL, &c) == DQG_OK && run_graph(c, k, expected[k]),
              "single-threaded run");
        dqg_compiled_destroy(c);
    }
    dqg_cache_set_capacity(1024);
    dqg_cache_clear();

    pthread_t t[N_THREADS];
    for (intptr_t i = 0; i < N_THREADS; i++)
        pthread_create(&t[i], NULL, compile_worker, (void *)i);
    intptr_t bad = 0;
    for (int i = 0; i < N_THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (intptr_t)r;
    }
    check(bad == 0, "concurrent compiles give single-threaded results");
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    /* Each graph has two partitions (Clip, ReLU); every distinct one is
     * compiled exactly once. */
    check(s.misses == 2 * N_DISTINCT, "exactly one compile per distinct partition");
    printf("cache: %llu misses, %llu hits over %d compiles\n", (unsigned long long)s.misses,
           (unsigned long long)s.hits, N_THREADS * N_COMPILES);

    check(dqg_compile(graphs[N_DISTINCT - 1], NULL, &shared) == DQG_OK, "compile shared");
    pthread_t e[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&e[i], NULL, exec_worker, NULL);
    bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(e[i], &r);
        bad += (intptr_t)r;
    }
    check(bad == 0, "4 threads executing one compiled graph");
    dqg_compiled_destroy(shared);
    for (int k = 0; k < N_DISTINCT; k++)
        dqg_graph_destroy(graphs[k]);
    dqg_cache_clear();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
