/* The process-wide compiled-partition cache: XXH3-128-keyed hash table with
 * full-key confirmation, LRU list, reference-counted entries, one build per
 * key under concurrent misses, and counters. One mutex guards everything;
 * builds run outside it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "graph/graph_internal.h"
#include "runtime/cache.h"

#define DEFAULT_CAPACITY 1024
#define N_BUCKETS        4096 /* power of two */

typedef enum { ENTRY_BUILDING, ENTRY_READY, ENTRY_FAILED } entry_state;

struct dqg_cache_entry {
    uint64_t hash;
    unsigned char *key;
    size_t key_len;
    void *kernel;
    size_t bytes;
    dqg_cache_free_fn destroy;
    struct cache *owner;
    entry_state state;
    dqg_status status; /* of a failed build */
    char *message;     /* of a failed build */
    int refs;          /* holders, plus one while cached */
    bool cached;       /* in the table and the LRU list */
    dqg_cache_entry *bucket_next;
    dqg_cache_entry *lru_prev, *lru_next; /* lru_head = most recently used */
};

/* One cache: hash table, LRU list and counters. Both instances share the
 * capacity and the lock. */
typedef struct cache {
    dqg_cache_entry *buckets[N_BUCKETS];
    dqg_cache_entry *lru_head, *lru_tail;
    size_t n_entries, bytes_held;
    uint64_t n_hits, n_misses, n_evictions;
} cache;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t built = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static cache parts, plans;
static size_t capacity = DEFAULT_CAPACITY;
static double compile_ms, passes_ms, hash_ms;
static uint64_t n_transforms;

static void read_env(void)
{
    const char *v = getenv("DQG_CACHE_CAPACITY");
    if (!v || !*v)
        return;
    char *end;
    errno = 0;
    unsigned long long c = strtoull(v, &end, 10);
    if (*end == '\0' && errno == 0 && v[0] >= '0' && v[0] <= '9') {
        capacity = (size_t)c;
        return;
    }
    fprintf(stderr,
            "dqgraph: DQG_CACHE_CAPACITY='%s' is not a non-negative integer; the cache keeps "
            "its default capacity of %d\n",
            v, DEFAULT_CAPACITY);
    const char *verbose = getenv("DQG_VERBOSE");
    if (verbose && *verbose && strcmp(verbose, "0") != 0)
        fprintf(stderr, "dqgraph,warning,DQG_CACHE_CAPACITY='%s' ignored,capacity %d\n", v,
                DEFAULT_CAPACITY);
}

static uint64_t key_hash(const void *key, size_t len)
{
    XXH128_hash_t h = XXH3_128bits(key, len);
#ifdef DQG_CACHE_TEST_TRUNCATE_HASH
    /* Test builds: 4-bit hashes force collisions, which full-key
     * confirmation must resolve. */
    return h.low64 & 0xF;
#else
    return h.low64 ^ h.high64;
#endif
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void free_entry(dqg_cache_entry *e)
{
    if (e->kernel && e->destroy)
        e->destroy(e->kernel);
    free(e->message);
    free(e->key);
    free(e);
}

/* ---- Table and LRU list (lock held) ------------------------------------- */

static void lru_unlink(dqg_cache_entry *e)
{
    cache *c = e->owner;
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(dqg_cache_entry *e)
{
    cache *c = e->owner;
    e->lru_prev = NULL;
    e->lru_next = c->lru_head;
    if (c->lru_head)
        c->lru_head->lru_prev = e;
    c->lru_head = e;
    if (!c->lru_tail)
        c->lru_tail = e;
}

/* Removes e from the table and list and drops the cache's reference.
 * Returns e if that was the last reference (the caller frees it outside the
 * lock), else NULL. */
static dqg_cache_entry *uncache(dqg_cache_entry *e)
{
    cache *c = e->owner;
    dqg_cache_entry **pp = &c->buckets[e->hash & (N_BUCKETS - 1)];
    while (*pp != e)
        pp = &(*pp)->bucket_next;
    *pp = e->bucket_next;
    lru_unlink(e);
    e->cached = false;
    c->n_entries--;
    c->bytes_held -= e->bytes;
    return --e->refs == 0 ? e : NULL;
}

/* Evicts least-recently-used finished entries until at most `limit` remain.
 * Entries still being built are skipped. Freed entries are chained through
 * bucket_next into *to_free. */
static void evict_to(cache *c, size_t limit, dqg_cache_entry **to_free, bool count)
{
    dqg_cache_entry *e = c->lru_tail;
    while (c->n_entries > limit && e) {
        dqg_cache_entry *prev = e->lru_prev;
        if (e->state != ENTRY_BUILDING) {
            if (count)
                c->n_evictions++;
            dqg_cache_entry *dead = uncache(e);
            if (dead) {
                dead->bucket_next = *to_free;
                *to_free = dead;
            }
        }
        e = prev;
    }
}

static void free_chain(dqg_cache_entry *e)
{
    while (e) {
        dqg_cache_entry *next = e->bucket_next;
        free_entry(e);
        e = next;
    }
}

/* ---- Acquire and release --------------------------------------------------- */

static dqg_status build_entry(dqg_cache_entry *e, dqg_cache_build_fn build, void *ctx)
{
    double t0 = now_ms();
    dqg_status st = build(ctx, &e->kernel, &e->bytes);
    double dt = now_ms() - t0;
    pthread_mutex_lock(&lock);
    if (e->owner == &parts)
        compile_ms += dt;
    if (st == DQG_OK) {
        e->state = ENTRY_READY;
        if (e->cached)
            e->owner->bytes_held += e->bytes;
    } else {
        e->state = ENTRY_FAILED;
        e->status = st;
        size_t n = strlen(dqg_last_error()) + 1;
        e->message = malloc(n);
        if (e->message)
            memcpy(e->message, dqg_last_error(), n);
    }
    pthread_cond_broadcast(&built);
    pthread_mutex_unlock(&lock);
    return st;
}

/* A refusal is a fact about the key (the backend cannot build it); every
 * other failure (out of memory, a backend error) may pass. */
static bool remembered(const dqg_cache_entry *e)
{
    return e->state != ENTRY_FAILED || e->status == DQG_UNSUPPORTED;
}

static dqg_status acquire(cache *c, const void *key, size_t key_len, dqg_cache_build_fn build,
                          dqg_cache_free_fn destroy, void *ctx, dqg_cache_entry **out, bool *hit)
{
    if (!key || !build || !out)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "cache: NULL argument");
    pthread_once(&once, read_env);
    *out = NULL;
    if (hit)
        *hit = false;
    uint64_t h = key_hash(key, key_len);

    pthread_mutex_lock(&lock);
    dqg_cache_entry *e = NULL;
    if (capacity > 0) {
        for (e = c->buckets[h & (N_BUCKETS - 1)]; e; e = e->bucket_next)
            if (e->hash == h && e->key_len == key_len && memcmp(e->key, key, key_len) == 0 &&
                remembered(e))
                break;
    }
    if (e) {
        c->n_hits++;
        e->refs++;
        lru_unlink(e);
        lru_push_front(e);
        while (e->state == ENTRY_BUILDING)
            pthread_cond_wait(&built, &lock);
        if (e->state == ENTRY_FAILED) {
            dqg_status st = e->status;
            dqg_set_error(st, "%s", e->message ? e->message : "compilation failed");
            bool last = --e->refs == 0;
            pthread_mutex_unlock(&lock);
            if (last)
                free_entry(e);
            return st;
        }
        pthread_mutex_unlock(&lock);
        if (hit)
            *hit = true;
        *out = e;
        return DQG_OK;
    }

    /* Miss: publish a building entry so concurrent misses wait for it. */
    c->n_misses++;
    e = calloc(1, sizeof *e);
    unsigned char *kcopy = malloc(key_len ? key_len : 1);
    if (!e || !kcopy) {
        pthread_mutex_unlock(&lock);
        free(e);
        free(kcopy);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "cache: out of memory");
    }
    memcpy(kcopy, key, key_len);
    e->hash = h;
    e->key = kcopy;
    e->key_len = key_len;
    e->destroy = destroy;
    e->owner = c;
    e->state = ENTRY_BUILDING;
    e->refs = 1;
    dqg_cache_entry *to_free = NULL;
    if (capacity > 0) {
        e->refs++;
        e->cached = true;
        dqg_cache_entry **b = &c->buckets[h & (N_BUCKETS - 1)];
        e->bucket_next = *b;
        *b = e;
        lru_push_front(e);
        c->n_entries++;
        evict_to(c, capacity, &to_free, true);
    }
    pthread_mutex_unlock(&lock);
    free_chain(to_free);

    dqg_status st = build_entry(e, build, ctx);
    if (st != DQG_OK) {
        char saved[1024];
        snprintf(saved, sizeof saved, "%s", dqg_last_error());
        pthread_mutex_lock(&lock);
        /* A refusal stays cached (remembered); anything else is dropped.
         * The builder still holds its reference, so uncaching never frees. */
        if (e->cached && !remembered(e))
            uncache(e);
        bool last = --e->refs == 0;
        pthread_mutex_unlock(&lock);
        if (last)
            free_entry(e);
        return dqg_set_error(st, "%s", saved);
    }
    *out = e;
    return DQG_OK;
}

dqg_status dqg_cache_acquire(const void *key, size_t key_len, dqg_cache_build_fn build,
                             dqg_cache_free_fn destroy, void *ctx, dqg_cache_entry **out, bool *hit)
{
    return acquire(&parts, key, key_len, build, destroy, ctx, out, hit);
}

dqg_status dqg_cache_acquire_plan(const void *key, size_t key_len, dqg_cache_build_fn build,
                                  dqg_cache_free_fn destroy, void *ctx, dqg_cache_entry **out,
                                  bool *hit)
{
    return acquire(&plans, key, key_len, build, destroy, ctx, out, hit);
}

void *dqg_cache_entry_kernel(const dqg_cache_entry *e)
{
    return e ? e->kernel : NULL;
}

void dqg_cache_release(dqg_cache_entry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&lock);
    bool last = --e->refs == 0;
    pthread_mutex_unlock(&lock);
    if (last)
        free_entry(e);
}

void dqg_cache_add_time(dqg_time_kind kind, double ms)
{
    pthread_mutex_lock(&lock);
    if (kind == DQG_TIME_PASSES)
        passes_ms += ms;
    else
        hash_ms += ms;
    pthread_mutex_unlock(&lock);
}

void dqg_cache_count_constant_transform(void)
{
    pthread_mutex_lock(&lock);
    n_transforms++;
    pthread_mutex_unlock(&lock);
}

/* ---- Public control ------------------------------------------------------- */

void dqg_cache_get_stats(dqg_cache_stats *s)
{
    if (!s)
        return;
    pthread_once(&once, read_env);
    pthread_mutex_lock(&lock);
    s->hits = parts.n_hits;
    s->misses = parts.n_misses;
    s->evictions = parts.n_evictions;
    s->entries = parts.n_entries;
    s->capacity = capacity;
    s->bytes = parts.bytes_held;
    s->compile_ms = compile_ms;
    s->plan_hits = plans.n_hits;
    s->plan_misses = plans.n_misses;
    s->plans = plans.n_entries;
    s->passes_ms = passes_ms;
    s->hash_ms = hash_ms;
    s->constant_transforms = n_transforms;
    pthread_mutex_unlock(&lock);
}

/* Plans hold their partitions: evicting plans first lets the partitions
 * they held go. */
static void evict_all_to(size_t limit, dqg_cache_entry **to_free, bool count)
{
    evict_to(&plans, limit, to_free, count);
    evict_to(&parts, limit, to_free, count);
}

void dqg_cache_set_capacity(size_t c)
{
    pthread_once(&once, read_env);
    dqg_cache_entry *to_free = NULL;
    pthread_mutex_lock(&lock);
    capacity = c;
    evict_all_to(c, &to_free, true);
    pthread_mutex_unlock(&lock);
    free_chain(to_free);
}

size_t dqg_cache_capacity(void)
{
    pthread_once(&once, read_env);
    pthread_mutex_lock(&lock);
    size_t c = capacity;
    pthread_mutex_unlock(&lock);
    return c;
}

void dqg_cache_clear(void)
{
    pthread_once(&once, read_env);
    dqg_cache_entry *to_free = NULL;
    pthread_mutex_lock(&lock);
    evict_all_to(0, &to_free, false);
    parts.n_hits = parts.n_misses = parts.n_evictions = 0;
    plans.n_hits = plans.n_misses = plans.n_evictions = 0;
    compile_ms = passes_ms = hash_ms = 0;
    n_transforms = 0;
    pthread_mutex_unlock(&lock);
    free_chain(to_free);
}
