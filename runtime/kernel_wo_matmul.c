/* The weight-only MatMul partition: float activations times constant
 * quantized weights (behind their dequantize and any Transpose/Reshape),
 * with the bias and element-wise ops that follow. The paths:
 * - with fpmath int8 (opt-in, approximate), 4- and 8-bit integer weights
 *   and a VNNI CPU, at any M: the activations are quantized to int8 per
 *   K-block at run time and multiplied by VNNI dot products
 *   (runtime/wo_q8.c);
 * - otherwise, above 16 rows with K-blocks under 64 on AVX-512: dqgraph's
 *   f32 kernel for many rows (runtime/wo_gemv.c), which decodes a chunk of
 *   weights to f32 in L1 and multiplies it by blocks of 12 rows at the FMA
 *   rate, exact within the contract;
 * - otherwise (at any M; under fpmath bf16 up to WO_GEMV_MAX_M rows),
 *   4- and 8-bit integer weights and a VNNI CPU: the same VNNI kernel with
 *   each activation split into three int8 codes (~2^-24 of its block's
 *   largest magnitude left out, the size of one f32 rounding), exact within
 *   the contract;
 * - otherwise at small M (up to WO_GEMV_MAX_M rows), any weight type (but
 *   float8 weights holding codes an f16 cannot carry, see
 *   runtime/wo_gemv.c): dqgraph's own f32 kernel (AVX-512, AVX2 or plain
 *   C, by the CPU), which keeps the weights at their width and decodes
 *   them in registers (the layer is bound by the bytes of weights it reads
 *   and decodes); above 16 rows on AVX2 and AVX-512, its copy for many
 *   rows (above);
 * - otherwise the weights are dequantized once, when the kernel is built,
 *   into f32 (or bf16 under fpmath bf16) that oneDNN's matmul packs in its
 *   own layout: above 16 rows on CPUs without AVX2, float8 weights the
 *   own kernel does not take, and fpmath bf16 above 16 rows.
 * Every path but the last keeps the weights at their width. */
#include <stdlib.h>
#include <string.h>

#include "runtime/cache.h"
#include "runtime/cpu_isa.h"
#include "runtime/epilogue_build.h"
#include "runtime/kernel.h"
#include "runtime/wo_gemv.h"
#include "runtime/wo_q8.h"

/* Rows up to which the own kernel decodes weights in registers, as in
 * runtime/wo_gemv.h. */
#define WO_GEMV_MAX_M DQG_WO_GEMV_MAX_M
/* K-blocks below which, above 16 rows, the f32 kernel beats three int8
 * parts: the parts' per-block epilogue (joining three sums, two scales and
 * the zero-point term) costs a quarter of blocks of 32 (measured: int4, K
 * = N = 4096, M = 64 to 512). */
#define WO_PARTS_MIN_BLOCK 64

typedef struct wo_kernel {
    dqg_kernel base;
    dqg_wo_gemv *gemv;
    dqg_wo_q8 *q8; /* instead of gemv: fpmath int8, or the exact parts */
    dqg_epilogue epi;
    int64_t M;
    int x_arg, y_arg, n_rt, rt_args[DQG_EPI_MAX];
} wo_kernel;

static dqg_status wo_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    wo_kernel *w = (wo_kernel *)k;
    const void *rt[DQG_EPI_MAX];
    for (int i = 0; i < w->n_rt; i++)
        rt[i] = args[w->rt_args[i]];
    if (w->q8)
        return dqg_wo_q8_run(w->q8, w->M, args[w->x_arg], args[w->y_arg], scratch, &w->epi, rt);
    return dqg_wo_gemv_run(w->gemv, w->M, args[w->x_arg], args[w->y_arg], scratch, &w->epi, rt);
}

static void wo_destroy(dqg_kernel *k)
{
    wo_kernel *w = (wo_kernel *)k;
    dqg_wo_gemv_destroy(w->gemv);
    dqg_wo_q8_destroy(w->q8);
    dqg_epilogue_free(&w->epi);
    free(w);
}

/* The own kernel, or DQG_UNSUPPORTED with the reason in `why`. */
static dqg_status build_own(const dqg_kernel_request *req, dqg_kernel **out, char *why,
                            size_t why_size)
{
    const dqg_graph *g = req->mini;
    const dqg_op *mm = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *x = &g->tensors[mm->inputs[0]];
    dqg_tensor_id yid = dqg_part_result(g, req->roles);
    const dqg_tensor *y = &g->tensors[yid];
    int x_arg = dqg_kernel_arg_index(g, mm->inputs[0]);
    int64_t K = x->dims[x->rank - 1], M = K > 0 ? x->nelems / K : 0;
    const char *reason = NULL;
    /* Integer dot products (fpmath int8, or the exact mode's three codes)
     * beat f32 arithmetic at any M; fpmath bf16 above 16 rows runs oneDNN's
     * bf16 matmul, which beats both. */
    bool int8 = req->options->fpmath == DQG_FPMATH_INT8;
    bool bf16 = req->options->fpmath == DQG_FPMATH_BF16;
    if (M > WO_GEMV_MAX_M && bf16)
        reason = "M above 16 with fpmath bf16: oneDNN's bf16 matmul";
    else if (mm->kind != DQG_OP_MATMUL || mm->attrs.matmul.transpose_a || x->dtype != DQG_F32 ||
             y->dtype != DQG_F32 || x_arg < 0 || x->rank < 1 || x->channels_last ||
             y->channels_last)
        reason = "activations not a row-major f32 [M, K]";
    if (reason) {
        snprintf(why, why_size, "%s", reason);
        return DQG_UNSUPPORTED;
    }
    wo_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "weight-only matmul: out of memory");
    k->base.execute = wo_execute;
    k->base.destroy = wo_destroy;
    k->M = M;
    k->x_arg = x_arg;
    k->y_arg = dqg_kernel_arg_index(g, yid);
    dqg_weights w = {0};
    dqg_status st = dqg_weights_resolve(g, req->roles, &w, "weight-only matmul");
    if (st == DQG_OK && w.K != K)
        st = dqg_set_error(DQG_UNSUPPORTED, "weight-only matmul: K %lld vs %lld", (long long)w.K,
                           (long long)K);
    if (st == DQG_OK)
        st = dqg_epilogue_from_partition(req, w.N, &k->epi, k->rt_args, &k->n_rt,
                                         "weight-only matmul");
    /* fpmath int8: the approximate kernel where it takes the weights, else
     * the exact one (the explain line says which ran and why). The exact
     * mode: above 16 rows with K-blocks under 64 on AVX-512, the f32 kernel
     * on chunks of weights decoded to f32 (wo_gemv.c); else the integer
     * kernel with three codes per activation where it takes the weights;
     * else the f32 kernel (above 16 rows on AVX2 and AVX-512 only). */
    bool many = M > WO_GEMV_MAX_M, avx512 = dqg_cpu_has(DQG_ISA_AVX512),
         avx2 = dqg_cpu_has(DQG_ISA_AVX2);
    bool small_blocks = w.block_k < w.K && w.block_k < WO_PARTS_MIN_BLOCK;
    char q8_why[200] = "";
    if (st == DQG_OK && int8 && dqg_wo_q8_create(&w, 1, &k->q8, "weight-only matmul") != DQG_OK)
        snprintf(q8_why, sizeof q8_why, "; exact, not int8 activations: %.150s", dqg_last_error());
    else if (st == DQG_OK && !int8 && many && avx512 && small_blocks)
        snprintf(q8_why, sizeof q8_why, "; f32, not int8 parts: K-blocks of %lld",
                 (long long)w.block_k);
    else if (st == DQG_OK && !int8 &&
             dqg_wo_q8_create(&w, 3, &k->q8, "weight-only matmul") != DQG_OK)
        snprintf(q8_why, sizeof q8_why, "; f32, not int8 parts: %.150s", dqg_last_error());
    if (st == DQG_OK && !k->q8 && many && !avx2)
        st = dqg_set_error(DQG_UNSUPPORTED, "M above 16 without AVX2%s", q8_why);
    if (st == DQG_OK && !k->q8)
        st = dqg_wo_gemv_create(&w, M, &k->gemv, "weight-only matmul");
    if (st != DQG_OK) {
        snprintf(why, why_size, "%s", dqg_last_error());
        dqg_weights_release(&w);
        wo_destroy(&k->base);
        return st;
    }
    int64_t kblock = w.block_k < w.K ? w.block_k : w.K;
    if (k->q8) {
        bool exact = dqg_wo_q8_parts(k->q8) > 1;
        long long xblock = (long long)dqg_wo_q8_xblock(k->q8);
        char xb[32] = ""; /* the approximate mode names its x-block */
        if (!exact)
            snprintf(xb, sizeof xb, ":x-block%lld", xblock);
        snprintf(k->base.impl, sizeof k->base.impl, "own:avx512_vnni:wo-%s:%s:k-block%lld%s",
                 exact ? "int8-parts3" : "int8-act", dqg_dtype_name(w.dtype), (long long)kblock,
                 xb);
        if (exact)
            snprintf(k->base.why, sizeof k->base.why,
                     "M=%lld: exact: activations split into 3 int8 codes per block of %lld along "
                     "K (to 2^-24 of its largest magnitude), VNNI dot products with %s weights at "
                     "their width (%zu bytes)",
                     (long long)M, xblock, dqg_dtype_name(w.dtype), dqg_wo_q8_bytes(k->q8));
        else
            snprintf(k->base.why, sizeof k->base.why,
                     "M=%lld, fpmath int8 (approximate): activations quantized to int8 per row "
                     "and block of %lld along K, VNNI dot products with the %s weights (%zu bytes)",
                     (long long)M, xblock, dqg_dtype_name(w.dtype), dqg_wo_q8_bytes(k->q8));
        k->base.scratch_size = dqg_wo_q8_scratch(k->q8, M);
        k->base.bytes = dqg_wo_q8_bytes(k->q8);
    } else {
        bool gemm = dqg_wo_gemv_gemm(k->gemv);
        snprintf(k->base.impl, sizeof k->base.impl, "own:%s:wo-%s:%s:k-block%lld",
                 dqg_wo_gemv_isa(k->gemv), gemm ? "gemm" : "gemv", dqg_dtype_name(w.dtype),
                 (long long)kblock);
        if (gemm)
            snprintf(k->base.why, sizeof k->base.why,
                     "M=%lld: arithmetic-bound, %s weights kept at their width (%zu bytes) and "
                     "decoded to f32 a chunk at a time%.90s",
                     (long long)M, dqg_dtype_name(w.dtype), dqg_wo_gemv_bytes(k->gemv), q8_why);
        else
            snprintf(k->base.why, sizeof k->base.why,
                     "M=%lld: bandwidth-bound, %s weights read at their width (%zu bytes), not "
                     "as f32%.90s",
                     (long long)M, dqg_dtype_name(w.dtype), dqg_wo_gemv_bytes(k->gemv), q8_why);
        k->base.scratch_size = dqg_wo_gemv_scratch(k->gemv, M);
        k->base.bytes = dqg_wo_gemv_bytes(k->gemv);
    }
    dqg_weights_release(&w);
    *out = &k->base;
    return DQG_OK;
}

/* The MatMul's second operand, computed from the constants behind it. */
static dqg_status expand_weights(const dqg_kernel_request *req, void **out)
{
    const dqg_graph *g = req->mini;
    const dqg_partition *p = req->roles;
    int32_t ops[DQG_MAX_PART_OPS];
    int n = 0;
    for (int k = 0; k < p->n_ops; k++)
        if (p->role[k] == DQG_ROLE_W_DQ || p->role[k] == DQG_ROLE_W_LAYOUT)
            ops[n++] = k;
    dqg_tensor_id b = dqg_req_op(req, DQG_ROLE_MAIN)->inputs[1];
    dqg_graph *sub = NULL;
    dqg_status st = dqg_graph_extract(g, ops, n, &b, 1, &sub, NULL, NULL);
    if (st != DQG_OK)
        return st;
    size_t bytes = g->tensors[b].nbytes;
    void *data = malloc(bytes ? bytes : 1);
    if (!data) {
        dqg_graph_destroy(sub);
        return dqg_set_error(DQG_OUT_OF_MEMORY,
                             "weight-only matmul: out of memory for %zu bytes of weights", bytes);
    }
    dqg_buffer o = {.id = sub->outputs[0], .data = data, .size = bytes};
    st = dqg_reference_run(sub, NULL, 0, &o, 1);
    dqg_graph_destroy(sub);
    if (st != DQG_OK) {
        free(data);
        return st;
    }
    dqg_cache_count_constant_transform();
    *out = data;
    return DQG_OK;
}

/* The f32 path: the MatMul with its expanded weights as a constant, on the
 * f32 matmul kernel (which packs them and applies the epilogue). */
static dqg_status build_expanded(const dqg_kernel_request *req, dqg_kernel **out)
{
    void *w = NULL;
    dqg_status st = expand_weights(req, &w);
    if (st != DQG_OK)
        return st;
    dqg_graph *mini = NULL;
    if ((st = dqg_graph_clone_borrowing(req->mini, &mini)) != DQG_OK) {
        free(w);
        return st;
    }
    dqg_tensor *b = &mini->tensors[dqg_req_op(req, DQG_ROLE_MAIN)->inputs[1]];
    b->kind = DQG_TENSOR_CONSTANT;
    b->data = w;
    b->borrowed = true;
    dqg_kernel_request sub = *req;
    sub.mini = mini;
    st = dqg_kernel_matmul_build(&sub, out);
    dqg_graph_destroy(mini);
    free(w);
    return st;
}

dqg_status dqg_kernel_wo_matmul_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    char why[160] = "";
    dqg_status st = build_own(req, out, why, sizeof why);
    if (st != DQG_UNSUPPORTED)
        return st;
    st = build_expanded(req, out);
    if (st == DQG_OK) {
        const dqg_op *dq = dqg_req_op(req, DQG_ROLE_W_DQ);
        snprintf((*out)->why, sizeof(*out)->why,
                 "%s weights dequantized once into f32 for oneDNN's matmul (own kernel: %.100s)",
                 dqg_dtype_name(req->mini->tensors[dq->inputs[0]].dtype), why);
    }
    return st;
}
