/* The ONNX model importer: decodes a ModelProto, checks its structure
 * (unique value names, every input provided, no cycle), declares the graph
 * inputs, imports the live nodes in topological order through the operator
 * tables, marks the graph outputs and finalizes the graph. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "onnx/onnx_import.h"

#define QUARK_DOMAIN "com.amd.quark"

static bool is_default_domain(const char *d)
{
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

static const char *domain_shown(const char *d)
{
    return is_default_domain(d) ? "ai.onnx" : d;
}

/* The model's opset for a domain, 0 when it imports none. */
static int64_t domain_opset(const onnx_import *c, const char *domain)
{
    if (is_default_domain(domain))
        return c->opset;
    if (strcmp(domain, QUARK_DOMAIN) == 0)
        return c->quark_opset;
    for (size_t i = 0; i < c->model->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = c->model->opset_import[i];
        if (o->domain && strcmp(o->domain, domain) == 0)
            return o->version;
    }
    return 0;
}

/* ---- Messages ------------------------------------------------------------ */

static void describe_node(const onnx_import *c, int32_t index, char *buf, size_t size)
{
    const Onnx__NodeProto *n = c->model->graph->node[index];
    const char *type = n->op_type ? n->op_type : "?";
    int64_t opset = domain_opset(c, n->domain);
    if (n->name && *n->name)
        snprintf(buf, size, "%s node '%s' (domain '%s', opset %lld)", type, n->name,
                 domain_shown(n->domain), (long long)opset);
    else
        snprintf(buf, size, "%s node #%d (output '%s', domain '%s', opset %lld)", type, (int)index,
                 n->n_output && n->output[0] ? n->output[0] : "", domain_shown(n->domain),
                 (long long)opset);
}

dqg_status onnx_node_fail(onnx_import *c, dqg_status status, const char *fmt, ...)
{
    char desc[600], msg[1500];
    describe_node(c, c->node_index, desc, sizeof desc);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dqg_set_error(status, "%s: %s", desc, msg);
}

dqg_status onnx_builder_failed(onnx_import *c)
{
    dqg_status st = c->g->sticky_status != DQG_OK ? c->g->sticky_status : DQG_INVALID_ARGUMENT;
    char msg[1500];
    snprintf(msg, sizeof msg, "%s", dqg_last_error());
    return onnx_node_fail(c, st, "%s", msg);
}

/* ---- Values ---------------------------------------------------------------- */

static onnx_value *resolve(onnx_import *c, onnx_value *v)
{
    while (v && v->alias >= 0)
        v = &c->values[v->alias];
    return v;
}

static onnx_value *value_named(onnx_import *c, const char *name)
{
    int32_t i = onnx_names_get(&c->value_index, name);
    return i < 0 ? NULL : &c->values[i];
}

static dqg_status decode_value(onnx_import *c, onnx_value *v)
{
    if (v->decoded)
        return DQG_OK;
    char what[600];
    snprintf(what, sizeof what, "initializer '%s'", v->name);
    /* Empty tensors (a dimension of 0) decode: an operator may read one as
     * an absent value (Resize's roi and scales as exporters write them);
     * none becomes a graph tensor (materialize). */
    dqg_status st = onnx_tensor_decode(v->proto, what, true, &c->ext, &v->value);
    if (st == DQG_OK)
        v->decoded = true;
    return st;
}

static dqg_status materialize(onnx_import *c, onnx_value *v, dqg_tensor_id *out)
{
    v = resolve(c, v);
    if (v->id != DQG_NONE) {
        *out = v->id;
        return DQG_OK;
    }
    if (v->kind != ONNX_VALUE_INITIALIZER && v->kind != ONNX_VALUE_CONSTANT)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "ONNX value '%s' has no tensor (internal error)",
                             v->name);
    dqg_status st = v->kind == ONNX_VALUE_INITIALIZER ? decode_value(c, v) : DQG_OK;
    if (st != DQG_OK)
        return st;
    const onnx_tensor *t = &v->value;
    if (t->nelems == 0)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "constant '%s' is empty (a dimension of 0); dqgraph tensors have at "
                             "least one element per dimension",
                             v->name);
    v->id = dqg_constant(c->g, v->name, t->dtype, t->rank, t->dims, t->data, t->nbytes);
    if (v->id == DQG_NONE)
        return dqg_set_error(c->g->sticky_status, "constant '%s': %s", v->name, dqg_last_error());
    /* The graph holds a copy now; initializers decode again if a node reads their values. */
    if (v->kind == ONNX_VALUE_INITIALIZER) {
        onnx_tensor_release(&v->value);
        v->decoded = false;
    }
    *out = v->id;
    return DQG_OK;
}

const char *onnx_input_name(const onnx_import *c, int i)
{
    const Onnx__NodeProto *n = c->node;
    if (i < 0 || (size_t)i >= n->n_input || !n->input[i] || !*n->input[i])
        return NULL;
    return n->input[i];
}

onnx_value *onnx_input_value(onnx_import *c, int i)
{
    const char *name = onnx_input_name(c, i);
    return name ? resolve(c, value_named(c, name)) : NULL;
}

dqg_status onnx_input(onnx_import *c, int i, const char *what, bool required, dqg_tensor_id *out)
{
    *out = DQG_NONE;
    onnx_value *v = onnx_input_value(c, i);
    if (!v)
        return required ? onnx_node_fail(c, DQG_PARSE_ERROR, "input %d (%s) is missing", i, what)
                        : DQG_OK;
    dqg_status st = materialize(c, v, out);
    if (st != DQG_OK) {
        char msg[1500];
        snprintf(msg, sizeof msg, "%s", dqg_last_error());
        return onnx_node_fail(c, st, "input %d (%s): %s", i, what, msg);
    }
    return DQG_OK;
}

bool onnx_input_is_const(onnx_import *c, int i)
{
    onnx_value *v = onnx_input_value(c, i);
    return v && (v->kind == ONNX_VALUE_INITIALIZER || v->kind == ONNX_VALUE_CONSTANT);
}

dqg_status onnx_input_const(onnx_import *c, int i, const char *what, bool required,
                            const onnx_tensor **out)
{
    *out = NULL;
    onnx_value *v = onnx_input_value(c, i);
    if (!v)
        return required ? onnx_node_fail(c, DQG_PARSE_ERROR, "input %d (%s) is missing", i, what)
                        : DQG_OK;
    if (v->kind == ONNX_VALUE_INPUT)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "input %d (%s) is graph input '%s', but dqgraph needs its value "
                              "while building the graph; give the value with an input hint "
                              "(dqg_onnx_options.inputs; dqgraph tool: -i FILE.pb)",
                              i, what, v->name);
    if (v->kind == ONNX_VALUE_NODE)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "input %d (%s) '%s' is computed by another node, but dqgraph needs "
                              "its value while building the graph (an initializer or a Constant "
                              "node)",
                              i, what, v->name);
    if (v->kind == ONNX_VALUE_INITIALIZER) {
        dqg_status st = decode_value(c, v);
        if (st != DQG_OK) {
            char msg[1500];
            snprintf(msg, sizeof msg, "%s", dqg_last_error());
            return onnx_node_fail(c, st, "input %d (%s): %s", i, what, msg);
        }
    }
    *out = &v->value;
    return DQG_OK;
}

onnx_value *onnx_output_value(onnx_import *c, int i)
{
    const Onnx__NodeProto *n = c->node;
    if (i < 0 || (size_t)i >= n->n_output || !n->output[i] || !*n->output[i])
        return NULL;
    return value_named(c, n->output[i]);
}

dqg_status onnx_set_output(onnx_import *c, int i, dqg_tensor_id id)
{
    onnx_value *v = onnx_output_value(c, i);
    if (v)
        v->id = id;
    return DQG_OK;
}

dqg_status onnx_alias_output(onnx_import *c, int i, int j)
{
    onnx_value *v = onnx_output_value(c, i), *src = onnx_input_value(c, j);
    if (!v)
        return DQG_OK;
    if (!src)
        return onnx_node_fail(c, DQG_PARSE_ERROR, "input %d is missing", j);
    v->alias = (int32_t)(src - c->values);
    return DQG_OK;
}

dqg_status onnx_const_output(onnx_import *c, int i, onnx_tensor *t)
{
    onnx_value *v = onnx_output_value(c, i);
    if (!v) {
        onnx_tensor_release(t);
        return DQG_OK;
    }
    v->kind = ONNX_VALUE_CONSTANT;
    v->value = *t;
    v->decoded = true;
    memset(t, 0, sizeof *t);
    return DQG_OK;
}

/* ---- Names of ops and internal constants ---------------------------------- */

static bool name_free(const onnx_import *c, const char *name)
{
    if (onnx_names_get(&c->taken, name) >= 0 || onnx_names_get(&c->value_index, name) >= 0)
        return false;
    /* Multi-output ops name their outputs "<op>:<i>". */
    char buf[1200];
    for (int k = 0; k < 3; k++) {
        snprintf(buf, sizeof buf, "%s:%d", name, k);
        if (onnx_names_get(&c->taken, buf) >= 0 || onnx_names_get(&c->value_index, buf) >= 0)
            return false;
    }
    return true;
}

const char *onnx_op_name(onnx_import *c, const char *suffix)
{
    char base[1000], cand[1100];
    snprintf(base, sizeof base, "%s%s%s", c->node_base, suffix ? "/" : "", suffix ? suffix : "");
    snprintf(cand, sizeof cand, "%s", base);
    /* The search for a free "base_k" resumes after the last k handed out
     * for this base (kept as the base's value in `taken`), so that many
     * nodes of one name stay linear. */
    int32_t last = 0;
    if (!name_free(c, cand)) {
        int32_t seen = onnx_names_get(&c->taken, base);
        unsigned k = seen > 0 ? (unsigned)seen + 1 : 1;
        do
            snprintf(cand, sizeof cand, "%s_%u", base, k++);
        while (!name_free(c, cand));
        last = (int32_t)(k - 1);
        if (!onnx_names_put(&c->taken, base, last))
            goto oom;
    }
    if (c->n_owned == c->cap_owned) {
        size_t cap = c->cap_owned ? c->cap_owned * 2 : 64;
        char **p = realloc(c->owned_names, cap * sizeof *p);
        if (!p)
            goto oom;
        c->owned_names = p;
        c->cap_owned = cap;
    }
    size_t len = strlen(cand) + 1;
    char *copy = malloc(len);
    if (!copy || !onnx_names_put(&c->taken, cand, 0)) {
        free(copy);
        goto oom;
    }
    memcpy(copy, cand, len);
    c->owned_names[c->n_owned++] = copy;
    return copy;
oom:
    dqg_set_error(DQG_OUT_OF_MEMORY, "ONNX import: out of memory for the op name '%s'", cand);
    return NULL;
}

dqg_tensor_id onnx_add_constant(onnx_import *c, const char *suffix, dqg_dtype dtype, int rank,
                                const int64_t *dims, const void *data)
{
    const char *name = onnx_op_name(c, suffix);
    if (!name)
        return DQG_NONE;
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return dqg_constant(c->g, name, dtype, rank, dims, data, dqg_dtype_storage_size(dtype, n));
}

dqg_tensor_id onnx_add_scalar(onnx_import *c, const char *suffix, dqg_dtype dtype, float v)
{
    uint8_t bytes[8] = {0};
    dqg_dtype_encode(dtype, &v, 1, bytes, 0, true);
    return onnx_add_constant(c, suffix, dtype, 0, NULL, bytes);
}

onnx_shape onnx_tensor_shape(const onnx_import *c, dqg_tensor_id id)
{
    onnx_shape s = {.dtype = dqg_tensor_dtype(c->g, id)};
    s.rank = dqg_tensor_dims(c->g, id, s.dims);
    s.nelems = dqg_tensor_element_count(c->g, id);
    return s;
}

dqg_status onnx_require_float(onnx_import *c, int i, dqg_tensor_id id)
{
    dqg_dtype t = dqg_tensor_dtype(c->g, id);
    if (t == DQG_F32 || t == DQG_F16 || t == DQG_BF16)
        return DQG_OK;
    return onnx_node_fail(c, DQG_UNSUPPORTED,
                          "input %d has type %s; dqgraph implements %s for f32, f16 and bf16 only",
                          i, dqg_dtype_name(t), c->node->op_type);
}

/* ---- Attributes ------------------------------------------------------------- */

const Onnx__AttributeProto *onnx_attr(const onnx_import *c, const char *name)
{
    for (size_t i = 0; i < c->node->n_attribute; i++) {
        const Onnx__AttributeProto *a = c->node->attribute[i];
        if (a->name && strcmp(a->name, name) == 0)
            return a;
    }
    return NULL;
}

/* The attribute's type, inferred from the fields present when it is unset
 * (IR 0.0.1). */
static int attr_type(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return (int)a->type;
    if (a->has_i)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (a->has_f)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (a->has_s)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->t)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->n_ints)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_floats)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static dqg_status attr_type_error(onnx_import *c, const char *name, const char *expected)
{
    return onnx_node_fail(c, DQG_PARSE_ERROR, "attribute '%s' must be %s", name, expected);
}

dqg_status onnx_attr_int(onnx_import *c, const char *name, int64_t def, int64_t *out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = def;
    if (!a)
        return DQG_OK;
    if (attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        return attr_type_error(c, name, "an INT");
    *out = a->i;
    return DQG_OK;
}

dqg_status onnx_attr_float(onnx_import *c, const char *name, float def, float *out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = def;
    if (!a)
        return DQG_OK;
    if (attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        return attr_type_error(c, name, "a FLOAT");
    *out = a->f;
    return DQG_OK;
}

/* A list attribute of type `type` ("INTS", ...), or NULL when absent; an
 * untyped one is taken as an empty list of any type. */
static dqg_status list_attr(onnx_import *c, const char *name, int type, const char *type_name,
                            const Onnx__AttributeProto **out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = NULL;
    if (!a)
        return DQG_OK;
    int t = attr_type(a);
    bool empty = a->n_ints == 0 && a->n_floats == 0 && a->n_strings == 0;
    if (t != type && !(t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED && empty))
        return attr_type_error(c, name, type_name);
    *out = a;
    return DQG_OK;
}

dqg_status onnx_attr_ints(onnx_import *c, const char *name, const int64_t **vals, size_t *n,
                          bool *present)
{
    const Onnx__AttributeProto *a;
    dqg_status st = list_attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "INTS", &a);
    if (present)
        *present = onnx_attr(c, name) != NULL;
    *vals = a ? a->ints : NULL;
    *n = a ? a->n_ints : 0;
    return st;
}

dqg_status onnx_attr_floats(onnx_import *c, const char *name, const float **vals, size_t *n)
{
    const Onnx__AttributeProto *a;
    dqg_status st = list_attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, "FLOATS", &a);
    *vals = a ? a->floats : NULL;
    *n = a ? a->n_floats : 0;
    return st;
}

dqg_status onnx_attr_strings(onnx_import *c, const char *name, const ProtobufCBinaryData **vals,
                             size_t *n)
{
    const Onnx__AttributeProto *a;
    dqg_status st =
        list_attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS, "STRINGS", &a);
    *vals = a ? a->strings : NULL;
    *n = a ? a->n_strings : 0;
    return st;
}

dqg_status onnx_attr_string(onnx_import *c, const char *name, const char *def, char *buf,
                            size_t size)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    if (!a) {
        snprintf(buf, size, "%s", def);
        return DQG_OK;
    }
    if (attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return attr_type_error(c, name, "a STRING");
    if (a->s.len >= size || (a->s.len && memchr(a->s.data, 0, a->s.len)))
        return onnx_node_fail(c, DQG_PARSE_ERROR, "attribute '%s' is not a valid string", name);
    if (a->s.len)
        memcpy(buf, a->s.data, a->s.len);
    buf[a->s.len] = '\0';
    return DQG_OK;
}

dqg_status onnx_check_attrs(onnx_import *c, const char *const *known)
{
    for (size_t i = 0; i < c->node->n_attribute; i++) {
        const Onnx__AttributeProto *a = c->node->attribute[i];
        const char *name = a->name ? a->name : "";
        bool ok = false;
        for (int k = 0; known[k] && !ok; k++)
            ok = strcmp(known[k], name) == 0;
        if (!ok)
            return onnx_node_fail(c, DQG_UNSUPPORTED, "attribute '%s' is not supported", name);
        if (a->ref_attr_name && *a->ref_attr_name)
            return onnx_node_fail(c, DQG_PARSE_ERROR,
                                  "attribute '%s' refers to a function attribute outside a "
                                  "function",
                                  name);
    }
    return DQG_OK;
}

dqg_status onnx_check_arity(onnx_import *c, int min_in, int max_in, int min_out, int max_out)
{
    const Onnx__NodeProto *n = c->node;
    if ((int)n->n_input < min_in || (int)n->n_input > max_in)
        return onnx_node_fail(c, DQG_PARSE_ERROR, "has %zu inputs; expected %d to %d", n->n_input,
                              min_in, max_in);
    if ((int)n->n_output < min_out || (int)n->n_output > max_out)
        return onnx_node_fail(c, DQG_PARSE_ERROR, "has %zu outputs; expected %d to %d", n->n_output,
                              min_out, max_out);
    for (int i = 0; i < min_in; i++)
        if (!onnx_input_name(c, i))
            return onnx_node_fail(c, DQG_PARSE_ERROR, "input %d is required but empty", i);
    return DQG_OK;
}

/* ---- Operator lookup ---------------------------------------------------------- */

static const onnx_op_entry *find_op(const char *domain, const char *op_type)
{
    const char *d = is_default_domain(domain) ? "" : domain;
    const onnx_op_entry *tables[] = {onnx_quant_ops, onnx_nn_ops, onnx_more_ops, onnx_logic_ops,
                                     onnx_rnn_ops};
    size_t counts[] = {onnx_n_quant_ops, onnx_n_nn_ops, onnx_n_more_ops, onnx_n_logic_ops,
                       onnx_n_rnn_ops};
    for (int t = 0; t < 5; t++)
        for (size_t i = 0; i < counts[t]; i++)
            if (strcmp(tables[t][i].domain, d) == 0 && strcmp(tables[t][i].op_type, op_type) == 0)
                return &tables[t][i];
    return NULL;
}

/* ---- Structure: values, order, liveness ---------------------------------------- */

static dqg_status add_value(onnx_import *c, const char *name, onnx_value_kind kind,
                            int32_t producer, onnx_value **out)
{
    int32_t idx = c->n_values++;
    onnx_value *v = &c->values[idx];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    v->id = DQG_NONE;
    v->producer = producer;
    v->alias = -1;
    if (!onnx_names_put(&c->value_index, name, idx))
        return dqg_set_error(DQG_OUT_OF_MEMORY, "ONNX import: out of memory for the value '%s'",
                             name);
    *out = v;
    return DQG_OK;
}

static dqg_status check_shadowed_input(const Onnx__ValueInfoProto *vi, const Onnx__TensorProto *t)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type)
        return dqg_set_error(DQG_PARSE_ERROR,
                             "initializer '%s' shadows graph input '%s', which is not a tensor",
                             vi->name, vi->name);
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    char a[32], b[32];
    if (tt->has_elem_type && tt->elem_type != 0 && t->data_type != tt->elem_type)
        return dqg_set_error(DQG_PARSE_ERROR,
                             "initializer '%s' shadows graph input '%s' but has type %s, not the "
                             "input's %s",
                             vi->name, vi->name, onnx_dtype_name(t->data_type, a, sizeof a),
                             onnx_dtype_name(tt->elem_type, b, sizeof b));
    if (!tt->shape)
        return DQG_OK;
    bool same = tt->shape->n_dim == t->n_dims;
    for (size_t d = 0; same && d < t->n_dims; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        same = dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
               dim->dim_value == t->dims[d];
    }
    if (!same)
        return dqg_set_error(DQG_PARSE_ERROR,
                             "initializer '%s' shadows graph input '%s' but its shape (rank %zu) "
                             "differs from the input's declared shape (rank %zu)",
                             vi->name, vi->name, t->n_dims, tt->shape->n_dim);
    return DQG_OK;
}

static dqg_status collect_values(onnx_import *c)
{
    const Onnx__GraphProto *G = c->model->graph;
    size_t total = G->n_initializer + G->n_input;
    for (size_t i = 0; i < G->n_node; i++)
        total += G->node[i]->n_output;
    c->values = calloc(total ? total : 1, sizeof *c->values);
    if (!c->values)
        return dqg_set_error(DQG_OUT_OF_MEMORY,
                             "ONNX import: out of memory for the table of %zu values", total);
    onnx_value *v = NULL;
    dqg_status st;
    for (size_t i = 0; i < G->n_initializer; i++) {
        const Onnx__TensorProto *t = G->initializer[i];
        if (!t->name || !*t->name)
            return dqg_set_error(DQG_PARSE_ERROR, "initializer %zu has no name", i);
        if (value_named(c, t->name))
            return dqg_set_error(DQG_PARSE_ERROR, "two initializers are named '%s'", t->name);
        if ((st = add_value(c, t->name, ONNX_VALUE_INITIALIZER, -1, &v)) != DQG_OK)
            return st;
        v->proto = t;
    }
    for (size_t i = 0; i < G->n_input; i++) {
        const char *name = G->input[i]->name;
        if (!name || !*name)
            return dqg_set_error(DQG_PARSE_ERROR, "graph input %zu has no name", i);
        onnx_value *prev = value_named(c, name);
        if (prev && prev->kind == ONNX_VALUE_INITIALIZER) {
            /* IR >= 4: the initializer is the input's default; it wins, but
             * only if the input's declared type and shape agree with it. */
            dqg_status sst = check_shadowed_input(G->input[i], prev->proto);
            if (sst != DQG_OK)
                return sst;
            continue;
        }
        if (prev)
            return dqg_set_error(DQG_PARSE_ERROR, "two graph inputs are named '%s'", name);
        if ((st = add_value(c, name, ONNX_VALUE_INPUT, -1, &v)) != DQG_OK)
            return st;
        v->is_graph_input = true;
    }
    for (size_t n = 0; n < G->n_node; n++) {
        const Onnx__NodeProto *node = G->node[n];
        if (!node->op_type || !*node->op_type)
            return dqg_set_error(DQG_PARSE_ERROR, "node #%zu has no op_type", n);
        for (size_t o = 0; o < node->n_output; o++) {
            const char *name = node->output[o];
            if (!name || !*name)
                continue; /* an unused optional output */
            onnx_value *prev = value_named(c, name);
            if (prev) {
                char a[600], b[600];
                describe_node(c, (int32_t)n, a, sizeof a);
                if (prev->producer >= 0)
                    describe_node(c, prev->producer, b, sizeof b);
                else
                    snprintf(b, sizeof b, "a graph %s",
                             prev->kind == ONNX_VALUE_INPUT ? "input" : "initializer");
                return dqg_set_error(DQG_PARSE_ERROR,
                                     "value '%s' is produced twice: by %s and by %s", name, a, b);
            }
            if ((st = add_value(c, name, ONNX_VALUE_NODE, (int32_t)n, &v)) != DQG_OK)
                return st;
        }
    }
    for (size_t n = 0; n < G->n_node; n++) {
        const Onnx__NodeProto *node = G->node[n];
        for (size_t i = 0; i < node->n_input; i++) {
            if (!node->input[i] || !*node->input[i])
                continue;
            v = value_named(c, node->input[i]);
            if (!v) {
                char a[600];
                describe_node(c, (int32_t)n, a, sizeof a);
                return dqg_set_error(DQG_PARSE_ERROR,
                                     "%s: input %zu '%s' is neither a graph input, an initializer "
                                     "nor the output of a node",
                                     a, i, node->input[i]);
            }
            v->n_consumers++;
        }
    }
    for (size_t i = 0; i < G->n_output; i++) {
        const char *name = G->output[i]->name;
        if (!name || !(v = value_named(c, name)))
            return dqg_set_error(DQG_PARSE_ERROR,
                                 "graph output '%s' is neither a graph input, an initializer nor "
                                 "the output of a node",
                                 name ? name : "");
        v->is_graph_output = true;
    }
    return DQG_OK;
}

/* Kahn's algorithm, seeded and fed in file order so that the result is
 * deterministic and keeps the file's order when it is already topological. */
static dqg_status topological_order(onnx_import *c, int32_t *order)
{
    const Onnx__GraphProto *G = c->model->graph;
    int32_t n = (int32_t)G->n_node;
    int32_t *indeg = calloc((size_t)n + 1, sizeof *indeg), *start = calloc((size_t)n + 2, 4);
    size_t n_edges = 0;
    for (int32_t i = 0; i < n; i++)
        n_edges += G->node[i]->n_input;
    int32_t *edges = malloc((n_edges + 1) * sizeof *edges);
    dqg_status st = DQG_OK;
    if (!indeg || !start || !edges) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY,
                           "ONNX import: out of memory for the edges of %d nodes", (int)n);
        goto done;
    }
    /* Edges producer -> consumer, as a compressed adjacency list. */
    for (int32_t i = 0; i < n; i++)
        for (size_t k = 0; k < G->node[i]->n_input; k++) {
            const char *in = G->node[i]->input[k];
            onnx_value *v = in && *in ? value_named(c, in) : NULL;
            if (v && v->producer >= 0) {
                start[v->producer + 1]++;
                indeg[i]++;
            }
        }
    for (int32_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    int32_t *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!fill) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY,
                           "ONNX import: out of memory for the edges of %d nodes", (int)n);
        goto done;
    }
    for (int32_t i = 0; i < n; i++)
        for (size_t k = 0; k < G->node[i]->n_input; k++) {
            const char *in = G->node[i]->input[k];
            onnx_value *v = in && *in ? value_named(c, in) : NULL;
            if (v && v->producer >= 0)
                edges[start[v->producer] + fill[v->producer]++] = i;
        }
    free(fill);
    int32_t head = 0, tail = 0;
    for (int32_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            order[tail++] = i;
    while (head < tail) {
        int32_t p = order[head++];
        for (int32_t e = start[p]; e < start[p + 1]; e++)
            if (--indeg[edges[e]] == 0)
                order[tail++] = edges[e];
    }
    if (tail < n) {
        /* Walk back from any node left over until a node repeats: it lies on a cycle. */
        int32_t at = 0;
        while (indeg[at] == 0)
            at++;
        for (int32_t step = 0; step < n; step++) {
            int32_t next = -1;
            for (size_t k = 0; k < G->node[at]->n_input && next < 0; k++) {
                const char *in = G->node[at]->input[k];
                onnx_value *v = in && *in ? value_named(c, in) : NULL;
                if (v && v->producer >= 0 && indeg[v->producer] > 0)
                    next = v->producer;
            }
            if (next < 0)
                break;
            at = next;
        }
        char a[600];
        describe_node(c, at, a, sizeof a);
        st = dqg_set_error(DQG_PARSE_ERROR,
                           "the graph has a cycle: %s depends on its own output (%d of %d nodes "
                           "cannot be ordered)",
                           a, (int)(n - tail), (int)n);
    }
done:
    free(indeg);
    free(start);
    free(edges);
    return st;
}

/* Nodes that some graph output depends on. */
static dqg_status find_live(onnx_import *c, bool *live)
{
    const Onnx__GraphProto *G = c->model->graph;
    int32_t *stack = malloc((G->n_node + G->n_output + 1) * sizeof *stack);
    if (!stack)
        return dqg_set_error(DQG_OUT_OF_MEMORY,
                             "ONNX import: out of memory for the liveness walk of %zu nodes",
                             G->n_node);
    size_t top = 0;
    for (size_t i = 0; i < G->n_output; i++) {
        onnx_value *v = value_named(c, G->output[i]->name);
        if (v->producer >= 0 && !live[v->producer]) {
            live[v->producer] = true;
            stack[top++] = v->producer;
        }
    }
    while (top) {
        const Onnx__NodeProto *n = G->node[stack[--top]];
        for (size_t k = 0; k < n->n_input; k++) {
            onnx_value *v = n->input[k] && *n->input[k] ? value_named(c, n->input[k]) : NULL;
            if (v && v->producer >= 0 && !live[v->producer]) {
                live[v->producer] = true;
                stack[top++] = v->producer;
            }
        }
    }
    free(stack);
    return DQG_OK;
}

/* Marks the values that nodes read while building (looking through Identity). */
static void mark_build_time_inputs(onnx_import *c, const int32_t *order, const bool *live)
{
    const Onnx__GraphProto *G = c->model->graph;
    for (size_t k = 0; k < G->n_node; k++) {
        const Onnx__NodeProto *n = G->node[order[k]];
        const onnx_op_entry *e = find_op(n->domain, n->op_type);
        if (!live[order[k]] || !e || !e->const_inputs)
            continue;
        unsigned mask = e->const_inputs(domain_opset(c, n->domain));
        for (size_t i = 0; i < n->n_input && i < 16; i++)
            if ((mask >> i) & 1u) {
                onnx_value *v = *n->input[i] ? value_named(c, n->input[i]) : NULL;
                if (v)
                    v->needs_const = true;
            }
    }
    for (size_t k = G->n_node; k-- > 0;) {
        const Onnx__NodeProto *n = G->node[order[k]];
        if (strcmp(n->op_type, "Identity") != 0 || !is_default_domain(n->domain) ||
            n->n_input < 1 || n->n_output < 1 || !*n->output[0] || !*n->input[0])
            continue;
        onnx_value *out = value_named(c, n->output[0]), *in = value_named(c, n->input[0]);
        if (out && in && out->needs_const)
            in->needs_const = true;
    }
}

/* ---- Graph inputs ---------------------------------------------------------------- */

static void format_dims(char *buf, size_t size, int rank, const int64_t *dims)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < rank && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? "," : "", (long long)dims[d]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

/* The caller's hint for a graph input (by name, else by position), or NULL;
 * two hints that give the input different shapes are an error. */
static dqg_status find_hint(const onnx_import *c, const char *name, size_t position,
                            const dqg_onnx_input_hint **out)
{
    *out = NULL;
    if (!c->opts)
        return DQG_OK;
    for (size_t i = 0; i < c->opts->n_inputs; i++) {
        const dqg_onnx_input_hint *h = &c->opts->inputs[i];
        if (!(h->name ? strcmp(h->name, name) == 0 : h->index == position))
            continue;
        const dqg_onnx_input_hint *f = *out;
        if (!f) {
            *out = h;
        } else if (f->rank != h->rank ||
                   memcmp(f->dims, h->dims,
                          sizeof(int64_t) *
                              (size_t)(h->rank > 0 && h->rank <= DQG_MAX_RANK ? h->rank : 0))) {
            char a[200], b[200];
            format_dims(a, sizeof a, f->rank, f->dims);
            format_dims(b, sizeof b, h->rank, h->dims);
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "graph input '%s' is given two shapes: %s and %s", name, a, b);
        }
    }
    return DQG_OK;
}

static const dqg_onnx_dim_param *find_dim_param(const onnx_import *c, const char *name)
{
    if (!c->opts)
        return NULL;
    for (size_t i = 0; i < c->opts->n_dim_params; i++)
        if (c->opts->dim_params[i].name && strcmp(c->opts->dim_params[i].name, name) == 0)
            return &c->opts->dim_params[i];
    return NULL;
}

static dqg_status input_shape(onnx_import *c, const Onnx__ValueInfoProto *vi,
                              const dqg_onnx_input_hint *h, int *rank, int64_t *dims)
{
    const char *name = vi->name;
    const Onnx__TensorShapeProto *sp = vi->type->tensor_type->shape;
    int mrank = sp ? (int)sp->n_dim : -1;
    if (mrank > DQG_MAX_RANK)
        return dqg_set_error(DQG_UNSUPPORTED, "graph input '%s': rank %d is above dqgraph's %d",
                             name, mrank, DQG_MAX_RANK);
    if (h && h->rank >= 0) {
        if (h->rank > DQG_MAX_RANK || (mrank >= 0 && h->rank != mrank))
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "graph input '%s': the given shape has rank %d; the model's has "
                                 "rank %d",
                                 name, h->rank, mrank);
        for (int i = 0; i < h->rank; i++) {
            const Onnx__TensorShapeProto__Dimension *d = mrank >= 0 ? sp->dim[i] : NULL;
            if (h->dims[i] < 1)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "graph input '%s': dimension %d of the given shape is %lld; "
                                     "every dimension must be >= 1",
                                     name, i, (long long)h->dims[i]);
            if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                d->dim_value != h->dims[i])
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "graph input '%s': dimension %d is %lld in the model, but "
                                     "the given shape says %lld",
                                     name, i, (long long)d->dim_value, (long long)h->dims[i]);
            /* A symbol the caller also set must agree with the given shape. */
            const dqg_onnx_dim_param *p =
                d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                        d->dim_param
                    ? find_dim_param(c, d->dim_param)
                    : NULL;
            if (p && p->value != h->dims[i])
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "graph input '%s': dimension %d is '%s', set to %lld, but "
                                     "the given shape says %lld",
                                     name, i, d->dim_param, (long long)p->value,
                                     (long long)h->dims[i]);
            dims[i] = h->dims[i];
        }
        *rank = h->rank;
        return DQG_OK;
    }
    if (mrank < 0)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "graph input '%s' has no shape in the model; give its shape "
                             "(dqg_onnx_options.inputs; dqgraph tool: --shape %s=D0,D1,...)",
                             name, name);
    for (int i = 0; i < mrank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return dqg_set_error(DQG_PARSE_ERROR, "graph input '%s': dimension %d is %lld",
                                     name, i, (long long)d->dim_value);
            if (d->dim_value == 0)
                return dqg_set_error(DQG_UNSUPPORTED,
                                     "graph input '%s': dimension %d is 0; dqgraph tensors have "
                                     "at least one element per dimension",
                                     name, i);
            dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && *d->dim_param) {
            const dqg_onnx_dim_param *p = find_dim_param(c, d->dim_param);
            if (!p)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "graph input '%s': dimension %d is symbolic ('%s') and has no "
                                     "value; set it (dqg_onnx_options.dim_params; dqgraph tool: "
                                     "--dim %s=N) or give the input's shape",
                                     name, i, d->dim_param, d->dim_param);
            if (p->value < 1)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "graph input '%s': symbolic dimension '%s' is given the value "
                                     "%lld; it must be >= 1",
                                     name, d->dim_param, (long long)p->value);
            dims[i] = p->value;
        } else {
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "graph input '%s': dimension %d is unknown (neither a value nor "
                                 "a symbol); give the input's shape (dqg_onnx_options.inputs; "
                                 "dqgraph tool: --shape %s=D0,D1,...)",
                                 name, i, name);
        }
    }
    *rank = mrank;
    return DQG_OK;
}

static dqg_status declare_inputs(onnx_import *c)
{
    const Onnx__GraphProto *G = c->model->graph;
    size_t position = 0;
    char tb[32];
    for (size_t i = 0; i < G->n_input; i++) {
        const Onnx__ValueInfoProto *vi = G->input[i];
        onnx_value *v = value_named(c, vi->name);
        if (v->kind != ONNX_VALUE_INPUT)
            continue; /* shadowed by an initializer */
        const dqg_onnx_input_hint *h;
        dqg_status hst = find_hint(c, vi->name, position++, &h);
        if (hst != DQG_OK)
            return hst;
        if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !vi->type->tensor_type)
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "graph input '%s' is not a tensor (a sequence, map, optional or "
                                 "sparse value); dqgraph imports tensors only",
                                 vi->name);
        const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
        dqg_dtype dt = onnx_dtype_to_dqg(tt->elem_type);
        if (dt == DQG_DTYPE_UNDEF)
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "graph input '%s': data type %s is not supported by dqgraph",
                                 vi->name, onnx_dtype_name(tt->elem_type, tb, sizeof tb));
        int rank = 0;
        int64_t dims[DQG_MAX_RANK] = {0};
        dqg_status st = input_shape(c, vi, h, &rank, dims);
        if (st != DQG_OK)
            return st;
        if (v->needs_const && h && h->data) {
            onnx_tensor *t = &v->value;
            memset(t, 0, sizeof *t);
            t->dtype = dt;
            t->rank = rank;
            t->nelems = 1;
            for (int d = 0; d < rank; d++)
                t->nelems *= (t->dims[d] = dims[d]);
            t->nbytes = dqg_dtype_storage_size(dt, t->nelems);
            if (h->dtype != dt || h->size != t->nbytes)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "graph input '%s': the given value is %s of %zu bytes; the "
                                     "input is %s of %zu bytes",
                                     vi->name, dqg_dtype_name(h->dtype), h->size,
                                     dqg_dtype_name(dt), t->nbytes);
            t->data = malloc(t->nbytes ? t->nbytes : 1);
            if (!t->data)
                return dqg_set_error(DQG_OUT_OF_MEMORY,
                                     "graph input '%s': out of memory for its given value (%zu "
                                     "bytes)",
                                     vi->name, t->nbytes);
            memcpy(t->data, h->data, t->nbytes);
            v->kind = ONNX_VALUE_CONSTANT;
            v->decoded = true;
            v->is_graph_input = false;
            continue;
        }
        v->id = dqg_input(c->g, vi->name, dt, rank, dims);
        if (v->id == DQG_NONE)
            return dqg_set_error(c->g->sticky_status, "graph input '%s': %s", vi->name,
                                 dqg_last_error());
    }
    if (c->opts)
        for (size_t i = 0; i < c->opts->n_inputs; i++) {
            const dqg_onnx_input_hint *h = &c->opts->inputs[i];
            onnx_value *v = h->name ? value_named(c, h->name) : NULL;
            if (h->name && (!v || (v->kind != ONNX_VALUE_INPUT && !v->is_graph_input &&
                                   !(v->kind == ONNX_VALUE_CONSTANT && v->producer < 0))))
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "input hint '%s' names no graph input of the model", h->name);
            if (!h->name && h->index >= position)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "input hint for position %zu: the model has %zu graph inputs",
                                     h->index, position);
        }
    return DQG_OK;
}

/* ---- Nodes and outputs ---------------------------------------------------------- */

/* Every operator of the live nodes dqgraph does not import, reported at
 * once (type, domain, opset, how many nodes and the first of them), so
 * that a user sees the whole distance to a model in one run. */
static dqg_status check_operators(onnx_import *c, const bool *live)
{
    const Onnx__GraphProto *G = c->model->graph;
    enum { MAX_KINDS = 64 };
    struct {
        int32_t first;
        size_t count;
    } kinds[MAX_KINDS];
    size_t n_kinds = 0, more = 0;
    for (size_t k = 0; k < G->n_node; k++) {
        const Onnx__NodeProto *n = G->node[k];
        if (!live[k] || !n->op_type || domain_opset(c, n->domain) == 0 ||
            find_op(n->domain, n->op_type))
            continue;
        size_t i = 0;
        for (; i < n_kinds; i++) {
            const Onnx__NodeProto *f = G->node[kinds[i].first];
            if (strcmp(f->op_type, n->op_type) == 0 &&
                strcmp(domain_shown(f->domain), domain_shown(n->domain)) == 0)
                break;
        }
        if (i < n_kinds) {
            kinds[i].count++;
        } else if (n_kinds < MAX_KINDS) {
            kinds[n_kinds].first = (int32_t)k;
            kinds[n_kinds++].count = 1;
        } else {
            more++;
        }
    }
    if (!n_kinds)
        return DQG_OK;
    char msg[4096];
    size_t pos = (size_t)snprintf(msg, sizeof msg,
                                  "%zu operator%s not supported by dqgraph: ", n_kinds + more,
                                  n_kinds + more > 1 ? "s are" : " is");
    for (size_t i = 0; i < n_kinds && pos < sizeof msg; i++) {
        char desc[600];
        describe_node(c, kinds[i].first, desc, sizeof desc);
        pos += (size_t)snprintf(msg + pos, sizeof msg - pos, "%s%s: %zu node%s, the first %s",
                                i ? "; " : "", G->node[kinds[i].first]->op_type, kinds[i].count,
                                kinds[i].count > 1 ? "s" : "", desc);
    }
    if (more && pos < sizeof msg)
        snprintf(msg + pos, sizeof msg - pos, "; and %zu more", more);
    return dqg_set_error(DQG_UNSUPPORTED, "%s", msg);
}

/* ---- Folding shape computations at import ---------------------------------- */

/* Exported models compute shapes with small operators on constants
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape); operators that need
 * such a value while the graph is built (Reshape's shape, Slice's bounds)
 * need it as a constant. A node of these kinds whose every input is a
 * constant of at most FOLD_MAX_ELEMENTS elements is therefore imported
 * into a scratch graph, run there on the reference interpreter, and its
 * outputs become constants. Dequantize and the compute operators are never
 * folded here (the compile-time passes and cache handle constant weights). */
#define FOLD_MAX_ELEMENTS 4096

static bool foldable(onnx_import *c)
{
    static const char *const kinds[] = {
        "Gather",     "Unsqueeze", "Squeeze",   "Concat",    "Cast",      "Add", "Sub", "Mul",
        "Div",        "Slice",     "Reshape",   "Flatten",   "Transpose", "Neg", "Abs", "Sqrt",
        "ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin", "Pow",       "Max", "Min", "Floor",
        "Ceil",       "Round",     "Mod",       "Size",      "Tile",      NULL};
    /* Comparisons and selections on shapes (Where(Equal(shape, 0), ...)). */
    static const char *const selections[] = {
        "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
        "And",   "Or",   "Xor",         "Where",   "GatherElements", NULL};
    const Onnx__NodeProto *n = c->node;
    if (!is_default_domain(n->domain) || n->n_input == 0)
        return false;
    bool known = false;
    for (int k = 0; kinds[k] && !known; k++)
        known = strcmp(n->op_type, kinds[k]) == 0;
    for (int k = 0; selections[k] && !known; k++)
        known = strcmp(n->op_type, selections[k]) == 0;
    if (!known)
        return false;
    for (size_t i = 0; i < n->n_input; i++) {
        if (!onnx_input_name(c, (int)i))
            continue;
        onnx_value *v = onnx_input_value(c, (int)i);
        if (!v || (v->kind != ONNX_VALUE_INITIALIZER && v->kind != ONNX_VALUE_CONSTANT))
            return false;
        int64_t elems = 1;
        if (v->kind == ONNX_VALUE_CONSTANT || v->decoded) {
            elems = v->value.nelems;
        } else if (v->proto) {
            for (size_t d = 0; d < v->proto->n_dims && elems <= FOLD_MAX_ELEMENTS; d++)
                elems = v->proto->dims[d] < 0 ? FOLD_MAX_ELEMENTS + 1 : elems * v->proto->dims[d];
        }
        if (elems > FOLD_MAX_ELEMENTS)
            return false;
    }
    return true;
}

static dqg_status fold_node(onnx_import *c, const onnx_op_entry *e)
{
    const Onnx__NodeProto *n = c->node;
    dqg_graph *main_graph = c->g, *sg = NULL;
    if (dqg_graph_create(&sg) != DQG_OK)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    size_t ni = n->n_input, no = n->n_output;
    dqg_tensor_id *saved = malloc((ni + 1) * sizeof *saved);
    void **bufs = calloc(no + 1, sizeof *bufs);
    if (!saved || !bufs) {
        free(saved);
        free(bufs);
        dqg_graph_destroy(sg);
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    }
    /* The inputs' graph ids belong to the real graph: the scratch graph
     * gets its own constants, and the ids come back afterwards. */
    for (size_t i = 0; i < ni; i++) {
        onnx_value *v = onnx_input_name(c, (int)i) ? onnx_input_value(c, (int)i) : NULL;
        saved[i] = v ? v->id : DQG_NONE;
        if (v)
            v->id = DQG_NONE;
    }
    c->g = sg;
    dqg_status st = e->import(c);
    c->g = main_graph;
    for (size_t i = 0; i < ni; i++) {
        onnx_value *v = onnx_input_name(c, (int)i) ? onnx_input_value(c, (int)i) : NULL;
        if (v)
            v->id = saved[i];
    }
    /* Outputs the importer built ops for run on the reference. */
    dqg_buffer *ob = calloc(no + 1, sizeof *ob);
    size_t nb = 0;
    if (st == DQG_OK && !ob)
        st = onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    for (size_t o = 0; o < no && st == DQG_OK; o++) {
        onnx_value *v = onnx_output_value(c, (int)o);
        if (!v || v->kind != ONNX_VALUE_NODE || v->alias >= 0 || v->id == DQG_NONE)
            continue;
        if (dqg_output(sg, v->id, NULL) != DQG_OK) {
            st = onnx_builder_failed(c);
            break;
        }
        size_t bytes = dqg_tensor_byte_size(sg, v->id);
        if (!(bufs[o] = malloc(bytes ? bytes : 1))) {
            st = onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
            break;
        }
        ob[nb++] = (dqg_buffer){.id = v->id, .data = bufs[o], .size = bytes};
    }
    if (st == DQG_OK && nb > 0) {
        if ((st = dqg_graph_finalize(sg)) == DQG_OK)
            st = dqg_reference_run(sg, NULL, 0, ob, nb);
        if (st != DQG_OK) {
            char msg[1200];
            snprintf(msg, sizeof msg, "%s", dqg_last_error());
            st =
                onnx_node_fail(c, st, "computing it at import (its inputs are constants): %s", msg);
        }
    }
    for (size_t o = 0; o < no && st == DQG_OK; o++) {
        onnx_value *v = onnx_output_value(c, (int)o);
        if (!bufs[o] || !v)
            continue;
        onnx_tensor t = {.dtype = dqg_tensor_dtype(sg, v->id)};
        t.rank = dqg_tensor_dims(sg, v->id, t.dims);
        t.nelems = dqg_tensor_element_count(sg, v->id);
        t.nbytes = dqg_tensor_byte_size(sg, v->id);
        t.data = bufs[o];
        bufs[o] = NULL;
        v->id = DQG_NONE;
        st = onnx_const_output(c, (int)o, &t);
    }
    /* On failure the outputs must not point into the scratch graph. */
    for (size_t o = 0; o < no; o++) {
        onnx_value *v = onnx_output_value(c, (int)o);
        if (v && v->kind == ONNX_VALUE_NODE && st != DQG_OK)
            v->id = DQG_NONE;
        free(bufs[o]);
    }
    free(ob);
    free(bufs);
    free(saved);
    dqg_graph_destroy(sg);
    return st;
}

static dqg_status import_node(onnx_import *c, int32_t index)
{
    const Onnx__NodeProto *n = c->model->graph->node[index];
    c->node = n;
    c->node_index = index;
    c->node_opset = domain_opset(c, n->domain);
    char base[600];
    if (n->name && *n->name)
        snprintf(base, sizeof base, "%s", n->name);
    else
        snprintf(base, sizeof base, "%s_%d", n->op_type, (int)index);
    c->node_base = base;
    if (c->node_opset == 0)
        return onnx_node_fail(c, DQG_PARSE_ERROR, "the model imports no opset for domain '%s'",
                              domain_shown(n->domain));
    const onnx_op_entry *e = find_op(n->domain, n->op_type);
    if (!e)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "operator %s (domain '%s', opset %lld) is not supported by dqgraph",
                              n->op_type, domain_shown(n->domain), (long long)c->node_opset);
    dqg_status st = foldable(c) ? fold_node(c, e) : e->import(c);
    if (st != DQG_OK)
        return st;
    for (size_t o = 0; o < n->n_output; o++) {
        onnx_value *v = onnx_output_value(c, (int)o);
        if (v && v->id == DQG_NONE && v->alias < 0 && v->kind == ONNX_VALUE_NODE &&
            (v->n_consumers > 0 || v->is_graph_output))
            return onnx_node_fail(c, DQG_UNSUPPORTED, "output %zu ('%s') is not produced", o,
                                  v->name);
    }
    c->node_base = NULL;
    return DQG_OK;
}

static bool is_graph_input_id(const dqg_graph *g, dqg_tensor_id id)
{
    for (size_t i = 0; i < dqg_graph_input_count(g); i++)
        if (dqg_graph_input_id(g, i) == id)
            return true;
    return false;
}

static bool is_output_id(const dqg_graph *g, dqg_tensor_id id)
{
    for (size_t i = 0; i < dqg_graph_output_count(g); i++)
        if (dqg_graph_output_id(g, i) == id)
            return true;
    return false;
}

static dqg_status check_declared_output(onnx_import *c, const Onnx__ValueInfoProto *vi,
                                        dqg_tensor_id id)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type)
        return DQG_OK;
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    onnx_shape s = onnx_tensor_shape(c, id);
    char tb[32];
    if (tt->has_elem_type && tt->elem_type != 0 && onnx_dtype_to_dqg(tt->elem_type) != s.dtype)
        return dqg_set_error(
            DQG_PARSE_ERROR, "graph output '%s': the model declares type %s, the graph computes %s",
            vi->name, onnx_dtype_name(tt->elem_type, tb, sizeof tb), dqg_dtype_name(s.dtype));
    if (!tt->shape)
        return DQG_OK;
    char sb[DQG_DIMS_BUF];
    if ((int)tt->shape->n_dim != s.rank)
        return dqg_set_error(DQG_PARSE_ERROR,
                             "graph output '%s': the model declares rank %zu, the graph computes "
                             "shape %s",
                             vi->name, tt->shape->n_dim,
                             dqg_format_dims(sb, sizeof sb, s.rank, s.dims));
    for (int i = 0; i < s.rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value != s.dims[i])
            return dqg_set_error(DQG_PARSE_ERROR,
                                 "graph output '%s': the model declares dimension %d as %lld, the "
                                 "graph computes shape %s",
                                 vi->name, i, (long long)d->dim_value,
                                 dqg_format_dims(sb, sizeof sb, s.rank, s.dims));
    }
    return DQG_OK;
}

static dqg_status mark_outputs(onnx_import *c)
{
    const Onnx__GraphProto *G = c->model->graph;
    if (G->n_output == 0)
        return dqg_set_error(DQG_PARSE_ERROR, "the graph has no outputs");
    for (size_t i = 0; i < G->n_output; i++) {
        const Onnx__ValueInfoProto *vi = G->output[i];
        onnx_value *v = resolve(c, value_named(c, vi->name));
        dqg_tensor_id id;
        dqg_status st = materialize(c, v, &id);
        if (st != DQG_OK)
            return st;
        if (dqg_tensor_is_constant(c->g, id) || is_graph_input_id(c->g, id) ||
            is_output_id(c->g, id)) {
            /* A graph output must be computed by an op: copy it, and give
             * the copy the output's name. */
            char base[600];
            snprintf(base, sizeof base, "%s", vi->name);
            bool same = strcmp(c->g->tensors[id].name, vi->name) == 0;
            if (same && is_output_id(c->g, id))
                return dqg_set_error(DQG_INVALID_ARGUMENT, "graph output '%s' is listed twice",
                                     vi->name);
            if (same && is_graph_input_id(c->g, id))
                return dqg_set_error(DQG_UNSUPPORTED,
                                     "graph output '%s' is the graph input of that name itself; "
                                     "dqgraph's inputs and outputs are distinct tensors",
                                     vi->name);
            c->node_base = base;
            const char *name = onnx_op_name(c, "copy");
            /* A constant holding the output's name (a Constant node or an
             * initializer listed as an output) gives that name up. */
            const char *cname = same ? onnx_op_name(c, "value") : NULL;
            c->node_base = NULL;
            if (!name || (same && !cname))
                return DQG_OUT_OF_MEMORY;
            if (same) {
                char *n = strdup(cname);
                if (!n)
                    return dqg_set_error(DQG_OUT_OF_MEMORY,
                                         "graph output '%s': out of memory for its name", vi->name);
                free(c->g->tensors[id].name);
                c->g->tensors[id].name = n;
            }
            onnx_shape s = onnx_tensor_shape(c, id);
            id = dqg_reshape(c->g, name, id, s.rank, s.dims);
            if (id == DQG_NONE)
                return dqg_set_error(c->g->sticky_status, "graph output '%s': %s", vi->name,
                                     dqg_last_error());
        }
        if ((st = dqg_output(c->g, id, vi->name)) != DQG_OK)
            return dqg_set_error(st, "graph output '%s': %s", vi->name, dqg_last_error());
        if ((st = check_declared_output(c, vi, id)) != DQG_OK)
            return st;
    }
    return DQG_OK;
}

static dqg_status read_opsets(onnx_import *c)
{
    const Onnx__ModelProto *m = c->model;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->has_version || o->version < 1)
            return dqg_set_error(DQG_PARSE_ERROR,
                                 "opset_import of domain '%s' has no valid version",
                                 domain_shown(o->domain));
        if (o->version > INT32_MAX)
            return dqg_set_error(DQG_PARSE_ERROR,
                                 "opset_import of domain '%s' has version %lld, above 2^31-1",
                                 domain_shown(o->domain), (long long)o->version);
        if (is_default_domain(o->domain))
            c->opset = o->version > c->opset ? o->version : c->opset;
        else if (strcmp(o->domain, QUARK_DOMAIN) == 0)
            c->quark_opset = o->version;
    }
    return DQG_OK;
}

/* One symbol given two values by the caller is an error. */
static dqg_status check_dim_params(const dqg_onnx_options *o)
{
    for (size_t i = 0; o && i < o->n_dim_params; i++)
        for (size_t j = 0; j < i; j++) {
            const dqg_onnx_dim_param *a = &o->dim_params[j], *b = &o->dim_params[i];
            if (a->name && b->name && strcmp(a->name, b->name) == 0 && a->value != b->value)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "dimension parameter '%s' is given two values: %lld and %lld",
                                     a->name, (long long)a->value, (long long)b->value);
        }
    return DQG_OK;
}

static void release(onnx_import *c)
{
    for (int32_t i = 0; i < c->n_values; i++)
        onnx_tensor_release(&c->values[i].value);
    free(c->values);
    onnx_names_free(&c->value_index);
    onnx_names_free(&c->taken);
    for (size_t i = 0; i < c->n_owned; i++)
        free(c->owned_names[i]);
    free(c->owned_names);
}

static dqg_status import_model(const Onnx__ModelProto *m, const char *base_dir,
                               const dqg_onnx_options *opts, uint64_t limit, dqg_graph **out)
{
    onnx_import c = {.model = m, .opts = opts, .ext = {base_dir, limit}};
    if (!m->graph)
        return dqg_set_error(DQG_PARSE_ERROR, "the model has no graph");
    uint64_t max_nodes = opts && opts->max_nodes ? opts->max_nodes : DQG_ONNX_DEFAULT_MAX_NODES;
    if ((uint64_t)m->graph->n_node > max_nodes)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "the model has %zu nodes, above the limit of %llu "
                             "(dqg_onnx_options.max_nodes)",
                             m->graph->n_node, (unsigned long long)max_nodes);
    if (m->graph->n_sparse_initializer)
        return dqg_set_error(DQG_UNSUPPORTED, "sparse initializers ('%s') are not supported",
                             m->graph->sparse_initializer[0]->values &&
                                     m->graph->sparse_initializer[0]->values->name
                                 ? m->graph->sparse_initializer[0]->values->name
                                 : "");
    dqg_status st = check_dim_params(opts);
    if (st == DQG_OK)
        st = read_opsets(&c);
    int32_t *order = NULL;
    bool *live = NULL;
    if (st == DQG_OK)
        st = collect_values(&c);
    if (st == DQG_OK) {
        size_t n = m->graph->n_node;
        order = malloc((n + 1) * sizeof *order);
        live = calloc(n + 1, sizeof *live);
        if (!order || !live)
            st = dqg_set_error(DQG_OUT_OF_MEMORY,
                               "ONNX import: out of memory for the order of %zu nodes", n);
    }
    if (st == DQG_OK)
        st = topological_order(&c, order);
    if (st == DQG_OK)
        st = find_live(&c, live);
    if (st == DQG_OK)
        st = check_operators(&c, live);
    if (st == DQG_OK) {
        mark_build_time_inputs(&c, order, live);
        st = dqg_graph_create(&c.g);
    }
    if (st == DQG_OK)
        st = declare_inputs(&c);
    for (size_t k = 0; st == DQG_OK && k < m->graph->n_node; k++)
        if (live[order[k]])
            st = import_node(&c, order[k]);
    if (st == DQG_OK)
        st = mark_outputs(&c);
    if (st == DQG_OK)
        st = dqg_graph_finalize(c.g);
    free(order);
    free(live);
    release(&c);
    if (st != DQG_OK) {
        dqg_graph_destroy(c.g);
        return st;
    }
    *out = c.g;
    return DQG_OK;
}

static uint64_t size_limit(const dqg_onnx_options *opts)
{
    return opts && opts->max_model_bytes ? opts->max_model_bytes : DQG_ONNX_DEFAULT_MAX_MODEL_BYTES;
}

/* Decodes `*bytes` (freed as soon as they are decoded when `owned`: a
 * file's bytes need not stay beside the decoded model and the graph) and
 * imports the model. */
static dqg_status load_bytes(const uint8_t **bytes, size_t size, bool owned, const char *base_dir,
                             const dqg_onnx_options *opts, dqg_graph **out)
{
    uint64_t limit = size_limit(opts);
    if ((uint64_t)size > limit)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "ONNX model of %zu bytes exceeds the limit of %llu bytes", size,
                             (unsigned long long)limit);
    dqg_status st = onnx_wire_check(&onnx__model_proto__descriptor, *bytes, size, "ONNX model");
    if (st != DQG_OK)
        return st;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, *bytes);
    if (owned) {
        free((void *)*bytes);
        *bytes = NULL;
    }
    if (!m)
        return dqg_set_error(DQG_PARSE_ERROR,
                             "not a valid ONNX model: the %zu bytes do not decode as a ModelProto "
                             "(truncated or corrupt protobuf)",
                             size);
    st = import_model(m, base_dir, opts, limit - (uint64_t)size, out);
    onnx__model_proto__free_unpacked(m, NULL);
    return st;
}

dqg_status dqg_onnx_load_memory(const void *data, size_t size, const char *base_dir,
                                const dqg_onnx_options *opts, dqg_graph **out)
{
    if (out)
        *out = NULL;
    if (!out || (!data && size))
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_onnx_load_memory: out or data is NULL");
    const uint8_t *bytes = data;
    return load_bytes(&bytes, size, false, base_dir, opts, out);
}

dqg_status dqg_onnx_load_file(const char *path, const dqg_onnx_options *opts, dqg_graph **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_onnx_load_file: path or out is NULL");
    uint8_t *bytes;
    size_t n;
    dqg_status st = onnx_read_file(path, size_limit(opts), &bytes, &n);
    if (st != DQG_OK)
        return st;
    size_t len = strlen(path);
    char *dir = malloc(len + 2);
    if (!dir) {
        free(bytes);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "dqg_onnx_load_file: out of memory");
    }
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, len + 2, ".");
    else if (slash == path)
        snprintf(dir, len + 2, "/");
    else
        snprintf(dir, len + 2, "%.*s", (int)(slash - path), path);
    const uint8_t *owned = bytes;
    st = load_bytes(&owned, n, true, dir, opts, out);
    if (st != DQG_OK) {
        char msg[2000];
        snprintf(msg, sizeof msg, "%s", dqg_last_error());
        dqg_set_error(st, "%s: %s", path, msg);
    }
    free(dir);
    free((void *)owned);
    return st;
}
