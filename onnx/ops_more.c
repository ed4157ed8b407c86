/* Importers of the element-wise functions, arithmetic, normalizations and
 * joins that whole networks need: Sigmoid, Tanh, Erf, Gelu, Neg, Abs, Sqrt,
 * Reciprocal, Exp, Log, HardSigmoid, HardSwish, LeakyRelu, Elu, Sub, Div,
 * Pow, Softmax, LogSoftmax, Concat, Sum, Dropout, BatchNormalization, LRN,
 * LayerNormalization and the reductions (ReduceSum, ReduceMean, ReduceMax,
 * ReduceMin, ReduceProd). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_import.h"
#include "onnx/onnx_ops.h"

static const char *const no_attrs[] = {NULL};

static dqg_status output_of(onnx_import *c, dqg_tensor_id y)
{
    return y == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, y);
}

/* ---- Unary functions ------------------------------------------------------ */

static const struct {
    const char *op_type;
    dqg_unary_op fn;
} plain_unary[] = {
    {"Sigmoid", DQG_UNARY_SIGMOID},
    {"Tanh", DQG_UNARY_TANH},
    {"Erf", DQG_UNARY_ERF},
    {"Neg", DQG_UNARY_NEG},
    {"Abs", DQG_UNARY_ABS},
    {"Sqrt", DQG_UNARY_SQRT},
    {"Reciprocal", DQG_UNARY_RECIPROCAL},
    {"Exp", DQG_UNARY_EXP},
    {"Log", DQG_UNARY_LOG},
    {"HardSwish", DQG_UNARY_HARD_SWISH},
};

/* A unary function of one float input: its parameters from attributes. */
static dqg_status import_unary(onnx_import *c)
{
    static const char *const alpha_only[] = {"alpha", NULL};
    static const char *const alpha_beta[] = {"alpha", "beta", NULL};
    static const char *const gelu[] = {"approximate", NULL};
    static const char *const legacy[] = {"consumed_inputs", NULL};
    const char *type = c->node->op_type;
    dqg_unary_op fn = DQG_UNARY_COUNT;
    float alpha = 0.0f, beta = 0.0f;
    dqg_status st = onnx_check_arity(c, 1, 1, 1, 1);
    if (st != DQG_OK)
        return st;
    for (size_t i = 0; i < sizeof plain_unary / sizeof plain_unary[0]; i++)
        if (strcmp(type, plain_unary[i].op_type) == 0)
            fn = plain_unary[i].fn;
    if (fn != DQG_UNARY_COUNT) {
        /* Opset 1 of several of these had consumed_inputs, which does not
         * change the result. */
        st = onnx_check_attrs(c, c->node_opset < 6 ? legacy : no_attrs);
    } else if (strcmp(type, "HardSigmoid") == 0) {
        fn = DQG_UNARY_HARD_SIGMOID;
        if ((st = onnx_check_attrs(c, alpha_beta)) == DQG_OK &&
            (st = onnx_attr_float(c, "alpha", 0.2f, &alpha)) == DQG_OK)
            st = onnx_attr_float(c, "beta", 0.5f, &beta);
    } else if (strcmp(type, "LeakyRelu") == 0 || strcmp(type, "Elu") == 0) {
        bool leaky = type[0] == 'L';
        fn = leaky ? DQG_UNARY_LEAKY_RELU : DQG_UNARY_ELU;
        if ((st = onnx_check_attrs(c, alpha_only)) == DQG_OK)
            st = onnx_attr_float(c, "alpha", leaky ? 0.01f : 1.0f, &alpha);
    } else { /* Gelu (opset 20) */
        char approx[16];
        if ((st = onnx_check_attrs(c, gelu)) == DQG_OK &&
            (st = onnx_attr_string(c, "approximate", "none", approx, sizeof approx)) == DQG_OK) {
            if (strcmp(approx, "none") == 0)
                fn = DQG_UNARY_GELU_ERF;
            else if (strcmp(approx, "tanh") == 0)
                fn = DQG_UNARY_GELU_TANH;
            else
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "approximate is '%s'; it must be 'none' or 'tanh'", approx);
        }
    }
    dqg_tensor_id x;
    if (st != DQG_OK || (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    return output_of(c, dqg_unary(c->g, onnx_op_name(c, NULL), fn, x, alpha, beta));
}

/* ---- Arithmetic ------------------------------------------------------------- */

static dqg_status import_sub_div(onnx_import *c)
{
    static const char *const known[] = {"axis", "broadcast", "consumed_inputs", NULL};
    dqg_status st;
    dqg_tensor_id a, b;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    if (onnx_attr(c, "axis") || onnx_attr(c, "broadcast"))
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "the legacy broadcast/axis attributes (opset < 7) are not supported");
    if ((st = onnx_input(c, 0, "A", true, &a)) != DQG_OK ||
        (st = onnx_input(c, 1, "B", true, &b)) != DQG_OK)
        return st;
    const char *name = onnx_op_name(c, NULL);
    bool sub = strcmp(c->node->op_type, "Sub") == 0;
    return output_of(c, sub ? dqg_sub(c->g, name, a, b) : dqg_div(c->g, name, a, b));
}

/* Pow: a constant scalar exponent (any numeric type, as RMSNorm's x^2)
 * becomes the unary power function; otherwise both inputs are tensors of
 * one float type. */
static dqg_status import_pow(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id x, y;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    if (onnx_input_is_const(c, 1)) {
        const onnx_tensor *e;
        if ((st = onnx_input_const(c, 1, "Y", true, &e)) != DQG_OK)
            return st;
        if (e->nelems == 1) {
            double v = onnx_tensor_get(e, 0);
            if (!isfinite(v))
                return onnx_node_fail(c, DQG_UNSUPPORTED, "the exponent is %g; it must be finite",
                                      v);
            /* Broadcasting a one-element exponent of higher rank adds
             * leading dimensions of 1. */
            onnx_shape xs = onnx_tensor_shape(c, x);
            if (e->rank > xs.rank) {
                int64_t d[DQG_MAX_RANK];
                int r = e->rank;
                for (int i = 0; i < r; i++)
                    d[i] = i < r - xs.rank ? 1 : xs.dims[i - (r - xs.rank)];
                x = dqg_reshape(c->g, onnx_op_name(c, "rank"), x, r, d);
                if (x == DQG_NONE)
                    return onnx_builder_failed(c);
            }
            return output_of(
                c, dqg_unary(c->g, onnx_op_name(c, NULL), DQG_UNARY_POW, x, (float)v, 0.0f));
        }
    }
    if ((st = onnx_input(c, 1, "Y", true, &y)) != DQG_OK)
        return st;
    /* An integer exponent tensor is converted to the base's type (exact
     * up to 2^24 in f32). */
    dqg_dtype xt = dqg_tensor_dtype(c->g, x), yt = dqg_tensor_dtype(c->g, y);
    if (dqg_dtype_is_integer(yt) &&
        (y = dqg_typecast(c->g, onnx_op_name(c, "exponent"), y, xt)) == DQG_NONE)
        return onnx_builder_failed(c);
    return output_of(c, dqg_pow(c->g, onnx_op_name(c, NULL), x, y));
}

/* Sum of 1 or more inputs with broadcasting: a chain of Adds. */
static dqg_status import_sum(onnx_import *c)
{
    static const char *const legacy[] = {"consumed_inputs", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, DQG_ONNX_MAX_VARIADIC, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, c->node_opset < 6 ? legacy : no_attrs)) != DQG_OK)
        return st;
    int n = (int)c->node->n_input;
    if (n == 1)
        return onnx_alias_output(c, 0, 0);
    dqg_tensor_id acc, x;
    if ((st = onnx_input(c, 0, "data_0", true, &acc)) != DQG_OK)
        return st;
    for (int i = 1; i < n; i++) {
        if ((st = onnx_input(c, i, "data", true, &x)) != DQG_OK)
            return st;
        char suffix[32];
        snprintf(suffix, sizeof suffix, "add%d", i);
        acc = dqg_add(c->g, onnx_op_name(c, i == n - 1 ? NULL : suffix), acc, x);
        if (acc == DQG_NONE)
            return onnx_builder_failed(c);
    }
    return onnx_set_output(c, 0, acc);
}

/* ---- Softmax ---------------------------------------------------------------- */

/* Opset 13+: one axis (default -1). Before: the input is seen as a matrix
 * [prod(dims before axis), prod(dims from axis)] (axis default 1) and each
 * row is normalized, so the axis and every later one are one. */
static dqg_status import_softmax(onnx_import *c)
{
    static const char *const known[] = {"axis", NULL};
    dqg_status st;
    dqg_tensor_id x;
    bool log = strcmp(c->node->op_type, "LogSoftmax") == 0, old = c->node_opset < 13;
    int64_t axis;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", old ? 1 : -1, &axis)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    onnx_shape s = onnx_tensor_shape(c, x);
    if (axis < -s.rank || axis >= s.rank || s.rank == 0)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "axis %lld is outside [-%d, %d) for an input of rank %d",
                              (long long)axis, s.rank, s.rank, s.rank);
    if (axis < 0)
        axis += s.rank;
    if (!old || axis == s.rank - 1)
        return output_of(c, dqg_softmax(c->g, onnx_op_name(c, NULL), x, (int)axis, log));
    int64_t d[2] = {1, 1};
    for (int i = 0; i < s.rank; i++)
        d[i < axis ? 0 : 1] *= s.dims[i];
    dqg_tensor_id m = dqg_reshape(c->g, onnx_op_name(c, "rows"), x, 2, d);
    if (m != DQG_NONE)
        m = dqg_softmax(c->g, onnx_op_name(c, "softmax"), m, 1, log);
    if (m != DQG_NONE)
        m = dqg_reshape(c->g, onnx_op_name(c, NULL), m, s.rank, s.dims);
    return output_of(c, m);
}

/* ---- Concat ----------------------------------------------------------------- */

static dqg_status import_concat(onnx_import *c)
{
    static const char *const known[] = {"axis", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, DQG_ONNX_MAX_VARIADIC, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    int64_t axis;
    if (!onnx_attr(c, "axis")) {
        if (c->node_opset >= 4)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "attribute 'axis' is required");
        axis = 1; /* Concat-1's default */
    } else if ((st = onnx_attr_int(c, "axis", 0, &axis)) != DQG_OK) {
        return st;
    }
    int n = (int)c->node->n_input;
    dqg_tensor_id *xs = malloc((size_t)n * sizeof *xs);
    if (!xs)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory for %d inputs", n);
    for (int i = 0; i < n; i++)
        if ((st = onnx_input(c, i, "inputs", true, &xs[i])) != DQG_OK) {
            free(xs);
            return st;
        }
    if (axis < INT32_MIN || axis > INT32_MAX)
        axis = INT32_MAX; /* the builder names the range */
    dqg_tensor_id y = dqg_concat(c->g, onnx_op_name(c, NULL), n, xs, (int)axis);
    free(xs);
    return output_of(c, y);
}

/* ---- Dropout ---------------------------------------------------------------- */

/* Inference Dropout is the identity. The mask output and training mode
 * (a training_mode input that is not a constant false) are refused. */
static dqg_status import_dropout(onnx_import *c)
{
    static const char *const known[] = {"seed", "ratio", "is_test", "consumed_inputs", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, 3, 1, 2)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    if (onnx_output_value(c, 1))
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "output 1 (mask) is used; dqgraph runs Dropout for inference only "
                              "and has no mask");
    int64_t is_test = 1;
    if (c->node_opset < 7 && (st = onnx_attr_int(c, "is_test", 0, &is_test)) != DQG_OK)
        return st;
    if (onnx_input_name(c, 2)) {
        const onnx_tensor *t;
        if (!onnx_input_is_const(c, 2))
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "input 2 (training_mode) is given at run time; dqgraph runs "
                                  "Dropout for inference only");
        if ((st = onnx_input_const(c, 2, "training_mode", true, &t)) != DQG_OK)
            return st;
        if (t->nelems != 1 || onnx_tensor_get(t, 0) != 0.0)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "input 2 (training_mode) is true; dqgraph runs Dropout for "
                                  "inference only");
    }
    (void)is_test; /* Dropout-1..6 with is_test = 0 still scales nothing at inference */
    return onnx_alias_output(c, 0, 0);
}

/* ---- BatchNormalization ----------------------------------------------------- */

/* Inference form: y = (x - mean) / sqrt(var + epsilon) * scale + B, per
 * channel (axis 1). With constant parameters it becomes one Mul and one
 * Add by per-channel constants computed in double precision (which the
 * convolution before it absorbs as a scale and a bias); with run-time
 * parameters, the same from graph ops. */
static dqg_status import_batchnorm(onnx_import *c)
{
    static const char *const known[] = {"epsilon", "momentum",        "spatial", "training_mode",
                                        "is_test", "consumed_inputs", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 5, 5, 1, 5)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    for (int i = 1; i < (int)c->node->n_output; i++)
        if (onnx_output_value(c, i))
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "output %d (a running statistic) is used; dqgraph runs "
                                  "BatchNormalization for inference only",
                                  i);
    float eps;
    int64_t spatial = 1, training = 0;
    if ((st = onnx_attr_float(c, "epsilon", 1e-5f, &eps)) != DQG_OK ||
        (st = onnx_attr_int(c, "spatial", 1, &spatial)) != DQG_OK ||
        (st = onnx_attr_int(c, "training_mode", 0, &training)) != DQG_OK)
        return st;
    if (spatial != 1)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "spatial = %lld (per-element statistics) is not supported",
                              (long long)spatial);
    if (training != 0)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "training_mode = %lld; dqgraph runs BatchNormalization for "
                              "inference only",
                              (long long)training);
    if (!(eps >= 0.0f) || !isfinite(eps))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "epsilon is %g; it must be finite and >= 0",
                              (double)eps);
    dqg_tensor_id x;
    if ((st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    if (xs.rank < 2)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input 0 (X) has rank %d; it needs a channel axis (rank >= 2)",
                              xs.rank);
    int64_t ch = xs.dims[1];
    static const char *const what[] = {"X", "scale", "B", "input_mean", "input_var"};
    bool all_const = true;
    for (int i = 1; i < 5; i++) {
        dqg_tensor_id p;
        if (onnx_input_is_const(c, i))
            continue;
        all_const = false;
        if ((st = onnx_input(c, i, what[i], true, &p)) != DQG_OK)
            return st;
        onnx_shape ps = onnx_tensor_shape(c, p);
        if (ps.rank != 1 || ps.dims[0] != ch)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "input %d (%s) has %lld elements in rank %d; it must be 1-D of "
                                  "the %lld channels",
                                  i, what[i], (long long)ps.nelems, ps.rank, (long long)ch);
    }
    /* Per-channel constants shaped [C, 1, ...] to broadcast against x. */
    int prank = xs.rank - 1;
    int64_t pdims[DQG_MAX_RANK];
    pdims[0] = ch;
    for (int i = 1; i < prank; i++)
        pdims[i] = 1;
    dqg_tensor_id mul, add;
    if (all_const) {
        const onnx_tensor *p[5];
        for (int i = 1; i < 5; i++) {
            if ((st = onnx_input_const(c, i, what[i], true, &p[i])) != DQG_OK)
                return st;
            if (p[i]->nelems != ch)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "input %d (%s) has %lld elements; it must have one per "
                                      "channel (%lld)",
                                      i, what[i], (long long)p[i]->nelems, (long long)ch);
        }
        float *sc = malloc((size_t)ch * 2 * sizeof *sc);
        if (!sc)
            return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory for %lld channels",
                                  (long long)ch);
        float *sh = sc + ch;
        for (int64_t k = 0; k < ch; k++) {
            double var = onnx_tensor_get(p[4], k), s = onnx_tensor_get(p[1], k);
            double f = s / sqrt(var + (double)eps);
            sc[k] = (float)f;
            sh[k] = (float)(onnx_tensor_get(p[2], k) - onnx_tensor_get(p[3], k) * f);
        }
        mul = onnx_add_constant(c, "scale", DQG_F32, prank, pdims, sc);
        add = onnx_add_constant(c, "shift", DQG_F32, prank, pdims, sh);
        free(sc);
        if (mul == DQG_NONE || add == DQG_NONE)
            return onnx_builder_failed(c);
        if (xs.dtype != DQG_F32) {
            mul = dqg_typecast(c->g, onnx_op_name(c, "scale_cast"), mul, xs.dtype);
            add = dqg_typecast(c->g, onnx_op_name(c, "shift_cast"), add, xs.dtype);
        }
    } else {
        dqg_tensor_id s, b, m, v;
        if ((st = onnx_input(c, 1, what[1], true, &s)) != DQG_OK ||
            (st = onnx_input(c, 2, what[2], true, &b)) != DQG_OK ||
            (st = onnx_input(c, 3, what[3], true, &m)) != DQG_OK ||
            (st = onnx_input(c, 4, what[4], true, &v)) != DQG_OK)
            return st;
        dqg_tensor_id e = onnx_add_scalar(c, "epsilon", xs.dtype, eps);
        dqg_tensor_id t =
            e == DQG_NONE ? DQG_NONE : dqg_add(c->g, onnx_op_name(c, "var_eps"), v, e);
        t = t == DQG_NONE ? DQG_NONE
                          : dqg_unary(c->g, onnx_op_name(c, "std"), DQG_UNARY_SQRT, t, 0, 0);
        mul = t == DQG_NONE ? DQG_NONE : dqg_div(c->g, onnx_op_name(c, "factor"), s, t);
        t = mul == DQG_NONE ? DQG_NONE : dqg_mul(c->g, onnx_op_name(c, "mean_f"), m, mul);
        add = t == DQG_NONE ? DQG_NONE : dqg_sub(c->g, onnx_op_name(c, "offset"), b, t);
        if (add != DQG_NONE)
            mul = dqg_reshape(c->g, onnx_op_name(c, "scale"), mul, prank, pdims);
        if (mul != DQG_NONE)
            add = dqg_reshape(c->g, onnx_op_name(c, "shift"), add, prank, pdims);
    }
    dqg_tensor_id y = mul == DQG_NONE || add == DQG_NONE
                          ? DQG_NONE
                          : dqg_mul(c->g, onnx_op_name(c, "scaled"), x, mul);
    return output_of(c, y == DQG_NONE ? DQG_NONE : dqg_add(c->g, onnx_op_name(c, NULL), y, add));
}

/* ---- LRN -------------------------------------------------------------------- */

static dqg_status import_lrn(onnx_import *c)
{
    static const char *const known[] = {"alpha", "beta", "bias", "size", NULL};
    dqg_status st;
    dqg_tensor_id x;
    float alpha, beta, bias;
    int64_t size;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    if (!onnx_attr(c, "size"))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "attribute 'size' is required");
    if ((st = onnx_attr_int(c, "size", 1, &size)) != DQG_OK ||
        (st = onnx_attr_float(c, "alpha", 1e-4f, &alpha)) != DQG_OK ||
        (st = onnx_attr_float(c, "beta", 0.75f, &beta)) != DQG_OK ||
        (st = onnx_attr_float(c, "bias", 1.0f, &bias)) != DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK)
        return st;
    if (size < 1 || size > INT32_MAX)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "size is %lld; it must be >= 1",
                              (long long)size);
    return output_of(c, dqg_lrn(c->g, onnx_op_name(c, NULL), x, (int)size, alpha, beta, bias));
}

/* ---- LayerNormalization -------------------------------------------------- */

static dqg_status import_layer_norm(onnx_import *c)
{
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 2, 3, 1, 3)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    int64_t axis, stash;
    float eps;
    dqg_tensor_id x, scale, bias;
    if ((st = onnx_attr_int(c, "axis", -1, &axis)) != DQG_OK ||
        (st = onnx_attr_float(c, "epsilon", 1e-5f, &eps)) != DQG_OK ||
        (st = onnx_attr_int(c, "stash_type", 1, &stash)) != DQG_OK)
        return st;
    if (stash != 1)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "stash_type %lld; dqgraph computes the statistics in float "
                              "(stash_type 1)",
                              (long long)stash);
    if ((st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "Scale", true, &scale)) != DQG_OK ||
        (st = onnx_input(c, 2, "B", false, &bias)) != DQG_OK)
        return st;
    if (axis < INT32_MIN || axis > INT32_MAX)
        axis = INT32_MAX; /* the builder names the range */
    dqg_tensor_id y = dqg_layer_norm(c->g, onnx_op_name(c, NULL), x, scale, bias, (int)axis, eps);
    if (y == DQG_NONE)
        return onnx_builder_failed(c);
    if ((st = onnx_set_output(c, 0, y)) != DQG_OK)
        return st;
    if (!onnx_output_value(c, 1) && !onnx_output_value(c, 2))
        return DQG_OK;
    /* The statistics, when a model reads them: Mean = ReduceMean(X) and
     * InvStdDev = 1 / sqrt(ReduceMean((X - Mean)^2) + epsilon) over the
     * normalized axes, kept as 1s. */
    onnx_shape xs = onnx_tensor_shape(c, x);
    int64_t axes[DQG_MAX_RANK];
    int n = 0;
    for (int64_t a = axis < 0 ? axis + xs.rank : axis; a < xs.rank; a++)
        axes[n++] = a;
    dqg_tensor_id mean =
        dqg_reduce(c->g, onnx_op_name(c, "mean"), DQG_REDUCE_MEAN, x, n, axes, true);
    dqg_tensor_id d = mean == DQG_NONE ? DQG_NONE : dqg_sub(c->g, onnx_op_name(c, "dev"), x, mean);
    dqg_tensor_id v = d == DQG_NONE ? DQG_NONE : dqg_mul(c->g, onnx_op_name(c, "dev2"), d, d);
    v = v == DQG_NONE ? DQG_NONE
                      : dqg_reduce(c->g, onnx_op_name(c, "var"), DQG_REDUCE_MEAN, v, n, axes, true);
    dqg_tensor_id e = v == DQG_NONE ? DQG_NONE : onnx_add_scalar(c, "epsilon", DQG_F32, eps);
    v = e == DQG_NONE ? DQG_NONE : dqg_add(c->g, onnx_op_name(c, "var_eps"), v, e);
    v = v == DQG_NONE ? DQG_NONE : dqg_unary(c->g, onnx_op_name(c, "std"), DQG_UNARY_SQRT, v, 0, 0);
    v = v == DQG_NONE ? DQG_NONE
                      : dqg_unary(c->g, onnx_op_name(c, "inv_std"), DQG_UNARY_RECIPROCAL, v, 0, 0);
    if (v == DQG_NONE)
        return onnx_builder_failed(c);
    if ((st = onnx_set_output(c, 1, mean)) != DQG_OK)
        return st;
    return onnx_set_output(c, 2, v);
}

/* ---- Reductions ------------------------------------------------------------ */

static const struct {
    const char *op_type;
    dqg_reduce_op op;
    int axes_input_since; /* the opset from which axes is an input */
} reductions[] = {
    {"ReduceSum", DQG_REDUCE_SUM, 13},   {"ReduceMean", DQG_REDUCE_MEAN, 18},
    {"ReduceMax", DQG_REDUCE_MAX, 18},   {"ReduceMin", DQG_REDUCE_MIN, 18},
    {"ReduceProd", DQG_REDUCE_PROD, 18}, {"ReduceSumSquare", DQG_REDUCE_SUM, 18},
};

static int reduction_index(const char *op_type)
{
    for (int i = 0; i < (int)(sizeof reductions / sizeof reductions[0]); i++)
        if (strcmp(op_type, reductions[i].op_type) == 0)
            return i;
    return 0;
}

static dqg_status import_reduce(onnx_import *c)
{
    static const char *const known_old[] = {"axes", "keepdims", NULL};
    static const char *const known[] = {"keepdims", "noop_with_empty_axes", NULL};
    int r = reduction_index(c->node->op_type);
    bool input_axes = c->node_opset >= reductions[r].axes_input_since;
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, input_axes ? 2 : 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, input_axes ? known : known_old)) != DQG_OK)
        return st;
    int64_t keepdims, noop = 0;
    if ((st = onnx_attr_int(c, "keepdims", 1, &keepdims)) != DQG_OK ||
        (input_axes && (st = onnx_attr_int(c, "noop_with_empty_axes", 0, &noop)) != DQG_OK))
        return st;
    int64_t axes[DQG_MAX_RANK];
    int n = 0;
    if (input_axes) {
        const onnx_tensor *t;
        if ((st = onnx_input_const(c, 1, "axes", false, &t)) != DQG_OK)
            return st;
        if (t) {
            if (t->nelems > DQG_MAX_RANK)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "input 1 (axes) has %lld values",
                                      (long long)t->nelems);
            for (int64_t i = 0; i < t->nelems; i++)
                axes[n++] = (int64_t)onnx_tensor_get(t, i);
        }
    } else {
        const int64_t *v;
        size_t nv;
        if ((st = onnx_attr_ints(c, "axes", &v, &nv, NULL)) != DQG_OK)
            return st;
        if (nv > DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "attribute 'axes' has %zu values", nv);
        for (size_t i = 0; i < nv; i++)
            axes[n++] = v[i];
    }
    if (n == 0 && noop)
        return onnx_alias_output(c, 0, 0);
    dqg_tensor_id x;
    if ((st = onnx_input(c, 0, "data", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    if (strcmp(c->node->op_type, "ReduceSumSquare") == 0 &&
        (x = dqg_mul(c->g, onnx_op_name(c, "square"), x, x)) == DQG_NONE)
        return onnx_builder_failed(c);
    return output_of(
        c, dqg_reduce(c->g, onnx_op_name(c, NULL), reductions[r].op, x, n, axes, keepdims != 0));
}

static unsigned reduce_const_inputs(int64_t opset)
{
    (void)opset;
    return 1u << 1; /* axes, when it is an input */
}

const onnx_op_entry onnx_more_ops[] = {
    {"", "Sigmoid", import_unary, NULL},
    {"", "Tanh", import_unary, NULL},
    {"", "Erf", import_unary, NULL},
    {"", "Gelu", import_unary, NULL},
    {"", "Neg", import_unary, NULL},
    {"", "Abs", import_unary, NULL},
    {"", "Sqrt", import_unary, NULL},
    {"", "Reciprocal", import_unary, NULL},
    {"", "Exp", import_unary, NULL},
    {"", "Log", import_unary, NULL},
    {"", "HardSigmoid", import_unary, NULL},
    {"", "HardSwish", import_unary, NULL},
    {"", "LeakyRelu", import_unary, NULL},
    {"", "Elu", import_unary, NULL},
    {"", "Sub", import_sub_div, NULL},
    {"", "Div", import_sub_div, NULL},
    {"", "Pow", import_pow, NULL},
    {"", "Sum", import_sum, NULL},
    {"", "Softmax", import_softmax, NULL},
    {"", "LogSoftmax", import_softmax, NULL},
    {"", "Concat", import_concat, NULL},
    {"", "Dropout", import_dropout, NULL},
    {"", "BatchNormalization", import_batchnorm, NULL},
    {"", "LRN", import_lrn, NULL},
    {"", "LayerNormalization", import_layer_norm, NULL},
    {"", "ReduceSum", import_reduce, reduce_const_inputs},
    {"", "ReduceMean", import_reduce, reduce_const_inputs},
    {"", "ReduceMax", import_reduce, reduce_const_inputs},
    {"", "ReduceMin", import_reduce, reduce_const_inputs},
    {"", "ReduceProd", import_reduce, reduce_const_inputs},
    {"", "ReduceSumSquare", import_reduce, reduce_const_inputs},
};
const size_t onnx_n_more_ops = sizeof onnx_more_ops / sizeof onnx_more_ops[0];
