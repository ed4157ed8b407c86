/* Canonical serialization of a partition for the compiled-partition cache. */
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_key.h"

/* Constants up to this size are serialized by value (scales, zero points,
 * biases); larger ones (weights) by their XXH3-128, computed once when the
 * constant entered the graph. */
#define KEY_VALUE_BYTES 4096

static void put(dqg_key_buf *k, const void *p, size_t n)
{
    if (k->failed)
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

dqg_status dqg_cache_key_build(const dqg_kernel_request *req, dqg_key_buf *k)
{
    const dqg_graph *g = req->mini;
    const dqg_partition *p = req->roles;
    memset(k, 0, sizeof *k);
    put_str(k, "dqgraph " DQG_VERSION_STRING);
    put_i64(k, req->options->backend);
    put_i64(k, req->options->fpmath);
    put_i64(k, (int64_t)dnnl_get_effective_cpu_isa());
    put_i64(k, p->kind);
    int64_t roles[] = {p->src_dq, p->w_dq, p->main, p->bias, p->q, p->n_post};
    put(k, roles, sizeof roles);
    put(k, p->post, sizeof(int) * (size_t)p->n_post);
    put_i64(k, g->n_tensors);
    for (int32_t i = 0; i < g->n_tensors; i++) {
        const dqg_tensor *t = &g->tensors[i];
        int64_t head[] = {t->dtype, t->rank, t->kind, t->is_output};
        put(k, head, sizeof head);
        put(k, t->dims, sizeof(int64_t) * (size_t)t->rank);
        if (t->kind == DQG_TENSOR_CONSTANT) {
            if (t->nbytes <= KEY_VALUE_BYTES)
                put(k, t->data, t->nbytes);
            else
                put(k, t->data_hash, sizeof t->data_hash);
        }
    }
    put_i64(k, g->n_ops);
    for (int32_t i = 0; i < g->n_ops; i++) {
        dqg_op op = g->ops[i];
        if (op.kind == DQG_OP_DEQUANTIZE || op.kind == DQG_OP_QUANTIZE) {
            /* Canonical: the front door that made the op does not matter. */
            op.attrs.quant.dialect = 0;
            op.attrs.quant.opset = 0;
        }
        int64_t head[] = {op.kind, op.n_inputs, op.n_outputs};
        put(k, head, sizeof head);
        put(k, op.inputs, sizeof(dqg_tensor_id) * (size_t)op.n_inputs);
        put(k, op.outputs, sizeof(dqg_tensor_id) * (size_t)op.n_outputs);
        /* Ops are zeroed before their attributes are set, so padding is 0. */
        put(k, &op.attrs, sizeof op.attrs);
    }
    put_i64(k, g->n_inputs);
    put(k, g->inputs, sizeof(dqg_tensor_id) * (size_t)g->n_inputs);
    put_i64(k, g->n_outputs);
    put(k, g->outputs, sizeof(dqg_tensor_id) * (size_t)g->n_outputs);
    if (k->failed) {
        dqg_key_buf_free(k);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "cache key: out of memory");
    }
    return DQG_OK;
}

void dqg_key_buf_free(dqg_key_buf *k)
{
    free(k->data);
    memset(k, 0, sizeof *k);
}
