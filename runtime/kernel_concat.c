/* Concat as copies: for each slice of the dimensions before the axis, every
 * input's contiguous chunk goes to its place in the output row. Whole-byte
 * types only (4-bit ones run on the reference kernel). Constant inputs are
 * read from the kernel's own copy. Channels-last tensors joined along the
 * channels are joined along their last stored axis.
 *
 * The int8 concat partition, Q(Concat(DQ(x_i))), is the same copy of the
 * int8 inputs, each byte mapped through its input's table: the input's
 * dequantize then the quantize, evaluated on all 256 codes by the reference
 * interpreter when the kernel is built, so every byte is the reference's.
 * An input whose table is the identity is copied as it is. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "runtime/kernel.h"
#include "runtime/lut8.h"

typedef struct concat_kernel {
    dqg_kernel base;
    int n;
    int *arg;            /* per input: its arg index, or -1 for a constant */
    const void **data;   /* per input: the constant's copy */
    size_t *chunk;       /* per input: bytes per outer slice */
    uint8_t (*lut)[256]; /* int8 concat: per input, its code table (NULL: all copies) */
    bool *copy;          /* int8 concat: per input, whether its table is the identity */
    bool vbmi;           /* the tables are looked up 64 bytes at a time */
    size_t row;          /* output bytes per outer slice */
    int64_t outer;
    int out_arg;
} concat_kernel;

static dqg_status concat_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)scratch;
    const concat_kernel *c = (const concat_kernel *)k;
    char *y = args[c->out_arg];
    /* One team for all inputs: each input's slices are split between the
     * threads, and no thread waits between inputs (they write disjoint
     * bytes). */
    int threads = c->lut && (size_t)c->outer * c->row >= (64 << 10) ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(threads)
    {
        size_t at = 0;
        for (int i = 0; i < c->n; i++) {
            const char *x = c->arg[i] >= 0 ? args[c->arg[i]] : c->data[i];
            size_t chunk = c->chunk[i];
            const uint8_t *t = c->lut && !c->copy[i] ? c->lut[i] : NULL;
#pragma omp for schedule(static) nowait
            for (int64_t o = 0; o < c->outer; o++) {
                const char *xs = x + (size_t)o * chunk;
                char *ys = y + (size_t)o * c->row + at;
                if (!t)
                    memcpy(ys, xs, chunk);
                else
                    dqg_lut8(t, (const uint8_t *)xs, (uint8_t *)ys, chunk, c->vbmi);
            }
            at += chunk;
        }
    }
    return DQG_OK;
}

static void concat_destroy(dqg_kernel *k)
{
    concat_kernel *c = (concat_kernel *)k;
    if (c->data)
        for (int i = 0; i < c->n; i++)
            free((void *)c->data[i]);
    free(c->data);
    free(c->arg);
    free(c->chunk);
    free(c->lut);
    free(c->copy);
    free(c);
}

/* The dimensions in memory order: [N, X..., C] for a channels-last tensor. */
static void stored_dims(const dqg_tensor *t, int64_t *d)
{
    for (int i = 0; i < t->rank; i++)
        d[i] = t->dims[i];
    if (t->channels_last) {
        for (int i = 1; i + 1 < t->rank; i++)
            d[i] = t->dims[i + 1];
        d[t->rank - 1] = t->dims[1];
    }
}

/* A kernel copying the `n` tensors xs[i] (argument xt[i] of the mini graph,
 * or a constant) into y along `axis`; `what` names it in messages.
 * Channels-last tensors, all of them, joined along the channels: the same
 * copies along the last stored axis, [N, X..., C]. */
static dqg_status new_concat(const dqg_graph *g, const dqg_tensor_id *xt, int n, dqg_tensor_id yt,
                             int axis, const char *what, concat_kernel **out)
{
    const dqg_tensor *y = &g->tensors[yt];
    bool cl = y->channels_last;
    for (int i = 0; i < n; i++)
        if (g->tensors[xt[i]].channels_last != cl)
            return dqg_set_error(DQG_UNSUPPORTED, "%s of tensors in different layouts", what);
    if (cl && axis != 1)
        return dqg_set_error(DQG_UNSUPPORTED, "%s of channels-last tensors along axis %d", what,
                             axis);
    concat_kernel *c = calloc(1, sizeof *c);
    if (!c)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", what);
    c->base.execute = concat_execute;
    c->base.destroy = concat_destroy;
    c->n = n;
    c->arg = calloc((size_t)n, sizeof *c->arg);
    c->data = calloc((size_t)n, sizeof *c->data);
    c->chunk = calloc((size_t)n, sizeof *c->chunk);
    if (!c->arg || !c->data || !c->chunk) {
        concat_destroy(&c->base);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", what);
    }
    int ax = cl ? y->rank - 1 : axis;
    int64_t yd[DQG_MAX_RANK];
    stored_dims(y, yd);
    size_t es = (size_t)dqg_dtype_bits(y->dtype) / 8;
    int64_t inner = 1;
    c->outer = 1;
    for (int d = 0; d < ax; d++)
        c->outer *= yd[d];
    for (int d = ax + 1; d < y->rank; d++)
        inner *= yd[d];
    c->row = (size_t)(yd[ax] * inner) * es;
    c->out_arg = dqg_kernel_arg_index(g, yt);
    for (int i = 0; i < n; i++) {
        const dqg_tensor *t = &g->tensors[xt[i]];
        int64_t td[DQG_MAX_RANK];
        stored_dims(t, td);
        c->chunk[i] = (size_t)(td[ax] * inner) * es;
        c->arg[i] = dqg_kernel_arg_index(g, xt[i]);
        if (c->arg[i] < 0) {
            void *d = malloc(t->nbytes ? t->nbytes : 1);
            if (!d) {
                concat_destroy(&c->base);
                return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", what);
            }
            memcpy(d, t->data, t->nbytes);
            c->data[i] = d;
            c->base.bytes += t->nbytes;
        }
    }
    *out = c;
    return DQG_OK;
}

dqg_status dqg_kernel_concat_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    if (dqg_dtype_bits(y->dtype) % 8 != 0)
        return dqg_set_error(DQG_UNSUPPORTED, "Concat of %s elements", dqg_dtype_name(y->dtype));
    concat_kernel *c;
    dqg_status st = new_concat(g, op->inputs, op->n_inputs, op->outputs[0], op->attrs.concat.axis,
                               "Concat", &c);
    if (st != DQG_OK)
        return st;
    snprintf(c->base.impl, sizeof c->base.impl, "dqgraph:concat");
    *out = &c->base;
    return DQG_OK;
}

/* The table of one int8 input: its 256 codes through its dequantize, then
 * the partition's quantize, on the reference interpreter. */
static dqg_status requantize_table(const dqg_graph *g, const dqg_op *dq, const dqg_op *q,
                                   uint8_t table[256], bool *identity)
{
    const int64_t n = 256, one = 1;
    dqg_dtype xt = g->tensors[dq->inputs[0]].dtype, yt = g->tensors[q->outputs[0]].dtype;
    dqg_graph *t = NULL;
    dqg_status st = dqg_graph_create(&t);
    if (st != DQG_OK)
        return st;
    const dqg_tensor *ds = &g->tensors[dq->inputs[1]], *qs = &g->tensors[q->inputs[1]];
    uint8_t dz = 0, qz = 0; /* zero points as stored (u8 or s8 bytes) */
    if (dq->inputs[2] != DQG_NONE)
        memcpy(&dz, g->tensors[dq->inputs[2]].data, 1);
    if (q->inputs[2] != DQG_NONE)
        memcpy(&qz, g->tensors[q->inputs[2]].data, 1);
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id x = dqg_input(t, "x", xt, 1, &n);
    dqg_tensor_id f = dqg_dequantize_linear(
        t, "dq", x, dqg_constant(t, "s", ds->dtype, 0, &one, ds->data, ds->nbytes),
        dqg_constant(t, "z", xt, 0, &one, &dz, 1), &da);
    dqg_tensor_id y = dqg_quantize_linear(
        t, "q", f, dqg_constant(t, "qs", qs->dtype, 0, &one, qs->data, qs->nbytes),
        dqg_constant(t, "qz", yt, 0, &one, &qz, 1), &qa);
    st = dqg_output(t, y, "y");
    if (st == DQG_OK)
        st = dqg_graph_finalize(t);
    uint8_t codes[256];
    for (int i = 0; i < 256; i++)
        codes[i] = (uint8_t)i;
    dqg_buffer in = {.name = "x", .data = codes, .size = sizeof codes};
    dqg_buffer out = {.name = "y", .data = table, .size = 256};
    if (st == DQG_OK)
        st = dqg_reference_run(t, &in, 1, &out, 1);
    dqg_graph_destroy(t);
    *identity = st == DQG_OK && xt == yt;
    for (int i = 0; i < 256 && *identity; i++)
        *identity = table[i] == i;
    return st;
}

dqg_status dqg_kernel_qconcat_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *q = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_op *cat = dqg_req_op(req, DQG_ROLE_POST);
    /* The int8 tensors behind the dequantizes, joined into the quantize's. */
    dqg_tensor_id xs[DQG_MAX_PART_OPS];
    const dqg_op *dqs[DQG_MAX_PART_OPS];
    if (cat->n_inputs > DQG_MAX_PART_OPS)
        return dqg_set_error(DQG_UNSUPPORTED, "int8 Concat of %d inputs", cat->n_inputs);
    for (int i = 0; i < cat->n_inputs; i++) {
        dqs[i] = &g->ops[g->tensors[cat->inputs[i]].producer];
        xs[i] = dqs[i]->inputs[0];
    }
    concat_kernel *c;
    dqg_status st =
        new_concat(g, xs, cat->n_inputs, q->outputs[0], cat->attrs.concat.axis, "int8 Concat", &c);
    if (st != DQG_OK)
        return st;
    c->lut = calloc((size_t)c->n, sizeof *c->lut);
    c->copy = calloc((size_t)c->n, sizeof *c->copy);
    if (!c->lut || !c->copy) {
        concat_destroy(&c->base);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "int8 Concat kernel: out of memory");
    }
    int copies = 0;
    for (int i = 0; i < c->n; i++) {
        if ((st = requantize_table(g, dqs[i], q, c->lut[i], &c->copy[i])) != DQG_OK) {
            concat_destroy(&c->base);
            return st;
        }
        copies += c->copy[i];
    }
    c->vbmi = dqg_lut8_vbmi();
    snprintf(c->base.impl, sizeof c->base.impl, "dqgraph:%s:int8-concat:%d-tables:%d-copies",
             c->vbmi ? "avx512_vbmi" : "scalar", c->n - copies, copies);
    *out = &c->base;
    return DQG_OK;
}
