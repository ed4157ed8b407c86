/* The canonical byte description of a partition: the compiled-partition
 * cache's key (internal). */
#ifndef DQG_RUNTIME_CACHE_KEY_H
#define DQG_RUNTIME_CACHE_KEY_H

#include "runtime/kernel.h"

typedef struct dqg_key_buf {
    unsigned char *data;
    size_t len, cap;
    bool failed; /* out of memory */
} dqg_key_buf;

/* Serializes the mini graph (op kinds, canonical attributes, dtypes, shapes,
 * the values of small constants such as scales and zero points, and the
 * XXH3-128 of larger ones), the partition roles, the backend, fpmath mode,
 * the CPU ISA oneDNN dispatches to, and the dqgraph version. Tensor and op
 * names are left out, so identical partitions of different graphs share a
 * key. */
dqg_status dqg_cache_key_build(const dqg_kernel_request *req, dqg_key_buf *key);
/* The key of a whole compiled graph's plan: everything the partition key
 * holds for every op and tensor, names included (the plan binds buffers
 * and explains itself by name), and the thread count. */
dqg_status dqg_cache_key_graph(const dqg_graph *g, const dqg_compile_options *options,
                               dqg_key_buf *key);
void dqg_key_buf_free(dqg_key_buf *key);

#endif
