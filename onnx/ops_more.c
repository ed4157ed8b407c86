/* Importers of the element-wise functions, normalizations and joins that
 * whole networks need: Sigmoid, Tanh, Erf, Gelu, Neg, Abs, Sqrt, Reciprocal,
 * Exp, Log, HardSigmoid, HardSwish, LeakyRelu, Elu, Pow, Softmax,
 * LogSoftmax, Concat, Sum, Dropout, BatchNormalization, LRN,
 * LayerNormalization, the reductions (ReduceSum, ReduceMean, ReduceMax,
 * ReduceMin, ReduceProd, ReduceSumSquare), Slice, Split and Gather, and the
 * shape computations Shape, ConstantOfShape and Range (constants at
 * import). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_ops.h"

static const char *const no_attrs[] = {NULL};

/* An integer read through a double, saturated to int64 (NaN gives 0). */
static int64_t to_i64(double f)
{
    return f >= 9.2e18 ? INT64_MAX : f <= -9.2e18 ? INT64_MIN : f == f ? (int64_t)f : 0;
}

static dqg_status output_of(onnx_import *c, dqg_tensor_id y)
{
    return y == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, y);
}

/* The const-input mask of operators whose input 1 is read while the graph
 * is built (Expand's shape, Tile's repeats, Trilu's k, OneHot's depth,
 * CumSum's axis). */
static unsigned second_const_input(int64_t opset)
{
    (void)opset;
    return 1u << 1;
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
    {"Cos", DQG_UNARY_COS},
    {"Sin", DQG_UNARY_SIN},
    {"Floor", DQG_UNARY_FLOOR},
    {"Ceil", DQG_UNARY_CEIL},
    {"Round", DQG_UNARY_ROUND},
    {"Sign", DQG_UNARY_SIGN},
    {"Softplus", DQG_UNARY_SOFTPLUS},
    {"Softsign", DQG_UNARY_SOFTSIGN},
    {"Mish", DQG_UNARY_MISH},
    {"Tan", DQG_UNARY_TAN},
    {"Asin", DQG_UNARY_ASIN},
    {"Acos", DQG_UNARY_ACOS},
    {"Atan", DQG_UNARY_ATAN},
    {"Sinh", DQG_UNARY_SINH},
    {"Cosh", DQG_UNARY_COSH},
    {"Asinh", DQG_UNARY_ASINH},
    {"Acosh", DQG_UNARY_ACOSH},
    {"Atanh", DQG_UNARY_ATANH},
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
    } else if (strcmp(type, "Selu") == 0) {
        static const char *const alpha_gamma[] = {"alpha", "gamma", NULL};
        fn = DQG_UNARY_SELU;
        if ((st = onnx_check_attrs(c, alpha_gamma)) == DQG_OK &&
            (st = onnx_attr_float(c, "alpha", 1.67326319217681884765625f, &alpha)) == DQG_OK)
            st = onnx_attr_float(c, "gamma", 1.05070102214813232421875f, &beta);
    } else if (strcmp(type, "ThresholdedRelu") == 0 || strcmp(type, "Celu") == 0) {
        fn = type[0] == 'T' ? DQG_UNARY_THRESHOLDED_RELU : DQG_UNARY_CELU;
        if ((st = onnx_check_attrs(c, alpha_only)) == DQG_OK)
            st = onnx_attr_float(c, "alpha", 1.0f, &alpha);
        if (st == DQG_OK && fn == DQG_UNARY_CELU && alpha == 0.0f)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "alpha is 0; Celu divides by it");
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

/* Sum, Max and Min of 1 or more inputs with broadcasting: a chain of Adds,
 * Maxes or Mins (Max and Min take integers from opset 12 on; the builders
 * say which types they take). */
static dqg_status import_sum(onnx_import *c)
{
    static const char *const legacy[] = {"consumed_inputs", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, DQG_ONNX_MAX_VARIADIC, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, c->node_opset < 6 ? legacy : no_attrs)) != DQG_OK)
        return st;
    const char *type = c->node->op_type;
    dqg_tensor_id (*build)(dqg_graph *, const char *, dqg_tensor_id, dqg_tensor_id) =
        strcmp(type, "Max") == 0   ? dqg_max
        : strcmp(type, "Min") == 0 ? dqg_min
                                   : dqg_add;
    const char *step = build == dqg_max ? "max" : build == dqg_min ? "min" : "add";
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
        snprintf(suffix, sizeof suffix, "%s%d", step, i);
        acc = build(c->g, onnx_op_name(c, i == n - 1 ? NULL : suffix), acc, x);
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
    dqg_tensor_id y;
    if ((st = onnx_build_softmax(c, x, axis, old, log, &y)) != DQG_OK)
        return st;
    return output_of(c, y);
}

dqg_status onnx_build_softmax(onnx_import *c, dqg_tensor_id x, int64_t axis, bool flatten, bool log,
                              dqg_tensor_id *out)
{
    onnx_shape s = onnx_tensor_shape(c, x);
    if (axis < -s.rank || axis >= s.rank || s.rank == 0)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "axis %lld is outside [-%d, %d) for an input of rank %d",
                              (long long)axis, s.rank, s.rank, s.rank);
    if (axis < 0)
        axis += s.rank;
    dqg_tensor_id m;
    if (!flatten || axis == s.rank - 1) {
        m = dqg_softmax(c->g, onnx_op_name(c, NULL), x, (int)axis, log);
    } else {
        int64_t d[2] = {1, 1};
        for (int i = 0; i < s.rank; i++)
            d[i < axis ? 0 : 1] *= s.dims[i];
        m = dqg_reshape(c->g, onnx_op_name(c, "rows"), x, 2, d);
        if (m != DQG_NONE)
            m = dqg_softmax(c->g, onnx_op_name(c, "softmax"), m, 1, log);
        if (m != DQG_NONE)
            m = dqg_reshape(c->g, onnx_op_name(c, NULL), m, s.rank, s.dims);
    }
    *out = m;
    return m == DQG_NONE ? onnx_builder_failed(c) : DQG_OK;
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

/* The attributes LayerNormalization and RMSNormalization share: axis
 * (default -1), epsilon (1e-5) and stash_type, which must be 1 (the
 * statistics in float). */
static dqg_status norm_attrs(onnx_import *c, int64_t *axis, float *eps)
{
    int64_t stash;
    dqg_status st;
    if ((st = onnx_attr_int(c, "axis", -1, axis)) != DQG_OK ||
        (st = onnx_attr_float(c, "epsilon", 1e-5f, eps)) != DQG_OK ||
        (st = onnx_attr_int(c, "stash_type", 1, &stash)) != DQG_OK)
        return st;
    if (stash != 1)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "stash_type %lld; dqgraph computes the statistics in float "
                              "(stash_type 1)",
                              (long long)stash);
    return DQG_OK;
}

/* RMSNormalization (opset 23) as its function body: Mul(X, X),
 * ReduceMean over the axes from `axis` (kept), Add(epsilon), Sqrt,
 * Div(X, root), Mul(Scale); the recognize pass makes those one op again
 * when fusion is on (runtime/rms_norm.c), and each op's rounding is the
 * definition's with stash_type 1 on f32 X. */
static dqg_status import_rms_norm(onnx_import *c)
{
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    dqg_status st;
    int64_t axis;
    float eps;
    dqg_tensor_id x, scale;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK || (st = norm_attrs(c, &axis, &eps)) != DQG_OK)
        return st;
    if ((st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "scale", true, &scale)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    if (xs.dtype != DQG_F32)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "input 0 (X) is %s; dqgraph computes RMSNormalization on f32 only",
                              dqg_dtype_name(xs.dtype));
    if (axis < -xs.rank || axis >= xs.rank)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "axis %lld is outside [-%d, %d) for input 0 (X) of rank %d",
                              (long long)axis, xs.rank, xs.rank, xs.rank);
    if (!isfinite(eps) || eps < 0.0f)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "epsilon is %g; it must be finite and >= 0",
                              (double)eps);
    int64_t axes[DQG_MAX_RANK];
    int n = 0;
    for (int64_t a = axis < 0 ? axis + xs.rank : axis; a < xs.rank; a++)
        axes[n++] = a;
    dqg_graph *g = c->g;
    dqg_tensor_id sq = dqg_mul(g, onnx_op_name(c, "square"), x, x);
    dqg_tensor_id ms = sq == DQG_NONE ? DQG_NONE
                                      : dqg_reduce(g, onnx_op_name(c, "mean_square"),
                                                   DQG_REDUCE_MEAN, sq, n, axes, true);
    dqg_tensor_id e = onnx_add_scalar(c, "epsilon", DQG_F32, eps);
    dqg_tensor_id a = ms == DQG_NONE || e == DQG_NONE
                          ? DQG_NONE
                          : dqg_add(g, onnx_op_name(c, "plus_epsilon"), ms, e);
    dqg_tensor_id root =
        a == DQG_NONE ? DQG_NONE : dqg_unary(g, onnx_op_name(c, "root"), DQG_UNARY_SQRT, a, 0, 0);
    dqg_tensor_id d =
        root == DQG_NONE ? DQG_NONE : dqg_div(g, onnx_op_name(c, "normalized"), x, root);
    return output_of(c, d == DQG_NONE ? DQG_NONE : dqg_mul(g, onnx_op_name(c, NULL), d, scale));
}

static dqg_status import_layer_norm(onnx_import *c)
{
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 2, 3, 1, 3)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    int64_t axis;
    float eps;
    dqg_tensor_id x, scale, bias;
    if ((st = norm_attrs(c, &axis, &eps)) != DQG_OK)
        return st;
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
    {"ReduceSum", DQG_REDUCE_SUM, 13},    {"ReduceMean", DQG_REDUCE_MEAN, 18},
    {"ReduceMax", DQG_REDUCE_MAX, 18},    {"ReduceMin", DQG_REDUCE_MIN, 18},
    {"ReduceProd", DQG_REDUCE_PROD, 18},  {"ReduceSumSquare", DQG_REDUCE_SUM, 18},
    {"ReduceL1", DQG_REDUCE_SUM, 18},     {"ReduceL2", DQG_REDUCE_SUM, 18},
    {"ReduceLogSum", DQG_REDUCE_SUM, 18}, {"ReduceLogSumExp", DQG_REDUCE_SUM, 18},
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
                axes[n++] = to_i64(onnx_tensor_get(t, i));
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
    /* The others as ONNX defines them: a sum of x^2 (then its root, L2),
     * of |x| (L1), of e^x (then its log, LogSumExp, without the max
     * subtracted, as ONNX's reference), or the log of the sum (LogSum). */
    const char *type = c->node->op_type;
    bool l2 = strcmp(type, "ReduceL2") == 0, lse = strcmp(type, "ReduceLogSumExp") == 0;
    bool log = lse || strcmp(type, "ReduceLogSum") == 0;
    if ((strcmp(type, "ReduceSumSquare") == 0 || l2) &&
        (x = dqg_mul(c->g, onnx_op_name(c, "square"), x, x)) == DQG_NONE)
        return onnx_builder_failed(c);
    if (strcmp(type, "ReduceL1") == 0 &&
        (x = dqg_unary(c->g, onnx_op_name(c, "abs"), DQG_UNARY_ABS, x, 0, 0)) == DQG_NONE)
        return onnx_builder_failed(c);
    if (lse && (x = dqg_unary(c->g, onnx_op_name(c, "exp"), DQG_UNARY_EXP, x, 0, 0)) == DQG_NONE)
        return onnx_builder_failed(c);
    bool after = l2 || log;
    dqg_tensor_id y = dqg_reduce(c->g, onnx_op_name(c, after ? "sum" : NULL), reductions[r].op, x,
                                 n, axes, keepdims != 0);
    if (y == DQG_NONE || !after)
        return output_of(c, y);
    return output_of(
        c, dqg_unary(c->g, onnx_op_name(c, NULL), l2 ? DQG_UNARY_SQRT : DQG_UNARY_LOG, y, 0, 0));
}

static unsigned reduce_const_inputs(int64_t opset)
{
    (void)opset;
    return 1u << 1; /* axes, when it is an input */
}

/* ---- Slice and Split -------------------------------------------------------- */

/* Values of constant input i (1-D, at most DQG_MAX_RANK) into v; *n = -1
 * when the optional input is absent. */
/* A constant 1-D integer input of at most `cap` values, into v (*n = -1
 * when an optional one is absent). */
static dqg_status const_ints_cap(onnx_import *c, int i, const char *what, bool required, int64_t *v,
                                 int *n, int cap)
{
    const onnx_tensor *t;
    dqg_status st = onnx_input_const(c, i, what, required, &t);
    *n = -1;
    if (st != DQG_OK || !t)
        return st;
    if (t->nelems > cap || t->rank > 1)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input %d (%s) has %lld values in rank %d; it must be 1-D of at most "
                              "%d",
                              i, what, (long long)t->nelems, t->rank, cap);
    for (int64_t k = 0; k < t->nelems; k++) {
        if (t->dtype == DQG_S64) {
            /* Exactly: INT64_MAX ("to the end") does not survive a double. */
            memcpy(&v[k], (const char *)t->data + k * 8, 8);
        } else {
            v[k] = to_i64(onnx_tensor_get(t, k));
        }
    }
    *n = (int)t->nelems;
    return DQG_OK;
}

static dqg_status const_ints(onnx_import *c, int i, const char *what, bool required, int64_t *v,
                             int *n)
{
    return const_ints_cap(c, i, what, required, v, n, DQG_MAX_RANK);
}

static dqg_status import_slice(onnx_import *c)
{
    static const char *const known_old[] = {"axes", "ends", "starts", NULL};
    bool old = c->node_opset < 10;
    dqg_status st;
    if ((st = onnx_check_arity(c, old ? 1 : 3, old ? 1 : 5, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, old ? known_old : no_attrs)) != DQG_OK)
        return st;
    int64_t starts[DQG_MAX_RANK], ends[DQG_MAX_RANK], axes[DQG_MAX_RANK], steps[DQG_MAX_RANK];
    int ns, ne, na = -1, nst = -1;
    if (old) {
        const int64_t *v[3];
        size_t n[3];
        bool has_axes;
        if ((st = onnx_attr_ints(c, "starts", &v[0], &n[0], NULL)) != DQG_OK ||
            (st = onnx_attr_ints(c, "ends", &v[1], &n[1], NULL)) != DQG_OK ||
            (st = onnx_attr_ints(c, "axes", &v[2], &n[2], &has_axes)) != DQG_OK)
            return st;
        for (int k = 0; k < 3; k++)
            if (n[k] > DQG_MAX_RANK)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "an attribute has %zu values", n[k]);
        memcpy(starts, v[0], n[0] * sizeof *starts);
        memcpy(ends, v[1], n[1] * sizeof *ends);
        if (has_axes)
            memcpy(axes, v[2], n[2] * sizeof *axes);
        ns = (int)n[0];
        ne = (int)n[1];
        na = has_axes ? (int)n[2] : -1;
    } else if ((st = const_ints(c, 1, "starts", true, starts, &ns)) != DQG_OK ||
               (st = const_ints(c, 2, "ends", true, ends, &ne)) != DQG_OK ||
               (st = const_ints(c, 3, "axes", false, axes, &na)) != DQG_OK ||
               (st = const_ints(c, 4, "steps", false, steps, &nst)) != DQG_OK) {
        return st;
    }
    if (ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "starts, ends, axes and steps have %d, %d, %d and %d values; they "
                              "must have as many",
                              ns, ne, na, nst);
    dqg_tensor_id x;
    if ((st = onnx_input(c, 0, "data", true, &x)) != DQG_OK)
        return st;
    return output_of(c, dqg_slice(c->g, onnx_op_name(c, NULL), x, ns, na >= 0 ? axes : NULL, starts,
                                  ends, nst >= 0 ? steps : NULL));
}

static unsigned slice_const_inputs(int64_t opset)
{
    return opset >= 10 ? 0x1Eu : 0; /* starts, ends, axes, steps */
}

/* The `axes` input of Pad and Resize (opset 18+): n values in [-rank,
 * rank), none twice, made non-negative into at[]; NULL: the first n axes.
 * More than rank values repeat one, so at most rank are written. */
static dqg_status axes_input(onnx_import *c, const int64_t *axes, int n, int rank, int *at)
{
    bool seen[DQG_MAX_RANK] = {false};
    for (int k = 0; k < n; k++) {
        int64_t a = axes ? axes[k] : k;
        if (a < -rank || a >= rank)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axis %lld is outside [-%d, %d)",
                                  (long long)a, rank, rank);
        if (a < 0)
            a += rank;
        if (seen[a])
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axis %lld is given twice",
                                  (long long)a);
        seen[a] = true;
        at[k] = (int)a;
    }
    return DQG_OK;
}

/* Pad: pads and the constant from attributes (opsets 1 to 10: `paddings`
 * in opset 1) or constant inputs (11+), axes from opset 18, mode "wrap"
 * from opset 19. */
static dqg_status import_pad(onnx_import *c)
{
    static const char *const known1[] = {"mode", "paddings", "value", NULL};
    static const char *const known2[] = {"mode", "pads", "value", NULL};
    static const char *const known11[] = {"mode", NULL};
    int64_t opset = c->node_opset;
    bool old = opset < 11;
    dqg_status st;
    if ((st = onnx_check_arity(c, 1,
                               old          ? 1
                               : opset < 18 ? 3
                                            : 4,
                               1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, opset < 2 ? known1
                                  : old     ? known2
                                            : known11)) != DQG_OK)
        return st;
    char mode_name[16];
    if ((st = onnx_attr_string(c, "mode", "constant", mode_name, sizeof mode_name)) != DQG_OK)
        return st;
    dqg_pad_mode mode = DQG_PAD_MODE_COUNT;
    for (int m = 0; m < DQG_PAD_MODE_COUNT; m++)
        if (strcmp(mode_name, dqg_pad_mode_name((dqg_pad_mode)m)) == 0)
            mode = (dqg_pad_mode)m;
    if (mode == DQG_PAD_MODE_COUNT || (mode == DQG_PAD_WRAP && opset < 19))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "mode is '%s'; it must be 'constant', 'reflect', 'edge'%s", mode_name,
                              opset < 19 ? " ('wrap' from opset 19)" : " or 'wrap'");
    dqg_tensor_id x;
    if ((st = onnx_input(c, 0, "data", true, &x)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    int64_t given[2 * DQG_MAX_RANK], axes[DQG_MAX_RANK];
    int np, na = -1;
    double value = 0.0;
    if (old) {
        const int64_t *v;
        size_t n;
        float fv;
        if ((st = onnx_attr_ints(c, opset < 2 ? "paddings" : "pads", &v, &n, NULL)) != DQG_OK ||
            (st = onnx_attr_float(c, "value", 0.0f, &fv)) != DQG_OK)
            return st;
        if (n > 2 * DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "pads has %zu values", n);
        memcpy(given, v, n * sizeof *given);
        np = (int)n;
        value = fv;
    } else {
        if ((st = const_ints_cap(c, 1, "pads", true, given, &np, 2 * DQG_MAX_RANK)) != DQG_OK ||
            (opset >= 18 && (st = const_ints(c, 3, "axes", false, axes, &na)) != DQG_OK))
            return st;
        const onnx_tensor *cv;
        if ((st = onnx_input_const(c, 2, "constant_value", false, &cv)) != DQG_OK)
            return st;
        if (cv) {
            if (cv->nelems != 1)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "input 2 (constant_value) has %lld elements; it must be "
                                      "a scalar",
                                      (long long)cv->nelems);
            if (cv->dtype != xs.dtype)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "input 2 (constant_value) is %s; it must have the data's "
                                      "type, %s",
                                      dqg_dtype_name(cv->dtype), dqg_dtype_name(xs.dtype));
            if (cv->dtype == DQG_S64) {
                int64_t iv;
                memcpy(&iv, cv->data, 8);
                if (iv > ((int64_t)1 << 53) || iv < -((int64_t)1 << 53))
                    return onnx_node_fail(c, DQG_UNSUPPORTED,
                                          "input 2 (constant_value) %lld is beyond 2^53; "
                                          "dqgraph keeps the constant as a double",
                                          (long long)iv);
            }
            value = onnx_tensor_get(cv, 0);
        }
    }
    int n_axes = na >= 0 ? na : xs.rank;
    if (np != 2 * n_axes)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "pads has %d values for %d axes; it must have two per axis", np,
                              n_axes);
    int64_t pads[2 * DQG_MAX_RANK] = {0};
    int at[DQG_MAX_RANK];
    st = axes_input(c, na >= 0 ? axes : NULL, n_axes, xs.rank, at);
    if (st != DQG_OK)
        return st;
    for (int k = 0; k < n_axes; k++) {
        pads[at[k]] = given[k];
        pads[xs.rank + at[k]] = given[n_axes + k];
    }
    return output_of(c, dqg_pad(c->g, onnx_op_name(c, NULL), x, pads, mode, value));
}

/* Index of `name` in the NULL-terminated `names`, or -1. */
static int name_index(const char *const *names, const char *name)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* Resize (opsets 10-19) and Upsample (7, 9): scales or sizes from constant
 * inputs (Upsample-7: an attribute). Resize-10 and Upsample are asymmetric,
 * their nearest rounding down (as ONNX's version converter writes them in
 * opset 11). */
static dqg_status import_resize(onnx_import *c)
{
    static const char *const known_up7[] = {"mode", "scales", NULL};
    static const char *const known_old[] = {"mode", NULL};
    static const char *const known11[] = {"coordinate_transformation_mode",
                                          "cubic_coeff_a",
                                          "exclude_outside",
                                          "extrapolation_value",
                                          "mode",
                                          "nearest_mode",
                                          NULL};
    static const char *const known18[] = {"antialias",
                                          "axes",
                                          "coordinate_transformation_mode",
                                          "cubic_coeff_a",
                                          "exclude_outside",
                                          "extrapolation_value",
                                          "keep_aspect_ratio_policy",
                                          "mode",
                                          "nearest_mode",
                                          NULL};
    static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
    static const char *const coords[] = {"half_pixel",           "asymmetric",
                                         "align_corners",        "pytorch_half_pixel",
                                         "tf_half_pixel_for_nn", NULL};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil", NULL};
    int64_t opset = c->node_opset;
    bool upsample = strcmp(c->node->op_type, "Upsample") == 0;
    bool legacy = upsample || opset < 11, up7 = upsample && opset < 9;
    dqg_status st;
    if ((st = onnx_check_arity(c, 1,
                               up7      ? 1
                               : legacy ? 2
                                        : 4,
                               1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, up7          ? known_up7
                                  : legacy     ? known_old
                                  : opset < 18 ? known11
                                               : known18)) != DQG_OK)
        return st;
    char text[32];
    dqg_resize_attrs a = {.cubic_a = -0.75f};
    if ((st = onnx_attr_string(c, "mode", "nearest", text, sizeof text)) != DQG_OK)
        return st;
    int m = name_index(modes, text);
    if (m < 0 || (legacy && m == DQG_RESIZE_CUBIC))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "mode is '%s'; it must be 'nearest', "
                              "'linear'%s",
                              text, legacy ? "" : " or 'cubic'");
    a.mode = (dqg_resize_mode)m;
    if (legacy) {
        a.coord = DQG_RESIZE_ASYMMETRIC;
        a.nearest = DQG_RESIZE_FLOOR;
    } else {
        if ((st = onnx_attr_string(c, "coordinate_transformation_mode", "half_pixel", text,
                                   sizeof text)) != DQG_OK)
            return st;
        int k = name_index(coords, text);
        if (k < 0)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "coordinate_transformation_mode '%s' is not supported "
                                  "(half_pixel, asymmetric, align_corners, pytorch_half_pixel "
                                  "and tf_half_pixel_for_nn are)",
                                  text);
        a.coord = (dqg_resize_coord)k;
        if ((st = onnx_attr_string(c, "nearest_mode", "round_prefer_floor", text, sizeof text)) !=
            DQG_OK)
            return st;
        if ((k = name_index(nearest, text)) < 0)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "nearest_mode is '%s'; it must be 'round_prefer_floor', "
                                  "'round_prefer_ceil', 'floor' or 'ceil'",
                                  text);
        a.nearest = (dqg_resize_nearest)k;
        int64_t excl, anti;
        if ((st = onnx_attr_float(c, "cubic_coeff_a", -0.75f, &a.cubic_a)) != DQG_OK ||
            (st = onnx_attr_int(c, "exclude_outside", 0, &excl)) != DQG_OK ||
            (st = onnx_attr_int(c, "antialias", 0, &anti)) != DQG_OK ||
            (st = onnx_attr_string(c, "keep_aspect_ratio_policy", "stretch", text, sizeof text)) !=
                DQG_OK)
            return st;
        a.exclude_outside = excl != 0;
        if (anti != 0)
            return onnx_node_fail(c, DQG_UNSUPPORTED, "antialias is not supported");
        if (strcmp(text, "stretch") != 0)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "keep_aspect_ratio_policy '%s' is not supported (stretch is)",
                                  text);
    }
    dqg_tensor_id x;
    if ((st = onnx_input(c, 0, "X", true, &x)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    int64_t axes[DQG_MAX_RANK];
    int na = -1;
    if (!legacy && opset >= 18) {
        const int64_t *v;
        size_t n;
        bool present;
        if ((st = onnx_attr_ints(c, "axes", &v, &n, &present)) != DQG_OK)
            return st;
        if (present) {
            if (n > (size_t)xs.rank)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axes has %zu values for rank %d", n,
                                      xs.rank);
            memcpy(axes, v, n * sizeof *axes);
            na = (int)n;
        }
    }
    int n_axes = na >= 0 ? na : xs.rank;
    double scales[DQG_MAX_RANK];
    int64_t sizes[DQG_MAX_RANK];
    int ns = -1, nz = -1;
    if (up7) {
        const float *v = NULL;
        size_t n = 0;
        const Onnx__AttributeProto *at = onnx_attr(c, "scales");
        if (!at || at->n_floats == 0)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "the scales attribute is missing");
        v = at->floats;
        n = at->n_floats;
        if (n > DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "scales has %zu values", n);
        for (size_t k = 0; k < n; k++)
            scales[k] = v[k];
        ns = (int)n;
    } else {
        /* scales: input 1 (Upsample-9, Resize-10) or 2; sizes: input 3. */
        const onnx_tensor *t;
        int si = legacy ? 1 : 2;
        if ((st = onnx_input_const(c, si, "scales", legacy, &t)) != DQG_OK)
            return st;
        if (t && t->nelems > 0) {
            if (t->nelems > DQG_MAX_RANK || !dqg_dtype_is_float(t->dtype))
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "input %d (scales) has %lld %s values; it must be at most "
                                      "%d floats",
                                      si, (long long)t->nelems, dqg_dtype_name(t->dtype),
                                      DQG_MAX_RANK);
            for (int64_t k = 0; k < t->nelems; k++)
                scales[k] = onnx_tensor_get(t, k);
            ns = (int)t->nelems;
        }
        if (!legacy) {
            const onnx_tensor *z;
            if ((st = onnx_input_const(c, 3, "sizes", false, &z)) != DQG_OK)
                return st;
            if (z && z->nelems > 0) {
                if ((st = const_ints(c, 3, "sizes", true, sizes, &nz)) != DQG_OK)
                    return st;
            }
        }
    }
    if ((ns >= 0) == (nz >= 0))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "%s; exactly one of scales and sizes must be given",
                              ns >= 0 ? "both scales and sizes are given"
                                      : "neither scales nor "
                                        "sizes is given");
    int given = ns >= 0 ? ns : nz;
    if (given != n_axes)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "%s has %d values for %d axes",
                              ns >= 0 ? "scales" : "sizes", given, n_axes);
    for (int d = 0; d < xs.rank; d++)
        a.sizes[d] = xs.dims[d];
    int at[DQG_MAX_RANK];
    st = axes_input(c, na >= 0 ? axes : NULL, n_axes, xs.rank, at);
    if (st != DQG_OK)
        return st;
    for (int k = 0; k < n_axes; k++) {
        int d = at[k];
        if (ns >= 0) {
            double sc = scales[k], out = floor((double)xs.dims[d] * sc);
            if (!(sc > 0.0) || !isfinite(sc) || !(out >= 1.0) || out > 1e12)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "scale %g of axis %lld gives %g elements; it must give "
                                      "at least 1",
                                      sc, (long long)d, out);
            a.sizes[d] = (int64_t)out;
            a.scales[d] = (float)sc;
        } else {
            a.sizes[d] = sizes[k];
        }
    }
    return output_of(c, dqg_resize(c->g, onnx_op_name(c, NULL), x, &a));
}

static unsigned resize_const_inputs(int64_t opset)
{
    return opset >= 11 ? 0xEu : 0x2u; /* roi, scales, sizes; or scales */
}

static unsigned pad_const_inputs(int64_t opset)
{
    return opset >= 11 ? 0xEu : 0; /* pads, constant_value, axes */
}

/* Split into consecutive slices along an axis: sizes from the `split`
 * attribute (opset < 13) or input, or num_outputs (opset 18) / the output
 * count, equal parts with a smaller last one. */
static dqg_status import_split(onnx_import *c)
{
    static const char *const known_old[] = {"axis", "split", NULL};
    static const char *const known13[] = {"axis", NULL};
    static const char *const known18[] = {"axis", "num_outputs", NULL};
    int64_t opset = c->node_opset;
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, opset < 13 ? 1 : 2, 1, DQG_ONNX_MAX_VARIADIC)) != DQG_OK ||
        (st = onnx_check_attrs(c, opset < 13   ? known_old
                                  : opset < 18 ? known13
                                               : known18)) != DQG_OK)
        return st;
    int n = (int)c->node->n_output;
    int64_t axis;
    dqg_tensor_id x;
    if ((st = onnx_attr_int(c, "axis", 0, &axis)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    if (axis < -xs.rank || axis >= xs.rank)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axis %lld is outside [-%d, %d)",
                              (long long)axis, xs.rank, xs.rank);
    if (axis < 0)
        axis += xs.rank;
    int64_t dim = xs.dims[axis];
    int64_t *sizes = malloc((size_t)n * sizeof *sizes);
    if (!sizes)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory for %d outputs", n);
    int64_t given = -1;
    if (opset < 13) {
        const int64_t *v;
        size_t nv;
        if ((st = onnx_attr_ints(c, "split", &v, &nv, NULL)) != DQG_OK)
            goto done;
        if (nv) {
            given = (int64_t)nv;
            for (int i = 0; i < n && i < (int)nv; i++)
                sizes[i] = v[i];
        }
    } else if (onnx_input_name(c, 1)) {
        const onnx_tensor *t;
        if ((st = onnx_input_const(c, 1, "split", true, &t)) != DQG_OK)
            goto done;
        given = t->nelems;
        for (int i = 0; i < n && i < t->nelems; i++)
            sizes[i] = to_i64(onnx_tensor_get(t, i));
    }
    if (given >= 0 && given != n) {
        st = onnx_node_fail(c, DQG_INVALID_ARGUMENT, "split has %lld sizes for %d outputs",
                            (long long)given, n);
        goto done;
    }
    if (given < 0) {
        int64_t parts = n;
        if (opset >= 18) {
            if ((st = onnx_attr_int(c, "num_outputs", n, &parts)) != DQG_OK)
                goto done;
            if (parts != n) {
                st = onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                    "num_outputs is %lld but the node has %d outputs",
                                    (long long)parts, n);
                goto done;
            }
        }
        int64_t each = (dim + parts - 1) / parts;
        for (int i = 0; i < n; i++)
            sizes[i] = i < n - 1 ? each : dim - each * (n - 1);
    }
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 1 || at + sizes[i] > dim) {
            st = onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                "output %d would have %lld elements along axis %lld (of %lld); "
                                "every part needs at least one and they must add up",
                                i, (long long)sizes[i], (long long)axis, (long long)dim);
            goto done;
        }
        at += sizes[i];
    }
    if (at != dim) {
        st = onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                            "the split sizes add up to %lld; axis %lld has %lld", (long long)at,
                            (long long)axis, (long long)dim);
        goto done;
    }
    at = 0;
    for (int i = 0; i < n; i++) {
        int64_t start = at, end = at + sizes[i];
        at = end;
        if (!onnx_output_value(c, i))
            continue;
        char suffix[24];
        snprintf(suffix, sizeof suffix, "%d", i);
        dqg_tensor_id y = dqg_slice(c->g, onnx_op_name(c, suffix), x, 1, &axis, &start, &end, NULL);
        if (y == DQG_NONE) {
            st = onnx_builder_failed(c);
            goto done;
        }
        if ((st = onnx_set_output(c, i, y)) != DQG_OK)
            goto done;
    }
    st = DQG_OK;
done:
    free(sizes);
    return st;
}

static unsigned split_const_inputs(int64_t opset)
{
    return opset >= 13 ? 1u << 1 : 0;
}

/* ---- Shape computations, done at import ----------------------------------- */

static dqg_status int64_const(onnx_import *c, int i, int rank, const int64_t *dims,
                              const int64_t *v, int64_t n)
{
    onnx_tensor t = {.dtype = DQG_S64, .rank = rank, .nelems = n, .nbytes = (size_t)n * 8};
    memcpy(t.dims, dims, (size_t)rank * sizeof *dims);
    if (!(t.data = malloc(t.nbytes ? t.nbytes : 1)))
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    memcpy(t.data, v, t.nbytes);
    return onnx_const_output(c, i, &t);
}

/* Shape: every graph tensor's shape is known when the model is imported. */
static dqg_status import_shape(onnx_import *c)
{
    static const char *const known[] = {"start", "end", NULL};
    dqg_status st;
    dqg_tensor_id x;
    int64_t start, end;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "start", 0, &start)) != DQG_OK ||
        (st = onnx_input(c, 0, "data", true, &x)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    if ((st = onnx_attr_int(c, "end", xs.rank, &end)) != DQG_OK)
        return st;
    if (start < 0)
        start += xs.rank;
    if (end < 0)
        end += xs.rank;
    start = start < 0 ? 0 : start > xs.rank ? xs.rank : start;
    end = end < 0 ? 0 : end > xs.rank ? xs.rank : end;
    if (end <= start)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "start and end select no dimension; dqgraph has no empty tensors");
    int64_t n = end - start;
    return int64_const(c, 0, 1, &n, xs.dims + start, n);
}

/* ConstantOfShape with a constant shape: a constant filled with `value`. */
static dqg_status import_constant_of_shape(onnx_import *c)
{
    static const char *const known[] = {"value", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    int64_t dims[DQG_MAX_RANK];
    int rank;
    if ((st = const_ints(c, 0, "input", true, dims, &rank)) != DQG_OK)
        return st;
    onnx_tensor fill = {0};
    const Onnx__AttributeProto *a = onnx_attr(c, "value");
    if (a && a->t) {
        if ((st = onnx_tensor_decode(a->t, "ConstantOfShape value", false, &c->ext, &fill)) !=
            DQG_OK) {
            char msg[1500];
            snprintf(msg, sizeof msg, "%s", dqg_last_error());
            return onnx_node_fail(c, st, "%s", msg);
        }
        if (fill.nelems != 1) {
            onnx_tensor_release(&fill);
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "attribute 'value' has %lld elements; it must have one",
                                  (long long)fill.nelems);
        }
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 1 || dims[i] > ((int64_t)1 << 40) / n) {
            onnx_tensor_release(&fill);
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "dimension %d is %lld; dqgraph tensors have dimensions >= 1 "
                                  "and at most 2^40 elements",
                                  i, (long long)dims[i]);
        }
        n *= dims[i];
    }
    dqg_dtype dt = fill.data ? fill.dtype : DQG_F32;
    size_t es = fill.data ? fill.nbytes : 4;
    onnx_tensor t = {.dtype = dt, .rank = rank, .nelems = n};
    memcpy(t.dims, dims, (size_t)rank * sizeof *dims);
    t.nbytes = dqg_dtype_storage_size(dt, n);
    t.data = calloc(1, t.nbytes ? t.nbytes : 1);
    if (!t.data) {
        onnx_tensor_release(&fill);
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory for %lld elements",
                              (long long)n);
    }
    if (fill.data) {
        if (dqg_dtype_bits(dt) < 8) {
            float f;
            dqg_dtype_decode(dt, fill.data, 0, 1, &f);
            for (int64_t i = 0; i < n; i++)
                dqg_dtype_encode(dt, &f, 1, t.data, i, true);
        } else {
            for (int64_t i = 0; i < n; i++)
                memcpy((char *)t.data + (size_t)i * es, fill.data, es);
        }
    }
    onnx_tensor_release(&fill);
    return onnx_const_output(c, 0, &t);
}

/* Range with constant scalar start, limit and delta. */
static dqg_status import_range(onnx_import *c)
{
    dqg_status st;
    const onnx_tensor *v[3];
    static const char *const what[] = {"start", "limit", "delta"};
    if ((st = onnx_check_arity(c, 3, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK)
        return st;
    for (int i = 0; i < 3; i++) {
        if ((st = onnx_input_const(c, i, what[i], true, &v[i])) != DQG_OK)
            return st;
        if (v[i]->nelems != 1)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "input %d (%s) must be a scalar", i,
                                  what[i]);
    }
    double start = onnx_tensor_get(v[0], 0), limit = onnx_tensor_get(v[1], 0),
           delta = onnx_tensor_get(v[2], 0);
    if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "start %g, limit %g, delta %g", start, limit,
                              delta);
    double count = ceil((limit - start) / delta);
    if (!(count >= 1) || count > (double)((int64_t)1 << 40))
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "the range has %g elements; dqgraph tensors have 1 to 2^40", count);
    int64_t n = (int64_t)count;
    dqg_dtype dt = v[0]->dtype;
    if (dt != DQG_F32 && dt != DQG_S32 && dt != DQG_S64 && dt != DQG_S16)
        return onnx_node_fail(c, DQG_UNSUPPORTED, "Range of %s", dqg_dtype_name(dt));
    onnx_tensor t = {.dtype = dt, .rank = 1, .dims = {n}, .nelems = n};
    t.nbytes = dqg_dtype_storage_size(dt, n);
    if (!(t.data = malloc(t.nbytes)))
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        if (dt == DQG_F32) {
            /* As ONNX defines it: start + i * delta, in the type. */
            ((float *)t.data)[i] = (float)start + (float)i * (float)delta;
        } else {
            int64_t r = (int64_t)start + i * (int64_t)delta;
            if (dt == DQG_S64)
                ((int64_t *)t.data)[i] = r;
            else if (dt == DQG_S32)
                ((int32_t *)t.data)[i] = (int32_t)r;
            else
                ((int16_t *)t.data)[i] = (int16_t)r;
        }
    }
    return onnx_const_output(c, 0, &t);
}

/* ---- Gather, GatherElements ------------------------------------------------ */

/* Gather and GatherElements: data, indices and an axis, which their
 * builders check. */
typedef dqg_tensor_id (*gather_builder)(dqg_graph *, const char *, dqg_tensor_id, dqg_tensor_id,
                                        int);

static dqg_status import_gather_with(onnx_import *c, gather_builder build)
{
    static const char *const known[] = {"axis", NULL};
    dqg_status st;
    int64_t axis;
    dqg_tensor_id d, ix;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", 0, &axis)) != DQG_OK ||
        (st = onnx_input(c, 0, "data", true, &d)) != DQG_OK ||
        (st = onnx_input(c, 1, "indices", true, &ix)) != DQG_OK)
        return st;
    if (axis < INT32_MIN || axis > INT32_MAX)
        axis = INT32_MAX; /* the builder names the range */
    return output_of(c, build(c->g, onnx_op_name(c, NULL), d, ix, (int)axis));
}

static dqg_status import_gather(onnx_import *c)
{
    return import_gather_with(c, dqg_gather);
}

static dqg_status import_gather_elements(onnx_import *c)
{
    return import_gather_with(c, dqg_gather_elements);
}

/* ---- Expand ------------------------------------------------------------------ */

/* x broadcast against a constant of `count` ones of dims (false, for
 * bool): a product (an Or), exact for every type. The op is named by
 * `suffix` (NULL: the node's own name). */
static dqg_status broadcast_by_ones(onnx_import *c, dqg_tensor_id x, dqg_dtype t, int rank,
                                    const int64_t *dims, int64_t count, const char *suffix,
                                    dqg_tensor_id *out)
{
    bool is_bool = t == DQG_BOOL;
    size_t bytes = dqg_dtype_storage_size(t, count);
    void *data = calloc(1, bytes ? bytes : 1);
    if (!data)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory for %lld ones",
                              (long long)count);
    for (int64_t i = 0; i < count && !is_bool; i++) {
        if (dqg_dtype_is_integer(t))
            dqg_store_int(t, data, i, 1);
        else
            dqg_store_float(t, data, i, 1.0f);
    }
    dqg_tensor_id one = onnx_add_constant(c, is_bool ? "false" : "ones", t, rank, dims, data);
    free(data);
    if (one == DQG_NONE)
        return onnx_builder_failed(c);
    const char *name = onnx_op_name(c, suffix);
    *out = is_bool ? dqg_logical(c->g, name, DQG_LOGICAL_OR, x, one) : dqg_mul(c->g, name, x, one);
    return *out == DQG_NONE ? onnx_builder_failed(c) : DQG_OK;
}

/* Expand(input, shape): input broadcast with the constant shape (both ways,
 * as NumPy does). An unchanged shape is the input itself; otherwise a
 * Mul by ones (Or with false for bool) whose ones span only the axes that
 * grow, which every float and integer type passes through unchanged (x * 1
 * is x, -0 and NaN included). */
static dqg_status import_expand(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id x;
    int64_t shape[DQG_MAX_RANK];
    int n;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK ||
        (st = const_ints(c, 1, "shape", true, shape, &n)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    int rank = xs.rank > n ? xs.rank : n;
    int64_t out[DQG_MAX_RANK], ones[DQG_MAX_RANK], count = 1;
    bool grows = rank > xs.rank;
    for (int i = 0; i < rank; i++) {
        int ix = i - (rank - xs.rank), is = i - (rank - n);
        int64_t a = ix >= 0 ? xs.dims[ix] : 1, b = is >= 0 ? shape[is] : 1;
        if (b < 1)
            return onnx_node_fail(c, is >= 0 && b == 0 ? DQG_UNSUPPORTED : DQG_INVALID_ARGUMENT,
                                  "input 1 (shape) holds %lld at %d; dimensions must be >= 1%s",
                                  (long long)b, is,
                                  b == 0 ? " (dqgraph has no empty tensors)" : "");
        if (a != b && a != 1 && b != 1)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "input 0 (input) has %lld on axis %d where input 1 (shape) asks "
                                  "for %lld; each pair must be equal or hold a 1",
                                  (long long)a, i, (long long)b);
        out[i] = a > b ? a : b;
        ones[i] = a == 1 ? out[i] : 1;
        grows = grows || out[i] != a;
        if (ones[i] > ((int64_t)1 << 40) / count)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "the result would have more than 2^40 elements");
        count *= ones[i];
    }
    if (!grows)
        return onnx_alias_output(c, 0, 0);
    dqg_tensor_id y;
    if ((st = broadcast_by_ones(c, x, xs.dtype, rank, ones, count, NULL, &y)) != DQG_OK)
        return st;
    return output_of(c, y);
}

/* DepthToSpace and SpaceToDepth of an NCHW tensor as Reshape -> Transpose
 * -> Reshape (rank 6 in between): they only move elements, exactly as
 * ONNX defines them. */
static dqg_status import_depth_space(onnx_import *c)
{
    static const char *const known_d2s[] = {"blocksize", "mode", NULL};
    static const char *const known_s2d[] = {"blocksize", NULL};
    bool d2s = strcmp(c->node->op_type, "DepthToSpace") == 0;
    dqg_status st;
    int64_t b;
    char mode[8] = "DCR";
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, d2s ? known_d2s : known_s2d)) != DQG_OK ||
        (st = onnx_attr_int(c, "blocksize", 0, &b)) != DQG_OK ||
        (d2s && (st = onnx_attr_string(c, "mode", "DCR", mode, sizeof mode)) != DQG_OK) ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK)
        return st;
    bool crd = strcmp(mode, "CRD") == 0;
    if (!crd && strcmp(mode, "DCR") != 0)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "mode is '%s'; it must be 'DCR' or 'CRD'",
                              mode);
    onnx_shape xs = onnx_tensor_shape(c, x);
    if (xs.rank != 4)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "input 0 has rank %d; it must be 4 (NCHW)",
                              xs.rank);
    int64_t n = xs.dims[0], ch = xs.dims[1], h = xs.dims[2], w = xs.dims[3];
    if (b < 1 || b > 4096 || (d2s ? ch % (b * b) != 0 : h % b != 0 || w % b != 0))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "blocksize %lld does not divide %s of input 0 [%lld, %lld, %lld, "
                              "%lld]",
                              (long long)b, d2s ? "the channels (squared)" : "its height and width",
                              (long long)n, (long long)ch, (long long)h, (long long)w);
    int64_t mid[6], last[4];
    int64_t perm[6];
    if (d2s) {
        int64_t cb = ch / (b * b);
        int64_t m_dcr[] = {n, b, b, cb, h, w}, m_crd[] = {n, cb, b, b, h, w};
        int64_t p_dcr[] = {0, 3, 4, 1, 5, 2}, p_crd[] = {0, 1, 4, 2, 5, 3};
        memcpy(mid, crd ? m_crd : m_dcr, sizeof mid);
        memcpy(perm, crd ? p_crd : p_dcr, sizeof perm);
        int64_t l[] = {n, cb, h * b, w * b};
        memcpy(last, l, sizeof last);
    } else {
        int64_t m[] = {n, ch, h / b, b, w / b, b}, p[] = {0, 3, 5, 1, 2, 4};
        int64_t l[] = {n, ch * b * b, h / b, w / b};
        memcpy(mid, m, sizeof mid);
        memcpy(perm, p, sizeof perm);
        memcpy(last, l, sizeof last);
    }
    dqg_tensor_id t = dqg_reshape(c->g, onnx_op_name(c, "split"), x, 6, mid);
    t = dqg_transpose(c->g, onnx_op_name(c, "move"), t, perm);
    return output_of(c, dqg_reshape(c->g, onnx_op_name(c, NULL), t, 4, last));
}

/* Trilu (opset 14): Where(mask, x, 0) with a constant boolean mask of the
 * last two axes, which keeps the elements on and above (upper) or on and
 * below the k-th diagonal. */
static dqg_status import_trilu(onnx_import *c)
{
    static const char *const known[] = {"upper", NULL};
    dqg_status st;
    int64_t upper, k = 0;
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 1, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "upper", 1, &upper)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK)
        return st;
    const onnx_tensor *kt;
    if ((st = onnx_input_const(c, 1, "k", false, &kt)) != DQG_OK)
        return st;
    if (kt) {
        if (kt->nelems != 1 || kt->dtype != DQG_S64)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "input 1 (k) must be one int64; it is %lld %s values",
                                  (long long)kt->nelems, dqg_dtype_name(kt->dtype));
        memcpy(&k, kt->data, 8);
    }
    onnx_shape xs = onnx_tensor_shape(c, x);
    if (xs.rank < 2)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "input 0 has rank %d; it must be >= 2",
                              xs.rank);
    if (dqg_dtype_bits(xs.dtype) == 4)
        return onnx_node_fail(c, DQG_UNSUPPORTED, "input 0 has the 4-bit type %s",
                              dqg_dtype_name(xs.dtype));
    int64_t rows = xs.dims[xs.rank - 2], cols = xs.dims[xs.rank - 1];
    if (rows > ((int64_t)1 << 30) / cols)
        return onnx_node_fail(c, DQG_UNSUPPORTED, "a mask of %lld x %lld is too large",
                              (long long)rows, (long long)cols);
    uint8_t *mask = malloc((size_t)(rows * cols));
    unsigned char zero[8] = {0};
    if (!mask)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    /* k beyond the matrix keeps all or nothing; clamped so j - i - k cannot overflow. */
    int64_t kk = k < -rows - cols ? -rows - cols : k > rows + cols ? rows + cols : k;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            mask[i * cols + j] = (uint8_t)(upper ? j - i >= kk : j - i <= kk);
    int64_t md[] = {rows, cols};
    dqg_tensor_id m = onnx_add_constant(c, "mask", DQG_BOOL, 2, md, mask);
    free(mask);
    dqg_tensor_id z = onnx_add_constant(c, "zero", xs.dtype, 0, md, zero);
    if (m == DQG_NONE || z == DQG_NONE)
        return onnx_builder_failed(c);
    return output_of(c, dqg_where(c->g, onnx_op_name(c, NULL), m, x, z));
}

/* Mean of 1 or more inputs: their Sum divided by the count. */
static dqg_status import_mean(onnx_import *c)
{
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, DQG_ONNX_MAX_VARIADIC, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, c->node_opset < 6 ? (const char *const[]){"consumed_inputs", NULL}
                                                    : no_attrs)) != DQG_OK)
        return st;
    int n = (int)c->node->n_input;
    dqg_tensor_id acc, x;
    if ((st = onnx_input(c, 0, "data_0", true, &acc)) != DQG_OK ||
        (st = onnx_require_float(c, 0, acc)) != DQG_OK)
        return st;
    if (n == 1)
        return onnx_alias_output(c, 0, 0);
    for (int i = 1; i < n; i++) {
        if ((st = onnx_input(c, i, "data", true, &x)) != DQG_OK)
            return st;
        char suffix[32];
        snprintf(suffix, sizeof suffix, "add%d", i);
        if ((acc = dqg_add(c->g, onnx_op_name(c, suffix), acc, x)) == DQG_NONE)
            return onnx_builder_failed(c);
    }
    unsigned char count[8] = {0};
    dqg_dtype t = dqg_tensor_dtype(c->g, acc);
    dqg_store_float(t, count, 0, (float)n);
    dqg_tensor_id d = onnx_add_constant(c, "count", t, 0, NULL, count);
    if (d == DQG_NONE)
        return onnx_builder_failed(c);
    return output_of(c, dqg_div(c->g, onnx_op_name(c, NULL), acc, d));
}

/* PRelu: Where(x < 0, x * slope, x), slope broadcast to x (opset 7+;
 * before, a 1-D slope of x's channels applies along axis 1). */
static dqg_status import_prelu(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id x, slope;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, c->node_opset < 6 ? (const char *const[]){"consumed_inputs", NULL}
                                                    : no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK ||
        (st = onnx_input(c, 1, "slope", true, &slope)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x), ss = onnx_tensor_shape(c, slope);
    if (c->node_opset < 7 && ss.rank == 1 && xs.rank > 2 && ss.dims[0] == xs.dims[1] &&
        ss.dims[0] > 1) {
        int64_t d[DQG_MAX_RANK] = {ss.dims[0]};
        for (int i = 1; i < xs.rank - 1; i++)
            d[i] = 1;
        slope = dqg_reshape(c->g, onnx_op_name(c, "slope"), slope, xs.rank - 1, d);
    }
    dqg_tensor_id zero = onnx_add_scalar(c, "zero", xs.dtype, 0.0);
    if (zero == DQG_NONE)
        return onnx_builder_failed(c);
    dqg_tensor_id neg = dqg_compare(c->g, onnx_op_name(c, "negative"), DQG_COMPARE_LESS, x, zero);
    dqg_tensor_id scaled = dqg_mul(c->g, onnx_op_name(c, "scaled"), x, slope);
    return output_of(c, dqg_where(c->g, onnx_op_name(c, NULL), neg, scaled, x));
}

/* Tile with constant repeats (rank <= 4): x reshaped to [1, d0, 1, d1, ...],
 * broadcast by a product with ones [r0, 1, r1, 1, ...] (exact for every
 * type; bool by Or with false), reshaped to [r0 d0, r1 d1, ...]. */
static dqg_status import_tile(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id x;
    int64_t reps[DQG_MAX_RANK];
    int n;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK ||
        (st = const_ints(c, 1, "repeats", true, reps, &n)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    if (n != xs.rank)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input 1 (repeats) has %d values for an input of rank %d", n,
                              xs.rank);
    bool any = false;
    int64_t count = 1, total = xs.nelems;
    for (int i = 0; i < n; i++) {
        if (reps[i] < 1 || reps[i] > ((int64_t)1 << 40) / total)
            return onnx_node_fail(c, reps[i] == 0 ? DQG_UNSUPPORTED : DQG_INVALID_ARGUMENT,
                                  "repeats[%d] is %lld; it must be >= 1 and keep the result "
                                  "within 2^40 elements%s",
                                  i, (long long)reps[i],
                                  reps[i] == 0 ? " (dqgraph has no empty tensors)" : "");
        total *= reps[i];
        count *= reps[i];
        any |= reps[i] > 1;
    }
    if (!any)
        return onnx_alias_output(c, 0, 0);
    if (2 * xs.rank > DQG_MAX_RANK)
        return onnx_node_fail(c, DQG_UNSUPPORTED, "Tile of rank %d (dqgraph tiles up to rank %d)",
                              xs.rank, DQG_MAX_RANK / 2);
    int64_t spread[DQG_MAX_RANK], ones[DQG_MAX_RANK], out[DQG_MAX_RANK];
    for (int i = 0; i < n; i++) {
        spread[2 * i] = 1;
        spread[2 * i + 1] = xs.dims[i];
        ones[2 * i] = reps[i];
        ones[2 * i + 1] = 1;
        out[i] = reps[i] * xs.dims[i];
    }
    dqg_tensor_id t = dqg_reshape(c->g, onnx_op_name(c, "spread"), x, 2 * n, spread);
    if (t == DQG_NONE)
        return onnx_builder_failed(c);
    if ((st = broadcast_by_ones(c, t, xs.dtype, 2 * n, ones, count, "repeat", &t)) != DQG_OK)
        return st;
    return output_of(c, dqg_reshape(c->g, onnx_op_name(c, NULL), t, n, out));
}

/* InstanceNormalization: a layer normalization of each (n, c) over the
 * spatial axes (scale 1), then the channel's scale and bias. */
static dqg_status import_instance_norm(onnx_import *c)
{
    static const char *const known[] = {"epsilon", NULL};
    dqg_status st;
    dqg_tensor_id x, scale, bias;
    float eps;
    if ((st = onnx_check_arity(c, 3, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_float(c, "epsilon", 1e-5f, &eps)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "scale", true, &scale)) != DQG_OK ||
        (st = onnx_input(c, 2, "B", true, &bias)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    if (xs.rank < 3)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "input 0 has rank %d; it must be >= 3",
                              xs.rank);
    int64_t spatial = xs.nelems / (xs.dims[0] * xs.dims[1]);
    float *ones = malloc((size_t)spatial * sizeof *ones);
    if (!ones)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < spatial; i++)
        ones[i] = 1.0f;
    dqg_tensor_id unit = onnx_add_constant(c, "unit", DQG_F32, 1, &spatial, ones);
    free(ones);
    if (unit == DQG_NONE)
        return onnx_builder_failed(c);
    int64_t cd[DQG_MAX_RANK] = {xs.dims[1]};
    for (int i = 1; i < xs.rank - 1; i++)
        cd[i] = 1;
    dqg_tensor_id y = dqg_layer_norm(c->g, onnx_op_name(c, "normalize"), x, unit, DQG_NONE, 2, eps);
    dqg_tensor_id s = dqg_reshape(c->g, onnx_op_name(c, "scale"), scale, xs.rank - 1, cd);
    dqg_tensor_id b = dqg_reshape(c->g, onnx_op_name(c, "bias"), bias, xs.rank - 1, cd);
    y = dqg_mul(c->g, onnx_op_name(c, "scaled"), y, s);
    return output_of(c, dqg_add(c->g, onnx_op_name(c, NULL), y, b));
}

/* IsNaN as x != x, IsInf as |x| = inf (or x = +inf, x = -inf alone): exact
 * comparisons with bool results. */
static dqg_status import_is_special(onnx_import *c)
{
    static const char *const known_inf[] = {"detect_negative", "detect_positive", NULL};
    bool inf = strcmp(c->node->op_type, "IsInf") == 0;
    dqg_status st;
    dqg_tensor_id x;
    int64_t neg = 1, pos = 1;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, inf ? known_inf : no_attrs)) != DQG_OK ||
        (inf && (st = onnx_attr_int(c, "detect_negative", 1, &neg)) != DQG_OK) ||
        (inf && (st = onnx_attr_int(c, "detect_positive", 1, &pos)) != DQG_OK) ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    const char *name = onnx_op_name(c, NULL);
    if (!inf) {
        dqg_tensor_id eq = dqg_compare(c->g, onnx_op_name(c, "equal"), DQG_COMPARE_EQUAL, x, x);
        return output_of(c, dqg_logical(c->g, name, DQG_LOGICAL_NOT, eq, DQG_NONE));
    }
    dqg_dtype t = dqg_tensor_dtype(c->g, x);
    /* Neither sign detected: |x| > inf, false everywhere. */
    dqg_tensor_id v = x;
    if (neg == pos)
        v = dqg_unary(c->g, onnx_op_name(c, "abs"), DQG_UNARY_ABS, x, 0, 0);
    dqg_tensor_id f = onnx_add_scalar(c, "inf", t, neg && !pos ? -INFINITY : INFINITY);
    if (v == DQG_NONE || f == DQG_NONE)
        return onnx_builder_failed(c);
    return output_of(
        c, dqg_compare(c->g, name, neg || pos ? DQG_COMPARE_EQUAL : DQG_COMPARE_GREATER, v, f));
}

/* A constant integer scalar (or one-element tensor) input. */
static dqg_status const_scalar(onnx_import *c, int i, const char *what, int64_t *v)
{
    int64_t vals[DQG_MAX_RANK];
    int n;
    dqg_status st = const_ints(c, i, what, true, vals, &n);
    if (st != DQG_OK)
        return st;
    if (n != 1)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input %d (%s) has %d values; it must be "
                              "one",
                              i, what, n);
    *v = vals[0];
    return DQG_OK;
}

/* CumSum (opsets 11, 14): the axis a constant input. */
static dqg_status import_cumsum(onnx_import *c)
{
    static const char *const known[] = {"exclusive", "reverse", NULL};
    dqg_status st;
    int64_t axis = 0, excl = 0, rev = 0;
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "exclusive", 0, &excl)) != DQG_OK ||
        (st = onnx_attr_int(c, "reverse", 0, &rev)) != DQG_OK ||
        (st = const_scalar(c, 1, "axis", &axis)) != DQG_OK ||
        (st = onnx_input(c, 0, "x", true, &x)) != DQG_OK)
        return st;
    if (axis < INT32_MIN || axis > INT32_MAX)
        axis = INT32_MAX; /* the builder names the range */
    return output_of(c, dqg_cumsum(c->g, onnx_op_name(c, NULL), x, (int)axis, excl != 0, rev != 0));
}

/* TopK: k an attribute (opset 1) or a constant input (10+); largest and
 * sorted from opset 11 (the results are sorted either way). */
static dqg_status import_topk(onnx_import *c)
{
    static const char *const known1[] = {"axis", "k", NULL};
    static const char *const known10[] = {"axis", NULL};
    static const char *const known11[] = {"axis", "largest", "sorted", NULL};
    int64_t opset = c->node_opset;
    dqg_status st;
    int64_t axis = -1, k = 0, largest = 1, sorted = 1;
    dqg_tensor_id x, idx;
    if ((st = onnx_check_arity(c, opset < 10 ? 1 : 2, opset < 10 ? 1 : 2, 1, 2)) != DQG_OK ||
        (st = onnx_check_attrs(c, opset < 10   ? known1
                                  : opset < 11 ? known10
                                               : known11)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", -1, &axis)) != DQG_OK ||
        (st = onnx_attr_int(c, "largest", 1, &largest)) != DQG_OK ||
        (st = onnx_attr_int(c, "sorted", 1, &sorted)) != DQG_OK ||
        (opset < 10 ? (st = onnx_attr_int(c, "k", -1, &k)) : (st = const_scalar(c, 1, "K", &k))) !=
            DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK)
        return st;
    if (axis < INT32_MIN || axis > INT32_MAX)
        axis = INT32_MAX;
    dqg_tensor_id y = dqg_topk(c->g, onnx_op_name(c, NULL), x, k, (int)axis, largest != 0, &idx);
    if (y == DQG_NONE)
        return onnx_builder_failed(c);
    if ((st = onnx_set_output(c, 0, y)) != DQG_OK)
        return st;
    return c->node->n_output > 1 ? onnx_set_output(c, 1, idx) : DQG_OK;
}

static unsigned topk_const_inputs(int64_t opset)
{
    return opset >= 10 ? 1u << 1 : 0; /* K */
}

/* GatherND (opsets 11-13, batch_dims from 12) and ScatterND (11-18,
 * reduction from 16). */
static dqg_status import_nd(onnx_import *c)
{
    static const char *const known_g[] = {"batch_dims", NULL};
    static const char *const known_s[] = {"reduction", NULL};
    static const char *const reductions_nd[] = {"none", "add", "mul", "max", "min", NULL};
    bool scatter = strcmp(c->node->op_type, "ScatterND") == 0;
    dqg_status st;
    dqg_tensor_id data, idx, upd = DQG_NONE;
    if ((st = onnx_check_arity(c, scatter ? 3 : 2, scatter ? 3 : 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, scatter ? known_s : known_g)) != DQG_OK ||
        (st = onnx_input(c, 0, "data", true, &data)) != DQG_OK ||
        (st = onnx_input(c, 1, "indices", true, &idx)) != DQG_OK ||
        (scatter && (st = onnx_input(c, 2, "updates", true, &upd)) != DQG_OK))
        return st;
    const char *name = onnx_op_name(c, NULL);
    if (!scatter) {
        int64_t b;
        if ((st = onnx_attr_int(c, "batch_dims", 0, &b)) != DQG_OK)
            return st;
        if (b < 0 || b > DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "batch_dims %lld is outside [0, %d]",
                                  (long long)b, DQG_MAX_RANK);
        return output_of(c, dqg_gather_nd(c->g, name, data, idx, (int)b));
    }
    char text[16];
    if ((st = onnx_attr_string(c, "reduction", "none", text, sizeof text)) != DQG_OK)
        return st;
    int r = name_index(reductions_nd, text);
    if (r < 0)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "reduction is '%s'; it must be 'none', 'add', 'mul', 'max' or "
                              "'min'",
                              text);
    return output_of(c, dqg_scatter_nd(c->g, name, data, idx, upd, (dqg_scatter_reduction)r));
}

/* ScatterElements (11+, reduction from 16) and the older Scatter (9, 10). */
static dqg_status import_scatter_elements(onnx_import *c)
{
    static const char *const known[] = {"axis", "reduction", NULL};
    static const char *const reductions_el[] = {"none", "add", "mul", "max", "min", NULL};
    dqg_status st;
    dqg_tensor_id data, idx, upd;
    int64_t axis;
    char text[16];
    if ((st = onnx_check_arity(c, 3, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", 0, &axis)) != DQG_OK ||
        (st = onnx_attr_string(c, "reduction", "none", text, sizeof text)) != DQG_OK ||
        (st = onnx_input(c, 0, "data", true, &data)) != DQG_OK ||
        (st = onnx_input(c, 1, "indices", true, &idx)) != DQG_OK ||
        (st = onnx_input(c, 2, "updates", true, &upd)) != DQG_OK)
        return st;
    int r = name_index(reductions_el, text);
    if (r < 0)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "reduction is '%s'; it must be 'none', 'add', 'mul', 'max' or "
                              "'min'",
                              text);
    if (axis < INT32_MIN || axis > INT32_MAX)
        axis = INT32_MAX;
    return output_of(c, dqg_scatter_elements(c->g, onnx_op_name(c, NULL), data, idx, upd, (int)axis,
                                             (dqg_scatter_reduction)r));
}

/* Mod (opsets 10, 13). */
static dqg_status import_mod(onnx_import *c)
{
    static const char *const known[] = {"fmod", NULL};
    dqg_status st;
    dqg_tensor_id a, b;
    int64_t fm;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "fmod", 0, &fm)) != DQG_OK ||
        (st = onnx_input(c, 0, "A", true, &a)) != DQG_OK ||
        (st = onnx_input(c, 1, "B", true, &b)) != DQG_OK)
        return st;
    return output_of(c, dqg_mod(c->g, onnx_op_name(c, NULL), a, b, fm != 0));
}

/* 0, 1, ..., n - 1 of type t as a tensor of `rank` dimensions, the values
 * along dimension `axis` (the others 1). */
static dqg_tensor_id arange_along(onnx_import *c, const char *suffix, dqg_dtype t, int64_t n,
                                  int rank, int axis)
{
    size_t bytes = dqg_dtype_storage_size(t, n);
    void *data = malloc(bytes ? bytes : 1);
    if (!data) {
        onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory for %lld indices", (long long)n);
        return DQG_NONE;
    }
    for (int64_t i = 0; i < n; i++) {
        float f = (float)i;
        if (dqg_dtype_is_integer(t))
            dqg_store_int(t, data, i, i);
        else
            dqg_dtype_encode(t, &f, 1, data, i, true);
    }
    int64_t dims[DQG_MAX_RANK];
    for (int d = 0; d < rank; d++)
        dims[d] = d == axis ? n : 1;
    dqg_tensor_id r = onnx_add_constant(c, suffix, t, rank, dims, data);
    free(data);
    return r;
}

/* OneHot (opsets 9, 11): Where(Unsqueeze(indices, axis) = 0..depth-1 along
 * axis, on, off), negative indices first moved up by depth (from opset 11;
 * an index outside [-depth, depth) matches nothing, all off). depth a
 * constant; values [off, on] read by Gather. */
static dqg_status import_onehot(onnx_import *c)
{
    static const char *const known[] = {"axis", NULL};
    dqg_status st;
    int64_t axis, depth;
    dqg_tensor_id ix, values;
    const onnx_tensor *dt;
    if ((st = onnx_check_arity(c, 3, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", -1, &axis)) != DQG_OK ||
        (st = onnx_input_const(c, 1, "depth", true, &dt)) != DQG_OK ||
        (st = onnx_input(c, 0, "indices", true, &ix)) != DQG_OK ||
        (st = onnx_input(c, 2, "values", true, &values)) != DQG_OK)
        return st;
    if (dt->nelems != 1)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "input 1 (depth) has %lld values",
                              (long long)dt->nelems);
    double dv = onnx_tensor_get(dt, 0);
    if (!(dv >= 1.0 && dv <= (double)(1 << 24)))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "depth %g is outside [1, 2^24]", dv);
    depth = (int64_t)dv;
    onnx_shape is = onnx_tensor_shape(c, ix), vs = onnx_tensor_shape(c, values);
    int rank = is.rank + 1;
    if (axis < -rank || axis >= rank || rank > DQG_MAX_RANK)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "axis %lld is outside [-%d, %d) for a result of rank %d",
                              (long long)axis, rank, rank, rank);
    if (axis < 0)
        axis += rank;
    if (vs.nelems != 2)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input 2 (values) has %lld elements; it must be [off, on]",
                              (long long)vs.nelems);
    dqg_tensor_id idx = ix;
    if (c->node_opset >= 11) {
        dqg_tensor_id zero = onnx_add_scalar(c, "zero", is.dtype, 0.0f);
        dqg_tensor_id dep = onnx_add_scalar(c, "depth", is.dtype, (float)depth);
        dqg_tensor_id neg =
            dqg_compare(c->g, onnx_op_name(c, "negative"), DQG_COMPARE_LESS, ix, zero);
        dqg_tensor_id up = dqg_add(c->g, onnx_op_name(c, "wrapped"), ix, dep);
        idx = dqg_where(c->g, onnx_op_name(c, "index"), neg, up, ix);
    }
    int64_t ud[DQG_MAX_RANK];
    for (int d = 0, k = 0; d < rank; d++)
        ud[d] = d == axis ? 1 : is.dims[k++];
    idx = dqg_reshape(c->g, onnx_op_name(c, "unsqueeze"), idx, rank, ud);
    dqg_tensor_id ar = arange_along(c, "range", is.dtype, depth, rank - (int)axis, 0);
    if (ar == DQG_NONE)
        return onnx_builder_failed(c);
    dqg_tensor_id hit = dqg_compare(c->g, onnx_op_name(c, "hit"), DQG_COMPARE_EQUAL, idx, ar);
    int64_t k0 = 0, k1 = 1;
    dqg_tensor_id flat = dqg_reshape(c->g, onnx_op_name(c, "values"), values, 1, &vs.nelems);
    dqg_tensor_id i0 = onnx_add_constant(c, "off_index", DQG_S64, 0, NULL, &k0);
    dqg_tensor_id i1 = onnx_add_constant(c, "on_index", DQG_S64, 0, NULL, &k1);
    dqg_tensor_id off = dqg_gather(c->g, onnx_op_name(c, "off"), flat, i0, 0);
    dqg_tensor_id on = dqg_gather(c->g, onnx_op_name(c, "on"), flat, i1, 0);
    return output_of(c, dqg_where(c->g, onnx_op_name(c, NULL), hit, on, off));
}

/* Hardmax: 1 where ArgMax (the first maximum) is along the axis, else 0;
 * before opset 13 on the input seen as a matrix [before axis, from axis]. */
static dqg_status import_hardmax(onnx_import *c)
{
    static const char *const known[] = {"axis", NULL};
    dqg_status st;
    int64_t axis;
    dqg_tensor_id x;
    bool old = c->node_opset < 13;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", old ? 1 : -1, &axis)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    if (axis < -xs.rank || axis >= xs.rank)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axis %lld is outside [-%d, %d)",
                              (long long)axis, xs.rank, xs.rank);
    if (axis < 0)
        axis += xs.rank;
    dqg_tensor_id t = x;
    int rank = xs.rank, ax = (int)axis;
    if (old) { /* [prod(dims before axis), prod(dims from axis)] */
        int64_t m[2] = {1, 1};
        for (int d = 0; d < xs.rank; d++)
            m[d < axis ? 0 : 1] *= xs.dims[d];
        t = dqg_reshape(c->g, onnx_op_name(c, "matrix"), x, 2, m);
        rank = 2;
        ax = 1;
    }
    onnx_shape ts = onnx_tensor_shape(c, t);
    dqg_tensor_id best = dqg_argmax(c->g, onnx_op_name(c, "argmax"), t, ax, true, false);
    dqg_tensor_id ar = arange_along(c, "range", DQG_S64, ts.dims[ax], rank - ax, 0);
    dqg_tensor_id one = onnx_add_scalar(c, "one", xs.dtype, 1.0f);
    dqg_tensor_id zero = onnx_add_scalar(c, "zero", xs.dtype, 0.0f);
    if (ar == DQG_NONE || one == DQG_NONE || zero == DQG_NONE)
        return onnx_builder_failed(c);
    dqg_tensor_id hit = dqg_compare(c->g, onnx_op_name(c, "hit"), DQG_COMPARE_EQUAL, best, ar);
    dqg_tensor_id y = dqg_where(c->g, onnx_op_name(c, old ? "hardmax" : NULL), hit, one, zero);
    if (!old)
        return output_of(c, y);
    return output_of(c, dqg_reshape(c->g, onnx_op_name(c, NULL), y, xs.rank, xs.dims));
}

/* MeanVarianceNormalization: (x - mean) / sqrt(variance + 1e-9) over the
 * axes (default 0, 2, 3), as its ONNX function body. */
static dqg_status import_mvn(onnx_import *c)
{
    static const char *const known[] = {"axes", NULL};
    dqg_status st;
    dqg_tensor_id x;
    const int64_t *v;
    size_t n;
    bool present;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_ints(c, "axes", &v, &n, &present)) != DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    int64_t axes[DQG_MAX_RANK] = {0, 2, 3};
    int na = 3;
    if (present) {
        if (n > DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axes has %zu values", n);
        memcpy(axes, v, n * sizeof *v);
        na = (int)n;
    }
    onnx_shape xs = onnx_tensor_shape(c, x);
    dqg_tensor_id mean =
        dqg_reduce(c->g, onnx_op_name(c, "mean"), DQG_REDUCE_MEAN, x, na, axes, true);
    dqg_tensor_id d = dqg_sub(c->g, onnx_op_name(c, "centered"), x, mean);
    dqg_tensor_id var = dqg_reduce(c->g, onnx_op_name(c, "variance"), DQG_REDUCE_MEAN,
                                   dqg_mul(c->g, onnx_op_name(c, "square"), d, d), na, axes, true);
    dqg_tensor_id eps = onnx_add_scalar(c, "epsilon", xs.dtype, 1e-9f);
    dqg_tensor_id sd = dqg_unary(c->g, onnx_op_name(c, "deviation"), DQG_UNARY_SQRT,
                                 dqg_add(c->g, onnx_op_name(c, "var_eps"), var, eps), 0, 0);
    return output_of(c, dqg_div(c->g, onnx_op_name(c, NULL), d, sd));
}

/* Shrink: x + bias below -lambd, x - bias above lambd, 0 between. */
static dqg_status import_shrink(onnx_import *c)
{
    static const char *const known[] = {"bias", "lambd", NULL};
    dqg_status st;
    float bias, lambd;
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_float(c, "bias", 0.0f, &bias)) != DQG_OK ||
        (st = onnx_attr_float(c, "lambd", 0.5f, &lambd)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK)
        return st;
    dqg_dtype t = dqg_tensor_dtype(c->g, x);
    dqg_tensor_id lo = onnx_add_scalar(c, "low", t, -lambd),
                  hi = onnx_add_scalar(c, "high", t, lambd);
    dqg_tensor_id b = onnx_add_scalar(c, "bias", t, bias), z = onnx_add_scalar(c, "zero", t, 0.0f);
    if (lo == DQG_NONE || hi == DQG_NONE || b == DQG_NONE || z == DQG_NONE)
        return onnx_builder_failed(c);
    dqg_tensor_id below = dqg_compare(c->g, onnx_op_name(c, "below"), DQG_COMPARE_LESS, x, lo);
    dqg_tensor_id above = dqg_compare(c->g, onnx_op_name(c, "above"), DQG_COMPARE_GREATER, x, hi);
    dqg_tensor_id up = dqg_add(c->g, onnx_op_name(c, "plus_bias"), x, b);
    dqg_tensor_id down = dqg_sub(c->g, onnx_op_name(c, "minus_bias"), x, b);
    dqg_tensor_id mid = dqg_where(c->g, onnx_op_name(c, "upper"), above, down, z);
    return output_of(c, dqg_where(c->g, onnx_op_name(c, NULL), below, up, mid));
}

/* ArgMax and ArgMin (opsets 1 to 13). */
static dqg_status import_arg(onnx_import *c)
{
    static const char *const known[] = {"axis", "keepdims", "select_last_index", NULL};
    dqg_status st;
    int64_t axis, keepdims, last;
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", 0, &axis)) != DQG_OK ||
        (st = onnx_attr_int(c, "keepdims", 1, &keepdims)) != DQG_OK ||
        (st = onnx_attr_int(c, "select_last_index", 0, &last)) != DQG_OK ||
        (st = onnx_input(c, 0, "data", true, &x)) != DQG_OK)
        return st;
    if (axis < INT32_MIN || axis > INT32_MAX)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axis %lld is out of range",
                              (long long)axis);
    bool min = strcmp(c->node->op_type, "ArgMin") == 0;
    return output_of(c, (min ? dqg_argmin : dqg_argmax)(c->g, onnx_op_name(c, NULL), x, (int)axis,
                                                        keepdims != 0, last != 0));
}

/* Size: the input's element count, a constant (shapes are static). */
static dqg_status import_size(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "data", true, &x)) != DQG_OK)
        return st;
    onnx_tensor t = {.dtype = DQG_S64, .rank = 0, .nelems = 1, .nbytes = 8};
    if (!(t.data = malloc(8)))
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    int64_t n = onnx_tensor_shape(c, x).nelems;
    memcpy(t.data, &n, 8);
    return onnx_const_output(c, 0, &t);
}

static unsigned all_const_inputs(int64_t opset)
{
    (void)opset;
    return 0x7u;
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
    {"", "Cos", import_unary, NULL},
    {"", "Sin", import_unary, NULL},
    {"", "Floor", import_unary, NULL},
    {"", "Ceil", import_unary, NULL},
    {"", "Round", import_unary, NULL},
    {"", "Sign", import_unary, NULL},
    {"", "Softplus", import_unary, NULL},
    {"", "Softsign", import_unary, NULL},
    {"", "Mish", import_unary, NULL},
    {"", "Tan", import_unary, NULL},
    {"", "Asin", import_unary, NULL},
    {"", "Acos", import_unary, NULL},
    {"", "Atan", import_unary, NULL},
    {"", "Sinh", import_unary, NULL},
    {"", "Cosh", import_unary, NULL},
    {"", "Asinh", import_unary, NULL},
    {"", "Acosh", import_unary, NULL},
    {"", "Atanh", import_unary, NULL},
    {"", "Selu", import_unary, NULL},
    {"", "ThresholdedRelu", import_unary, NULL},
    {"", "Celu", import_unary, NULL},
    {"", "LeakyRelu", import_unary, NULL},
    {"", "Elu", import_unary, NULL},
    {"", "Pow", import_pow, NULL},
    {"", "Sum", import_sum, NULL},
    {"", "Max", import_sum, NULL},
    {"", "Min", import_sum, NULL},
    {"", "Softmax", import_softmax, NULL},
    {"", "LogSoftmax", import_softmax, NULL},
    {"", "Concat", import_concat, NULL},
    {"", "Dropout", import_dropout, NULL},
    {"", "BatchNormalization", import_batchnorm, NULL},
    {"", "LRN", import_lrn, NULL},
    {"", "LayerNormalization", import_layer_norm, NULL},
    {"", "RMSNormalization", import_rms_norm, NULL},
    {"", "ReduceSum", import_reduce, reduce_const_inputs},
    {"", "ReduceMean", import_reduce, reduce_const_inputs},
    {"", "ReduceMax", import_reduce, reduce_const_inputs},
    {"", "ReduceMin", import_reduce, reduce_const_inputs},
    {"", "ReduceProd", import_reduce, reduce_const_inputs},
    {"", "ReduceSumSquare", import_reduce, reduce_const_inputs},
    {"", "ReduceL1", import_reduce, reduce_const_inputs},
    {"", "ReduceL2", import_reduce, reduce_const_inputs},
    {"", "ReduceLogSum", import_reduce, reduce_const_inputs},
    {"", "ReduceLogSumExp", import_reduce, reduce_const_inputs},
    {"", "Slice", import_slice, slice_const_inputs},
    {"", "Pad", import_pad, pad_const_inputs},
    {"", "Resize", import_resize, resize_const_inputs},
    {"", "Upsample", import_resize, resize_const_inputs},
    {"", "Split", import_split, split_const_inputs},
    {"", "Shape", import_shape, NULL},
    {"", "ConstantOfShape", import_constant_of_shape, all_const_inputs},
    {"", "Range", import_range, all_const_inputs},
    {"", "Gather", import_gather, NULL},
    {"", "GatherElements", import_gather_elements, NULL},
    {"", "Expand", import_expand, second_const_input},
    {"", "DepthToSpace", import_depth_space, NULL},
    {"", "SpaceToDepth", import_depth_space, NULL},
    {"", "Trilu", import_trilu, second_const_input},
    {"", "Mean", import_mean, NULL},
    {"", "Size", import_size, NULL},
    {"", "PRelu", import_prelu, NULL},
    {"", "Tile", import_tile, second_const_input},
    {"", "InstanceNormalization", import_instance_norm, NULL},
    {"", "CumSum", import_cumsum, second_const_input},
    {"", "TopK", import_topk, topk_const_inputs},
    {"", "OneHot", import_onehot, second_const_input},
    {"", "Hardmax", import_hardmax, NULL},
    {"", "MeanVarianceNormalization", import_mvn, NULL},
    {"", "Shrink", import_shrink, NULL},
    {"", "ScatterElements", import_scatter_elements, NULL},
    {"", "Scatter", import_scatter_elements, NULL},
    {"", "Mod", import_mod, NULL},
    {"", "GatherND", import_nd, NULL},
    {"", "ScatterND", import_nd, NULL},
    {"", "IsNaN", import_is_special, NULL},
    {"", "IsInf", import_is_special, NULL},
    {"", "ArgMax", import_arg, NULL},
    {"", "ArgMin", import_arg, NULL},
    {"", "Einsum", onnx_import_einsum, NULL},
};
const size_t onnx_n_more_ops = sizeof onnx_more_ops / sizeof onnx_more_ops[0];
