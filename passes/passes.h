/* The pass pipeline's interface (internal): partitions, the explain log, and
 * the state the passes share. Passes read and rewrite a copy of the graph
 * and group its ops into partitions; they never execute kernels. */
#ifndef DQG_PASSES_H
#define DQG_PASSES_H

#include "graph/graph_internal.h"

#define DQG_MAX_PART_OPS 16
#define DQG_MAX_POST_OPS 4

typedef enum dqg_partition_kind {
    DQG_PART_SINGLE = 0, /* one op, run by the kernel for its kind */
    DQG_PART_QMATMUL,    /* DQ(src), DQ(weights) -> MatMul [-> bias] [-> post-ops] [-> Q] */
    DQG_PART_QCONV,      /* the same around a Convolution */
} dqg_partition_kind;

/* A group of ops compiled into one kernel. Roles index into ops[] (-1 when
 * absent); ops[] is in graph order, which is topological. */
typedef struct dqg_partition {
    dqg_partition_kind kind;
    int n_ops;
    int32_t ops[DQG_MAX_PART_OPS];
    int src_dq, w_dq, main, bias, q;
    int n_post;
    int post[DQG_MAX_POST_OPS];
    /* Constant tensors the fused weights pass through (Transpose/Reshape),
     * already folded: the partition reads this constant as its weights. */
    int n_outputs;
    dqg_tensor_id outputs[DQG_MAX_OP_OUTPUTS * 2];
} dqg_partition;

typedef struct dqg_pass_state {
    dqg_graph *graph; /* the rewritten copy (owned) */
    const dqg_compile_options *options;
    int32_t *group; /* per op: index into parts, or -1 */
    dqg_partition *parts;
    int n_parts, cap_parts;
    char **explain;
    int n_explain, cap_explain;
} dqg_pass_state;

/* Runs canonicalize -> fold constants -> fuse DQ into MatMul -> fuse DQ into
 * Convolution -> lower leftovers -> partition on a copy of `g`. */
dqg_status dqg_run_passes(const dqg_graph *g, const dqg_compile_options *options,
                          dqg_pass_state *out);
void dqg_pass_state_free(dqg_pass_state *s);

/* Appends a line to the explain log (printf-style). */
dqg_status dqg_explain(dqg_pass_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Opens a new partition of `kind` with every role -1; returns its index or -1. */
int dqg_pass_new_partition(dqg_pass_state *s, dqg_partition_kind kind);
/* Adds op `op` to partition `part` and returns its position in ops[]. */
int dqg_pass_add_to_partition(dqg_pass_state *s, int part, int32_t op);

/* The op that reads tensor t, when exactly one op does and t is not a graph
 * output; else -1. */
int32_t dqg_pass_single_consumer(const dqg_graph *g, dqg_tensor_id t);

/* The passes, in pipeline order (one file each). */
dqg_status dqg_pass_canonicalize(dqg_pass_state *s);
dqg_status dqg_pass_fold_constants(dqg_pass_state *s);
dqg_status dqg_pass_fuse_dq_matmul(dqg_pass_state *s);
dqg_status dqg_pass_fuse_dq_conv(dqg_pass_state *s);
dqg_status dqg_pass_lower(dqg_pass_state *s);
dqg_status dqg_pass_partition(dqg_pass_state *s);

#endif
