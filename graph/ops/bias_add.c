/* BiasAdd: adds a 1-D bias along the channel axis (axis 1 for NCX, the last
 * axis for NXC), as oneDNN Graph's BiasAdd. */
#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "BiasAdd"

dqg_tensor_id dqg_bias_add(dqg_graph *g, const char *name, dqg_tensor_id x, dqg_tensor_id bias,
                           dqg_data_format data_format)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false) ||
        !dqg_graph_check_input(g, KIND, name, 1, "bias", bias, false) ||
        !dqg_check_float_dtype(g, KIND, name, 0, "x", x) ||
        !dqg_check_same_dtype(g, KIND, name, x, bias))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    if (data_format != DQG_FORMAT_NCX && data_format != DQG_FORMAT_NXC)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': data_format %d is not NCX or NXC", shown,
                              (int)data_format);
    const dqg_tensor *tx = &g->tensors[x], *tb = &g->tensors[bias];
    int min_rank = data_format == DQG_FORMAT_NCX ? 2 : 1;
    if (tx->rank < min_rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 0 (x): rank %d has no channel axis for %s", shown,
                              tx->rank, data_format == DQG_FORMAT_NCX ? "NCX" : "NXC");
    int caxis = data_format == DQG_FORMAT_NCX ? 1 : tx->rank - 1;
    if (tb->rank != 1 || tb->dims[0] != tx->dims[caxis])
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 1 (bias): must be 1-D of length %lld (the channel "
                                   "axis %d of x)",
                              shown, (long long)tx->dims[caxis], caxis);
    dqg_dtype dt = tx->dtype;
    int rank = tx->rank;
    int64_t dims[1][DQG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[0][i] = tx->dims[i];
    int32_t op = dqg_graph_add_op(g, DQG_OP_BIAS_ADD, name, 2, (dqg_tensor_id[]){x, bias}, 1, &dt,
                                  &rank, dims);
    if (op < 0)
        return DQG_NONE;
    g->ops[op].attrs.bias_add.data_format = data_format;
    return g->ops[op].outputs[0];
}

static dqg_status bias_add_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    const void *X = v->data[op->inputs[0]], *B = v->data[op->inputs[1]];
    void *Y = v->data[op->outputs[0]];
    int caxis = op->attrs.bias_add.data_format == DQG_FORMAT_NCX ? 1 : x->rank - 1;
    int64_t inner = 1;
    for (int i = caxis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    int64_t C = x->dims[caxis];
    for (int64_t i = 0; i < x->nelems; i++) {
        float s = dqg_load_float(x->dtype, X, i) + dqg_load_float(b->dtype, B, (i / inner) % C);
        dqg_store_float(x->dtype, Y, i, s);
    }
    return DQG_OK;
}

static void bias_add_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "format=%s",
             op->attrs.bias_add.data_format == DQG_FORMAT_NCX ? "NCX" : "NXC");
}

const dqg_op_def dqg_op_def_bias_add = {
    .kind = DQG_OP_BIAS_ADD,
    .name = KIND,
    .reference = bias_add_reference,
    .format_attrs = bias_add_format,
};
