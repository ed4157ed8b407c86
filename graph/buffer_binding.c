/* Binding caller buffers to a graph's inputs and outputs: the rules shared by
 * the reference interpreter and the compiled runtime.
 *
 * A buffer names its tensor by `name` (as ONNX Runtime binds) or, with a NULL
 * name, by `id` (as oneDNN Graph binds logical tensors). One list binds all
 * by name or all by id: a zero-initialized dqg_buffer has id 0, which is
 * usually the first input, so a buffer whose name was forgotten among named
 * ones must not silently bind tensor 0. */
#include "graph/graph_internal.h"

/* Resolves buffer i of a list to a graph tensor, or fails naming the rule. */
static dqg_status resolve(const dqg_graph *g, const char *who, const char *what, size_t i,
                          const dqg_buffer *b, const dqg_buffer *named_peer, size_t named_index,
                          dqg_tensor_id *out)
{
    if (b->name) {
        dqg_tensor_id id = dqg_graph_find_tensor(g, b->name);
        if (id < 0)
            return dqg_set_error(DQG_INVALID_ARGUMENT, "%s: %s buffer %zu: no tensor named '%s'",
                                 who, what, i, b->name);
        *out = id;
        return DQG_OK;
    }
    if (!b->data && b->size == 0 && b->id == 0)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "%s: %s buffer %zu is empty (zero-initialized?): set its name or "
                             "id, data and size",
                             who, what, i);
    if (named_peer)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "%s: %s buffer %zu has no name, so it would bind by id (%d), but "
                             "buffer %zu binds by name ('%s'): one list binds all by name or "
                             "all by id",
                             who, what, i, (int)b->id, named_index, named_peer->name);
    if (b->id < 0 || b->id >= g->n_tensors)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "%s: %s buffer %zu has no name and binds by id, but id %d is no "
                             "tensor of the graph",
                             who, what, i, (int)b->id);
    *out = b->id;
    return DQG_OK;
}

static dqg_status bind_list(const dqg_graph *g, const char *who, const dqg_buffer *bufs, size_t n,
                            bool inputs, dqg_tensor_id *ids)
{
    const char *what = inputs ? "input" : "output";
    if (n && !bufs)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "%s: %s buffer array is NULL", who, what);
    /* The first buffer that binds by name decides the list's style. */
    const dqg_buffer *named = NULL;
    size_t named_index = 0;
    for (size_t i = 0; i < n && !named; i++)
        if (bufs[i].name) {
            named = &bufs[i];
            named_index = i;
        }
    for (size_t i = 0; i < n; i++) {
        const dqg_buffer *b = &bufs[i];
        dqg_tensor_id id = DQG_NONE;
        dqg_status st = resolve(g, who, what, i, b, named, named_index, &id);
        if (st != DQG_OK)
            return st;
        const dqg_tensor *t = &g->tensors[id];
        if (inputs ? t->kind != DQG_TENSOR_INPUT : !t->is_output)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "%s: %s buffer %zu binds '%s' (id %d), which is not a graph %s",
                                 who, what, i, t->name, (int)id, what);
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
