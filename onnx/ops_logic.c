/* Importers of the operators with bool values and element-wise selection:
 * the comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual), the
 * logical functions (And, Or, Xor, Not) and Where (GatherElements is
 * imported beside Gather, in ops_more.c). Types
 * and shapes are the builders' rules; a node names itself in their
 * messages. */
#include <string.h>

#include "onnx/onnx_import.h"
#include "onnx/onnx_ops.h"

static const char *const no_attrs[] = {NULL};

static dqg_status output_of(onnx_import *c, dqg_tensor_id y)
{
    return y == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, y);
}

/* Opset 1 of Equal, Less and Greater broadcast by the axis/broadcast
 * attributes; opset 7 on, by NumPy's rules. */
static dqg_status no_legacy_broadcast(onnx_import *c)
{
    static const char *const known[] = {"axis", "broadcast", NULL};
    dqg_status st = onnx_check_attrs(c, known);
    if (st == DQG_OK && (onnx_attr(c, "axis") || onnx_attr(c, "broadcast")))
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "the legacy broadcast/axis attributes (opset < 7) are not supported");
    return st;
}

static dqg_status import_compare(onnx_import *c)
{
    static const struct {
        const char *op_type;
        dqg_compare_op op;
    } ops[] = {
        {"Equal", DQG_COMPARE_EQUAL},
        {"Less", DQG_COMPARE_LESS},
        {"LessOrEqual", DQG_COMPARE_LESS_EQUAL},
        {"Greater", DQG_COMPARE_GREATER},
        {"GreaterOrEqual", DQG_COMPARE_GREATER_EQUAL},
    };
    dqg_compare_op op = DQG_COMPARE_EQUAL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(c->node->op_type, ops[i].op_type) == 0)
            op = ops[i].op;
    dqg_status st;
    dqg_tensor_id a, b;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = no_legacy_broadcast(c)) != DQG_OK ||
        (st = onnx_input(c, 0, "A", true, &a)) != DQG_OK ||
        (st = onnx_input(c, 1, "B", true, &b)) != DQG_OK)
        return st;
    return output_of(c, dqg_compare(c->g, onnx_op_name(c, NULL), op, a, b));
}

static dqg_status import_logical(onnx_import *c)
{
    const char *type = c->node->op_type;
    bool not = strcmp(type, "Not") == 0;
    dqg_logical_op op = not                        ? DQG_LOGICAL_NOT
                        : strcmp(type, "And") == 0 ? DQG_LOGICAL_AND
                        : strcmp(type, "Or") == 0  ? DQG_LOGICAL_OR
                                                   : DQG_LOGICAL_XOR;
    dqg_status st;
    dqg_tensor_id a, b = DQG_NONE;
    if ((st = onnx_check_arity(c, not ? 1 : 2, not ? 1 : 2, 1, 1)) != DQG_OK ||
        (st = not ? onnx_check_attrs(c, no_attrs) : no_legacy_broadcast(c)) != DQG_OK ||
        (st = onnx_input(c, 0, not ? "X" : "A", true, &a)) != DQG_OK ||
        (!not &&(st = onnx_input(c, 1, "B", true, &b)) != DQG_OK))
        return st;
    return output_of(c, dqg_logical(c->g, onnx_op_name(c, NULL), op, a, b));
}

static dqg_status import_where(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id cond, x, y;
    if ((st = onnx_check_arity(c, 3, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "condition", true, &cond)) != DQG_OK ||
        (st = onnx_input(c, 1, "X", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 2, "Y", true, &y)) != DQG_OK)
        return st;
    return output_of(c, dqg_where(c->g, onnx_op_name(c, NULL), cond, x, y));
}

const onnx_op_entry onnx_logic_ops[] = {
    {"", "Equal", import_compare, NULL},
    {"", "Less", import_compare, NULL},
    {"", "LessOrEqual", import_compare, NULL},
    {"", "Greater", import_compare, NULL},
    {"", "GreaterOrEqual", import_compare, NULL},
    {"", "And", import_logical, NULL},
    {"", "Or", import_logical, NULL},
    {"", "Xor", import_logical, NULL},
    {"", "Not", import_logical, NULL},
    {"", "Where", import_where, NULL},
};
const size_t onnx_n_logic_ops = sizeof onnx_logic_ops / sizeof onnx_logic_ops[0];
