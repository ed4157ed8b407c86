/* The process-wide compiled-partition cache (internal API). Keys are the
 * canonical byte serialization of a partition; entries hold a kernel built
 * by a caller-supplied function, are reference-counted, and are evicted in
 * LRU order without ever freeing a kernel that is still in use. */
#ifndef DQG_RUNTIME_CACHE_H
#define DQG_RUNTIME_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "dqgraph.h"

typedef struct dqg_cache_entry dqg_cache_entry;

/* Builds the kernel for a key. Sets *kernel and *bytes (memory it holds). */
typedef dqg_status (*dqg_cache_build_fn)(void *ctx, void **kernel, size_t *bytes);
typedef void (*dqg_cache_free_fn)(void *kernel);

/* Returns a referenced entry for `key`: a hit, or a kernel built now by
 * `build` (exactly one build per key when several threads miss at once; the
 * others wait for it). When the cache is disabled (capacity 0) the entry is
 * private to the caller. *hit (may be NULL) tells whether it was cached. On
 * a failed build, every waiter gets the builder's status and message. */
dqg_status dqg_cache_acquire(const void *key, size_t key_len, dqg_cache_build_fn build,
                             dqg_cache_free_fn destroy, void *ctx, dqg_cache_entry **out,
                             bool *hit);
void *dqg_cache_entry_kernel(const dqg_cache_entry *entry);
/* Drops the caller's reference; frees the kernel when the entry is no longer
 * cached and nobody else holds it. NULL is allowed. */
void dqg_cache_release(dqg_cache_entry *entry);

#endif
