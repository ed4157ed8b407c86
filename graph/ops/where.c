/* Where: condition ? x : y element-wise, the three inputs broadcast
 * together by NumPy's rules. condition is bool; x and y share any
 * whole-byte type, which the output has (elements are copied, never
 * converted). */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Where"

static const dqg_dtype bool_only[] = {DQG_BOOL};

dqg_tensor_id dqg_where(dqg_graph *g, const char *name, dqg_tensor_id condition, dqg_tensor_id x,
                        dqg_tensor_id y)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "condition", condition, false) ||
        !dqg_graph_check_input(g, KIND, name, 1, "x", x, false) ||
        !dqg_graph_check_input(g, KIND, name, 2, "y", y, false) ||
        !dqg_check_dtype_in(g, KIND, name, 0, "condition", condition, bool_only, 1))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    dqg_dtype dt = g->tensors[x].dtype;
    if (dqg_dtype_bits(dt) % 8 != 0)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 1 (x): data type %s is not allowed; Where takes "
                                   "types of whole bytes (not s4, u4 or f4e2m1)",
                              shown, dqg_dtype_name(dt));
    if (g->tensors[y].dtype != dt)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': inputs 1 (x) and 2 (y) have different data types: %s "
                                   "and %s",
                              shown, dqg_dtype_name(dt), dqg_dtype_name(g->tensors[y].dtype));
    const dqg_tensor *t[3] = {&g->tensors[condition], &g->tensors[x], &g->tensors[y]};
    int rank = 0;
    for (int k = 0; k < 3; k++)
        rank = t[k]->rank > rank ? t[k]->rank : rank;
    int64_t dims[1][DQG_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int64_t d[3], out = 1;
        for (int k = 0; k < 3; k++) {
            int ik = i - (rank - t[k]->rank);
            d[k] = ik >= 0 ? t[k]->dims[ik] : 1;
            if (d[k] != 1)
                out = d[k];
        }
        for (int k = 0; k < 3; k++)
            if (d[k] != 1 && d[k] != out) {
                char s0[DQG_DIMS_BUF], s1[DQG_DIMS_BUF], s2[DQG_DIMS_BUF];
                return dqg_graph_fail(
                    g, DQG_INVALID_ARGUMENT,
                    KIND " '%s': shapes %s (condition), %s (x) and %s (y) do not broadcast: "
                         "dimension %d (from the back) is %lld, %lld and %lld",
                    shown, dqg_format_dims(s0, sizeof s0, t[0]->rank, t[0]->dims),
                    dqg_format_dims(s1, sizeof s1, t[1]->rank, t[1]->dims),
                    dqg_format_dims(s2, sizeof s2, t[2]->rank, t[2]->dims), rank - i,
                    (long long)d[0], (long long)d[1], (long long)d[2]);
            }
        dims[0][i] = out;
    }
    int32_t o = dqg_graph_add_op(g, DQG_OP_WHERE, name, 3, (dqg_tensor_id[]){condition, x, y}, 1,
                                 &dt, &rank, dims);
    return o < 0 ? DQG_NONE : g->ops[o].outputs[0];
}

static dqg_status where_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *c = &g->tensors[op->inputs[0]], *x = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->inputs[2]], *out = &g->tensors[op->outputs[0]];
    const uint8_t *C = v->data[op->inputs[0]];
    const char *X = v->data[op->inputs[1]], *Y = v->data[op->inputs[2]];
    char *O = v->data[op->outputs[0]];
    size_t es = (size_t)dqg_dtype_bits(out->dtype) / 8;
    for (int64_t i = 0; i < out->nelems; i++) {
        bool take_x = C[dqg_broadcast_offset(c, out, i)] != 0;
        const char *src = take_x ? X + (size_t)dqg_broadcast_offset(x, out, i) * es
                                 : Y + (size_t)dqg_broadcast_offset(y, out, i) * es;
        memcpy(O + (size_t)i * es, src, es);
    }
    return DQG_OK;
}

const dqg_op_def dqg_op_def_where = {
    .kind = DQG_OP_WHERE,
    .name = KIND,
    .reference = where_reference,
};
