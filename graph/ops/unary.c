/* The unary element-wise family: y = f(x) on a float tensor for the
 * functions of dqg_unary_op (Sigmoid, Tanh, Erf, Gelu, ...). One op kind,
 * the function an attribute, as oneDNN's eltwise algorithms are; messages
 * name the function ("Sigmoid 'name': ..."). The reference computes in
 * double precision and rounds once to the output type. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

static const char *const unary_names[DQG_UNARY_COUNT] = {
    [DQG_UNARY_SIGMOID] = "Sigmoid",
    [DQG_UNARY_TANH] = "Tanh",
    [DQG_UNARY_ERF] = "Erf",
    [DQG_UNARY_GELU_ERF] = "Gelu",
    [DQG_UNARY_GELU_TANH] = "GeluTanh",
    [DQG_UNARY_NEG] = "Neg",
    [DQG_UNARY_ABS] = "Abs",
    [DQG_UNARY_SQRT] = "Sqrt",
    [DQG_UNARY_RECIPROCAL] = "Reciprocal",
    [DQG_UNARY_EXP] = "Exp",
    [DQG_UNARY_LOG] = "Log",
    [DQG_UNARY_HARD_SIGMOID] = "HardSigmoid",
    [DQG_UNARY_HARD_SWISH] = "HardSwish",
    [DQG_UNARY_LEAKY_RELU] = "LeakyRelu",
    [DQG_UNARY_ELU] = "Elu",
    [DQG_UNARY_SWISH] = "Swish",
    [DQG_UNARY_POW] = "PowScalar",
    [DQG_UNARY_COS] = "Cos",
    [DQG_UNARY_SIN] = "Sin",
    [DQG_UNARY_FLOOR] = "Floor",
    [DQG_UNARY_CEIL] = "Ceil",
    [DQG_UNARY_ROUND] = "Round",
    [DQG_UNARY_SIGN] = "Sign",
    [DQG_UNARY_SOFTPLUS] = "Softplus",
    [DQG_UNARY_SELU] = "Selu",
    [DQG_UNARY_SOFTSIGN] = "Softsign",
    [DQG_UNARY_THRESHOLDED_RELU] = "ThresholdedRelu",
    [DQG_UNARY_CELU] = "Celu",
    [DQG_UNARY_MISH] = "Mish",
    [DQG_UNARY_TAN] = "Tan",
    [DQG_UNARY_ASIN] = "Asin",
    [DQG_UNARY_ACOS] = "Acos",
    [DQG_UNARY_ATAN] = "Atan",
    [DQG_UNARY_SINH] = "Sinh",
    [DQG_UNARY_COSH] = "Cosh",
    [DQG_UNARY_ASINH] = "Asinh",
    [DQG_UNARY_ACOSH] = "Acosh",
    [DQG_UNARY_ATANH] = "Atanh",
};

const char *dqg_unary_op_name(dqg_unary_op op)
{
    return ((int)op >= 0 && op < DQG_UNARY_COUNT) ? unary_names[op] : "Unknown";
}

/* 0: the function takes no parameter; 1: alpha; 2: alpha and beta. */
static int n_params(dqg_unary_op op)
{
    switch (op) {
    case DQG_UNARY_HARD_SIGMOID:
    case DQG_UNARY_SELU:
        return 2;
    case DQG_UNARY_THRESHOLDED_RELU:
    case DQG_UNARY_CELU:
    case DQG_UNARY_LEAKY_RELU:
    case DQG_UNARY_ELU:
    case DQG_UNARY_SWISH:
    case DQG_UNARY_POW:
        return 1;
    default:
        return 0;
    }
}

dqg_tensor_id dqg_unary(dqg_graph *g, const char *name, dqg_unary_op op, dqg_tensor_id x,
                        float alpha, float beta)
{
    if ((int)op < 0 || op >= DQG_UNARY_COUNT) {
        if (!dqg_graph_can_build(g, "Unary", name))
            return DQG_NONE;
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "Unary '%s': function %d is not one of dqg_unary_op (0 to %d)",
                              dqg_op_display_name(name), (int)op, DQG_UNARY_COUNT - 1);
    }
    const char *kind = unary_names[op];
    if (!dqg_graph_can_build(g, kind, name) ||
        !dqg_graph_check_input(g, kind, name, 0, "x", x, false) ||
        !dqg_check_float_dtype(g, kind, name, 0, "x", x))
        return DQG_NONE;
    int np = n_params(op);
    if ((np >= 1 && !isfinite(alpha)) || (np >= 2 && !isfinite(beta)))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': %s is %g; it must be finite", kind,
                              dqg_op_display_name(name), !isfinite(alpha) ? "alpha" : "beta",
                              (double)(!isfinite(alpha) ? alpha : beta));
    if (op == DQG_UNARY_CELU && alpha == 0.0f)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': alpha is 0; Celu divides by it",
                              kind, dqg_op_display_name(name));
    int32_t o = dqg_graph_add_op_like(g, DQG_OP_UNARY, name, 1, &x);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.unary.op = op;
    g->ops[o].attrs.unary.alpha = np >= 1 ? alpha : 0.0f;
    g->ops[o].attrs.unary.beta = np >= 2 ? beta : 0.0f;
    return g->ops[o].outputs[0];
}

/* log(1 + e^x) without overflow: x + log(1 + e^-x) for x > 0. */
static double softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

double dqg_unary_eval(dqg_unary_op op, float alpha, float beta, double x)
{
    switch (op) {
    case DQG_UNARY_SIGMOID:
        return sigmoid(x);
    case DQG_UNARY_TANH:
        return tanh(x);
    case DQG_UNARY_ERF:
        return erf(x);
    case DQG_UNARY_GELU_ERF:
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case DQG_UNARY_GELU_TANH:
        return 0.5 * x *
               (1.0 + tanh(0.79788456080286535588 /* sqrt(2 / pi) */ * (x + 0.044715 * x * x * x)));
    case DQG_UNARY_NEG:
        return -x;
    case DQG_UNARY_ABS:
        return fabs(x);
    case DQG_UNARY_SQRT:
        return sqrt(x);
    case DQG_UNARY_RECIPROCAL:
        return 1.0 / x;
    case DQG_UNARY_EXP:
        return exp(x);
    case DQG_UNARY_LOG:
        return log(x);
    case DQG_UNARY_HARD_SIGMOID:
        return fmax(0.0, fmin(1.0, (double)alpha * x + (double)beta));
    case DQG_UNARY_HARD_SWISH:
        return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case DQG_UNARY_LEAKY_RELU:
        return x < 0 ? (double)alpha * x : x;
    case DQG_UNARY_ELU:
        return x < 0 ? (double)alpha * expm1(x) : x;
    case DQG_UNARY_SWISH:
        return x * sigmoid((double)alpha * x);
    case DQG_UNARY_POW:
        return pow(x, (double)alpha);
    case DQG_UNARY_COS:
        return cos(x);
    case DQG_UNARY_SIN:
        return sin(x);
    case DQG_UNARY_FLOOR:
        return floor(x);
    case DQG_UNARY_CEIL:
        return ceil(x);
    case DQG_UNARY_ROUND:
        return nearbyint(x); /* the default rounding mode: ties to even */
    case DQG_UNARY_SIGN:
        return x > 0 ? 1.0 : x < 0 ? -1.0 : x; /* 0 and -0 as they are, NaN as NaN */
    case DQG_UNARY_SOFTPLUS:
        return softplus(x);
    case DQG_UNARY_SELU:
        return x > 0 ? (double)beta * x : (double)beta * (double)alpha * expm1(x);
    case DQG_UNARY_SOFTSIGN:
        return x / (1.0 + fabs(x));
    case DQG_UNARY_THRESHOLDED_RELU:
        return x > (double)alpha ? x : 0.0;
    case DQG_UNARY_CELU:
        return fmax(0.0, x) + fmin(0.0, (double)alpha * expm1(x / (double)alpha));
    case DQG_UNARY_MISH:
        return x * tanh(softplus(x));
    case DQG_UNARY_TAN:
        return tan(x);
    case DQG_UNARY_ASIN:
        return asin(x);
    case DQG_UNARY_ACOS:
        return acos(x);
    case DQG_UNARY_ATAN:
        return atan(x);
    case DQG_UNARY_SINH:
        return sinh(x);
    case DQG_UNARY_COSH:
        return cosh(x);
    case DQG_UNARY_ASINH:
        return asinh(x);
    case DQG_UNARY_ACOSH:
        return acosh(x);
    case DQG_UNARY_ATANH:
        return atanh(x);
    case DQG_UNARY_COUNT:
        break;
    }
    return NAN;
}

static dqg_status unary_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    dqg_unary_op f = op->attrs.unary.op;
    float a = op->attrs.unary.alpha, b = op->attrs.unary.beta;
    for (int64_t i = 0; i < x->nelems; i++)
        dqg_store_float(x->dtype, Y, i,
                        (float)dqg_unary_eval(f, a, b, (double)dqg_load_float(x->dtype, X, i)));
    return DQG_OK;
}

static void unary_format(const dqg_op *op, char *buf, size_t size)
{
    int np = n_params(op->attrs.unary.op);
    if (np == 0)
        snprintf(buf, size, "function=%s", dqg_unary_op_name(op->attrs.unary.op));
    else if (np == 1)
        snprintf(buf, size, "function=%s alpha=%g", dqg_unary_op_name(op->attrs.unary.op),
                 (double)op->attrs.unary.alpha);
    else
        snprintf(buf, size, "function=%s alpha=%g beta=%g", dqg_unary_op_name(op->attrs.unary.op),
                 (double)op->attrs.unary.alpha, (double)op->attrs.unary.beta);
}

const dqg_op_def dqg_op_def_unary = {
    .kind = DQG_OP_UNARY,
    .name = "Unary",
    .reference = unary_reference,
    .format_attrs = unary_format,
};
