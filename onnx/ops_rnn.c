/* ONNX's recurrent layers: RNN, GRU and LSTM (opsets 7, 14 and 22, which
 * every opset dqgraph reads selects), onto one dqg_rnn op each; and ONNX
 * Runtime's com.microsoft DynamicQuantizeLSTM, an LSTM on its int8
 * weights dequantized (f32 activations, where ONNX Runtime quantizes them
 * per step). */
#include <string.h>

#include "graph/graph_internal.h"
#include "onnx/onnx_import.h"

/* ONNX's activation names (case as the operators' own) and defaults of
 * alpha and beta: those of the operators of the same name. */
static const struct {
    const char *name;
    dqg_rnn_activation f;
    float alpha, beta;
} functions[] = {
    {"Sigmoid", DQG_RNN_ACT_SIGMOID, 0, 0},
    {"Tanh", DQG_RNN_ACT_TANH, 0, 0},
    {"Relu", DQG_RNN_ACT_RELU, 0, 0},
    {"Affine", DQG_RNN_ACT_AFFINE, 1.0f, 0.0f},
    {"LeakyRelu", DQG_RNN_ACT_LEAKY_RELU, 0.01f, 0},
    {"ThresholdedRelu", DQG_RNN_ACT_THRESHOLDED_RELU, 1.0f, 0},
    {"ScaledTanh", DQG_RNN_ACT_SCALED_TANH, 1.0f, 1.0f},
    {"HardSigmoid", DQG_RNN_ACT_HARD_SIGMOID, 0.2f, 0.5f},
    {"Elu", DQG_RNN_ACT_ELU, 1.0f, 0},
    {"Softsign", DQG_RNN_ACT_SOFTSIGN, 0, 0},
    {"Softplus", DQG_RNN_ACT_SOFTPLUS, 0, 0},
};

/* activations, activation_alpha and activation_beta into a: the names per
 * direction in order; alpha and beta values are taken in order by the
 * functions that use them (as ONNX Runtime reads them), each function's
 * operator default where the list runs out. */
static dqg_status read_activations(onnx_import *c, int dirs, int per_dir, dqg_rnn_attrs *a)
{
    const ProtobufCBinaryData *names;
    const float *alphas, *betas;
    size_t n, na, nb, ia = 0, ib = 0;
    dqg_status st;
    if ((st = onnx_attr_strings(c, "activations", &names, &n)) != DQG_OK ||
        (st = onnx_attr_floats(c, "activation_alpha", &alphas, &na)) != DQG_OK ||
        (st = onnx_attr_floats(c, "activation_beta", &betas, &nb)) != DQG_OK)
        return st;
    if (n == 0)
        return DQG_OK; /* the cell's defaults */
    if (n != (size_t)(dirs * per_dir))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "attribute 'activations' lists %zu functions; this cell takes %d "
                              "per direction, %d in all",
                              n, per_dir, dirs * per_dir);
    for (size_t k = 0; k < n; k++) {
        size_t f = 0, nf = sizeof functions / sizeof functions[0];
        while (f < nf && !(strlen(functions[f].name) == names[k].len &&
                           memcmp(functions[f].name, names[k].data, names[k].len) == 0))
            f++;
        if (f == nf)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "activation %zu ('%.*s') is not one of ONNX's functions for "
                                  "recurrent layers (Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                                  "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, "
                                  "Softplus)",
                                  k, (int)(names[k].len > 64 ? 64 : names[k].len),
                                  (const char *)names[k].data);
        int d = (int)k / per_dir, i = (int)k % per_dir;
        dqg_rnn_activation fn = functions[f].f;
        a->activation[d][i] = fn;
        a->alpha[d][i] =
            dqg_rnn_activation_uses_alpha(fn) && ia < na ? alphas[ia++] : functions[f].alpha;
        a->beta[d][i] =
            dqg_rnn_activation_uses_beta(fn) && ib < nb ? betas[ib++] : functions[f].beta;
    }
    return DQG_OK;
}

/* DynamicQuantizeLSTM's W or R (input i: [D, K, 4H] s8 or u8, its scale
 * and zero point [D] or [D, 4H] at inputs s and s + 1) as LSTM's f32
 * weights [D, 4H, K]: (w - zero point) * scale, as DequantizeLinear
 * computes it, then transposed. Constant weights fold when compiled. */
static dqg_status dequantized_weights(onnx_import *c, int i, int s, const char *what,
                                      dqg_tensor_id *out)
{
    static const char *const names[] = {"W_scale", "W_zero_point", "R_scale", "R_zero_point"};
    const char *sn = names[i == 1 ? 0 : 2], *zn = names[i == 1 ? 1 : 3];
    dqg_tensor_id w, sc, zp;
    dqg_status st;
    if ((st = onnx_input(c, i, what, true, &w)) != DQG_OK ||
        (st = onnx_input(c, s, sn, true, &sc)) != DQG_OK ||
        (st = onnx_input(c, s + 1, zn, true, &zp)) != DQG_OK)
        return st;
    onnx_shape ws = onnx_tensor_shape(c, w), ss = onnx_tensor_shape(c, sc);
    onnx_shape zs = onnx_tensor_shape(c, zp);
    if (ws.dtype != DQG_S8 && ws.dtype != DQG_U8)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input %d (%s) is %s; DynamicQuantizeLSTM's weights are int8 or "
                              "uint8",
                              i, what, dqg_dtype_name(ws.dtype));
    if (ws.rank != 3)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input %d (%s) has rank %d; it must be [directions, %s, 4 x hidden]",
                              i, what, ws.rank, i == 1 ? "input" : "hidden");
    bool per_tensor = ss.rank == 1 && ss.dims[0] == ws.dims[0];
    bool per_column = ss.rank == 2 && ss.dims[0] == ws.dims[0] && ss.dims[1] == ws.dims[2];
    if (ss.dtype != DQG_F32 || !(per_tensor || per_column))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input %d (%s) must be f32 of shape [%lld] or [%lld, %lld], %s's "
                              "directions (and columns)",
                              s, sn, (long long)ws.dims[0], (long long)ws.dims[0],
                              (long long)ws.dims[2], what);
    bool same = zs.dtype == ws.dtype && zs.rank == ss.rank;
    for (int d = 0; same && d < zs.rank; d++)
        same = zs.dims[d] == ss.dims[d];
    if (!same)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input %d (%s) must have %s's type (%s) and %s's shape", s + 1, zn,
                              what, dqg_dtype_name(ws.dtype), sn);
    int64_t b[3] = {ws.dims[0], 1, per_column ? ws.dims[2] : 1}, perm[3] = {0, 2, 1};
    dqg_graph *g = c->g;
    dqg_tensor_id wf = dqg_typecast(g, onnx_op_name(c, what), w, DQG_F32);
    dqg_tensor_id zf = dqg_typecast(g, onnx_op_name(c, zn), zp, DQG_F32);
    zf = zf == DQG_NONE ? DQG_NONE : dqg_reshape(g, onnx_op_name(c, zn), zf, 3, b);
    dqg_tensor_id sf = dqg_reshape(g, onnx_op_name(c, sn), sc, 3, b);
    dqg_tensor_id d =
        wf == DQG_NONE || zf == DQG_NONE ? DQG_NONE : dqg_sub(g, onnx_op_name(c, what), wf, zf);
    d = d == DQG_NONE || sf == DQG_NONE ? DQG_NONE : dqg_mul(g, onnx_op_name(c, what), d, sf);
    *out = d == DQG_NONE ? DQG_NONE : dqg_transpose(g, onnx_op_name(c, what), d, perm);
    return *out == DQG_NONE ? onnx_builder_failed(c) : DQG_OK;
}

static dqg_status import_recurrent(onnx_import *c)
{
    static const char *const known_rnn[] = {
        "activation_alpha", "activation_beta", "activations", "clip",
        "direction",        "hidden_size",     "layout",      NULL};
    static const char *const known_gru[] = {
        "activation_alpha", "activation_beta", "activations",         "clip", "direction",
        "hidden_size",      "layout",          "linear_before_reset", NULL};
    static const char *const known_lstm[] = {
        "activation_alpha", "activation_beta", "activations", "clip", "direction",
        "hidden_size",      "input_forget",    "layout",      NULL};
    static const char *const known_dq[] = {
        "activation_alpha", "activation_beta", "activations",  "clip",
        "direction",        "hidden_size",     "input_forget", NULL};
    const char *op = c->node->op_type;
    /* ONNX Runtime's dynamically quantized LSTM: int8 weights, [D, K, 4H] */
    const bool dq = strcmp(op, "DynamicQuantizeLSTM") == 0;
    dqg_rnn_attrs a;
    memset(&a, 0, sizeof a);
    a.cell = strcmp(op, "LSTM") == 0 || dq ? DQG_RNN_CELL_LSTM
             : strcmp(op, "GRU") == 0      ? DQG_RNN_CELL_GRU
                                           : DQG_RNN_CELL_RNN;
    bool lstm = a.cell == DQG_RNN_CELL_LSTM;
    dqg_status st;
    if ((st = onnx_check_arity(c, 3,
                               dq     ? 12
                               : lstm ? 8
                                      : 6,
                               1, lstm ? 3 : 2)) != DQG_OK ||
        (st = onnx_check_attrs(c, dq                           ? known_dq
                                  : lstm                       ? known_lstm
                                  : a.cell == DQG_RNN_CELL_GRU ? known_gru
                                                               : known_rnn)) != DQG_OK)
        return st;
    if (c->node_opset < 14 && onnx_attr(c, "layout"))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "attribute 'layout' is given; it exists from opset 14");
    char dir[32];
    int64_t hidden = 0, layout = 0, lbr = 0, forget = 0;
    float clip = 0;
    if ((st = onnx_attr_string(c, "direction", "forward", dir, sizeof dir)) != DQG_OK ||
        (st = onnx_attr_int(c, "hidden_size", 0, &hidden)) != DQG_OK ||
        (st = onnx_attr_int(c, "layout", 0, &layout)) != DQG_OK ||
        (st = onnx_attr_int(c, "linear_before_reset", 0, &lbr)) != DQG_OK ||
        (st = onnx_attr_int(c, "input_forget", 0, &forget)) != DQG_OK ||
        (st = onnx_attr_float(c, "clip", 0.0f, &clip)) != DQG_OK)
        return st;
    if (strcmp(dir, "forward") == 0)
        a.direction = DQG_RNN_FORWARD;
    else if (strcmp(dir, "reverse") == 0)
        a.direction = DQG_RNN_REVERSE;
    else if (strcmp(dir, "bidirectional") == 0)
        a.direction = DQG_RNN_BIDIRECTIONAL;
    else
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "attribute 'direction' is '%s'; it must be forward, reverse or "
                              "bidirectional",
                              dir);
    if (layout != 0 && layout != 1)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "attribute 'layout' is %lld; it must be 0 or 1", (long long)layout);
    if (forget != 0)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "attribute 'input_forget' is %lld; coupled input and forget gates "
                              "are not supported",
                              (long long)forget);
    if (onnx_attr(c, "clip") && !(clip > 0))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "attribute 'clip' is %g; a clip threshold must be above 0",
                              (double)clip);
    a.batch_first = layout == 1;
    a.linear_before_reset = lbr != 0;
    a.clip = clip;
    int dirs = a.direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    int per_dir = dqg_rnn_functions(a.cell);
    if ((st = read_activations(c, dirs, per_dir, &a)) != DQG_OK)
        return st;
    dqg_tensor_id in[8] = {DQG_NONE, DQG_NONE, DQG_NONE, DQG_NONE,
                           DQG_NONE, DQG_NONE, DQG_NONE, DQG_NONE};
    static const char *const what[8] = {"X",         "W",         "R", "B", "sequence_lens",
                                        "initial_h", "initial_c", "P"};
    for (int i = 0; i < (lstm ? 8 : 6); i++)
        if ((!dq || (i != 1 && i != 2)) &&
            (st = onnx_input(c, i, what[i], i < 3, &in[i])) != DQG_OK)
            return st;
    if (dq && ((st = dequantized_weights(c, 1, 8, "W", &in[1])) != DQG_OK ||
               (st = dequantized_weights(c, 2, 10, "R", &in[2])) != DQG_OK))
        return st;
    if (!onnx_attr(c, "hidden_size")) {
        /* ONNX leaves it optional: R is [directions, gates x hidden, hidden] */
        onnx_shape rs = onnx_tensor_shape(c, in[2]);
        hidden = rs.rank == 3 ? rs.dims[2] : 0;
    }
    if (hidden < 1 || hidden > (int64_t)1 << 30)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "hidden_size is %lld; it must be in [1, 2^30]", (long long)hidden);
    a.hidden_size = hidden;
    dqg_tensor_id yh, yc;
    dqg_tensor_id y = dqg_rnn(c->g, onnx_op_name(c, NULL), &a, in[0], in[1], in[2], in[3], in[4],
                              in[5], in[6], in[7], &yh, &yc);
    if (y == DQG_NONE)
        return onnx_builder_failed(c);
    if ((st = onnx_set_output(c, 0, y)) != DQG_OK || (st = onnx_set_output(c, 1, yh)) != DQG_OK)
        return st;
    return lstm ? onnx_set_output(c, 2, yc) : DQG_OK;
}

const onnx_op_entry onnx_rnn_ops[] = {
    {"", "RNN", import_recurrent, NULL},
    {"", "GRU", import_recurrent, NULL},
    {"", "LSTM", import_recurrent, NULL},
    {"com.microsoft", "DynamicQuantizeLSTM", import_recurrent, NULL},
};
const size_t onnx_n_rnn_ops = sizeof onnx_rnn_ops / sizeof onnx_rnn_ops[0];
