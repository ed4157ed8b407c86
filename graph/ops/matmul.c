/* MatMul: ONNX MatMul (numpy.matmul broadcasting; 1-D operands promoted and
 * the added dimension dropped again) with oneDNN Graph's transpose_a and
 * transpose_b, which swap the last two dimensions of a rank >= 2 operand
 * (a 1-D operand has nothing to swap, so they are no-ops for it). */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "MatMul"

/* The operand shapes as matrices: batch dims, rows, cols (after transposes). */
typedef struct mm_shape {
    int batch_rank;
    int64_t batch[DQG_MAX_RANK];
    int64_t rows, cols;
} mm_shape;

static void as_matrix(const dqg_tensor *t, bool is_a, bool transpose, mm_shape *s)
{
    if (t->rank == 1) {
        s->batch_rank = 0;
        s->rows = is_a ? 1 : t->dims[0];
        s->cols = is_a ? t->dims[0] : 1;
        return;
    }
    s->batch_rank = t->rank - 2;
    for (int i = 0; i < s->batch_rank; i++)
        s->batch[i] = t->dims[i];
    s->rows = t->dims[t->rank - (transpose ? 1 : 2)];
    s->cols = t->dims[t->rank - (transpose ? 2 : 1)];
}

dqg_tensor_id dqg_matmul(dqg_graph *g, const char *name, dqg_tensor_id a, dqg_tensor_id b,
                         const dqg_matmul_attrs *attrs)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "a", a, false) ||
        !dqg_graph_check_input(g, KIND, name, 1, "b", b, false) ||
        !dqg_check_float_dtype(g, KIND, name, 0, "a", a) ||
        !dqg_check_float_dtype(g, KIND, name, 1, "b", b) ||
        !dqg_check_same_dtype(g, KIND, name, a, b))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    dqg_matmul_attrs at = attrs ? *attrs : (dqg_matmul_attrs){0};
    const dqg_tensor *ta = &g->tensors[a], *tb = &g->tensors[b];
    for (int i = 0; i < 2; i++) {
        const dqg_tensor *t = i ? tb : ta;
        if (t->rank == 0)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': input %d (%s): rank 0 is not allowed; MatMul needs "
                                       "rank >= 1",
                                  shown, i, i ? "b" : "a");
    }
    mm_shape sa, sb;
    as_matrix(ta, true, at.transpose_a, &sa);
    as_matrix(tb, false, at.transpose_b, &sb);
    if (sa.cols != sb.rows)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': inner dimensions differ: input 0 has K=%lld, input 1 "
                                   "has K=%lld",
                              shown, (long long)sa.cols, (long long)sb.rows);
    /* Broadcast the batch dimensions. */
    int br = sa.batch_rank > sb.batch_rank ? sa.batch_rank : sb.batch_rank;
    int64_t out[DQG_MAX_RANK];
    for (int i = 0; i < br; i++) {
        int ia = i - (br - sa.batch_rank), ib = i - (br - sb.batch_rank);
        int64_t da = ia >= 0 ? sa.batch[ia] : 1, db = ib >= 0 ? sb.batch[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': batch dimensions do not broadcast: %lld and %lld "
                                       "at batch dimension %d",
                                  shown, (long long)da, (long long)db, i);
        out[i] = da == 1 ? db : da;
    }
    int rank = br;
    if (ta->rank > 1)
        out[rank++] = sa.rows;
    if (tb->rank > 1)
        out[rank++] = sb.cols;
    dqg_dtype dt = ta->dtype;
    int64_t dims[1][DQG_MAX_RANK];
    memcpy(dims[0], out, sizeof out);
    int32_t op =
        dqg_graph_add_op(g, DQG_OP_MATMUL, name, 2, (dqg_tensor_id[]){a, b}, 1, &dt, &rank, dims);
    if (op < 0)
        return DQG_NONE;
    g->ops[op].attrs.matmul = at;
    return g->ops[op].outputs[0];
}

/* Element offset of operand `t` for output batch index `bi` (row-major over
 * the output batch dims `ob` of rank `obr`), broadcasting size-1 dims. */
static int64_t batch_offset(const dqg_tensor *t, const mm_shape *s, int64_t bi, const int64_t *ob,
                            int obr)
{
    int64_t off = 0, mat = s->rows * s->cols, stride = mat;
    for (int i = obr - 1; i >= 0; i--) {
        int64_t coord = bi % ob[i];
        bi /= ob[i];
        int it = i - (obr - s->batch_rank);
        if (it >= 0) {
            if (s->batch[it] != 1)
                off += coord * stride;
            stride *= s->batch[it];
        }
    }
    (void)t;
    return off;
}

static dqg_status matmul_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *ta = &g->tensors[op->inputs[0]], *tb = &g->tensors[op->inputs[1]];
    const dqg_tensor *ty = &g->tensors[op->outputs[0]];
    const void *A = v->data[op->inputs[0]], *B = v->data[op->inputs[1]];
    void *Y = v->data[op->outputs[0]];
    double *wide = v->wide ? v->wide[op->outputs[0]] : NULL;
    bool tra = op->attrs.matmul.transpose_a && ta->rank > 1;
    bool trb = op->attrs.matmul.transpose_b && tb->rank > 1;
    mm_shape sa, sb;
    as_matrix(ta, true, tra, &sa);
    as_matrix(tb, false, trb, &sb);
    int64_t M = sa.rows, K = sa.cols, N = sb.cols;
    int obr = sa.batch_rank > sb.batch_rank ? sa.batch_rank : sb.batch_rank;
    int64_t ob[DQG_MAX_RANK], nbatch = 1;
    for (int i = 0; i < obr; i++) {
        int ia = i - (obr - sa.batch_rank), ib = i - (obr - sb.batch_rank);
        int64_t da = ia >= 0 ? sa.batch[ia] : 1, db = ib >= 0 ? sb.batch[ib] : 1;
        ob[i] = da == 1 ? db : da;
        nbatch *= ob[i];
    }
    /* Storage strides of the stored (untransposed) matrices. */
    int64_t a_rs = tra ? 1 : K, a_cs = tra ? M : 1;
    int64_t b_rs = trb ? 1 : N, b_cs = trb ? K : 1;
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t ao = batch_offset(ta, &sa, bi, ob, obr), bo = batch_offset(tb, &sb, bi, ob, obr);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)dqg_load_float(ta->dtype, A, ao + m * a_rs + k * a_cs) *
                           (double)dqg_load_float(tb->dtype, B, bo + k * b_rs + n * b_cs);
                dqg_store_float(ty->dtype, Y, bi * M * N + m * N + n, (float)acc);
                if (wide)
                    wide[bi * M * N + m * N + n] = acc;
            }
    }
    return DQG_OK;
}

static void matmul_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "transpose_a=%d transpose_b=%d", op->attrs.matmul.transpose_a,
             op->attrs.matmul.transpose_b);
}

const dqg_op_def dqg_op_def_matmul = {
    .kind = DQG_OP_MATMUL,
    .name = KIND,
    .reference = matmul_reference,
    .format_attrs = matmul_format,
};
