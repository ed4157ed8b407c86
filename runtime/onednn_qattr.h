/* oneDNN attributes for fused partitions (internal): output scales (the
 * weights' scales and every constant factor, per tensor or per output
 * channel), the run-time factors of the scale (the source scale of dynamic
 * quantization, a MatMulInteger's Mul by x_scale) as one binary multiply
 * post-op -- oneDNN 2.6 leaves its brgemm kernels for run-time output
 * scales, not for a post-op --, source and destination zero points, and
 * the epilogue as post-ops, with the constant and run-time arguments each
 * needs at execution. */
#ifndef DQG_RUNTIME_ONEDNN_QATTR_H
#define DQG_RUNTIME_ONEDNN_QATTR_H

#include "runtime/kernel.h"
#include "runtime/onednn_exec.h"
#include "runtime/weights.h"

#define DQG_QATTR_MAX_BINARY  10
#define DQG_QATTR_MAX_FACTORS 4

/* Where a run-time value comes from at execution. */
typedef enum {
    DQG_RT_ARG = 0,   /* the kernel argument `arg` */
    DQG_RT_SRC_SCALE, /* the scale the kernel computed quantizing its source */
    DQG_RT_SRC_ZP,    /* the zero point it computed (u8) */
} dqg_rt_source;

typedef struct dqg_rt_ref {
    dqg_rt_source source;
    int arg;
    dqg_dtype dtype;
} dqg_rt_ref;

typedef struct dqg_qattr {
    dnnl_primitive_attr_t attr;
    int64_t n_scales; /* constant output scales: 1 or one per channel */
    int n_factors;    /* run-time scale factors, multiplied into one f32 */
    dqg_rt_ref factor[DQG_QATTR_MAX_FACTORS];
    bool has_src_zp; /* run-time source zero point */
    dqg_rt_ref src_zp;
    /* Binary post-ops: constant operands (owned) or run-time ones. */
    int n_binary;
    int binary_index[DQG_QATTR_MAX_BINARY]; /* position in the post-op chain */
    float *binary_data[DQG_QATTR_MAX_BINARY];
    bool binary_rt[DQG_QATTR_MAX_BINARY];
    dqg_rt_ref binary_ref[DQG_QATTR_MAX_BINARY];
    dnnl_memory_desc_t binary_md[DQG_QATTR_MAX_BINARY];
    bool full_operand;       /* a binary operand of the destination's own shape and layout */
    bool per_channel_binary; /* a binary operand that varies by channel */
    bool other_axis_binary;  /* a binary operand that varies along an axis other than the channel */
    bool src_zero_point;     /* a non-zero or run-time source zero point */
    int32_t weights_zp;      /* the weights' common zero point (dqg_qattr_weights_zp) */
    int32_t src_zp_value;    /* a constant source zero point (0: none or run-time) */
    /* The row term of per-column weight zero points (dqg_weights_fold_s8_
     * columns): a binary add, first in the chain, of an operand of the
     * destination's shape that the kernel fills per execution at
     * row_term_offset of its scratch, with the constant output scales
     * (row_scale[n], or [0] for all) applied. -1: none. */
    int row_term_binary;
    size_t row_term_offset;
    float *row_scale;
    dqg_dtype dst_dtype;
    /* A constant bias of an int8 kernel with constant scales, in
     * accumulator units (owned), as the primitive's bias argument: oneDNN
     * 2.6 adds it before the output scales, in the kernel's inner loop,
     * where a per-channel binary post-op costs a second pass (a 1x1
     * convolution with 16 input channels: 0.17 -> 0.10 ms). NULL when the
     * bias is a post-op or absent. */
    float *bias;
    dnnl_memory_desc_t bias_md;
    /* With run-time scale factors: the bias argument is bias[] divided by
     * their product, per execution, into the attribute's scratch (one
     * per-channel binary add costs an int8 matmul 128x768x768 a sixth of
     * its time; the bias argument nothing). dqg_qattr_handles returns -1
     * when the product or a quotient is not a finite nonzero float. */
    bool bias_runtime;
    int64_t bias_len;
    /* A constant source zero point folded into the bias argument (0:
     * none): oneDNN's compensation for it cost 5-30% of a 1x1
     * convolution's time. */
    int32_t folded_zp;
    /* The final ReLU/Clip was left out: the int8 destination's saturation
     * gives the same values (its bounds lie outside what the destination
     * holds after its zero point). */
    bool clip_in_saturation;
    /* The final GELU (erf) was left out of the post-ops (DQG_QATTR_OWN_GELU):
     * oneDNN 2.6's gelu_erf post-op costs an int8 matmul 128x768x3072 a
     * third of its time, dqgraph's own pass over the result about 0.7 of
     * that (runtime/gelu_kernel.h). */
    bool own_gelu;
} dqg_qattr;

/* Fills q from the partition's roles. `dst_rank` and `channel_axis`
 * describe the oneDNN destination (logical N, C, ... for convolutions);
 * `dst_md` is its memory descriptor (the layout of an operand of the
 * output's own shape). `w_colsum` (NULL: none) holds, per output channel,
 * the sum of the s8 weights the primitive multiplies: given, a constant
 * source zero point becomes -zp * colsum in the bias argument instead of
 * oneDNN's zero-point compensation (only right where no padding reads the
 * zero point: a convolution without padding). `row_term` reserves the
 * chain's first post-op for the row term of per-column weight zero
 * points (row_term_binary). */
dqg_status dqg_qattr_build(const dqg_kernel_request *req, int dst_rank, int channel_axis,
                           int64_t channels, const dnnl_memory_desc_t *dst_md,
                           const int64_t *w_colsum, bool row_term, dqg_qattr *q, const char *what);
/* What a kernel can do beyond the primitive, for dqg_qattr_build_ex. */
enum {
    /* A bias beside run-time scale factors may become the primitive's bias
     * argument (bias_runtime): the kernel keeps a second primitive built
     * without it for the executions where dqg_qattr_handles returns -1. */
    DQG_QATTR_RUNTIME_BIAS = 1,
    /* A final GELU (erf form) of an f32 result may be left out of the
     * post-ops (own_gelu): the kernel applies dqg_gelu_erf_inplace to the
     * result after the primitive. */
    DQG_QATTR_OWN_GELU = 2,
};
/* The same, with the DQG_QATTR_* flags. */
dqg_status dqg_qattr_build_ex(const dqg_kernel_request *req, int dst_rank, int channel_axis,
                              int64_t channels, const dnnl_memory_desc_t *dst_md,
                              const int64_t *w_colsum, bool row_term, unsigned flags, dqg_qattr *q,
                              const char *what);
/* The source zero point of an execution (constant, run-time, or the one
 * the kernel computed quantizing its source: `internal` as for
 * dqg_qattr_handles). */
int32_t dqg_qattr_src_zp(const dqg_qattr *q, void *const *args, const void *const *internal);
void dqg_qattr_free(dqg_qattr *q);
/* Appends to a kernel's `why` what the attributes left out (nothing when
 * they left nothing out). */
void dqg_qattr_note(const dqg_qattr *q, char *why, size_t size);
/* The bias argument's descriptor for the primitive's op descriptor, or
 * NULL. */
static inline const dnnl_memory_desc_t *dqg_qattr_bias_md(const dqg_qattr *q)
{
    return q->bias ? &q->bias_md : NULL;
}

/* Appends the run-time attribute arguments (bias, zero point, binary operands) to
 * kinds/mds; returns the new count. */
int dqg_qattr_args(const dqg_qattr *q, int n, int *kinds, dnnl_memory_desc_t *mds);
/* Fills the handles for those arguments and returns their new count, or
 * -1 (bias_runtime only) when the bias cannot be an argument for this
 * execution's scale. `internal` holds the kernel's own source scale (f32)
 * and zero point (u8), or NULLs. `scratch` holds dqg_qattr_scratch_size
 * bytes. */
int dqg_qattr_handles(const dqg_qattr *q, void *const *args, const void *const *internal,
                      void *scratch, int n, void **h);
size_t dqg_qattr_scratch_size(const dqg_qattr *q);

/* The int8 kernels' source: a kernel argument, or -- when the partition
 * quantizes its activations itself (DynamicQuantizeLinear inside) -- an
 * f32 argument quantized per execution into scratch, with its scale and
 * zero point. */
typedef struct dqg_qsrc {
    int arg;          /* the source's kernel argument (f32 when quantized here) */
    bool quantize;    /* DynamicQuantizeLinear or Quantize runs in the kernel */
    dqg_kernel *qk;   /* the Quantize's kernel (NULL: DynamicQuantizeLinear) */
    size_t qk_offset; /* its scratch */
    int64_t n;        /* elements */
    size_t offset;    /* of the quantized copy in scratch; its scale and zero point follow */
    char op_name[96]; /* the DynamicQuantizeLinear's, for its messages */
} dqg_qsrc;

/* Fills s for the request; `offset` is where its scratch starts. Sets
 * *bytes to the scratch it needs (0 when it quantizes nothing). */
dqg_status dqg_qsrc_init(dqg_qsrc *s, const dqg_kernel_request *req, size_t offset, size_t *bytes);
void dqg_qsrc_free(dqg_qsrc *s);
/* Per execution: the u8/s8 source for the primitive and, when quantized
 * here, internal[0..1] = its scale and zero point. */
dqg_status dqg_qsrc_prepare(const dqg_qsrc *s, void *const *args, void *scratch, void **src,
                            const void **internal);

/* The largest |x| or |x - zero point| the u8/s8 source of the request's
 * int8 partition can hold: 255 for u8; 128 + |zp| for s8 with a constant
 * zero point, 256 with a run-time one. */
int64_t dqg_qsrc_range(const dqg_kernel_request *req);

/* The request's 8-bit weights folded into s8 for the int8 kernel (*out,
 * owned): w - zp when that fits, else with a common offset (*offset, when
 * `offset` is given: a MatMul's weights zero point), else as codes w - 128
 * (u8; s8 codes as they are) with *col[n] = 128 - zp[n] (owned; NULL
 * otherwise), the factor of the kernel's row or window term. That term is
 * added in f32, so an integer result refuses it. Then the int32 bound of
 * the sums is checked. */
dqg_status dqg_qattr_fold_weights(const dqg_kernel_request *req, const dqg_weights *w, int8_t **out,
                                  int32_t *offset, int32_t **col, const char *what);

/* Gives the primitive the weights' zero point `zp` (per tensor; 0:
 * none): weights folded into s8 with a common offset
 * (dqg_weights_fold_s8). oneDNN 2.6's brgemm matmul takes it and stays on
 * its VNNI/AMX kernels. */
dqg_status dqg_qattr_weights_zp(dqg_qattr *q, int32_t zp, const char *what);

/* DQG_UNSUPPORTED for an integer destination (MatMulInteger's or
 * ConvInteger's s32) that oneDNN would round: f32 holds the sums exactly
 * only below 2^24 (K products of at most dqg_qsrc_range x 128, x 256 with
 * a weights zero point), and a convolution passes every sum through f32,
 * a matmul those with a source or weights zero point (its compensation).
 * The exact kernels of the unfused form take such a partition. */
dqg_status dqg_qattr_exact_integer(const dqg_kernel_request *req, const dqg_qattr *q, int64_t K,
                                   const char *what);

/* DQG_UNSUPPORTED, naming the reason, unless oneDNN dispatches to an ISA
 * with VNNI or AMX: without them its u8 x s8 kernels add pairs of products
 * in saturating 16-bit arithmetic, which loses exactness. */
dqg_status dqg_int8_exact_isa(const char *what);

/* Creates the primitive of `pd` with src, weights (in the layout pd chose),
 * dst and q's attribute arguments. */
dqg_status dqg_qkernel_prim(const_dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *md_src,
                            const dnnl_memory_desc_t *md_dst, const dqg_qattr *q,
                            dqg_dnnl_prim *prim, const char *what);
/* The common end of building an int8 kernel: packs the folded s8 weights
 * (laid out as md_w_plain) into the layout `pd` chose, and creates the
 * primitive (dqg_qkernel_prim). */
dqg_status dqg_qkernel_finish(const int8_t *folded, const_dnnl_primitive_desc_t pd,
                              const dnnl_memory_desc_t *md_w_plain,
                              const dnnl_memory_desc_t *md_src, const dnnl_memory_desc_t *md_dst,
                              const dqg_qattr *q, dqg_dnnl_prim *prim, void **w_packed,
                              size_t *bytes, const char *what);

#endif
