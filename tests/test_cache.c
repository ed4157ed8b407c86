/* The compiled-partition cache on its own: hits and misses by full key, LRU
 * order, capacity changes, entries outliving eviction, failed builds, and one
 * build per key under concurrent misses. Kernels here are small heap blocks
 * that record their key. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "runtime/cache.h"
#include "test_common.h"

static atomic_int builds, frees;

typedef struct fake_kernel {
    char key[32];
    int id;
} fake_kernel;

typedef struct build_ctx {
    const char *key;
    int delay_us;
    bool fail;
} build_ctx;

static dqg_status fake_build(void *ctx, void **kernel, size_t *bytes)
{
    build_ctx *c = ctx;
    if (c->delay_us) {
        struct timespec ts = {0, c->delay_us * 1000L};
        nanosleep(&ts, NULL);
    }
    if (c->fail) {
        return DQG_BACKEND_ERROR;
    }
    fake_kernel *k = malloc(sizeof *k);
    snprintf(k->key, sizeof k->key, "%s", c->key);
    k->id = atomic_fetch_add(&builds, 1);
    *kernel = k;
    *bytes = sizeof *k;
    return DQG_OK;
}

static void fake_free(void *k)
{
    atomic_fetch_add(&frees, 1);
    free(k);
}

static dqg_cache_entry *get(const char *key, bool *hit)
{
    build_ctx ctx = {.key = key};
    dqg_cache_entry *e = NULL;
    dqg_status st = dqg_cache_acquire(key, strlen(key), fake_build, fake_free, &ctx, &e, hit);
    cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
    cr_assert_str_eq(((fake_kernel *)dqg_cache_entry_kernel(e))->key, key);
    return e;
}

static void reset(size_t cap)
{
    dqg_cache_clear();
    dqg_cache_set_capacity(cap);
    atomic_store(&builds, 0);
    atomic_store(&frees, 0);
}

Test(cache, hit_on_equal_key_miss_on_different)
{
    reset(16);
    bool hit;
    dqg_cache_entry *a = get("matmul:u8:s8:64x64", &hit);
    cr_assert(!hit);
    dqg_cache_entry *b = get("matmul:u8:s8:64x64", &hit);
    cr_assert(hit);
    cr_assert_eq(a, b);
    dqg_cache_entry *c = get("matmul:u8:s8:64x65", &hit);
    cr_assert(!hit);
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.hits, 1);
    cr_assert_eq(s.misses, 2);
    cr_assert_eq(s.entries, 2);
    cr_assert_eq(s.bytes, 2 * sizeof(fake_kernel));
    dqg_cache_release(a);
    dqg_cache_release(b);
    dqg_cache_release(c);
    cr_assert_eq(atomic_load(&frees), 0, "cached entries stay alive after release");
}

Test(cache, lru_eviction_order)
{
    reset(3);
    const char *keys[] = {"k0", "k1", "k2"};
    for (int i = 0; i < 3; i++)
        dqg_cache_release(get(keys[i], NULL));
    dqg_cache_release(get("k0", NULL)); /* k0 is now the most recent; k1 the least */
    dqg_cache_release(get("k3", NULL)); /* evicts k1 */
    bool hit;
    dqg_cache_release(get("k0", &hit));
    cr_assert(hit);
    dqg_cache_release(get("k2", &hit));
    cr_assert(hit);
    dqg_cache_release(get("k1", &hit));
    cr_assert(!hit, "k1 was the least recently used and must have been evicted");
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.evictions, 2); /* k1, then k3 when k1 came back */
    cr_assert_eq(s.entries, 3);
}

Test(cache, capacity_zero_disables_and_clears)
{
    reset(8);
    dqg_cache_release(get("a", NULL));
    dqg_cache_set_capacity(0);
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.entries, 0);
    cr_assert_eq(atomic_load(&frees), 1);
    bool hit;
    dqg_cache_entry *x = get("a", &hit);
    dqg_cache_entry *y = get("a", &hit);
    cr_assert(!hit);
    cr_assert_neq(x, y, "with the cache disabled every compile is private");
    dqg_cache_release(x);
    dqg_cache_release(y);
    cr_assert_eq(atomic_load(&frees), 3);
}

Test(cache, shrinking_capacity_evicts_oldest)
{
    reset(8);
    const char *keys[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        dqg_cache_release(get(keys[i], NULL));
    dqg_cache_set_capacity(2);
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.entries, 2);
    cr_assert_eq(s.evictions, 3);
    bool hit;
    dqg_cache_release(get("e", &hit));
    cr_assert(hit);
    dqg_cache_release(get("d", &hit));
    cr_assert(hit);
    dqg_cache_release(get("a", &hit));
    cr_assert(!hit);
}

Test(cache, evicted_entry_in_use_keeps_working)
{
    reset(1);
    dqg_cache_entry *held = get("held", NULL);
    dqg_cache_release(get("other", NULL)); /* evicts "held" from the cache */
    cr_assert_eq(atomic_load(&frees), 0, "an entry in use is never freed");
    cr_assert_str_eq(((fake_kernel *)dqg_cache_entry_kernel(held))->key, "held");
    dqg_cache_release(held);
    cr_assert_eq(atomic_load(&frees), 1);
}

Test(cache, failed_build_reports_and_is_not_cached)
{
    reset(8);
    build_ctx ctx = {.key = "bad", .fail = true};
    dqg_cache_entry *e = NULL;
    dqg_status st = dqg_cache_acquire("bad", 3, fake_build, fake_free, &ctx, &e, NULL);
    cr_assert_eq(st, DQG_BACKEND_ERROR);
    cr_assert_null(e);
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.entries, 0);
    dqg_cache_release(get("bad", NULL)); /* a later good build succeeds */
}

Test(cache, distinct_keys_of_equal_prefix_never_mix)
{
    reset(1024);
    char key[32];
    dqg_cache_entry *e[200];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "partition-%d", i);
        e[i] = get(key, NULL);
    }
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "partition-%d", i);
        cr_assert_str_eq(((fake_kernel *)dqg_cache_entry_kernel(e[i]))->key, key);
        dqg_cache_release(e[i]);
    }
    cr_assert_eq(atomic_load(&builds), 200);
}

#define N_THREADS 8
#define N_ITERS   1000
#define N_KEYS    20

static void *hammer(void *arg)
{
    int seed = (int)(intptr_t)arg;
    char key[32];
    for (int i = 0; i < N_ITERS; i++) {
        int k = (seed * 7919 + i * 104729) % N_KEYS;
        snprintf(key, sizeof key, "concurrent-%d", k);
        build_ctx ctx = {.key = key, .delay_us = i < 3 ? 2000 : 0};
        dqg_cache_entry *e = NULL;
        if (dqg_cache_acquire(key, strlen(key), fake_build, fake_free, &ctx, &e, NULL) != DQG_OK)
            return (void *)1;
        if (strcmp(((fake_kernel *)dqg_cache_entry_kernel(e))->key, key) != 0)
            return (void *)2;
        dqg_cache_release(e);
    }
    return NULL;
}

Test(cache, one_build_per_key_under_contention)
{
    reset(1024);
    pthread_t t[N_THREADS];
    for (int i = 0; i < N_THREADS; i++)
        pthread_create(&t[i], NULL, hammer, (void *)(intptr_t)i);
    for (int i = 0; i < N_THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        cr_assert_null(r, "thread %d failed (%p)", i, r);
    }
    cr_assert_eq(atomic_load(&builds), N_KEYS, "exactly one build per distinct key");
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.misses, N_KEYS);
    cr_assert_eq(s.hits, N_THREADS * N_ITERS - N_KEYS);
}

Test(cache, capacity_from_environment)
{
    /* Each Criterion test runs in a fresh process: the variable is read at
     * the cache's first use. */
    setenv("DQG_CACHE_CAPACITY", "5", 1);
    cr_assert_eq(dqg_cache_capacity(), 5);
    dqg_cache_stats s;
    dqg_cache_get_stats(&s);
    cr_assert_eq(s.capacity, 5);
}
