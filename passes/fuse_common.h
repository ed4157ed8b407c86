/* Pattern matching shared by the fusion passes (internal). A match is a set
 * of ops with one role each (see dqg_part_role); the helpers extend it piece
 * by piece -- the activations' side, the weights' side, the epilogue -- and
 * say why a piece does not fit. Only shapes, types, attributes and the
 * values of scalar scales are read: constant data is never touched. */
#ifndef DQG_PASSES_FUSE_COMMON_H
#define DQG_PASSES_FUSE_COMMON_H

#include "passes/passes.h"

typedef struct dqg_fusion_match {
    int n;
    int32_t ops[DQG_MAX_PART_OPS];
    uint8_t roles[DQG_MAX_PART_OPS];
} dqg_fusion_match;

/* Adds op with role; false when the match is full. */
bool dqg_match_add(dqg_fusion_match *m, int32_t op, dqg_part_role role);
/* The first op with `role`, or -1. */
int32_t dqg_match_op(const dqg_fusion_match *m, dqg_part_role role);
bool dqg_match_has(const dqg_fusion_match *m, int32_t op);

/* A per-tensor dequantize or quantize whose scale is one constant f32 and
 * whose zero point is absent or a constant of its integer side's type
 * (Quark's dequantize also takes an f32 zero point, which need not be an
 * integer: the int8-to-int8 rewrites and kernels would round it). */
bool dqg_fuse_const_int_params(const dqg_graph *g, const dqg_op *op);
/* The scale and zero point (0 when absent) of such an op, and the value
 * Quantize q writes for an f32 element v (graph/ops/quantize.c's rule,
 * NaN becoming 0). */
float dqg_fuse_scale(const dqg_graph *g, const dqg_op *op);
int64_t dqg_fuse_zero_point(const dqg_graph *g, const dqg_op *op);
int64_t dqg_fuse_quantized(const dqg_graph *g, const dqg_op *q, double v);

/* The tensor the matched chain produces: the output of its last
 * CAST/SCALE/BIAS/POST/Q op, else of the anchor. */
dqg_tensor_id dqg_match_result(const dqg_graph *g, const dqg_fusion_match *m);

/* A constant, or a value computed from constants alone (folded). */
bool dqg_fuse_is_const(const dqg_graph *g, dqg_tensor_id t);

/* The activations' side of an int8 pattern around `anchor` (its input 0): a
 * dequantize of non-constant u8/s8 activations with f32 output and one
 * scale and zero point for the whole tensor (constants or given at run
 * time), read only by the anchor. On refusal writes the reason. */
bool dqg_fuse_match_src(const dqg_pass_state *s, int32_t anchor, dqg_fusion_match *m, char *why,
                        size_t n);

/* The weights' side (input `slot` of `anchor`): a dequantize whose inputs
 * are all constant, directly or through Transpose/Reshape ops (W_LAYOUT),
 * each result read only by the next op. Adds them to m and returns the
 * dequantize, or -1 with the reason. */
int32_t dqg_fuse_match_weights(const dqg_pass_state *s, int32_t anchor, int slot,
                               dqg_fusion_match *m, char *why, size_t n);

/* The weights an int8 kernel takes: s8, or u8 with a zero point (folded
 * into s8 when the kernel is built), dequantized to f32. */
bool dqg_fuse_check_int8_weights(const dqg_graph *g, int32_t wdq, char *why, size_t n);

/* The weights' quantization axis as the anchor sees it (through the layout
 * ops of m): -1 for one scale, -2 when it cannot be followed. */
int dqg_fuse_weight_axis(const dqg_graph *g, const dqg_fusion_match *m);

/* Whether a dequantize's scale is the constant 1 everywhere (the integer
 * operators' unit scales). */
bool dqg_fuse_unit_scale(const dqg_graph *g, int32_t dq);

typedef struct dqg_epilogue_rules {
    int channel_axis; /* the output's channel dimension */
    bool allow_bias;
    /* The anchor computes an exact integer (unit scales on both sides):
     * TypeCast to s32 and back to f32 fold away (CAST). */
    bool integer_result;
    /* Mul by a run-time scalar scale, or by one computed as run-time scalar
     * x constant (SCALE, SCALE_SRC), folds into the int8 kernel's scales. */
    bool allow_scale;
    bool allow_q; /* a per-tensor QuantizeLinear to u8/s8 may end the chain */
} dqg_epilogue_rules;

/* Extends m with what follows the anchor, each op the single reader of the
 * previous result: CAST and SCALE ops (when allowed), an optional bias
 * (BiasAdd along the output channel, or Add of a per-channel constant), up
 * to DQG_MAX_POST_OPS element-wise ops (ReLU, Clip, Add/Mul of a constant
 * or run-time operand that is a scalar, per channel or of the output's
 * shape), and an optional QuantizeLinear. */
void dqg_fuse_match_epilogue(const dqg_pass_state *s, dqg_fusion_match *m,
                             const dqg_epilogue_rules *r);

/* Adds the DynamicQuantizeLinear that makes the activations of the match's
 * source dequantize, when everything it produces is read inside the match. */
void dqg_fuse_absorb_src_quant(const dqg_pass_state *s, dqg_fusion_match *m);

/* Records the match as a partition and writes the explain line
 * "fused: <ops> -> <kernel> (<details>)". */
dqg_status dqg_fuse_commit(dqg_pass_state *s, const dqg_fusion_match *m, dqg_partition_kind kind,
                           const char *kernel, const char *details);

#define DQG_MAX_POST_OPS 8

/* The TypeCast to an integer type that alone reads the result of MatMul
 * or Convolution i (the ONNX front end's MatMulInteger, ConvInteger), or
 * -1: such a result is exact, so only the int8 kernels (exact sums) or the
 * lowering's integer partition take it. */
int32_t dqg_fuse_integer_cast(const dqg_pass_state *s, int32_t i);

#endif
