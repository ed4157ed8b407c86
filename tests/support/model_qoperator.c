/* QDQ -> QOperator: rewrites a QDQ model in place into the form ONNX
 * Runtime's quantizer writes with quant_format=QOperator. Each
 * DequantizeLinear -> op -> QuantizeLinear group whose inputs all come from
 * DequantizeLinear nodes becomes one operator on the quantized tensors:
 * Conv -> QLinearConv (the int32 bias read directly), Gemm -> QGemm, Add ->
 * QLinearAdd, Concat -> QLinearConcat, GlobalAveragePool ->
 * QLinearGlobalAveragePool, AveragePool -> QLinearAveragePool (those four
 * in com.microsoft), and MaxPool, Flatten, Reshape and Transpose between
 * one scale and zero point run on the quantized tensor itself. A Relu, or a
 * Clip(0, 6) whose bound lies beyond what the quantize holds, between the
 * op and a quantize whose zero point is its type's lowest value (0 for u8,
 * -128 for s8) is dropped (the quantize's saturation is the activation),
 * as ONNX Runtime does. Operators without a QLinear
 * form (BatchNormalization, LRN) keep their dequantize and quantize. */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/model_zoo.h"

typedef struct qop_graph {
    tm_model *m;
    Onnx__GraphProto *g;
    size_t n; /* nodes before the rewrite */
    bool *removed;
    int *uses; /* per node: readers of its first output not yet rewritten */
} qop_graph;

static int producer(const qop_graph *q, const char *t)
{
    for (size_t i = 0; i < q->n; i++)
        for (size_t o = 0; o < q->g->node[i]->n_output; o++)
            if (strcmp(q->g->node[i]->output[o], t) == 0)
                return (int)i;
    return -1;
}

static int readers(const qop_graph *q, const char *t, int *only)
{
    int count = 0;
    for (size_t i = 0; i < q->n; i++)
        for (size_t k = 0; k < q->g->node[i]->n_input; k++)
            if (strcmp(q->g->node[i]->input[k], t) == 0) {
                count++;
                *only = (int)i;
            }
    for (size_t i = 0; i < q->g->n_output; i++)
        if (strcmp(q->g->output[i]->name, t) == 0)
            count += 2; /* a graph output is never rewritten away */
    return count;
}

static bool is_op(const Onnx__NodeProto *n, const char *op)
{
    return strcmp(n->op_type, op) == 0;
}

/* The DequantizeLinear making t, or -1. */
static int dq_of(const qop_graph *q, const char *t)
{
    int p = producer(q, t);
    return p >= 0 && !q->removed[p] && is_op(q->g->node[p], "DequantizeLinear") ? p : -1;
}

static const Onnx__TensorProto *initializer(const qop_graph *q, const char *name)
{
    for (size_t i = 0; i < q->g->n_initializer; i++)
        if (strcmp(q->g->initializer[i]->name, name) == 0)
            return q->g->initializer[i];
    return NULL;
}

static float scalar(const qop_graph *q, const char *name)
{
    const Onnx__TensorProto *t = initializer(q, name);
    float v = NAN;
    if (t && t->has_raw_data && t->raw_data.len >= 4)
        memcpy(&v, t->raw_data.data, 4);
    else if (t && t->n_float_data)
        v = t->float_data[0];
    return v;
}

/* A quantize's zero point (signed for s8), or INT_MIN when unknown. */
static int zero_point(const qop_graph *q, const Onnx__NodeProto *n)
{
    if (n->n_input < 3 || !*n->input[2])
        return 0;
    const Onnx__TensorProto *t = initializer(q, n->input[2]);
    if (!t || !t->has_raw_data || t->raw_data.len < 1)
        return INT_MIN;
    return t->data_type == 3 ? (int8_t)t->raw_data.data[0] : t->raw_data.data[0];
}

/* The lowest value a quantize's type holds: -128 for s8 (the zero point's
 * type), 0 for u8. */
static int quant_min(const qop_graph *q, const Onnx__NodeProto *n)
{
    const Onnx__TensorProto *t =
        n->n_input >= 3 && *n->input[2] ? initializer(q, n->input[2]) : NULL;
    return t && t->data_type == 3 ? -128 : 0;
}

/* The quantize after node i (through a Relu or Clip(0, 6) its saturation
 * implies), or -1; *act is the activation's node or -1. */
static int quantize_after(const qop_graph *q, int i, int *act)
{
    *act = -1;
    int r;
    if (readers(q, q->g->node[i]->output[0], &r) != 1)
        return -1;
    const Onnx__NodeProto *n = q->g->node[r];
    if (is_op(n, "Relu") || is_op(n, "Clip")) {
        int k;
        if (readers(q, n->output[0], &k) != 1 || !is_op(q->g->node[k], "QuantizeLinear") ||
            zero_point(q, q->g->node[k]) != quant_min(q, q->g->node[k]))
            return -1;
        if (is_op(n, "Clip") &&
            (n->n_input < 3 || scalar(q, n->input[1]) != 0.0f ||
             scalar(q, q->g->node[k]->input[1]) * 255.0f > scalar(q, n->input[2]) * (1.0f + 1e-6f)))
            return -1;
        *act = r;
        return k;
    }
    return is_op(n, "QuantizeLinear") ? r : -1;
}

static const char *join3(tm_model *m, char *buf, size_t cap, const Onnx__NodeProto *dq)
{
    (void)m;
    snprintf(buf, cap, "%s,%s,%s", dq->input[0], dq->input[1], dq->n_input > 2 ? dq->input[2] : "");
    return buf;
}

/* Rewrites node i with its dequantized inputs `dq` (n_dq of them) and
 * quantize `qi`; false when the group does not have that form. */
static bool rewrite(qop_graph *q, int i)
{
    const Onnx__NodeProto *n = q->g->node[i];
    bool conv = is_op(n, "Conv"), gemm = is_op(n, "Gemm"), add = is_op(n, "Add"),
         concat = is_op(n, "Concat"), gap = is_op(n, "GlobalAveragePool"),
         avg = is_op(n, "AveragePool"),
         move = is_op(n, "MaxPool") || is_op(n, "Flatten") || is_op(n, "Reshape") ||
                is_op(n, "Transpose");
    if (!(conv || gemm || add || concat || gap || avg || move))
        return false;
    size_t n_data = concat ? n->n_input : (conv || gemm) ? n->n_input : add ? 2 : 1;
    int dq[64];
    if (n_data > 64)
        return false;
    for (size_t k = 0; k < n_data; k++)
        if ((dq[k] = dq_of(q, n->input[k])) < 0)
            return false;
    int act, qi = quantize_after(q, i, &act);
    if (qi < 0 || (move && act >= 0))
        return false;
    const Onnx__NodeProto *qn = q->g->node[qi], *x = q->g->node[dq[0]];
    size_t cap = 64 + 3 * 256 * (n_data + 2);
    char *in = malloc(cap), part[3 * 256 + 8];
    if (!in)
        abort();
    Onnx__NodeProto *r = NULL;
    if (move) {
        /* Only between one scale and zero point. */
        if (scalar(q, x->input[1]) != scalar(q, qn->input[1]) ||
            zero_point(q, x) != zero_point(q, qn)) {
            free(in);
            return false;
        }
        r = tm_copy_node(q->m, n);
        r->input[0] = x->input[0];
        r->output[0] = qn->output[0];
        free(in);
    } else {
        if (concat) {
            snprintf(in, cap, "%s,%s", qn->input[1], qn->input[2]);
            for (size_t k = 0; k < n_data; k++) {
                strcat(in, ",");
                strcat(in, join3(q->m, part, sizeof part, q->g->node[dq[k]]));
            }
        } else {
            in[0] = '\0';
            size_t n_q = conv || gemm ? 2 : n_data; /* the quantized operands */
            for (size_t k = 0; k < n_q; k++) {
                strcat(in, k ? "," : "");
                strcat(in, join3(q->m, part, sizeof part, q->g->node[dq[k]]));
            }
            const char *bias = n_data > 2 ? q->g->node[dq[2]]->input[0] : NULL;
            if (gemm) /* QGemm: C before the result's parameters */
                snprintf(part, sizeof part, ",%s,%s,%s", bias ? bias : "", qn->input[1],
                         qn->input[2]);
            else
                snprintf(part, sizeof part, ",%s,%s%s%s", qn->input[1], qn->input[2],
                         bias ? "," : "", bias ? bias : "");
            strcat(in, part);
        }
        const char *op = conv     ? "QLinearConv"
                         : gemm   ? "QGemm"
                         : add    ? "QLinearAdd"
                         : concat ? "QLinearConcat"
                         : gap    ? "QLinearGlobalAveragePool"
                                  : "QLinearAveragePool";
        r = tm_node(q->m, op, conv ? "" : "com.microsoft", n->name, in, qn->output[0]);
        free(in);
        for (size_t a = 0; a < n->n_attribute; a++) {
            const Onnx__AttributeProto *at = n->attribute[a];
            if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
                tm_attr_int(q->m, r, at->name, at->i);
            else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
                tm_attr_ints(q->m, r, at->name, at->ints, at->n_ints);
            else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
                tm_attr_float(q->m, r, at->name, at->f);
        }
    }
    q->removed[i] = q->removed[qi] = true;
    if (act >= 0)
        q->removed[act] = true;
    for (size_t k = 0; k < n_data; k++)
        q->uses[dq[k]]--;
    return true;
}

void zoo_to_qoperator(tm_model *m)
{
    qop_graph q = {.m = m, .g = tm_graph(m)};
    q.n = q.g->n_node;
    q.removed = calloc(q.n ? q.n : 1, sizeof *q.removed);
    q.uses = calloc(q.n ? q.n : 1, sizeof *q.uses);
    if (!q.removed || !q.uses)
        abort();
    for (size_t i = 0; i < q.n; i++) {
        int only;
        q.uses[i] = readers(&q, q.g->node[i]->output[0], &only);
    }
    for (size_t i = 0; i < q.n; i++)
        if (!q.removed[i])
            rewrite(&q, (int)i);
    /* Dequantizes nothing reads any more go; the rewritten nodes were
     * appended, and the importer orders nodes itself. */
    size_t kept = 0;
    for (size_t i = 0; i < q.g->n_node; i++) {
        bool gone = i < q.n &&
                    (q.removed[i] || (is_op(q.g->node[i], "DequantizeLinear") && q.uses[i] == 0));
        if (!gone)
            q.g->node[kept++] = q.g->node[i];
    }
    q.g->n_node = kept;
    /* Initializers only the removed nodes read (the bias scales, the
     * weights' dequantize parameters they carried) go too. */
    size_t kept_init = 0;
    for (size_t i = 0; i < q.g->n_initializer; i++) {
        const char *name = q.g->initializer[i]->name;
        bool used = false;
        for (size_t k = 0; k < q.g->n_node && !used; k++)
            for (size_t j = 0; j < q.g->node[k]->n_input && !used; j++)
                used = strcmp(q.g->node[k]->input[j], name) == 0;
        if (used)
            q.g->initializer[kept_init++] = q.g->initializer[i];
    }
    q.g->n_initializer = kept_init;
    tm_opset(m, "com.microsoft", 1);
    free(q.removed);
    free(q.uses);
}
