/* Validation helpers shared by the op files: dtype rules and broadcasting,
 * each producing the standard "<Kind> '<name>': input <i> (<what>): <rule>"
 * message. */
#include <string.h>

#include "graph/graph_internal.h"

char *dqg_format_dtype_list(char *buf, size_t size, const dqg_dtype *list, int n)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && pos < size; i++) {
        const char *sep = i == 0 ? "" : (i == n - 1 ? " or " : ", ");
        pos += (size_t)snprintf(buf + pos, size - pos, "%s%s", sep, dqg_dtype_name(list[i]));
    }
    return buf;
}

bool dqg_check_dtype_in(dqg_graph *g, const char *kind, const char *name, int index,
                        const char *what, dqg_tensor_id id, const dqg_dtype *allowed, int n_allowed)
{
    dqg_dtype dt = g->tensors[id].dtype;
    for (int i = 0; i < n_allowed; i++)
        if (allowed[i] == dt)
            return true;
    char list[256];
    dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                   "%s '%s': input %d (%s): data type %s is not allowed; "
                   "expected %s",
                   kind, dqg_op_display_name(name), index, what, dqg_dtype_name(dt),
                   dqg_format_dtype_list(list, sizeof list, allowed, n_allowed));
    return false;
}

bool dqg_check_float_dtype(dqg_graph *g, const char *kind, const char *name, int index,
                           const char *what, dqg_tensor_id id)
{
    static const dqg_dtype floats[] = {DQG_F32, DQG_F16, DQG_BF16};
    return dqg_check_dtype_in(g, kind, name, index, what, id, floats, 3);
}

bool dqg_check_same_dtype(dqg_graph *g, const char *kind, const char *name, dqg_tensor_id a,
                          dqg_tensor_id b)
{
    dqg_dtype da = g->tensors[a].dtype, db = g->tensors[b].dtype;
    if (da == db)
        return true;
    dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                   "%s '%s': inputs have different data types: input 0 is %s, input 1 is %s", kind,
                   dqg_op_display_name(name), dqg_dtype_name(da), dqg_dtype_name(db));
    return false;
}

int dqg_broadcast_shapes(dqg_graph *g, const char *kind, const char *name, const dqg_tensor *a,
                         const dqg_tensor *b, int64_t *out_dims)
{
    int rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[DQG_DIMS_BUF], sb[DQG_DIMS_BUF];
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s '%s': shapes %s and %s do not broadcast: dimension %d (from the "
                           "back) is %lld and %lld",
                           kind, dqg_op_display_name(name),
                           dqg_format_dims(sa, sizeof sa, a->rank, a->dims),
                           dqg_format_dims(sb, sizeof sb, b->rank, b->dims), rank - i,
                           (long long)da, (long long)db);
            return -1;
        }
        out_dims[i] = da == 1 ? db : da;
    }
    return rank;
}

void dqg_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}
