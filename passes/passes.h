/* The pass pipeline's interface (internal): partitions, the explain log, and
 * the state the passes share. Passes read and rewrite a copy of the graph
 * and group its ops into partitions; they decide what runs together, never
 * rewrite constant data, and never execute kernels. */
#ifndef DQG_PASSES_H
#define DQG_PASSES_H

#include "graph/graph_internal.h"

#define DQG_MAX_PART_OPS 40 /* a DenseNet-121 concat: 25 inputs, its dequantizes, Q */

typedef enum dqg_partition_kind {
    DQG_PART_SINGLE = 0, /* one op, or an f32 MatMul/Convolution with its epilogue */
    DQG_PART_QMATMUL,    /* int8 MatMul: DQ(src) x DQ(weights), scales constant or run-time */
    DQG_PART_QCONV,      /* the same around a Convolution */
    DQG_PART_WO_MATMUL,  /* float activations x DQ(constant low-bit weights) */
    DQG_PART_CONST,      /* one op of constants only: evaluated when compiled, never executed */
    DQG_PART_QELTWISE,   /* Q(element-wise ops on DQ(u8/s8) inputs): computed in int8 in, out */
    DQG_PART_QCONCAT,    /* Q(Concat(DQ(u8/s8) inputs)): int8 inputs requantized into place */
    DQG_PART_ROTARY,     /* f32 rotary embedding, x cos + rotate_half(x) sin: one pass */
} dqg_partition_kind;

/* What an op does inside its partition. A partition is a matched pattern:
 * its ops (in graph order, which is topological) and one role each. */
typedef enum dqg_part_role {
    DQG_ROLE_MAIN = 0,  /* the anchor: MatMul or Convolution (or the single op) */
    DQG_ROLE_SRC_QUANT, /* DynamicQuantizeLinear making the int8 activations */
    DQG_ROLE_SRC_DQ,    /* dequantize of the activations */
    DQG_ROLE_W_DQ,      /* dequantize of the constant weights */
    DQG_ROLE_W_LAYOUT,  /* Transpose/Reshape of the dequantized constant weights */
    DQG_ROLE_CAST,      /* TypeCast of the exact integer result (MatMulInteger -> Cast) */
    DQG_ROLE_SCALE,     /* Mul of the result by a scale, folded into the kernel's scales */
    DQG_ROLE_SCALE_SRC, /* Mul computing that scale from run-time and constant scales */
    DQG_ROLE_BIAS,      /* bias add along the output channel */
    DQG_ROLE_POST,      /* element-wise epilogue op */
    DQG_ROLE_Q,         /* QuantizeLinear of the result */
    /* Transposes of a run-time MatMul operand (A or B) or of its result,
     * planned as the operand's strides instead of a copy. */
    DQG_ROLE_A_LAYOUT,
    DQG_ROLE_B_LAYOUT,
    DQG_ROLE_Y_LAYOUT,
    /* A residual sum after an int8 convolution's quantized result:
     * Q(SUM_POST(DQ(Q1(conv)) + DQ(r))). SUM_Q is the convolution's own
     * QuantizeLinear (Q1), SUM_DQ its dequantize, SUM_SRC_DQ the residual's,
     * SUM the Add; Q then quantizes the sum. */
    DQG_ROLE_SUM_Q,
    DQG_ROLE_SUM_DQ,
    DQG_ROLE_SUM_SRC_DQ,
    DQG_ROLE_SUM,
    DQG_ROLE_SUM_POST,
    /* A Softmax over the last axis of an f32 MatMul's result (attention
     * scores), and the element-wise ops between them that it applies to
     * each row first (x / sqrt(d) + mask) instead of oneDNN post-ops. */
    DQG_ROLE_SM_PRE,
    DQG_ROLE_SOFTMAX,
    DQG_ROLE_COUNT
} dqg_part_role;

typedef struct dqg_partition {
    dqg_partition_kind kind;
    int n_ops;
    int32_t ops[DQG_MAX_PART_OPS];
    uint8_t role[DQG_MAX_PART_OPS]; /* dqg_part_role of ops[k] */
    /* Tensors read outside the partition or graph outputs (set by the
     * partition pass; owned by the pass state). */
    int n_outputs;
    dqg_tensor_id *outputs;
} dqg_partition;

/* Position in ops[] of the first op with role r, or -1. */
int dqg_part_find(const dqg_partition *p, dqg_part_role r);
/* Number of ops with role r; their positions, in order, into pos[]. */
int dqg_part_list(const dqg_partition *p, dqg_part_role r, int *pos);
/* The tensor the partition's pattern produces: the Quantize's, else the
 * last epilogue op's, else the anchor's. */
dqg_tensor_id dqg_part_result(const dqg_graph *g, const dqg_partition *p);

/* Consumers of every tensor (compressed rows): readers of tensor t are
 * ops list[first[t] .. first[t+1]); an op reading t twice appears twice. */
typedef struct dqg_consumers {
    int32_t n_tensors;
    int32_t *first, *list;
} dqg_consumers;

typedef struct dqg_pass_state {
    dqg_graph *graph; /* the rewritten copy (owned) */
    const dqg_compile_options *options;
    int32_t *group; /* per op: index into parts, or -1 */
    dqg_partition *parts;
    int n_parts, cap_parts;
    char **explain;
    int n_explain, cap_explain;
    dqg_consumers cons; /* of live ops; rebuilt by dqg_pass_index after rewrites */
} dqg_pass_state;

/* Runs canonicalize -> fold constants -> fuse DQ into MatMul -> fuse DQ into
 * Convolution -> fuse quantized pooling (and Reshape, Transpose) -> fuse quantized element-wise
 * chains -> lower leftovers ->
 * choose layouts after
 * partition on a copy of `g`. */
dqg_status dqg_run_passes(const dqg_graph *g, const dqg_compile_options *options,
                          dqg_pass_state *out);
void dqg_pass_state_free(dqg_pass_state *s);

/* Appends a line to the explain log (printf-style). */
dqg_status dqg_explain(dqg_pass_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Rebuilds s->cons from the live ops of s->graph. */
dqg_status dqg_pass_index(dqg_pass_state *s);
/* The op that reads tensor t, when exactly one live op does (once) and t is
 * not a graph output; else -1. O(1) after dqg_pass_index. */
int32_t dqg_pass_single_consumer(const dqg_pass_state *s, dqg_tensor_id t);

/* Opens a partition of `kind` holding ops[0..n) with roles[0..n) (ops in
 * any order; stored in graph order); returns its index or -1 (error set). */
int dqg_pass_add_partition(dqg_pass_state *s, dqg_partition_kind kind, const int32_t *ops,
                           const uint8_t *roles, int n);

/* Whether op i computes from constants alone and may be folded (not a
 * graph output, not DynamicQuantizeLinear, result not much larger than its
 * inputs: *too_large tells that case). */
bool dqg_pass_foldable(const dqg_pass_state *s, int32_t i, bool *too_large);

/* Replaces partition `part`, whose kernel the backend refused, by what can
 * still run: a refused int8 MatMul's weights and anchor (with the epilogue
 * when it follows the anchor directly) as a weight-only partition, every
 * other op as a constant-folding or single-op partition; then re-runs the
 * partition pass. */
dqg_status dqg_pass_split(dqg_pass_state *s, int part);

/* The passes, in pipeline order (one file each). */
dqg_status dqg_pass_canonicalize(dqg_pass_state *s);
dqg_status dqg_pass_recognize(dqg_pass_state *s);
dqg_status dqg_pass_fold_constants(dqg_pass_state *s);
dqg_status dqg_pass_fold_pad(dqg_pass_state *s);
dqg_status dqg_pass_fuse_dq_matmul(dqg_pass_state *s);
dqg_status dqg_pass_fuse_dq_conv(dqg_pass_state *s);
dqg_status dqg_pass_fuse_qdq_pool(dqg_pass_state *s);
dqg_status dqg_pass_fuse_qdq_eltwise(dqg_pass_state *s);
dqg_status dqg_pass_lower(dqg_pass_state *s);
dqg_status dqg_pass_partition(dqg_pass_state *s);
dqg_status dqg_pass_choose_layouts(dqg_pass_state *s);

#endif
