/* The recurrent layers of ONNX (RNN, GRU, LSTM) as one op kind, with
 * ONNX's inputs in ONNX's order: x, w, r, b, sequence_lens, initial_h,
 * initial_c, p. The reference runs each direction and batch entry on its
 * own, in double, and rounds each result once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

static const char *const input_names[8] = {"x",         "w",         "r", "b", "sequence_lens",
                                           "initial_h", "initial_c", "p"};

const char *dqg_rnn_cell_name(dqg_rnn_cell cell)
{
    static const char *const names[] = {"RNN", "GRU", "LSTM"};
    return cell >= 0 && cell <= DQG_RNN_CELL_LSTM ? names[cell] : "Unknown";
}

const char *dqg_rnn_activation_name(dqg_rnn_activation f)
{
    static const char *const names[DQG_RNN_ACT_COUNT] = {
        "Default",         "Sigmoid",    "Tanh",        "Relu", "Affine",   "LeakyRelu",
        "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",  "Softsign", "Softplus"};
    return f >= 0 && f < DQG_RNN_ACT_COUNT ? names[f] : "Unknown";
}

int dqg_rnn_gates(dqg_rnn_cell cell)
{
    return cell == DQG_RNN_CELL_RNN ? 1 : cell == DQG_RNN_CELL_GRU ? 3 : 4;
}

int dqg_rnn_functions(dqg_rnn_cell cell)
{
    return cell == DQG_RNN_CELL_RNN ? 1 : cell == DQG_RNN_CELL_GRU ? 2 : 3;
}

bool dqg_rnn_activation_uses_alpha(dqg_rnn_activation f)
{
    return f == DQG_RNN_ACT_AFFINE || f == DQG_RNN_ACT_LEAKY_RELU ||
           f == DQG_RNN_ACT_THRESHOLDED_RELU || f == DQG_RNN_ACT_SCALED_TANH ||
           f == DQG_RNN_ACT_HARD_SIGMOID || f == DQG_RNN_ACT_ELU;
}

bool dqg_rnn_activation_uses_beta(dqg_rnn_activation f)
{
    return f == DQG_RNN_ACT_AFFINE || f == DQG_RNN_ACT_SCALED_TANH || f == DQG_RNN_ACT_HARD_SIGMOID;
}

/* Checks and normalizes the attributes into *out (every byte set: the op's
 * attributes are hashed for the cache); false, with the graph failed,
 * when a rule is broken. */
static bool normalize_attrs(dqg_graph *g, const char *shown, const dqg_rnn_attrs *in,
                            dqg_rnn_attrs *out)
{
    memset(out, 0, sizeof *out);
    if (!in) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "RNN '%s': attrs is NULL", shown);
        return false;
    }
    if (in->cell < 0 || in->cell > DQG_RNN_CELL_LSTM) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "RNN '%s': cell %d is not one of dqg_rnn_cell (0 to %d)", shown,
                       (int)in->cell, (int)DQG_RNN_CELL_LSTM);
        return false;
    }
    const char *kind = dqg_rnn_cell_name(in->cell);
    if (in->direction < 0 || in->direction > DQG_RNN_BIDIRECTIONAL) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': direction %d is not one of dqg_rnn_direction (0 to %d)", kind,
                       shown, (int)in->direction, (int)DQG_RNN_BIDIRECTIONAL);
        return false;
    }
    if (in->hidden_size < 1 || in->hidden_size > (int64_t)1 << 30) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': hidden_size %lld is outside [1, 2^30]",
                       kind, shown, (long long)in->hidden_size);
        return false;
    }
    if (!isfinite(in->clip) || in->clip < 0.0f) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': clip is %g; it must be finite and >= 0 (0: no clipping)", kind,
                       shown, (double)in->clip);
        return false;
    }
    if (in->linear_before_reset && in->cell != DQG_RNN_CELL_GRU) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': linear_before_reset is set; only GRU has that form", kind, shown);
        return false;
    }
    out->cell = in->cell;
    out->direction = in->direction;
    out->hidden_size = in->hidden_size;
    out->batch_first = in->batch_first;
    out->linear_before_reset = in->linear_before_reset;
    out->clip = in->clip;
    int dirs = in->direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1, nf = dqg_rnn_functions(in->cell);
    for (int d = 0; d < dirs; d++)
        for (int i = 0; i < nf; i++) {
            dqg_rnn_activation f = in->activation[d][i];
            if (f < 0 || f >= DQG_RNN_ACT_COUNT) {
                dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                               "%s '%s': activation[%d][%d] is %d, not one of "
                               "dqg_rnn_activation (0 to %d)",
                               kind, shown, d, i, (int)f, DQG_RNN_ACT_COUNT - 1);
                return false;
            }
            if (f == DQG_RNN_ACT_DEFAULT)
                f = i > 0 || in->cell == DQG_RNN_CELL_RNN ? DQG_RNN_ACT_TANH : DQG_RNN_ACT_SIGMOID;
            float a = in->alpha[d][i], b = in->beta[d][i];
            if ((dqg_rnn_activation_uses_alpha(f) && !isfinite(a)) ||
                (dqg_rnn_activation_uses_beta(f) && !isfinite(b))) {
                dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                               "%s '%s': activation[%d][%d] (%s) has alpha %g and beta %g; the "
                               "ones it uses must be finite",
                               kind, shown, d, i, dqg_rnn_activation_name(f), (double)a, (double)b);
                return false;
            }
            out->activation[d][i] = f;
            out->alpha[d][i] = dqg_rnn_activation_uses_alpha(f) ? a : 0.0f;
            out->beta[d][i] = dqg_rnn_activation_uses_beta(f) ? b : 0.0f;
        }
    return true;
}

/* Input i has rank `rank` and dims want; else the graph fails naming `rule`. */
static bool check_shape(dqg_graph *g, const char *kind, const char *shown, int i, dqg_tensor_id id,
                        int rank, const int64_t *want, const char *rule)
{
    const dqg_tensor *t = &g->tensors[id];
    bool ok = t->rank == rank;
    for (int d = 0; ok && d < rank; d++)
        ok = t->dims[d] == want[d];
    if (!ok) {
        char b[DQG_DIMS_BUF], bw[DQG_DIMS_BUF];
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': input %d (%s) has shape %s; it must be %s %s", kind, shown, i,
                       input_names[i], dqg_format_dims(b, sizeof b, t->rank, t->dims),
                       dqg_format_dims(bw, sizeof bw, rank, want), rule);
    }
    return ok;
}

dqg_tensor_id dqg_rnn(dqg_graph *g, const char *name, const dqg_rnn_attrs *attrs, dqg_tensor_id x,
                      dqg_tensor_id w, dqg_tensor_id r, dqg_tensor_id b,
                      dqg_tensor_id sequence_lens, dqg_tensor_id initial_h, dqg_tensor_id initial_c,
                      dqg_tensor_id p, dqg_tensor_id *y_h, dqg_tensor_id *y_c)
{
    if (y_h)
        *y_h = DQG_NONE;
    if (y_c)
        *y_c = DQG_NONE;
    const char *kind = attrs && attrs->cell >= 0 && attrs->cell <= DQG_RNN_CELL_LSTM
                           ? dqg_rnn_cell_name(attrs->cell)
                           : "RNN";
    if (!dqg_graph_can_build(g, kind, name))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    dqg_rnn_attrs a;
    if (!normalize_attrs(g, shown, attrs, &a))
        return DQG_NONE;
    dqg_tensor_id in[8] = {x, w, r, b, sequence_lens, initial_h, initial_c, p};
    for (int i = 0; i < 8; i++)
        if (!dqg_graph_check_input(g, kind, name, i, input_names[i], in[i], i > 2))
            return DQG_NONE;
    bool lstm = a.cell == DQG_RNN_CELL_LSTM;
    if (!lstm && (initial_c != DQG_NONE || p != DQG_NONE))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': input %d (%s) is given; only LSTM has a cell state and "
                              "peepholes",
                              kind, shown, initial_c != DQG_NONE ? 6 : 7,
                              initial_c != DQG_NONE ? "initial_c" : "p");
    if (!dqg_check_float_dtype(g, kind, name, 0, "x", x))
        return DQG_NONE;
    const dqg_tensor *tx = &g->tensors[x];
    for (int i = 1; i < 8; i++)
        if (in[i] != DQG_NONE && i != 4 && g->tensors[in[i]].dtype != tx->dtype)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': input %d (%s) is %s; it must be of x's type, %s", kind,
                                  shown, i, input_names[i], dqg_dtype_name(g->tensors[in[i]].dtype),
                                  dqg_dtype_name(tx->dtype));
    if (tx->rank != 3) {
        char bx[DQG_DIMS_BUF];
        return dqg_graph_fail(
            g, DQG_INVALID_ARGUMENT, "%s '%s': input 0 (x) has shape %s; it needs rank 3, %s", kind,
            shown, dqg_format_dims(bx, sizeof bx, tx->rank, tx->dims),
            a.batch_first ? "[batch, sequence, input]" : "[sequence, batch, input]");
    }
    int64_t T = tx->dims[a.batch_first ? 1 : 0], N = tx->dims[a.batch_first ? 0 : 1];
    int64_t I = tx->dims[2], H = a.hidden_size, G = dqg_rnn_gates(a.cell);
    int64_t D = a.direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t ws[3] = {D, G * H, I}, rs[3] = {D, G * H, H}, bs[2] = {D, 2 * G * H};
    int64_t ss[3] = {a.batch_first ? N : D, a.batch_first ? D : N, H}, ps[2] = {D, 3 * H};
    const char *state_rule =
        a.batch_first ? "([batch, directions, hidden])" : "([directions, batch, hidden])";
    if (!check_shape(g, kind, shown, 1, w, 3, ws, "([directions, gates x hidden, input])") ||
        !check_shape(g, kind, shown, 2, r, 3, rs, "([directions, gates x hidden, hidden])") ||
        (b != DQG_NONE &&
         !check_shape(g, kind, shown, 3, b, 2, bs, "([directions, 2 x gates x hidden])")) ||
        (sequence_lens != DQG_NONE &&
         !check_shape(g, kind, shown, 4, sequence_lens, 1, &N, "([batch])")) ||
        (initial_h != DQG_NONE && !check_shape(g, kind, shown, 5, initial_h, 3, ss, state_rule)) ||
        (initial_c != DQG_NONE && !check_shape(g, kind, shown, 6, initial_c, 3, ss, state_rule)) ||
        (p != DQG_NONE && !check_shape(g, kind, shown, 7, p, 2, ps, "([directions, 3 x hidden])")))
        return DQG_NONE;
    if (sequence_lens != DQG_NONE) {
        const dqg_tensor *ts = &g->tensors[sequence_lens];
        if (ts->dtype != DQG_S32)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': input 4 (sequence_lens) is %s; it must be s32", kind,
                                  shown, dqg_dtype_name(ts->dtype));
        if (ts->kind == DQG_TENSOR_CONSTANT)
            for (int64_t n = 0; n < N; n++) {
                int32_t len = ((const int32_t *)ts->data)[n];
                if (len < 0 || len > T)
                    return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                          "%s '%s': input 4 (sequence_lens) holds %d at %lld; "
                                          "each length must be in [0, %lld], the sequence's",
                                          kind, shown, (int)len, (long long)n, (long long)T);
            }
    }
    int64_t dims[3][DQG_MAX_RANK];
    int64_t ydims[4] = {T, D, N, H}, ydims_bf[4] = {N, T, D, H};
    memcpy(dims[0], a.batch_first ? ydims_bf : ydims, sizeof ydims);
    memcpy(dims[1], ss, sizeof ss);
    memcpy(dims[2], ss, sizeof ss);
    dqg_dtype dt[3] = {tx->dtype, tx->dtype, tx->dtype};
    int ranks[3] = {4, 3, 3};
    int32_t o = dqg_graph_add_op(g, DQG_OP_RNN, name, 8, in, lstm ? 3 : 2, dt, ranks, dims);
    if (o < 0)
        return DQG_NONE;
    memcpy(&g->ops[o].attrs.rnn, &a, sizeof a);
    if (y_h)
        *y_h = g->ops[o].outputs[1];
    if (y_c && lstm)
        *y_c = g->ops[o].outputs[2];
    return g->ops[o].outputs[0];
}

double dqg_rnn_activate(dqg_rnn_activation f, float alpha, float beta, double x)
{
    switch (f) {
    case DQG_RNN_ACT_SIGMOID:
        return dqg_unary_eval(DQG_UNARY_SIGMOID, 0, 0, x);
    case DQG_RNN_ACT_TANH:
        return tanh(x);
    case DQG_RNN_ACT_RELU:
        return x > 0 ? x : 0.0 * x; /* NaN stays NaN */
    case DQG_RNN_ACT_AFFINE:
        return (double)alpha * x + (double)beta;
    case DQG_RNN_ACT_LEAKY_RELU:
        return dqg_unary_eval(DQG_UNARY_LEAKY_RELU, alpha, 0, x);
    case DQG_RNN_ACT_THRESHOLDED_RELU:
        return dqg_unary_eval(DQG_UNARY_THRESHOLDED_RELU, alpha, 0, x);
    case DQG_RNN_ACT_SCALED_TANH:
        return (double)alpha * tanh((double)beta * x);
    case DQG_RNN_ACT_HARD_SIGMOID:
        return dqg_unary_eval(DQG_UNARY_HARD_SIGMOID, alpha, beta, x);
    case DQG_RNN_ACT_ELU:
        return dqg_unary_eval(DQG_UNARY_ELU, alpha, 0, x);
    case DQG_RNN_ACT_SOFTSIGN:
        return dqg_unary_eval(DQG_UNARY_SOFTSIGN, 0, 0, x);
    case DQG_RNN_ACT_SOFTPLUS:
        return dqg_unary_eval(DQG_UNARY_SOFTPLUS, 0, 0, x);
    default:
        return x;
    }
}

/* One of the input's values in double (zeros where it is absent). */
static double *load(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v, int i, int64_t n)
{
    double *out = calloc((size_t)(n ? n : 1), sizeof *out);
    if (!out || op->inputs[i] == DQG_NONE)
        return out;
    const dqg_tensor *t = &g->tensors[op->inputs[i]];
    for (int64_t k = 0; k < n; k++)
        out[k] = dqg_load_float(t->dtype, v->data[op->inputs[i]], k);
    return out;
}

/* The rows [row, row + H) of m (rows of `cols` values) times vector u, into out. */
static void rows_times(const double *m, int64_t row, int64_t H, int64_t cols, const double *u,
                       double *out)
{
    for (int64_t j = 0; j < H; j++) {
        const double *mr = m + (row + j) * cols;
        double s = 0;
        for (int64_t k = 0; k < cols; k++)
            s += mr[k] * u[k];
        out[j] += s;
    }
}

static double clipped(double x, float clip)
{
    return clip > 0 ? fmin(fmax(x, -(double)clip), (double)clip) : x;
}

static dqg_status rnn_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_rnn_attrs *a = &op->attrs.rnn;
    const char *kind = dqg_rnn_cell_name(a->cell);
    const dqg_tensor *tx = &g->tensors[op->inputs[0]];
    const bool bf = a->batch_first, lstm = a->cell == DQG_RNN_CELL_LSTM;
    const int64_t T = tx->dims[bf ? 1 : 0], N = tx->dims[bf ? 0 : 1], I = tx->dims[2];
    const int64_t H = a->hidden_size, G = dqg_rnn_gates(a->cell);
    const int64_t D = a->direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    const int32_t *lens =
        op->inputs[4] == DQG_NONE ? NULL : (const int32_t *)v->data[op->inputs[4]];
    for (int64_t n = 0; lens && n < N; n++)
        if (lens[n] < 0 || lens[n] > T)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "%s '%s': input 4 (sequence_lens) holds %d at %lld; each length "
                                 "must be in [0, %lld], the sequence's",
                                 kind, dqg_op_display_name(op->name), (int)lens[n], (long long)n,
                                 (long long)T);
    double *X = load(g, op, v, 0, T * N * I), *W = load(g, op, v, 1, D * G * H * I);
    double *R = load(g, op, v, 2, D * G * H * H), *B = load(g, op, v, 3, D * 2 * G * H);
    double *H0 = load(g, op, v, 5, D * N * H), *C0 = load(g, op, v, 6, D * N * H);
    double *P = load(g, op, v, 7, D * 3 * H);
    double *work = malloc((size_t)(G * H * 2 + H * 3 + I) * sizeof *work);
    dqg_status st = DQG_OK;
    if (!X || !W || !R || !B || !H0 || !C0 || !P || !work) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "%s '%s': out of memory in the reference", kind,
                           dqg_op_display_name(op->name));
        goto done;
    }
    const dqg_tensor *ty = &g->tensors[op->outputs[0]];
    void *Y = v->data[op->outputs[0]], *YH = v->data[op->outputs[1]];
    void *YC = lstm ? v->data[op->outputs[2]] : NULL;
    double *gx = work, *gh = gx + G * H, *h = gh + G * H, *c = h + H, *tmp = c + H, *xt = tmp + H;
    for (int64_t d = 0; d < D; d++) {
        const bool rev = a->direction == DQG_RNN_REVERSE || d == 1;
        const dqg_rnn_activation *fn = a->activation[d];
        const float *al = a->alpha[d], *be = a->beta[d];
        const double *Wd = W + d * G * H * I, *Rd = R + d * G * H * H;
        const double *Wb = B + d * 2 * G * H, *Rb = Wb + G * H, *Pd = P + d * 3 * H;
        for (int64_t n = 0; n < N; n++) {
            const int64_t len = lens ? lens[n] : T;
            /* states [D, N, H], or [N, D, H] batch first */
            const int64_t so = (bf ? n * D + d : d * N + n) * H;
            memcpy(h, H0 + so, (size_t)H * sizeof *h);
            memcpy(c, C0 + so, (size_t)H * sizeof *c);
            for (int64_t t = 0; t < T; t++) {
                /* Y [T, D, N, H], or [N, T, D, H] batch first */
                int64_t yo = (bf ? (n * T + t) * D + d : (t * D + d) * N + n) * H;
                for (int64_t j = 0; j < H; j++)
                    dqg_store_float(ty->dtype, Y, yo + j, 0.0f);
            }
            for (int64_t s = 0; s < len; s++) {
                const int64_t t = rev ? len - 1 - s : s;
                for (int64_t k = 0; k < I; k++)
                    xt[k] = X[(bf ? n * T + t : t * N + n) * I + k];
                for (int64_t j = 0; j < G * H; j++) {
                    gx[j] = Wb[j];
                    gh[j] = Rb[j];
                }
                rows_times(Wd, 0, G * H, I, xt, gx);
                if (a->cell == DQG_RNN_CELL_GRU && !a->linear_before_reset) {
                    rows_times(Rd, 0, 2 * H, H, h, gh); /* z and r; h after the reset */
                } else {
                    rows_times(Rd, 0, G * H, H, h, gh);
                }
                if (a->cell == DQG_RNN_CELL_RNN) {
                    for (int64_t j = 0; j < H; j++)
                        h[j] =
                            dqg_rnn_activate(fn[0], al[0], be[0], clipped(gx[j] + gh[j], a->clip));
                } else if (a->cell == DQG_RNN_CELL_GRU) {
                    double *z = tmp;
                    for (int64_t j = 0; j < H; j++)
                        z[j] =
                            dqg_rnn_activate(fn[0], al[0], be[0], clipped(gx[j] + gh[j], a->clip));
                    double *rr = gx + H; /* r in place of its input part */
                    for (int64_t j = 0; j < H; j++)
                        rr[j] = dqg_rnn_activate(fn[0], al[0], be[0],
                                                 clipped(gx[H + j] + gh[H + j], a->clip));
                    double *hh = gh + 2 * H;
                    if (!a->linear_before_reset) {
                        /* (r . h) R_h^T + Rb_h */
                        double *rh = c; /* c is unused by GRU */
                        for (int64_t j = 0; j < H; j++)
                            rh[j] = rr[j] * h[j];
                        rows_times(Rd, 2 * H, H, H, rh, hh);
                        for (int64_t j = 0; j < H; j++)
                            hh[j] += gx[2 * H + j];
                    } else {
                        for (int64_t j = 0; j < H; j++)
                            hh[j] = gx[2 * H + j] + rr[j] * hh[j];
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double ht = dqg_rnn_activate(fn[1], al[1], be[1], clipped(hh[j], a->clip));
                        h[j] = (1.0 - z[j]) * ht + z[j] * h[j];
                    }
                } else {
                    /* gates i, o, f, c; peepholes i, o, f */
                    for (int64_t j = 0; j < H; j++) {
                        double gi = gx[j] + gh[j] + Pd[j] * c[j];
                        double gf = gx[2 * H + j] + gh[2 * H + j] + Pd[2 * H + j] * c[j];
                        double gc = gx[3 * H + j] + gh[3 * H + j];
                        double i_ = dqg_rnn_activate(fn[0], al[0], be[0], clipped(gi, a->clip));
                        double f_ = dqg_rnn_activate(fn[0], al[0], be[0], clipped(gf, a->clip));
                        double c_ = dqg_rnn_activate(fn[1], al[1], be[1], clipped(gc, a->clip));
                        c[j] = f_ * c[j] + i_ * c_;
                        double go = gx[H + j] + gh[H + j] + Pd[H + j] * c[j];
                        double o_ = dqg_rnn_activate(fn[0], al[0], be[0], clipped(go, a->clip));
                        h[j] = o_ * dqg_rnn_activate(fn[2], al[2], be[2], c[j]);
                    }
                }
                int64_t yo = (bf ? (n * T + t) * D + d : (t * D + d) * N + n) * H;
                for (int64_t j = 0; j < H; j++)
                    dqg_store_float(ty->dtype, Y, yo + j, (float)h[j]);
            }
            for (int64_t j = 0; j < H; j++) {
                dqg_store_float(ty->dtype, YH, so + j, (float)h[j]);
                if (YC)
                    dqg_store_float(ty->dtype, YC, so + j, (float)c[j]);
            }
        }
    }
done:
    free(X);
    free(W);
    free(R);
    free(B);
    free(H0);
    free(C0);
    free(P);
    free(work);
    return st;
}

static void rnn_format(const dqg_op *op, char *buf, size_t size)
{
    const dqg_rnn_attrs *a = &op->attrs.rnn;
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    char acts[300] = "";
    size_t n = 0;
    int nf = dqg_rnn_functions(a->cell), D = a->direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    for (int d = 0; d < D; d++)
        for (int i = 0; i < nf && n < sizeof acts; i++) {
            dqg_rnn_activation f = a->activation[d][i];
            int k;
            if (dqg_rnn_activation_uses_beta(f))
                k = snprintf(acts + n, sizeof acts - n, "%s%s(%g,%g)", n ? "," : "",
                             dqg_rnn_activation_name(f), (double)a->alpha[d][i],
                             (double)a->beta[d][i]);
            else if (dqg_rnn_activation_uses_alpha(f))
                k = snprintf(acts + n, sizeof acts - n, "%s%s(%g)", n ? "," : "",
                             dqg_rnn_activation_name(f), (double)a->alpha[d][i]);
            else
                k = snprintf(acts + n, sizeof acts - n, "%s%s", n ? "," : "",
                             dqg_rnn_activation_name(f));
            n += k > 0 ? (size_t)k : 0;
        }
    char clip[40] = "";
    if (a->clip > 0)
        snprintf(clip, sizeof clip, " clip=%g", (double)a->clip);
    snprintf(buf, size, "cell=%s direction=%s hidden_size=%lld layout=%d activations=%s%s%s",
             dqg_rnn_cell_name(a->cell), dirs[a->direction], (long long)a->hidden_size,
             (int)a->batch_first, acts, clip,
             a->linear_before_reset ? " linear_before_reset=1" : "");
}

const dqg_op_def dqg_op_def_rnn = {
    .kind = DQG_OP_RNN,
    .name = "RNN",
    .reference = rnn_reference,
    .format_attrs = rnn_format,
};
