/* The compiled object shared by compile.c and execute.c (internal): a plan
 * (the passes' result, the compiled partitions and the buffer plan), shared
 * through the plan cache by every compile of an identical graph, and the
 * per-compiled-object pool of execution contexts. */
#ifndef DQG_RUNTIME_INTERNAL_H
#define DQG_RUNTIME_INTERNAL_H

#include <pthread.h>

#include "passes/passes.h"
#include "runtime/cache.h"
#include "runtime/kernel.h"

/* Where a partition argument lives during an execution. */
typedef enum { LOC_INPUT, LOC_OUTPUT, LOC_ARENA } dqg_loc_kind;

typedef struct dqg_arg_loc {
    dqg_loc_kind kind;
    size_t index; /* graph input/output position, or arena byte offset */
} dqg_arg_loc;

typedef struct dqg_compiled_part {
    dqg_cache_entry *entry;
    dqg_kernel *kernel;
    int n_args;
    dqg_arg_loc *args;
    char info[512];
    bool fused;
    bool hit;
    bool constant; /* a constant-folding partition: compiled, never executed */
} dqg_compiled_part;

/* Everything a compile produces; immutable once built. */
typedef struct dqg_plan {
    dqg_pass_state passes; /* owns the rewritten graph copy and the explain log */
    dqg_compile_options options;
    int n_parts;
    dqg_compiled_part *parts;
    size_t arena_bytes;   /* intermediates after reuse */
    size_t scratch_bytes; /* largest kernel scratch */
    int max_args;
    size_t n_fused, n_hits;
} dqg_plan;

/* Scratch of one execution: intermediates, then the largest kernel scratch. */
typedef struct dqg_exec_ctx {
    unsigned char *arena;
    void **argv;
    struct dqg_exec_ctx *next;
} dqg_exec_ctx;

struct dqg_compiled {
    dqg_cache_entry *plan_entry; /* holds the plan (private when the cache is off) */
    bool owns_plan;              /* no entry: a graph too large to key, its plan is ours */
    const dqg_plan *plan;
    size_t n_hits; /* partitions this compile did not build */
    pthread_mutex_t pool_lock;
    dqg_exec_ctx *pool; /* free execution contexts */
    bool verbose;
};

#endif
