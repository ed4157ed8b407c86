/* Canonical serialization of a partition for the compiled-partition cache. */
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_key.h"
#include "runtime/cpu_isa.h"

/* Constants up to this size are serialized by value (scales, zero points,
 * biases); larger ones (weights) by their XXH3-128, computed once when the
 * constant entered the graph. */
#define KEY_VALUE_BYTES 4096

static void put(dqg_key_buf *k, const void *p, size_t n)
{
    if (k->failed || n == 0)
        return;
    if (k->len + n > k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 1024;
        while (cap < k->len + n)
            cap *= 2;
        unsigned char *d = realloc(k->data, cap);
        if (!d) {
            k->failed = true;
            return;
        }
        k->data = d;
        k->cap = cap;
    }
    memcpy(k->data + k->len, p, n);
    k->len += n;
}

static void put_i64(dqg_key_buf *k, int64_t v)
{
    put(k, &v, sizeof v);
}

static void put_str(dqg_key_buf *k, const char *s)
{
    put_i64(k, (int64_t)strlen(s));
    put(k, s, strlen(s));
}

/* What every key starts with: the version, the options that change code,
 * and the instruction sets oneDNN and dqgraph's own kernels dispatch to. */
static void put_context(dqg_key_buf *k, const dqg_compile_options *o)
{
    put_str(k, "dqgraph " DQG_VERSION_STRING);
    put_i64(k, o->backend);
    put_i64(k, o->fpmath);
    put_i64(k, o->disable_fusion);
    put_i64(k, (int64_t)dnnl_get_effective_cpu_isa());
    put_i64(k, dqg_cpu_isa());
    /* Which copy of some own kernels runs, and whether fpmath bf16 computes
     * in bf16 (DQG_BF16_DOT may change it between compiles). */
    put_i64(k, dqg_cpu_bf16_dot_fast());
}

/* Tensors by shape, type and kind; constants by value when small, by the
 * hash computed when they entered the graph otherwise; names when asked. */
static void put_tensors(dqg_key_buf *k, const dqg_graph *g, bool names)
{
    put_i64(k, g->n_tensors);
    for (int32_t i = 0; i < g->n_tensors; i++) {
        const dqg_tensor *t = &g->tensors[i];
        int64_t head[] = {t->dtype, t->rank, t->kind, t->is_output, t->channels_last};
        put(k, head, sizeof head);
        put(k, t->dims, sizeof(int64_t) * (size_t)t->rank);
        if (names)
            put_str(k, t->name);
        if (t->kind == DQG_TENSOR_CONSTANT) {
            if (t->nbytes <= KEY_VALUE_BYTES)
                put(k, t->data, t->nbytes);
            else
                put(k, t->data_hash, sizeof t->data_hash);
        }
    }
}

static void put_ops(dqg_key_buf *k, const dqg_graph *g, bool names)
{
    put_i64(k, g->n_ops);
    for (int32_t i = 0; i < g->n_ops; i++) {
        dqg_op op = g->ops[i];
        if (!names && (op.kind == DQG_OP_DEQUANTIZE || op.kind == DQG_OP_QUANTIZE)) {
            /* Canonical: the front door that made the op does not matter. */
            op.attrs.quant.dialect = 0;
            op.attrs.quant.opset = 0;
        }
        int64_t head[] = {op.kind, op.n_inputs, op.n_outputs};
        put(k, head, sizeof head);
        put(k, op.inputs, sizeof(dqg_tensor_id) * (size_t)op.n_inputs);
        put(k, op.outputs, sizeof(dqg_tensor_id) * (size_t)op.n_outputs);
        if (names)
            put_str(k, op.name);
        /* Ops are zeroed before their attributes are set, so padding is 0. */
        put(k, &op.attrs, sizeof op.attrs);
    }
    put_i64(k, g->n_inputs);
    put(k, g->inputs, sizeof(dqg_tensor_id) * (size_t)g->n_inputs);
    put_i64(k, g->n_outputs);
    put(k, g->outputs, sizeof(dqg_tensor_id) * (size_t)g->n_outputs);
}

static dqg_status finish(dqg_key_buf *k)
{
    if (k->failed) {
        dqg_key_buf_free(k);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "cache key: out of memory");
    }
    return DQG_OK;
}

dqg_status dqg_cache_key_build(const dqg_kernel_request *req, dqg_key_buf *k)
{
    const dqg_partition *p = req->roles;
    memset(k, 0, sizeof *k);
    put_context(k, req->options);
    put_i64(k, p->kind);
    put_i64(k, p->n_ops);
    put(k, p->role, (size_t)p->n_ops);
    put_tensors(k, req->mini, false);
    put_ops(k, req->mini, false);
    return finish(k);
}

dqg_status dqg_cache_key_graph(const dqg_graph *g, const dqg_compile_options *o, dqg_key_buf *k)
{
    memset(k, 0, sizeof *k);
    put_str(k, "graph");
    put_context(k, o);
    put_i64(k, o->threads);
    put_tensors(k, g, true);
    put_ops(k, g, true);
    return finish(k);
}

void dqg_key_buf_free(dqg_key_buf *k)
{
    free(k->data);
    memset(k, 0, sizeof *k);
}
