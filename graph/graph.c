/* The graph container: creation, tensors (inputs, constants, op outputs),
 * the sticky-error builder protocol, finalize, and introspection. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "graph/graph_internal.h"
#include "graph/name_index.h"

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* Grows an array so that one more element fits. */
static bool grow(void **array, int32_t *cap, int32_t count, size_t elem)
{
    if (count < *cap)
        return true;
    int32_t new_cap = *cap ? *cap * 2 : 16;
    if (new_cap < *cap || (size_t)new_cap > SIZE_MAX / elem)
        return false;
    void *p = realloc(*array, (size_t)new_cap * elem);
    if (!p)
        return false;
    *array = p;
    *cap = new_cap;
    return true;
}

struct dqg_graph_names {
    dqg_name_index tensors; /* name -> tensor id (a hint; see name_index.h) */
    dqg_name_index ops;     /* names of ops */
};

void dqg_graph_free_names(dqg_graph *g)
{
    if (g->names) {
        dqg_name_index_free(&g->names->tensors);
        dqg_name_index_free(&g->names->ops);
        free(g->names);
        g->names = NULL;
    }
}

/* Records a name; without memory the index is dropped and lookups become
 * linear (still correct). */
static void index_tensor(dqg_graph *g, const char *name, dqg_tensor_id id)
{
    if (g->names && !dqg_name_index_add(&g->names->tensors, name, id))
        dqg_graph_free_names(g);
}

static void index_op(dqg_graph *g, const char *name)
{
    if (g->names && name && !dqg_name_index_add(&g->names->ops, name, 0))
        dqg_graph_free_names(g);
}

void dqg_graph_index_names(dqg_graph *g)
{
    dqg_graph_free_names(g);
    g->names = calloc(1, sizeof *g->names);
    for (int32_t i = 0; i < g->n_tensors && g->names; i++)
        index_tensor(g, g->tensors[i].name, i);
    for (int32_t i = 0; i < g->n_ops && g->names; i++)
        index_op(g, g->ops[i].name);
}

dqg_status dqg_graph_create(dqg_graph **out)
{
    if (!out)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_graph_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "dqg_graph_create: out of memory");
    (*out)->names = calloc(1, sizeof *(*out)->names); /* NULL: linear lookups */
    return DQG_OK;
}

void dqg_graph_destroy(dqg_graph *g)
{
    if (!g)
        return;
    for (int32_t i = 0; i < g->n_tensors; i++) {
        free(g->tensors[i].name);
        if (!g->tensors[i].borrowed)
            free(g->tensors[i].data);
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        free(g->ops[i].name);
        dqg_op_free_io(&g->ops[i]);
    }
    for (int32_t i = 0; i < g->n_warnings; i++)
        free(g->warnings[i]);
    free(g->tensors);
    free(g->ops);
    free(g->inputs);
    free(g->outputs);
    free(g->warnings);
    dqg_graph_free_names(g);
    free(g);
}

/* ---- Sticky errors ------------------------------------------------------- */

static void make_sticky(dqg_graph *g, dqg_status status)
{
    if (g->sticky_status != DQG_OK)
        return;
    g->sticky_status = status;
    snprintf(g->sticky_message, sizeof g->sticky_message, "%s", dqg_last_error());
}

dqg_tensor_id dqg_graph_fail(dqg_graph *g, dqg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dqg_set_error_v(status, fmt, ap);
    va_end(ap);
    if (g)
        make_sticky(g, status);
    return DQG_NONE;
}

bool dqg_graph_can_build(dqg_graph *g, const char *op_kind, const char *name)
{
    if (!g) {
        dqg_set_error(DQG_INVALID_ARGUMENT, "%s '%s': graph is NULL", op_kind,
                      dqg_op_display_name(name));
        return false;
    }
    if (g->sticky_status != DQG_OK) {
        dqg_set_error(g->sticky_status, "%s", g->sticky_message);
        return false;
    }
    if (g->finalized) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': graph is already finalized", op_kind,
                       dqg_op_display_name(name));
        return false;
    }
    return true;
}

bool dqg_graph_check_input(dqg_graph *g, const char *op_kind, const char *op_name, int index,
                           const char *what, dqg_tensor_id id, bool optional)
{
    if (id == DQG_NONE && optional)
        return true;
    if (id < 0 || id >= g->n_tensors) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': input %d (%s): unknown tensor id %d",
                       op_kind, dqg_op_display_name(op_name), index, what, (int)id);
        return false;
    }
    return true;
}

/* ---- Names --------------------------------------------------------------- */

typedef struct name_query {
    const dqg_graph *g;
    const char *name;
} name_query;

static bool tensor_is_named(int32_t id, const void *ctx)
{
    const name_query *q = ctx;
    return id >= 0 && id < q->g->n_tensors && strcmp(q->g->tensors[id].name, q->name) == 0;
}

static dqg_tensor_id find_tensor(const dqg_graph *g, const char *name)
{
    if (g->names) {
        name_query q = {g, name};
        int32_t id = dqg_name_index_find(&g->names->tensors, name, tensor_is_named, &q);
        return id >= 0 ? id : DQG_NONE;
    }
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return i;
    return DQG_NONE;
}

/* With the index: whether any op ever had this name (an op removed by a
 * pass keeps its name taken, which only changes generated names). */
static bool op_name_taken(const dqg_graph *g, const char *name)
{
    if (g->names)
        return dqg_name_index_contains(&g->names->ops, name);
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].name && strcmp(g->ops[i].name, name) == 0)
            return true;
    return false;
}

/* A tensor name that is not taken yet, derived from `base`. */
static char *unique_tensor_name(dqg_graph *g, const char *base)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", base);
    while (find_tensor(g, buf) != DQG_NONE)
        snprintf(buf, sizeof buf, "%s#%u", base, ++g->name_counter);
    return dup_string(buf);
}

char *dqg_format_dims(char *buf, size_t size, int rank, const int64_t *dims)
{
    size_t pos = 0;
    pos += (size_t)snprintf(buf + pos, size - pos, "[");
    for (int i = 0; i < rank && pos < size; i++)
        pos += (size_t)snprintf(buf + pos, size - pos, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (pos < size)
        snprintf(buf + pos, size - pos, "]");
    return buf;
}

int64_t dqg_check_shape(dqg_graph *g, const char *who, int rank, const int64_t *dims)
{
    if (rank < 0 || rank > DQG_MAX_RANK) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s: rank %d is outside [0, %d]", who, rank,
                       DQG_MAX_RANK);
        return -1;
    }
    if (rank > 0 && !dims) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s: dims is NULL for rank %d", who, rank);
        return -1;
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 1) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s: dimension %d is %lld; every dimension must be >= 1", who, i,
                           (long long)dims[i]);
            return -1;
        }
        if (dims[i] > DQG_MAX_ELEMENTS / n) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s: element count overflows the limit of %lld elements at dimension "
                           "%d (%lld)",
                           who, (long long)DQG_MAX_ELEMENTS, i, (long long)dims[i]);
            return -1;
        }
        n *= dims[i];
    }
    return n;
}

/* ---- Tensors --------------------------------------------------------------- */

/* Appends a tensor; takes ownership of `name` (freed on failure). */
static dqg_tensor_id add_tensor(dqg_graph *g, char *name, dqg_dtype dtype, int rank,
                                const int64_t *dims, int64_t nelems, dqg_tensor_kind kind,
                                int32_t producer)
{
    if (!name || !grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors, sizeof(dqg_tensor))) {
        free(name);
        return dqg_graph_fail(g, DQG_OUT_OF_MEMORY, "graph: out of memory adding a tensor");
    }
    dqg_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->nelems = nelems;
    t->kind = kind;
    t->producer = producer;
    t->nbytes = dqg_dtype_storage_size(dtype, nelems);
    index_tensor(g, name, g->n_tensors);
    return g->n_tensors++;
}

static bool valid_dtype(dqg_dtype dtype)
{
    return dtype > DQG_DTYPE_UNDEF && dtype < DQG_DTYPE_COUNT;
}

dqg_tensor_id dqg_input(dqg_graph *g, const char *name, dqg_dtype dtype, int rank,
                        const int64_t *dims)
{
    if (!dqg_graph_can_build(g, "Input", name))
        return DQG_NONE;
    if (!name || !*name)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "Input: name is NULL or empty");
    if (!valid_dtype(dtype))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "Input '%s': invalid data type %d", name,
                              (int)dtype);
    if (find_tensor(g, name) != DQG_NONE)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "Input '%s': duplicate name: a tensor named '%s' already exists",
                              name, name);
    char who[300];
    snprintf(who, sizeof who, "Input '%s'", name);
    int64_t n = dqg_check_shape(g, who, rank, dims);
    if (n < 0)
        return DQG_NONE;
    if (!grow((void **)&g->inputs, &g->cap_inputs, g->n_inputs, sizeof(dqg_tensor_id)))
        return dqg_graph_fail(g, DQG_OUT_OF_MEMORY, "Input '%s': out of memory", name);
    dqg_tensor_id id = add_tensor(g, dup_string(name), dtype, rank, dims, n, DQG_TENSOR_INPUT, -1);
    if (id != DQG_NONE)
        g->inputs[g->n_inputs++] = id;
    return id;
}

dqg_tensor_id dqg_constant(dqg_graph *g, const char *name, dqg_dtype dtype, int rank,
                           const int64_t *dims, const void *data, size_t nbytes)
{
    const char *shown = name ? name : "";
    if (!dqg_graph_can_build(g, "Constant", name))
        return DQG_NONE;
    if (!valid_dtype(dtype))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "Constant '%s': invalid data type %d", shown,
                              (int)dtype);
    if (name && !*name)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "Constant: name is empty");
    if (name && find_tensor(g, name) != DQG_NONE)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "Constant '%s': duplicate name: a tensor named '%s' already exists",
                              name, name);
    char who[300];
    snprintf(who, sizeof who, "Constant '%s'", shown);
    int64_t n = dqg_check_shape(g, who, rank, dims);
    if (n < 0)
        return DQG_NONE;
    size_t need = dqg_dtype_storage_size(dtype, n);
    if (!data)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "Constant '%s': data is NULL", shown);
    if (nbytes != need)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "Constant '%s': data has %zu bytes; a %s tensor of %lld elements "
                              "needs %zu",
                              shown, nbytes, dqg_dtype_name(dtype), (long long)n, need);
    if (dtype == DQG_BOOL)
        for (int64_t i = 0; i < n; i++)
            if (((const uint8_t *)data)[i] > 1)
                return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                      "Constant '%s': bool element %lld is %u; a bool is 0 or 1",
                                      shown, (long long)i, ((const uint8_t *)data)[i]);
    void *copy = malloc(need ? need : 1);
    if (!copy)
        return dqg_graph_fail(g, DQG_OUT_OF_MEMORY, "Constant '%s': out of memory (%zu bytes)",
                              shown, need);
    memcpy(copy, data, need);
    /* An odd 4-bit tensor's unused high nibble must not change hashes or results. */
    if (dqg_dtype_bits(dtype) == 4 && (n & 1))
        ((uint8_t *)copy)[need - 1] &= 0x0F;
    char *tname;
    if (name) {
        tname = dup_string(name);
    } else {
        char gen[64];
        snprintf(gen, sizeof gen, "const_%d", (int)g->n_tensors);
        tname = unique_tensor_name(g, gen);
    }
    dqg_tensor_id id = add_tensor(g, tname, dtype, rank, dims, n, DQG_TENSOR_CONSTANT, -1);
    if (id == DQG_NONE) {
        free(copy);
        return DQG_NONE;
    }
    dqg_tensor *t = &g->tensors[id];
    t->data = copy;
    XXH128_hash_t h = XXH3_128bits(copy, need);
    t->data_hash[0] = h.low64;
    t->data_hash[1] = h.high64;
    return id;
}

dqg_status dqg_output(dqg_graph *g, dqg_tensor_id id, const char *name)
{
    if (!dqg_graph_can_build(g, "Output", name))
        return g && g->sticky_status ? g->sticky_status : DQG_INVALID_ARGUMENT;
    if (id < 0 || id >= g->n_tensors) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "Output '%s': unknown tensor id %d",
                       dqg_op_display_name(name), (int)id);
        return DQG_INVALID_ARGUMENT;
    }
    dqg_tensor *t = &g->tensors[id];
    if (t->is_output) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "Output '%s': tensor '%s' is already an output",
                       name ? name : t->name, t->name);
        return DQG_INVALID_ARGUMENT;
    }
    if (name && *name && strcmp(name, t->name) != 0) {
        if (find_tensor(g, name) != DQG_NONE) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "Output '%s': duplicate name: a tensor named '%s' already exists", name,
                           name);
            return DQG_INVALID_ARGUMENT;
        }
        char *n = dup_string(name);
        if (!n) {
            dqg_graph_fail(g, DQG_OUT_OF_MEMORY, "Output '%s': out of memory", name);
            return DQG_OUT_OF_MEMORY;
        }
        free(t->name);
        t->name = n;
        index_tensor(g, n, id);
    }
    if (!grow((void **)&g->outputs, &g->cap_outputs, g->n_outputs, sizeof(dqg_tensor_id))) {
        dqg_graph_fail(g, DQG_OUT_OF_MEMORY, "Output '%s': out of memory", t->name);
        return DQG_OUT_OF_MEMORY;
    }
    t->is_output = true;
    g->outputs[g->n_outputs++] = id;
    return DQG_OK;
}

/* ---- Ops ------------------------------------------------------------------ */

bool dqg_op_alloc_io(dqg_op *op, int n_in, const dqg_tensor_id *in, int n_out,
                     const dqg_tensor_id *out)
{
    int cap_in = n_in > DQG_MAX_OP_INPUTS ? n_in : DQG_MAX_OP_INPUTS;
    int cap_out = n_out > DQG_MAX_OP_OUTPUTS ? n_out : DQG_MAX_OP_OUTPUTS;
    dqg_tensor_id *io = malloc((size_t)(cap_in + cap_out) * sizeof *io);
    if (!io)
        return false;
    for (int i = 0; i < cap_in + cap_out; i++)
        io[i] = DQG_NONE;
    if (in)
        memcpy(io, in, (size_t)n_in * sizeof *io);
    if (out)
        memcpy(io + cap_in, out, (size_t)n_out * sizeof *io);
    op->inputs = io;
    op->outputs = io + cap_in;
    op->n_inputs = n_in;
    op->n_outputs = n_out;
    return true;
}

void dqg_op_free_io(dqg_op *op)
{
    free(op->inputs);
    op->inputs = op->outputs = NULL;
}

int32_t dqg_graph_add_op(dqg_graph *g, dqg_op_kind kind, const char *name, int n_inputs,
                         const dqg_tensor_id *inputs, int n_outputs, const dqg_dtype *out_dtypes,
                         const int *out_ranks, const int64_t (*out_dims)[DQG_MAX_RANK])
{
    const char *kind_name = dqg_op_kind_name(kind);
    if (name && op_name_taken(g, name)) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': duplicate name: an op named '%s' already exists", kind_name, name,
                       name);
        return -1;
    }
    if (!grow((void **)&g->ops, &g->cap_ops, g->n_ops, sizeof(dqg_op))) {
        dqg_graph_fail(g, DQG_OUT_OF_MEMORY, "%s '%s': out of memory", kind_name,
                       dqg_op_display_name(name));
        return -1;
    }
    char genbuf[64];
    if (!name || !*name) {
        do
            snprintf(genbuf, sizeof genbuf, "%s_%u", kind_name, ++g->name_counter);
        while (op_name_taken(g, genbuf));
        name = genbuf;
    }
    char *op_name = dup_string(name);
    if (!op_name) {
        dqg_graph_fail(g, DQG_OUT_OF_MEMORY, "%s '%s': out of memory", kind_name, name);
        return -1;
    }
    int32_t index = g->n_ops;
    if (n_inputs < 0 || n_inputs > DQG_MAX_OP_ARITY || n_outputs < 1 ||
        n_outputs > DQG_MAX_OP_ARITY) {
        free(op_name);
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': %d inputs and %d outputs; at most %d",
                       kind_name, name, n_inputs, n_outputs, DQG_MAX_OP_ARITY);
        return -1;
    }
    for (int o = 0; o < n_outputs; o++) {
        char who[300];
        snprintf(who, sizeof who, "%s '%s': output %d", kind_name, name, o);
        if (dqg_check_shape(g, who, out_ranks[o], out_dims[o]) < 0) {
            free(op_name);
            return -1;
        }
    }
    dqg_op *op = &g->ops[index];
    memset(op, 0, sizeof *op);
    if (!dqg_op_alloc_io(op, n_inputs, inputs, n_outputs, NULL)) {
        free(op_name);
        dqg_graph_fail(g, DQG_OUT_OF_MEMORY, "%s '%s': out of memory", kind_name, name);
        return -1;
    }
    op->kind = kind;
    op->name = op_name;
    index_op(g, op_name);
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] != DQG_NONE)
            g->tensors[inputs[i]].use_count++;
    op->n_outputs = 0;
    g->n_ops++;
    for (int o = 0; o < n_outputs; o++) {
        char base[300];
        if (n_outputs == 1)
            snprintf(base, sizeof base, "%s", name);
        else
            snprintf(base, sizeof base, "%s:%d", name, o);
        int64_t nelems = 1;
        for (int d = 0; d < out_ranks[o]; d++)
            nelems *= out_dims[o][d];
        dqg_tensor_id id = add_tensor(g, unique_tensor_name(g, base), out_dtypes[o], out_ranks[o],
                                      out_dims[o], nelems, DQG_TENSOR_INTERMEDIATE, index);
        if (id == DQG_NONE)
            return -1; /* the graph is sticky-failed; the op stays, harmlessly */
        g->ops[index].outputs[g->ops[index].n_outputs++] = id;
    }
    return index;
}

/* ---- Finalize -------------------------------------------------------------- */

static dqg_status add_warning(dqg_graph *g, const char *text)
{
    char *w = dup_string(text);
    if (!w || !grow((void **)&g->warnings, &g->cap_warnings, g->n_warnings, sizeof(char *))) {
        free(w);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "graph: out of memory adding a warning");
    }
    g->warnings[g->n_warnings++] = w;
    return DQG_OK;
}

dqg_status dqg_graph_finalize(dqg_graph *g)
{
    if (!g)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_graph_finalize: graph is NULL");
    if (g->sticky_status != DQG_OK)
        return dqg_set_error(g->sticky_status, "%s", g->sticky_message);
    if (g->finalized)
        return DQG_OK;
    if (g->n_outputs == 0)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "graph: has no outputs; mark at least one "
                                                   "tensor with dqg_output()");
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const dqg_tensor *t = &g->tensors[g->outputs[i]];
        if (t->producer < 0)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "Output '%s': never produced: it is a graph %s, not the output "
                                 "of an op",
                                 t->name, t->kind == DQG_TENSOR_INPUT ? "input" : "constant");
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op_def *def = dqg_op_def_of(g->ops[i].kind);
        if (def && def->verify) {
            dqg_status st = def->verify(g, &g->ops[i]);
            if (st != DQG_OK)
                return st;
        }
    }
    for (int32_t i = 0; i < g->n_warnings; i++)
        free(g->warnings[i]);
    g->n_warnings = 0;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const dqg_tensor *t = &g->tensors[g->inputs[i]];
        if (t->use_count == 0 && !t->is_output) {
            char text[400];
            snprintf(text, sizeof text, "Input '%s': unused: no op reads it", t->name);
            dqg_status st = add_warning(g, text);
            if (st != DQG_OK)
                return st;
        }
    }
    g->finalized = true;
    return DQG_OK;
}

bool dqg_graph_is_finalized(const dqg_graph *g)
{
    return g && g->finalized;
}

/* ---- Introspection ---------------------------------------------------------- */

size_t dqg_graph_warning_count(const dqg_graph *g)
{
    return g ? (size_t)g->n_warnings : 0;
}

const char *dqg_graph_warning(const dqg_graph *g, size_t i)
{
    return (g && i < (size_t)g->n_warnings) ? g->warnings[i] : NULL;
}

size_t dqg_graph_op_count(const dqg_graph *g)
{
    return g ? (size_t)g->n_ops : 0;
}

static const dqg_op *get_op(const dqg_graph *g, size_t op)
{
    return (g && op < (size_t)g->n_ops) ? &g->ops[op] : NULL;
}

dqg_op_kind dqg_graph_op_kind(const dqg_graph *g, size_t op)
{
    const dqg_op *o = get_op(g, op);
    return o ? o->kind : DQG_OP_KIND_COUNT;
}

const char *dqg_graph_op_name(const dqg_graph *g, size_t op)
{
    const dqg_op *o = get_op(g, op);
    return o ? o->name : NULL;
}

size_t dqg_graph_op_input_count(const dqg_graph *g, size_t op)
{
    const dqg_op *o = get_op(g, op);
    return o ? (size_t)o->n_inputs : 0;
}

dqg_tensor_id dqg_graph_op_input(const dqg_graph *g, size_t op, size_t index)
{
    const dqg_op *o = get_op(g, op);
    return (o && index < (size_t)o->n_inputs) ? o->inputs[index] : DQG_NONE;
}

size_t dqg_graph_op_output_count(const dqg_graph *g, size_t op)
{
    const dqg_op *o = get_op(g, op);
    return o ? (size_t)o->n_outputs : 0;
}

dqg_tensor_id dqg_graph_op_output(const dqg_graph *g, size_t op, size_t index)
{
    const dqg_op *o = get_op(g, op);
    return (o && index < (size_t)o->n_outputs) ? o->outputs[index] : DQG_NONE;
}

size_t dqg_graph_tensor_count(const dqg_graph *g)
{
    return g ? (size_t)g->n_tensors : 0;
}
size_t dqg_graph_input_count(const dqg_graph *g)
{
    return g ? (size_t)g->n_inputs : 0;
}
size_t dqg_graph_output_count(const dqg_graph *g)
{
    return g ? (size_t)g->n_outputs : 0;
}

dqg_tensor_id dqg_graph_input_id(const dqg_graph *g, size_t i)
{
    return (g && i < (size_t)g->n_inputs) ? g->inputs[i] : DQG_NONE;
}

dqg_tensor_id dqg_graph_output_id(const dqg_graph *g, size_t i)
{
    return (g && i < (size_t)g->n_outputs) ? g->outputs[i] : DQG_NONE;
}

dqg_tensor_id dqg_graph_find_tensor(const dqg_graph *g, const char *name)
{
    return (g && name) ? find_tensor(g, name) : DQG_NONE;
}

const char *dqg_tensor_name(const dqg_graph *g, dqg_tensor_id id)
{
    const dqg_tensor *t = dqg_graph_tensor(g, id);
    return t ? t->name : NULL;
}

dqg_dtype dqg_tensor_dtype(const dqg_graph *g, dqg_tensor_id id)
{
    const dqg_tensor *t = dqg_graph_tensor(g, id);
    return t ? t->dtype : DQG_DTYPE_UNDEF;
}

int dqg_tensor_rank(const dqg_graph *g, dqg_tensor_id id)
{
    const dqg_tensor *t = dqg_graph_tensor(g, id);
    return t ? t->rank : -1;
}

int dqg_tensor_dims(const dqg_graph *g, dqg_tensor_id id, int64_t *dims)
{
    const dqg_tensor *t = dqg_graph_tensor(g, id);
    if (!t || !dims)
        return -1;
    for (int i = 0; i < t->rank; i++)
        dims[i] = t->dims[i];
    return t->rank;
}

int64_t dqg_tensor_element_count(const dqg_graph *g, dqg_tensor_id id)
{
    const dqg_tensor *t = dqg_graph_tensor(g, id);
    return t ? t->nelems : -1;
}

size_t dqg_tensor_byte_size(const dqg_graph *g, dqg_tensor_id id)
{
    const dqg_tensor *t = dqg_graph_tensor(g, id);
    return t ? t->nbytes : 0;
}

bool dqg_tensor_is_constant(const dqg_graph *g, dqg_tensor_id id)
{
    const dqg_tensor *t = dqg_graph_tensor(g, id);
    return t && t->kind == DQG_TENSOR_CONSTANT;
}

dqg_tensor_id dqg_graph_add_intermediate_internal(dqg_graph *g, const char *name,
                                                  dqg_tensor_id like, int32_t producer)
{
    const dqg_tensor *t = &g->tensors[like];
    int64_t dims[DQG_MAX_RANK];
    memcpy(dims, t->dims, sizeof dims);
    dqg_dtype dtype = t->dtype;
    int rank = t->rank;
    int64_t nelems = t->nelems;
    return add_tensor(g, unique_tensor_name(g, name), dtype, rank, dims, nelems,
                      DQG_TENSOR_INTERMEDIATE, producer);
}

int32_t dqg_graph_add_op_like(dqg_graph *g, dqg_op_kind kind, const char *name, int n_inputs,
                              const dqg_tensor_id *inputs)
{
    const dqg_tensor *t = &g->tensors[inputs[0]];
    dqg_dtype dt = t->dtype;
    int rank = t->rank;
    int64_t dims[1][DQG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[0][i] = t->dims[i];
    return dqg_graph_add_op(g, kind, name, n_inputs, inputs, 1, &dt, &rank, dims);
}
