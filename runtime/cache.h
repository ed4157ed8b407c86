/* The process-wide caches (internal API): compiled partitions, and
 * compiled graphs' plans. Keys are canonical byte serializations; entries
 * hold an object built by a caller-supplied function, are
 * reference-counted, and are evicted in LRU order without ever freeing an
 * object that is still in use. A build that is refused (DQG_UNSUPPORTED) is
 * remembered too, so the same refusal is not worked out again. */
#ifndef DQG_RUNTIME_CACHE_H
#define DQG_RUNTIME_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "dqgraph.h"

typedef struct dqg_cache_entry dqg_cache_entry;

/* Builds the object for a key. Sets *kernel and *bytes (memory it holds). */
typedef dqg_status (*dqg_cache_build_fn)(void *ctx, void **kernel, size_t *bytes);
typedef void (*dqg_cache_free_fn)(void *kernel);

/* Returns a referenced entry of the partition cache for `key`: a hit, or an
 * object built now by `build` (exactly one build per key when several
 * threads miss at once; the others wait for it). When the cache is disabled
 * (capacity 0) the entry is private to the caller. *hit (may be NULL) tells
 * whether it was cached. On a failed build, every waiter gets the builder's
 * status and message; a refusal (DQG_UNSUPPORTED) stays cached and is
 * returned again, with its message, on later lookups. */
dqg_status dqg_cache_acquire(const void *key, size_t key_len, dqg_cache_build_fn build,
                             dqg_cache_free_fn destroy, void *ctx, dqg_cache_entry **out,
                             bool *hit);
/* The same for the cache of whole compiled graphs' plans. */
dqg_status dqg_cache_acquire_plan(const void *key, size_t key_len, dqg_cache_build_fn build,
                                  dqg_cache_free_fn destroy, void *ctx, dqg_cache_entry **out,
                                  bool *hit);
void *dqg_cache_entry_kernel(const dqg_cache_entry *entry);
/* Drops the caller's reference; frees the object when the entry is no
 * longer cached and nobody else holds it. NULL is allowed. */
void dqg_cache_release(dqg_cache_entry *entry);

/* Where compile time goes, added to the statistics. */
typedef enum { DQG_TIME_PASSES, DQG_TIME_HASH } dqg_time_kind;
void dqg_cache_add_time(dqg_time_kind kind, double ms);
/* Counts one transform of constant data (a fold, a pack, a zero-point
 * fold, a relayout): a cache hit must run none. */
void dqg_cache_count_constant_transform(void);

#endif
