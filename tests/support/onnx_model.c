#include "support/onnx_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tm_model {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    void **allocs;
    size_t n_allocs, cap_allocs;
};

static void *tm_alloc(tm_model *m, size_t size)
{
    if (m->n_allocs == m->cap_allocs) {
        m->cap_allocs = m->cap_allocs ? 2 * m->cap_allocs : 64;
        m->allocs = realloc(m->allocs, m->cap_allocs * sizeof *m->allocs);
        if (!m->allocs)
            abort();
    }
    void *p = calloc(1, size ? size : 1);
    if (!p)
        abort();
    m->allocs[m->n_allocs++] = p;
    return p;
}

static char *tm_strdup(tm_model *m, const char *s)
{
    char *p = tm_alloc(m, strlen(s) + 1);
    memcpy(p, s, strlen(s) + 1);
    return p;
}

/* Appends `item` to a protobuf-c repeated field (pointer array + count).
 * Arrays made here hold the next power of two of elements, so they grow
 * by doubling: a model of a million nodes stays linear. */
static void push(tm_model *m, void ***arr, size_t *n, void *item)
{
    if ((*n & (*n - 1)) == 0) { /* 0 or a power of two: full */
        void **grown = tm_alloc(m, (*n ? 2 * *n : 1) * sizeof *grown);
        if (*n)
            memcpy(grown, *arr, *n * sizeof *grown);
        *arr = grown;
    }
    (*arr)[(*n)++] = item;
}
#define PUSH(m, arr, n, item) push(m, (void ***)&(arr), &(n), item)

tm_model *tm_new(int64_t opset)
{
    tm_model *m = calloc(1, sizeof *m);
    if (!m)
        abort();
    onnx__model_proto__init(&m->model);
    onnx__graph_proto__init(&m->graph);
    m->model.has_ir_version = 1;
    m->model.ir_version = 8;
    m->model.graph = &m->graph;
    m->graph.name = tm_strdup(m, "test");
    if (opset > 0)
        tm_opset(m, "", opset);
    return m;
}

void tm_free(tm_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_allocs; i++)
        free(m->allocs[i]);
    free(m->allocs);
    free(m);
}

void tm_opset(tm_model *m, const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = tm_alloc(m, sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = tm_strdup(m, domain);
    o->has_version = 1;
    o->version = version;
    PUSH(m, m->model.opset_import, m->model.n_opset_import, o);
}

static Onnx__ValueInfoProto *value_info(tm_model *m, const char *name, int32_t type, int rank,
                                        const int64_t *dims, const char *sym)
{
    Onnx__ValueInfoProto *v = tm_alloc(m, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = tm_strdup(m, name);
    if (type == 0 && rank < 0)
        return v;
    Onnx__TypeProto *t = tm_alloc(m, sizeof *t);
    onnx__type_proto__init(t);
    Onnx__TypeProto__Tensor *tt = tm_alloc(m, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = type != 0;
    tt->elem_type = type;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    v->type = t;
    if (rank >= 0) {
        Onnx__TensorShapeProto *s = tm_alloc(m, sizeof *s);
        onnx__tensor_shape_proto__init(s);
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = tm_alloc(m, sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] == -1 && sym) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = tm_strdup(m, sym);
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            }
            PUSH(m, s->dim, s->n_dim, d);
        }
        tt->shape = s;
    }
    return v;
}

void tm_input(tm_model *m, const char *name, int32_t onnx_type, int rank, const int64_t *dims,
              const char *sym)
{
    PUSH(m, m->graph.input, m->graph.n_input, value_info(m, name, onnx_type, rank, dims, sym));
}

void tm_output(tm_model *m, const char *name, int32_t onnx_type, int rank, const int64_t *dims)
{
    PUSH(m, m->graph.output, m->graph.n_output, value_info(m, name, onnx_type, rank, dims, NULL));
}

static Onnx__TensorProto *tensor(tm_model *m, const char *name, int32_t type, int rank,
                                 const int64_t *dims)
{
    Onnx__TensorProto *t = tm_alloc(m, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = tm_strdup(m, name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)rank;
    t->dims = tm_alloc(m, (size_t)(rank ? rank : 1) * sizeof *t->dims);
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    return t;
}

Onnx__TensorProto *tm_init(tm_model *m, const char *name, int32_t onnx_type, int rank,
                           const int64_t *dims, const void *raw, size_t nbytes)
{
    Onnx__TensorProto *t = tensor(m, name, onnx_type, rank, dims);
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = tm_alloc(m, nbytes);
    if (nbytes)
        memcpy(t->raw_data.data, raw, nbytes);
    PUSH(m, m->graph.initializer, m->graph.n_initializer, t);
    return t;
}

Onnx__TensorProto *tm_init_external(tm_model *m, const char *name, int32_t onnx_type, int rank,
                                    const int64_t *dims, const char *location)
{
    Onnx__TensorProto *t = tensor(m, name, onnx_type, rank, dims);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    Onnx__StringStringEntryProto *e = tm_alloc(m, sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = tm_strdup(m, "location");
    e->value = tm_strdup(m, location);
    PUSH(m, t->external_data, t->n_external_data, e);
    PUSH(m, m->graph.initializer, m->graph.n_initializer, t);
    return t;
}

static void split(tm_model *m, const char *list, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!list || !*list)
        return;
    char *copy = tm_strdup(m, list);
    for (char *p = copy;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        PUSH(m, *out, *n, p);
        if (!comma)
            break;
        p = comma + 1;
    }
}

Onnx__NodeProto *tm_node(tm_model *m, const char *op_type, const char *domain, const char *name,
                         const char *inputs, const char *outputs)
{
    Onnx__NodeProto *n = tm_alloc(m, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = tm_strdup(m, op_type);
    if (domain)
        n->domain = tm_strdup(m, domain);
    if (name)
        n->name = tm_strdup(m, name);
    split(m, inputs, &n->input, &n->n_input);
    split(m, outputs, &n->output, &n->n_output);
    PUSH(m, m->graph.node, m->graph.n_node, n);
    return n;
}

static Onnx__AttributeProto *attr(tm_model *m, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = tm_alloc(m, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = tm_strdup(m, name);
    a->has_type = 1;
    a->type = type;
    PUSH(m, n->attribute, n->n_attribute, a);
    return a;
}

void tm_attr_int(tm_model *m, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void tm_attr_float(tm_model *m, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void tm_attr_ints(tm_model *m, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t k)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = k;
    a->ints = tm_alloc(m, (k ? k : 1) * sizeof *a->ints);
    if (k)
        memcpy(a->ints, v, k * sizeof *v);
}

void tm_attr_floats(tm_model *m, Onnx__NodeProto *n, const char *name, const float *v, size_t k)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = k;
    a->floats = tm_alloc(m, (k ? k : 1) * sizeof *a->floats);
    if (k)
        memcpy(a->floats, v, k * sizeof *v);
}

void tm_attr_strings(tm_model *m, Onnx__NodeProto *n, const char *name, const char *const *v,
                     size_t k)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = k;
    a->strings = tm_alloc(m, (k ? k : 1) * sizeof *a->strings);
    for (size_t i = 0; i < k; i++) {
        a->strings[i].len = strlen(v[i]);
        a->strings[i].data = (uint8_t *)tm_strdup(m, v[i]);
    }
}

void tm_attr_string(tm_model *m, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)tm_strdup(m, v);
}

Onnx__GraphProto *tm_graph(tm_model *m)
{
    return &m->graph;
}

static char *join(tm_model *m, char *const *names, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(names[i]) + 1;
    char *s = tm_alloc(m, len), *p = s;
    for (size_t i = 0; i < n; i++) {
        if (i)
            *p++ = ',';
        memcpy(p, names[i], strlen(names[i]));
        p += strlen(names[i]);
    }
    *p = '\0';
    return s;
}

Onnx__NodeProto *tm_copy_node(tm_model *m, const Onnx__NodeProto *n)
{
    Onnx__NodeProto *c = tm_node(m, n->op_type, n->domain, n->name, join(m, n->input, n->n_input),
                                 join(m, n->output, n->n_output));
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
            tm_attr_int(m, c, a->name, a->i);
        else if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
            tm_attr_ints(m, c, a->name, a->ints, a->n_ints);
        else if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
            tm_attr_float(m, c, a->name, a->f);
    }
    return c;
}

uint8_t *tm_pack(tm_model *m, size_t *size)
{
    *size = onnx__model_proto__get_packed_size(&m->model);
    uint8_t *buf = malloc(*size ? *size : 1);
    if (!buf)
        abort();
    onnx__model_proto__pack(&m->model, buf);
    return buf;
}

dqg_status tm_load(tm_model *m, const dqg_onnx_options *opts, dqg_graph **g)
{
    size_t n;
    uint8_t *bytes = tm_pack(m, &n);
    *g = NULL;
    dqg_status st = dqg_onnx_load_memory(bytes, n, NULL, opts, g);
    free(bytes);
    return st;
}

int tm_write(tm_model *m, const char *path)
{
    size_t n;
    uint8_t *buf = tm_pack(m, &n);
    FILE *f = fopen(path, "wb");
    int rc = !f || fwrite(buf, 1, n, f) != n;
    if (f && fclose(f) != 0)
        rc = 1;
    free(buf);
    return rc;
}
