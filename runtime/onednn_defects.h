/* Known oneDNN 2.6 defects that reach dqgraph, and the rule that steers
 * around each (internal). Every rule is a pure function of a primitive's
 * parameters and oneDNN's implementation name, consulted where primitives
 * are created, so each can be tested on any CPU. Reproducers with raw
 * oneDNN calls and the analysis live with the project's defect notes; the
 * README lists each rule with the oneDNN version that fixes it.
 *
 *  A  jit:avx512_core_amx_int8, 3-D convolution with a source zero point,
 *     kernel depth >= 2, no depth padding, some height/width padding: the
 *     zero-point compensation covers only the first kernel slice (wrong
 *     border outputs). Fixed in v2.7.4 / v3.1. Rule: skip that
 *     implementation.
 *  B  AMX brgemm int8 matmul with K = 125, 126 or 127: wrong values or
 *     SIGILL. Fixed in v2.7.4. Rule: skip the AMX implementation.
 *  C  gemm int8 convolution (x64:gemm_s8u8s32 / gemm_s8s8s32) with a
 *     per-channel binary post-op when the output channels per group are odd
 *     17..31 or >= 33: the post-op is applied to the wrong channels. Not
 *     fixed upstream. Rule: refuse the int8 fusion (the f32 path is right).
 *  D  weight reorder with compensation (s8 source, or a source zero
 *     point) when the jit reorder takes a transposition path: the
 *     compensation is left zero or partial, and the gemm int8 convolution
 *     then gives wrong values. First seen as an exact 8x8 transposition (8
 *     output channels, input channels per group times kernel volume 8); it
 *     also strikes kernels of extent 4 with odd channel counts (e.g. 2
 *     groups of 17 -> 3 channels, 4x4, padding 2) and 3-D depthwise kernels
 *     (17 of 20,000 random gemm int8 convolutions with compensation; none
 *     with the rule). The 8x8 check is fixed in v3.10. Rule: every pack
 *     with compensation runs in two reorders (the layout, then the same
 *     layout with compensation, which copies without transposing).
 *  E  two eltwise post-ops of the same algorithm: the second runs with the
 *     first's alpha and beta. Fixed in v2.7.3 / v3.0. Rule: a second Clip
 *     with other bounds becomes binary max and min post-ops.
 *  F  f32 gemm convolution (x64:gemm:jit) with a channels-last destination
 *     and a binary post-op whose operand varies along the spatial axes
 *     (the result's own shape, [1, 1, H, W], or one value per column):
 *     every output gets the operand's values of the wrong position (a 1x1
 *     output channel convolution followed by an Add of a [1, 1, 4, 3]
 *     tensor: 11 of 12 outputs wrong). A per-channel or one-value operand,
 *     a channels-first destination and the int8 gemm convolutions are
 *     right. Rule: skip that implementation.
 *  G  matmul (brgemm brg:* and gemm:jit) writing a transposed (strided)
 *     result with a per-channel binary post-op: the kernel reads outside
 *     the operand and crashes (f32, [1, 2, 15, 53] x [1, 1, 53, 66] into
 *     acbd plus a per-column Add). A one-value operand, a dense result, one
 *     batch and a plain [M, N] result stored transposed are right. Rule:
 *     a batched result is written dense and transposed after.
 *  H  depthwise convolution on brdgmm (brdgmm_dw, f32 and int8) with a
 *     binary post-op whose operand has the result's own shape and
 *     channels-last layout, offered when the output is 1x1: channels past
 *     the first 16 add the operand values of the wrong channels (576
 *     channels, 2x2 -> 1x1, stride 2: 560 of 576 int8 outputs wrong). A
 *     per-channel operand in its own layout is right. Rule: skip that
 *     implementation.
 *  I  int8 depthwise convolution on jit_uni_int8 (avx2_vnni, the kernel
 *     of CPUs with AVX-VNNI but no AVX-512, and sse41) with any binary
 *     post-op, when the channel count leaves a tail of the kernel's block
 *     of 8: the operand is applied to the wrong channels past the first
 *     block (3 channels, 3x3, a one-value Add: every output of channels 1
 *     and 2 wrong). Without a binary post-op, and at AVX-512, it is right.
 *     Rule: refuse the int8 kernel (the only other implementation is
 *     ref_int8; the f32 path is right and faster).
 *  J  int8 1x1 convolution on jit_uni_int8_1x1 (avx2_vnni) with a stride
 *     above 1 (its reduce-to-unit-stride copy of the source), run on two
 *     threads: now and then (about one run in a thousand, more under load)
 *     the output channels of the second thread's blocks come out wrong
 *     (1x1, stride 2, 6 -> 22 channels, 2x4 input: channels 16.. wrong;
 *     never with one thread). Stride 1 and the AVX-512 kernels are right.
 *     Rule: skip that implementation (jit_uni_int8 takes the layer).
 *  K  int8 deconvolution (jit_deconvolution) with a negative right
 *     padding, which is how an ONNX ConvTranspose's output_padding beyond
 *     its end padding reaches oneDNN, or with a stride larger than the
 *     dilated kernel (outputs no input reaches): outputs come out wrong
 *     (16 -> 16 channels, 4x4 input, 2x2 kernel, stride 2, output_padding
 *     1 on the width: 126 of 576 wrong; a 1x1 kernel with stride 2 along
 *     the height: 334 of 720). The same layers without either, and the
 *     f32 deconvolution with them, are right. Rule: refuse the int8
 *     kernel (the f32 path takes the layer). */
#ifndef DQG_RUNTIME_ONEDNN_DEFECTS_H
#define DQG_RUNTIME_ONEDNN_DEFECTS_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdint.h>

/* What the rules need to know of an int8 primitive. */
typedef struct dqg_prim_facts {
    enum { DQG_FACTS_NONE = 0, DQG_FACTS_CONV, DQG_FACTS_MATMUL, DQG_FACTS_DECONV } kind;
    bool src_zero_point; /* constant non-zero, or given at run time */
    /* Convolution: spatial rank, and per spatial dimension (depth first)
     * input and output extent, kernel, stride, dilation (oneDNN's: 0 =
     * none) and padding; output channels per group. */
    int spatial;
    int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_l[3], pad_r[3];
    int64_t oc_per_group, ic_per_group, groups;
    bool binary;             /* any binary post-op (rule I) */
    bool per_channel_binary; /* a binary post-op with an operand that varies by channel */
    /* A binary post-op with an operand that varies along an axis other
     * than the channel, and a channels-last destination (rule F). */
    bool other_axis_binary, dst_channels_last;
    /* A binary post-op with an operand of the destination's own shape and
     * layout (rule H). */
    bool full_binary;
    /* MatMul: the reduction size, and the rows of the source (all batch
     * dimensions included; 0: unknown). */
    int64_t K, M;
} dqg_prim_facts;

/* The rule (A, B, F, H or J) that forbids implementation `impl` for a primitive
 * with these facts, or NULL when it may be used. */
const char *dqg_defect_skip_impl(const dqg_prim_facts *f, const char *impl);
/* Not a defect but a choice: the reason to pass over implementation
 * `impl` when another one exists (NULL: none). An int8 MatMul of at most
 * DQG_AMX_MIN_M rows does not go to AMX: a tile holds 16 rows, so a
 * 1-row GEMV uses a sixteenth of each tile multiply while paying its tile
 * loads and configuration, and the layer is bound by reading its weights,
 * which the VNNI brgemm streams as fast. */
#define DQG_AMX_MIN_M 4
const char *dqg_prefer_other_impl(const dqg_prim_facts *f, const char *impl);
/* Rules C, I and K: the rule that refuses the int8 kernel on
 * implementation `impl`, or NULL (for a deconvolution, pad_r holds
 * oneDNN's right paddings, and kernel, stride and dilation its own). */
const char *dqg_defect_refuse(const dqg_prim_facts *f, const char *impl);
/* Rule G: whether a matmul implementation `impl` must write a transposed
 * result of rank `rank` (oneDNN's, batch axes included) dense, with a
 * binary operand that varies by channel. */
bool dqg_defect_dense_result(const char *impl, bool per_channel_binary, int rank);
/* Rule D: whether packing convolution weights into `to` must go through
 * the same layout without compensation first (whenever `to` carries
 * compensation; a matmul's blocked weights have no reorder between their
 * two forms, and the rule is not theirs). */
bool dqg_defect_two_step_pack(const dnnl_memory_desc_t *to);

#endif
