/* Reshape: ONNX Reshape with allowzero = 0 (a 0 copies the input's
 * dimension, one -1 is inferred); any data type, storage unchanged. */
#include <string.h>

#include "graph/graph_internal.h"

#define KIND "Reshape"

dqg_tensor_id dqg_reshape(dqg_graph *g, const char *name, dqg_tensor_id x, int rank,
                          const int64_t *shape)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *t = &g->tensors[x];
    if (rank < 0 || rank > DQG_MAX_RANK)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': target rank %d is outside [0, %d]", shown, rank,
                              DQG_MAX_RANK);
    if (rank > 0 && !shape)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': shape is NULL", shown);
    int64_t dims[1][DQG_MAX_RANK];
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < rank; i++) {
        int64_t d = shape[i];
        if (d == 0) {
            if (i >= t->rank)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      KIND
                                      " '%s': shape[%d] is 0 (copy the input's dimension), but "
                                      "the input has rank %d",
                                      shown, i, t->rank);
            d = t->dims[i];
        } else if (d == -1) {
            if (infer >= 0)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      KIND " '%s': more than one -1 in the shape (at %d and %d)",
                                      shown, infer, i);
            infer = i;
            d = 1;
        } else if (d < 0) {
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': shape[%d] is %lld; only -1 may be negative", shown,
                                  i, (long long)d);
        }
        if (d > DQG_MAX_ELEMENTS / known)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': shape element count overflows", shown);
        dims[0][i] = d;
        known *= d;
    }
    char sa[DQG_DIMS_BUF], sb[DQG_DIMS_BUF];
    if (infer >= 0) {
        if (known == 0 || t->nelems % known)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND
                                  " '%s': cannot infer the -1: input %s has %lld elements, not "
                                  "a multiple of %lld",
                                  shown, dqg_format_dims(sa, sizeof sa, t->rank, t->dims),
                                  (long long)t->nelems, (long long)known);
        dims[0][infer] = t->nelems / known;
        known = t->nelems;
    }
    if (known != t->nelems)
        return dqg_graph_fail(
            g, DQG_INVALID_ARGUMENT,
            KIND " '%s': element count differs: input %s has %lld elements, shape "
                 "%s has %lld",
            shown, dqg_format_dims(sa, sizeof sa, t->rank, t->dims), (long long)t->nelems,
            dqg_format_dims(sb, sizeof sb, rank, dims[0]), (long long)known);
    dqg_dtype dt = t->dtype;
    int32_t op = dqg_graph_add_op(g, DQG_OP_RESHAPE, name, 1, &x, 1, &dt, &rank, dims);
    return op < 0 ? DQG_NONE : g->ops[op].outputs[0];
}

static dqg_status reshape_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    memcpy(v->data[op->outputs[0]], v->data[op->inputs[0]], g->tensors[op->inputs[0]].nbytes);
    return DQG_OK;
}

const dqg_op_def dqg_op_def_reshape = {
    .kind = DQG_OP_RESHAPE,
    .name = KIND,
    .reference = reshape_reference,
};
