/* Translating a partition's epilogue for the own kernels. */
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/epilogue_build.h"

static dqg_status add_operand(const dqg_kernel_request *req, dqg_epilogue *e, dqg_epi_kind kind,
                              dqg_tensor_id tid, int64_t N, int *rt_args, int *n_rt,
                              const char *what)
{
    const dqg_graph *g = req->mini;
    const dqg_tensor *t = &g->tensors[tid];
    dqg_epi_op *op = &e->ops[e->n];
    op->kind = kind;
    if (t->dtype != DQG_F32)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: an epilogue operand of type %s", what,
                             dqg_dtype_name(t->dtype));
    op->shape = t->nelems == 1 ? DQG_EPI_SCALAR : t->nelems == N ? DQG_EPI_PER_N : DQG_EPI_FULL;
    if (t->kind == DQG_TENSOR_CONSTANT) {
        if (op->shape == DQG_EPI_FULL)
            return dqg_set_error(DQG_UNSUPPORTED, "%s: a constant epilogue operand of %lld values",
                                 what, (long long)t->nelems);
        op->values = malloc((size_t)t->nelems * sizeof(float));
        if (!op->values)
            return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
        for (int64_t i = 0; i < t->nelems; i++)
            op->values[i] = dqg_load_float(t->dtype, t->data, i);
    } else {
        op->rt_arg = *n_rt;
        rt_args[(*n_rt)++] = dqg_kernel_arg_index(g, tid);
    }
    e->n++;
    return DQG_OK;
}

dqg_status dqg_epilogue_from_partition(const dqg_kernel_request *req, int64_t N, dqg_epilogue *e,
                                       int *rt_args, int *n_rt, const char *what)
{
    const dqg_graph *g = req->mini;
    const dqg_partition *p = req->roles;
    memset(e, 0, sizeof *e);
    *n_rt = 0;
    dqg_status st = DQG_OK;
    const dqg_op *main = dqg_req_op(req, DQG_ROLE_MAIN);
    if (main->kind == DQG_OP_CONVOLUTION && main->inputs[2] != DQG_NONE)
        st = add_operand(req, e, DQG_EPI_ADD, main->inputs[2], N, rt_args, n_rt, what);
    for (int k = 0; k < p->n_ops && st == DQG_OK; k++) {
        if (p->role[k] != DQG_ROLE_BIAS && p->role[k] != DQG_ROLE_POST)
            continue;
        if (e->n == DQG_EPI_MAX) {
            st = dqg_set_error(DQG_UNSUPPORTED, "%s: more than %d epilogue ops", what, DQG_EPI_MAX);
            break;
        }
        const dqg_op *op = &g->ops[k];
        switch (op->kind) {
        case DQG_OP_BIAS_ADD:
        case DQG_OP_ADD:
        case DQG_OP_MUL:
        case DQG_OP_DIV: {
            dqg_tensor_id b = dqg_req_operand(req, op);
            st = add_operand(req, e,
                             op->kind == DQG_OP_MUL   ? DQG_EPI_MUL
                             : op->kind == DQG_OP_DIV ? DQG_EPI_DIV
                                                      : DQG_EPI_ADD,
                             b, N, rt_args, n_rt, what);
            break;
        }
        case DQG_OP_RELU:
            e->ops[e->n++].kind = DQG_EPI_RELU;
            break;
        case DQG_OP_CLIP:
            e->ops[e->n++] = (dqg_epi_op){
                .kind = DQG_EPI_CLIP, .alpha = op->attrs.clip.lo, .beta = op->attrs.clip.hi};
            break;
        case DQG_OP_UNARY: {
            dqg_unary_op f = op->attrs.unary.op;
            dqg_epi_kind ek = f == DQG_UNARY_GELU_ERF     ? DQG_EPI_GELU_ERF
                              : f == DQG_UNARY_GELU_TANH  ? DQG_EPI_GELU_TANH
                              : f == DQG_UNARY_SIGMOID    ? DQG_EPI_SIGMOID
                              : f == DQG_UNARY_SWISH      ? DQG_EPI_SWISH
                              : f == DQG_UNARY_HARD_SWISH ? DQG_EPI_HARD_SWISH
                                                          : DQG_EPI_TANH;
            if (f != DQG_UNARY_GELU_ERF && f != DQG_UNARY_GELU_TANH && f != DQG_UNARY_SIGMOID &&
                f != DQG_UNARY_SWISH && f != DQG_UNARY_TANH && f != DQG_UNARY_HARD_SWISH) {
                st = dqg_set_error(DQG_UNSUPPORTED, "%s: %s has no own-kernel epilogue", what,
                                   dqg_unary_op_name(f));
                break;
            }
            e->ops[e->n++] = (dqg_epi_op){.kind = ek, .alpha = op->attrs.unary.alpha};
            break;
        }
        default:
            st = dqg_set_error(DQG_UNSUPPORTED, "%s: %s '%s' has no own-kernel epilogue", what,
                               dqg_op_kind_name(op->kind), op->name);
        }
    }
    if (st != DQG_OK)
        dqg_epilogue_free(e);
    return st;
}
