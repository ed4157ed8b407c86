/* Binding caller buffers to a graph's inputs and outputs: the rules shared by
 * the reference interpreter and the compiled runtime. */
#include "graph/graph_internal.h"

static dqg_status bind_list(const dqg_graph *g, const char *who, const dqg_buffer *bufs, size_t n,
                            bool inputs, dqg_tensor_id *ids)
{
    const char *what = inputs ? "input" : "output";
    if (n && !bufs)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "%s: %s buffer array is NULL", who, what);
    for (size_t i = 0; i < n; i++) {
        const dqg_buffer *b = &bufs[i];
        dqg_tensor_id id = b->name ? dqg_graph_find_tensor(g, b->name) : b->id;
        if (id < 0 || id >= g->n_tensors) {
            if (b->name)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "%s: %s buffer %zu: no tensor named '%s'", who, what, i,
                                     b->name);
            return dqg_set_error(DQG_INVALID_ARGUMENT, "%s: %s buffer %zu: unknown tensor id %d",
                                 who, what, i, (int)b->id);
        }
        const dqg_tensor *t = &g->tensors[id];
        if (inputs ? t->kind != DQG_TENSOR_INPUT : !t->is_output)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "%s: %s buffer %zu binds '%s', which is not a graph %s", who, what,
                                 i, t->name, what);
        if (!b->data)
            return dqg_set_error(DQG_INVALID_ARGUMENT, "%s: %s buffer %zu ('%s'): data is NULL",
                                 who, what, i, t->name);
        if (b->size != t->nbytes)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "%s: %s buffer %zu ('%s'): size is %zu bytes; the %s tensor "
                                 "needs %zu",
                                 who, what, i, t->name, b->size, dqg_dtype_name(t->dtype),
                                 t->nbytes);
        for (size_t j = 0; j < i; j++)
            if (ids[j] == id)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "%s: %s buffers %zu and %zu both bind '%s'", who, what, j, i,
                                     t->name);
        ids[i] = id;
    }
    /* Every graph input/output must be bound: name the first one left out. */
    int32_t count = inputs ? g->n_inputs : g->n_outputs;
    const dqg_tensor_id *list = inputs ? g->inputs : g->outputs;
    for (int32_t k = 0; k < count; k++) {
        bool found = false;
        for (size_t i = 0; i < n && !found; i++)
            found = ids[i] == list[k];
        if (!found)
            return dqg_set_error(DQG_INVALID_ARGUMENT, "%s: %s '%s' has no buffer", who, what,
                                 g->tensors[list[k]].name);
    }
    return DQG_OK;
}

dqg_status dqg_bind_buffers(const dqg_graph *g, const char *who, const dqg_buffer *inputs,
                            size_t n_inputs, const dqg_buffer *outputs, size_t n_outputs,
                            dqg_tensor_id *in_ids, dqg_tensor_id *out_ids)
{
    dqg_status st = bind_list(g, who, inputs, n_inputs, true, in_ids);
    if (st == DQG_OK)
        st = bind_list(g, who, outputs, n_outputs, false, out_ids);
    return st;
}
