/* The rules of onednn_defects.h. */
#include <string.h>

#include "runtime/onednn_defects.h"

/* Rule A: the effective padding of the depth dimension is 0 and some
 * output's height/width window reaches into the padding. */
static bool rule_a(const dqg_prim_facts *f)
{
    if (f->kind != DQG_FACTS_CONV || f->spatial != 3 || !f->src_zero_point || f->kernel[0] < 2)
        return false;
    int64_t back = (f->out[0] - 1) * f->stride[0] + (f->kernel[0] - 1) * (f->dilation[0] + 1) + 1 -
                   f->in[0] - f->pad_l[0];
    if (f->pad_l[0] != 0 || back > 0)
        return false;
    for (int d = 1; d < 3; d++) {
        int64_t r = (f->out[d] - 1) * f->stride[d] + (f->kernel[d] - 1) * (f->dilation[d] + 1) + 1 -
                    f->in[d] - f->pad_l[d];
        if (f->pad_l[d] > 0 || r > 0)
            return true;
    }
    return false;
}

const char *dqg_defect_skip_impl(const dqg_prim_facts *f, const char *impl)
{
    if (!f || !impl)
        return NULL;
    if (strstr(impl, "avx512_core_amx_int8") && rule_a(f))
        return "oneDNN 2.6 defect A (AMX 3-D convolution with a source zero point)";
    if (f->kind == DQG_FACTS_MATMUL && strstr(impl, "avx512_core_amx") && f->K >= 125 &&
        f->K <= 127)
        return "oneDNN 2.6 defect B (AMX int8 matmul with K = 125..127)";
    if (f->kind == DQG_FACTS_CONV && strstr(impl, "jit_uni_int8_1x1:"))
        for (int d = 0; d < f->spatial; d++)
            if (f->stride[d] > 1)
                return "oneDNN 2.6 defect J (jit_uni_int8_1x1 convolution with a stride: now "
                       "and then wrong in its second thread's output channels)";
    if (f->kind == DQG_FACTS_CONV && f->full_binary && strstr(impl, "brdgmm"))
        return "oneDNN 2.6 defect H (brdgmm depthwise convolution with an operand of the "
               "result's shape)";
    if (f->kind == DQG_FACTS_CONV && f->other_axis_binary && f->dst_channels_last &&
        strcmp(impl, "x64:gemm:jit") == 0)
        return "oneDNN 2.6 defect F (f32 gemm convolution, channels-last, with a binary "
               "operand that varies along the spatial axes)";
    return NULL;
}

const char *dqg_prefer_other_impl(const dqg_prim_facts *f, const char *impl)
{
    if (f && impl && f->kind == DQG_FACTS_MATMUL && f->M > 0 && f->M <= DQG_AMX_MIN_M &&
        strstr(impl, "amx"))
        return "AMX brgemm passed over at M <= 4 (tiles of 16 rows; bound by reading the weights)";
    return NULL;
}

const char *dqg_defect_refuse(const dqg_prim_facts *f, const char *impl)
{
    if (f && impl && f->kind == DQG_FACTS_DECONV && strstr(impl, "deconv"))
        for (int d = 0; d < f->spatial; d++) {
            if (f->pad_r[d] < 0)
                return "oneDNN 2.6 defect K (int8 deconvolution with a negative right padding: "
                       "an output_padding beyond the end padding)";
            if (f->stride[d] > (f->kernel[d] - 1) * (f->dilation[d] + 1) + 1)
                return "oneDNN 2.6 defect K (int8 deconvolution with a stride larger than its "
                       "dilated kernel)";
        }
    if (!f || f->kind != DQG_FACTS_CONV || !impl)
        return NULL;
    int64_t oc = f->oc_per_group;
    if (f->per_channel_binary && (strstr(impl, "gemm_s8u8s32") || strstr(impl, "gemm_s8s8s32")) &&
        ((oc >= 17 && oc <= 31 && oc % 2 == 1) || oc >= 33))
        return "oneDNN 2.6 defect C (gemm int8 convolution with a per-channel post-op and 17..31 "
               "odd or more than 32 output channels per group)";
    if (f->binary && strstr(impl, "jit_uni_int8:") && f->groups > 1 && f->ic_per_group == 1 &&
        oc == 1 && f->groups % 8 != 0)
        return "oneDNN 2.6 defect I (jit_uni_int8 depthwise convolution with a binary post-op "
               "and a channel count that is not a multiple of 8)";
    return NULL;
}

bool dqg_defect_dense_result(const char *impl, bool per_channel_binary, int rank)
{
    return impl && per_channel_binary && rank >= 3 &&
           (strstr(impl, ":brg:") || strstr(impl, ":gemm:"));
}

bool dqg_defect_two_step_pack(const dnnl_memory_desc_t *to)
{
    /* Which reorders take a transposition path depends on oneDNN's
     * internal blocking, so every pack that computes compensation goes
     * through the plain layout first: the second reorder then only copies
     * within one layout and adds the sums. */
    unsigned comp = dnnl_memory_extra_flag_compensation_conv_s8s8 |
                    dnnl_memory_extra_flag_compensation_conv_asymmetric_src;
    return (to->extra.flags & comp) != 0;
}
