/* Transpose: permutes the dimensions (output dim j is input dim perm[j]);
 * any data type, 4-bit types element by element. */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Transpose"

dqg_tensor_id dqg_transpose(dqg_graph *g, const char *name, dqg_tensor_id x, const int64_t *perm)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false))
        return DQG_NONE;
    const dqg_tensor *t = &g->tensors[x];
    int rank = t->rank;
    int64_t p[DQG_MAX_RANK] = {0};
    bool seen[DQG_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) {
        p[i] = perm ? perm[i] : rank - 1 - i;
        if (p[i] < 0 || p[i] >= rank || seen[p[i]]) {
            char s[DQG_DIMS_BUF];
            return dqg_graph_fail(
                g, DQG_INVALID_ARGUMENT, KIND " '%s': perm %s is not a permutation of 0..%d",
                dqg_op_display_name(name), dqg_format_dims(s, sizeof s, rank, perm), rank - 1);
        }
        seen[p[i]] = true;
    }
    int64_t dims[1][DQG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[0][i] = t->dims[p[i]];
    dqg_dtype dt = t->dtype;
    int32_t op = dqg_graph_add_op(g, DQG_OP_TRANSPOSE, name, 1, &x, 1, &dt, &rank, dims);
    if (op < 0)
        return DQG_NONE;
    memcpy(g->ops[op].attrs.transpose.perm, p, sizeof p);
    g->ops[op].attrs.transpose.rank = rank;
    return g->ops[op].outputs[0];
}

static dqg_status transpose_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    const int64_t *perm = op->attrs.transpose.perm;
    int64_t xs[DQG_MAX_RANK];
    dqg_strides(x->rank, x->dims, xs);
    int bits = dqg_dtype_bits(x->dtype);
    size_t esize = (size_t)(bits / 8);
    for (int64_t i = 0; i < y->nelems; i++) {
        int64_t rem = i, src = 0;
        for (int d = y->rank - 1; d >= 0; d--) {
            src += (rem % y->dims[d]) * xs[perm[d]];
            rem /= y->dims[d];
        }
        if (bits == 4)
            dqg_nibble_set(Y, i, dqg_nibble_get(X, src));
        else
            memcpy((char *)Y + (size_t)i * esize, (const char *)X + (size_t)src * esize, esize);
    }
    return DQG_OK;
}

static void transpose_format(const dqg_op *op, char *buf, size_t size)
{
    char s[DQG_DIMS_BUF];
    int rank = (int)op->attrs.transpose.rank;
    snprintf(buf, size, "perm=%s", dqg_format_dims(s, sizeof s, rank, op->attrs.transpose.perm));
}

const dqg_op_def dqg_op_def_transpose = {
    .kind = DQG_OP_TRANSPOSE,
    .name = KIND,
    .reference = transpose_reference,
    .format_attrs = transpose_format,
};
