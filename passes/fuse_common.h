/* Matching shared by the two int8 fusion passes (internal): which
 * dequantize ops can feed an int8 oneDNN primitive, and the epilogue
 * (bias, post-ops, quantize) that can follow it. */
#ifndef DQG_PASSES_FUSE_COMMON_H
#define DQG_PASSES_FUSE_COMMON_H

#include "passes/passes.h"

/* A candidate fusion around anchor op `main`; -1 for absent roles. */
typedef struct dqg_fusion_match {
    int32_t src_dq, w_dq, main, bias, q;
    int n_post;
    int32_t post[DQG_MAX_POST_OPS];
} dqg_fusion_match;

/* Checks the activation dequantize (u8/s8 x, f32 output, per-tensor scale
 * and zero point, result read only by the anchor). On refusal writes the
 * reason and returns false. */
bool dqg_fuse_check_src(const dqg_graph *g, int32_t dq, int32_t anchor, char *why, size_t n);

/* Checks the weight dequantize: constant s8 or u8 weights, f32 output, a
 * constant scale per tensor or per output channel along `oc_axis` of the
 * weights, and a zero point that can be folded into s8 weights. */
bool dqg_fuse_check_weights(const dqg_graph *g, int32_t dq, int32_t anchor, int oc_axis, char *why,
                            size_t n);

/* Extends the match with what follows the anchor: an optional bias (BiasAdd
 * along the output channel, or Add of a constant per-channel vector), up to
 * four ReLU/Clip/Add/Mul post-ops with constant per-tensor or per-channel
 * operands, and an optional per-tensor QuantizeLinear to u8/s8 with
 * constant parameters. Each op must be the single reader of the previous
 * result. `channel_axis` is the output's channel dimension. */
void dqg_fuse_match_epilogue(const dqg_graph *g, dqg_fusion_match *m, int channel_axis,
                             bool allow_bias);

/* Records the match as a partition and writes the explain line. */
dqg_status dqg_fuse_commit(dqg_pass_state *s, const dqg_fusion_match *m, dqg_partition_kind kind,
                           const char *kernel);

#endif
