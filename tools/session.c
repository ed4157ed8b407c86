/* Loading a model with its input files: `dqgraph run`, test, explain, dot and bench. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "tool.h"

/* ------------------------------------------------------------------------ */
/* Finding the graph inputs of a model file (a minimal protobuf scan)        */
/* ------------------------------------------------------------------------ */

/*
 * The -i files are matched to graph inputs by name when the file's tensor
 * name names an input, else by position. The hints must say which before the
 * import, so the model's input names (and the initializer names, which shadow
 * inputs) are read here by walking the protobuf wire format: ModelProto.graph
 * (7) -> GraphProto.input (11) -> ValueInfoProto.name (1), and
 * GraphProto.initializer (5) -> TensorProto.name (8). Everything else is
 * skipped with fseek, so large weights are never read.
 */

typedef struct str_list {
    char **items;
    size_t n, cap;
} str_list;

static void str_list_free(str_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = l->cap = 0;
}

/* Takes ownership of s (freed on failure). */
static bool str_list_push(str_list *l, char *s)
{
    char **q = grow(l->items, &l->cap, l->n + 1, sizeof *q);
    if (!q) {
        free(s);
        return false;
    }
    l->items = q;
    q[l->n++] = s;
    return true;
}

typedef struct pb_reader {
    FILE *f;
    uint64_t pos;
} pb_reader;

#define PB_MAX_NAME (1u << 20)

static bool pb_varint(pb_reader *r, uint64_t end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->pos >= end)
            return false;
        int c = getc(r->f);
        if (c == EOF)
            return false;
        r->pos++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

static bool pb_seek(pb_reader *r, uint64_t to)
{
    if (to > (uint64_t)INT64_MAX || fseeko(r->f, (off_t)to, SEEK_SET) != 0)
        return false;
    r->pos = to;
    return true;
}

/* Reads a length prefix and returns the end of the field's bytes. */
static bool pb_len(pb_reader *r, uint64_t end, uint64_t *field_end)
{
    uint64_t len;
    if (!pb_varint(r, end, &len) || len > end - r->pos)
        return false;
    *field_end = r->pos + len;
    return true;
}

static bool pb_skip(pb_reader *r, uint64_t end, unsigned wire_type)
{
    uint64_t v, to;
    switch (wire_type) {
    case 0:
        return pb_varint(r, end, &v);
    case 1:
        if (end - r->pos < 8)
            return false;
        return pb_seek(r, r->pos + 8);
    case 2:
        return pb_len(r, end, &to) && pb_seek(r, to);
    case 5:
        if (end - r->pos < 4)
            return false;
        return pb_seek(r, r->pos + 4);
    default:
        return false; /* groups are not used by ONNX */
    }
}

/* Reads the string field `field` of the message ending at `end` (the last one wins). */
static bool pb_message_name(pb_reader *r, uint64_t end, uint64_t field, char **name)
{
    *name = NULL;
    while (r->pos < end) {
        uint64_t tag, fend;
        if (!pb_varint(r, end, &tag))
            break;
        if ((tag >> 3) == field && (tag & 7) == 2) {
            if (!pb_len(r, end, &fend) || fend - r->pos > PB_MAX_NAME)
                break;
            size_t len = (size_t)(fend - r->pos);
            char *s = malloc(len + 1);
            if (!s || fread(s, 1, len, r->f) != len) {
                free(s);
                break;
            }
            s[len] = '\0';
            r->pos = fend;
            free(*name);
            *name = s;
        } else if (!pb_skip(r, end, (unsigned)(tag & 7))) {
            break;
        }
    }
    if (r->pos == end)
        return true;
    free(*name);
    *name = NULL;
    return false;
}

static bool pb_scan_graph(pb_reader *r, uint64_t end, str_list *inputs, str_list *inits)
{
    while (r->pos < end) {
        uint64_t tag, fend;
        if (!pb_varint(r, end, &tag))
            return false;
        uint64_t field = tag >> 3;
        if ((field == 11 || field == 5) && (tag & 7) == 2) {
            char *name = NULL;
            if (!pb_len(r, end, &fend) || !pb_message_name(r, fend, field == 11 ? 1 : 8, &name))
                return false;
            char *s = name ? name : dup_string("");
            if (!s || !str_list_push(field == 11 ? inputs : inits, s))
                return false;
        } else if (!pb_skip(r, end, (unsigned)(tag & 7))) {
            return false;
        }
    }
    return r->pos == end;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the sorted list holds s. */
static bool sorted_contains(const str_list *l, const char *s)
{
    return l->n > 0 && bsearch(&s, l->items, l->n, sizeof *l->items, compare_strings) != NULL;
}

/*
 * The names of the model's graph inputs that are not initializers, in order
 * (*inputs), and the sorted initializer names (*inits). false if the file
 * cannot be scanned (the import will then report what is wrong).
 */
static bool scan_model_inputs(const char *path, str_list *inputs, str_list *inits)
{
    /* Only a regular file: opening a FIFO would block (the import then
     * reports what the path is). */
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    pb_reader r = {f, 0};
    bool ok = fseeko(f, 0, SEEK_END) == 0;
    off_t size = ok ? ftello(f) : -1;
    ok = ok && size >= 0 && pb_seek(&r, 0);
    str_list all = {0};
    uint64_t end = (uint64_t)size;
    bool has_graph = false;
    while (ok && r.pos < end) {
        uint64_t tag, gend;
        ok = pb_varint(&r, end, &tag);
        if (!ok)
            break;
        if ((tag >> 3) == 7 && (tag & 7) == 2) {
            ok = pb_len(&r, end, &gend) && pb_scan_graph(&r, gend, &all, inits);
            has_graph = true;
        } else {
            ok = pb_skip(&r, end, (unsigned)(tag & 7));
        }
    }
    ok = ok && has_graph; /* no graph: let the import say what is wrong */
    fclose(f);
    if (ok && inits->n > 1)
        qsort(inits->items, inits->n, sizeof *inits->items, compare_strings);
    for (size_t i = 0; ok && i < all.n; i++) {
        if (sorted_contains(inits, all.items[i]))
            continue;
        ok = str_list_push(inputs, all.items[i]);
        all.items[i] = NULL;
    }
    str_list_free(&all);
    if (!ok) {
        str_list_free(inputs);
        str_list_free(inits);
    }
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Loading a model with its input files                                      */
/* ------------------------------------------------------------------------ */

static void tensor_files_free(tensor_file *files, size_t n)
{
    for (size_t i = 0; files && i < n; i++) {
        free(files[i].name);
        free(files[i].data);
        free(files[i].target);
    }
    free(files);
}

dqg_status tensor_file_load(tensor_file *t, const char *path)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    dqg_status st =
        dqg_tensor_file_read(path, &t->name, &t->dtype, &t->rank, t->dims, &t->data, &t->size);
    if (st != DQG_OK)
        return lib_fail(st);
    return DQG_OK;
}

void session_free(session *s)
{
    if (s->generated)
        for (size_t i = 0; i < s->n_inputs; i++)
            free(s->generated[i]);
    free(s->generated);
    free(s->inputs);
    if (s->outputs)
        for (size_t i = 0; i < s->n_outputs; i++)
            free(s->outputs[i].data);
    free(s->outputs);
    tensor_files_free(s->files, s->n_files);
    for (size_t i = 0; i < s->n_paths; i++)
        free(s->paths[i]);
    free(s->paths);
    dqg_graph_destroy(s->graph);
    memset(s, 0, sizeof *s);
}

static bool list_contains(char *const *items, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(items[i], s) == 0)
            return true;
    return false;
}

/*
 * Decides which graph input each file gives. *known is false when the model
 * could not be scanned; the hints then use the file's name or position as is.
 */
static dqg_status resolve_targets(const char *model, tensor_file *files, size_t n, bool *known)
{
    str_list inputs = {0}, inits = {0};
    *known = false;
    if (n == 0 || !scan_model_inputs(model, &inputs, &inits))
        return DQG_OK;
    *known = true;
    dqg_status st = DQG_OK;
    for (size_t k = 0; k < n && st == DQG_OK; k++) {
        tensor_file *f = &files[k];
        const char *target = NULL;
        if (f->name && *f->name) {
            if (list_contains(inputs.items, inputs.n, f->name)) {
                target = f->name;
            } else {
                if (sorted_contains(&inits, f->name)) {
                    warn("'%s' gives '%s', which the model initializes; the initializer is used "
                         "and the file is ignored",
                         f->path, f->name);
                    f->skipped = true;
                    continue;
                }
            }
        }
        if (!target) {
            if (k >= inputs.n) {
                st = fail(DQG_INVALID_ARGUMENT,
                          "input file #%zu '%s'%s%s%s has no graph input to go to: the model has "
                          "%zu graph input%s",
                          k + 1, f->path, f->name && *f->name ? " (tensor '" : "",
                          f->name && *f->name ? f->name : "", f->name && *f->name ? "')" : "",
                          inputs.n, inputs.n == 1 ? "" : "s");
                break;
            }
            target = inputs.items[k];
        }
        for (size_t j = 0; j < k; j++)
            if (files[j].target && strcmp(files[j].target, target) == 0) {
                st = fail(DQG_INVALID_ARGUMENT,
                          "graph input '%s' is given twice: by '%s' and by '%s'", target,
                          files[j].path, f->path);
                break;
            }
        if (st == DQG_OK && !(f->target = dup_string(target)))
            st = oom();
    }
    str_list_free(&inputs);
    str_list_free(&inits);
    return st;
}

bool bf16_as_u16(dqg_dtype tensor, dqg_dtype file)
{
    return tensor == DQG_BF16 && file == DQG_U16;
}

static bool graph_input_index(const dqg_graph *g, dqg_tensor_id id, size_t *index)
{
    size_t n = dqg_graph_input_count(g);
    for (size_t i = 0; i < n; i++)
        if (dqg_graph_input_id(g, i) == id) {
            *index = i;
            return true;
        }
    return false;
}

static uint64_t rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* A well-mixed, non-zero xorshift state from any seed (splitmix64). */
static uint64_t rng_seed(uint64_t seed)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z ? z : 0x9E3779B97F4A7C15ull;
}

/*
 * Deterministic data: floats uniform in [-1, 1], integers random bytes (so
 * uniform over their type's whole range, 4-bit types included), bools 0 or 1.
 */
static dqg_status generate_data(dqg_dtype dt, int64_t nelems, size_t size, uint64_t *rng,
                                void **out)
{
    unsigned char *p = malloc(size ? size : 1);
    if (!p)
        return oom();
    if (dqg_dtype_is_float(dt)) {
        float chunk[1024];
        for (int64_t first = 0; first < nelems;) {
            int64_t n = nelems - first < 1024 ? nelems - first : 1024;
            for (int64_t i = 0; i < n; i++)
                chunk[i] = (float)((double)(rng_next(rng) >> 40) / (double)(1u << 23) - 1.0);
            dqg_dtype_encode(dt, chunk, n, p, first, true);
            first += n;
        }
    } else {
        for (size_t i = 0; i < size; i++)
            p[i] = (unsigned char)(rng_next(rng) >> 56);
        if (dt == DQG_BOOL)
            for (size_t i = 0; i < size; i++)
                p[i] &= 1;
    }
    *out = p;
    return DQG_OK;
}

/*
 * Reads the input files, imports the model with them (and --shape/--dim) as
 * hints, binds each file to its graph input and allocates the outputs.
 */
/* Appends `path`, or the input_<n>.pb files of the folder `path`, to s->paths. */
static dqg_status add_input_path(session *s, size_t *cap, const char *path)
{
    struct stat sb;
    numbered_entry *files = NULL;
    size_t n = 0;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        dqg_status st = list_numbered(path, "input_", ".pb", false, &files, &n);
        if (st != DQG_OK)
            return st;
        if (n == 0)
            return fail(DQG_IO_ERROR, "folder '%s' holds no input_<n>.pb file", path);
    }
    char **q = grow(s->paths, cap, s->n_paths + (n ? n : 1), sizeof *q);
    if (!q) {
        numbered_free(files, n);
        return oom();
    }
    s->paths = q;
    if (n == 0) {
        if (!(q[s->n_paths] = dup_string(path)))
            return oom();
        s->n_paths++;
        return DQG_OK;
    }
    for (size_t i = 0; i < n; i++) {
        q[s->n_paths++] = files[i].name; /* taken over */
        files[i].name = NULL;
    }
    numbered_free(files, n);
    return DQG_OK;
}

dqg_status session_open(session *s, const char *model, const tool_opts *o, const char *const *paths,
                        size_t n_paths, missing_policy missing)
{
    memset(s, 0, sizeof *s);
    dqg_status st = DQG_OK;
    size_t cap_paths = 0;
    for (size_t i = 0; i < n_paths; i++) {
        st = add_input_path(s, &cap_paths, paths[i]);
        if (st != DQG_OK)
            return st;
    }
    if (s->n_paths) {
        s->files = calloc(s->n_paths, sizeof *s->files);
        if (!s->files)
            return oom();
    }
    for (size_t i = 0; i < s->n_paths; i++) {
        st = tensor_file_load(&s->files[i], s->paths[i]);
        s->n_files = i + 1;
        if (st != DQG_OK)
            return st;
    }
    bool known = false;
    st = resolve_targets(model, s->files, s->n_files, &known);
    if (st != DQG_OK)
        return st;

    size_t n_hints = s->n_files + o->n_shapes;
    dqg_onnx_input_hint *hints = n_hints ? calloc(n_hints, sizeof *hints) : NULL;
    if (n_hints && !hints)
        return oom();
    size_t h = 0;
    for (size_t k = 0; k < s->n_files; k++) {
        const tensor_file *f = &s->files[k];
        if (f->skipped)
            continue;
        dqg_onnx_input_hint *hint = &hints[h++];
        if (known)
            hint->name = f->target;
        else if (f->name && *f->name)
            hint->name = f->name;
        else
            hint->index = k;
        hint->rank = f->rank;
        memcpy(hint->dims, f->dims, sizeof hint->dims);
        hint->dtype = f->dtype;
        hint->data = f->data;
        hint->size = f->size;
    }
    for (size_t k = 0; k < o->n_shapes; k++) {
        dqg_onnx_input_hint *hint = &hints[h++];
        hint->name = o->shapes[k].name;
        hint->rank = o->shapes[k].rank;
        memcpy(hint->dims, o->shapes[k].dims, sizeof hint->dims);
    }
    dqg_onnx_options lo = {0};
    lo.dim_params = o->dims;
    lo.n_dim_params = o->n_dims;
    lo.inputs = hints;
    lo.n_inputs = h;
    st = dqg_onnx_load_file(model, &lo, &s->graph);
    free(hints);
    if (st != DQG_OK)
        return lib_fail(st);
    const dqg_graph *g = s->graph;

    /* Without the scan, positional files go to the graph input at their position. */
    if (!known)
        for (size_t k = 0; k < s->n_files; k++) {
            tensor_file *f = &s->files[k];
            const char *t = NULL;
            if (f->name && *f->name)
                t = f->name;
            else if (k < dqg_graph_input_count(g))
                t = dqg_tensor_name(g, dqg_graph_input_id(g, k));
            if (t && !(f->target = dup_string(t)))
                return oom();
        }

    s->n_inputs = dqg_graph_input_count(g);
    s->n_outputs = dqg_graph_output_count(g);
    s->inputs = calloc(s->n_inputs ? s->n_inputs : 1, sizeof *s->inputs);
    s->generated = calloc(s->n_inputs ? s->n_inputs : 1, sizeof *s->generated);
    s->outputs = calloc(s->n_outputs ? s->n_outputs : 1, sizeof *s->outputs);
    if (!s->inputs || !s->generated || !s->outputs)
        return oom();
    for (size_t i = 0; i < s->n_inputs; i++)
        s->inputs[i].id = DQG_NONE;
    for (size_t k = 0; k < s->n_files; k++) {
        const tensor_file *f = &s->files[k];
        if (f->skipped || !f->target)
            continue;
        dqg_tensor_id id = dqg_graph_find_tensor(g, f->target);
        size_t idx;
        if (id == DQG_NONE || !graph_input_index(g, id, &idx))
            continue; /* frozen into a constant by the import */
        if (s->inputs[idx].id != DQG_NONE)
            return fail(DQG_INVALID_ARGUMENT, "graph input '%s' is given twice (second: '%s')",
                        f->target, f->path);
        dqg_dtype want = dqg_tensor_dtype(g, id);
        int64_t dims[DQG_MAX_RANK];
        int rank = dqg_tensor_dims(g, id, dims);
        size_t want_size = dqg_tensor_byte_size(g, id);
        if (want != f->dtype && !bf16_as_u16(want, f->dtype))
            return fail(DQG_INVALID_ARGUMENT, "graph input '%s' is %s, but '%s' holds %s",
                        f->target, dqg_dtype_name(want), f->path, dqg_dtype_name(f->dtype));
        bool same = rank == f->rank && want_size == f->size;
        for (int d = 0; same && d < rank; d++)
            same = dims[d] == f->dims[d];
        if (!same) {
            char a[256], b[256];
            format_shape(a, sizeof a, rank, dims);
            format_shape(b, sizeof b, f->rank, f->dims);
            return fail(DQG_INVALID_ARGUMENT, "graph input '%s' has shape %s, but '%s' holds %s",
                        f->target, a, f->path, b);
        }
        s->inputs[idx].id = id;
        s->inputs[idx].data = f->data;
        s->inputs[idx].size = f->size;
    }
    uint64_t rng = rng_seed(o->seed);
    for (size_t i = 0; i < s->n_inputs; i++) {
        if (s->inputs[i].id != DQG_NONE)
            continue;
        dqg_tensor_id id = dqg_graph_input_id(g, i);
        if (missing == MISSING_ERROR && strcmp(o->command, "test") == 0)
            return fail(DQG_INVALID_ARGUMENT,
                        "graph input '%s' has no data: the data set has no input_%zu.pb for it",
                        dqg_tensor_name(g, id), i);
        if (missing == MISSING_ERROR) {
            s->missing_input = true;
            return fail(DQG_INVALID_ARGUMENT,
                        "graph input '%s' (input %zu of the model, counting from 0) has no data; "
                        "give it with -i FILE.pb or -i DIR, or make it up with --random",
                        dqg_tensor_name(g, id), i);
        }
        s->inputs[i].id = id;
        s->inputs[i].size = dqg_tensor_byte_size(g, id);
        if (missing == MISSING_GENERATE) {
            st = generate_data(dqg_tensor_dtype(g, id), dqg_tensor_element_count(g, id),
                               s->inputs[i].size, &rng, &s->generated[i]);
            if (st == DQG_OUT_OF_MEMORY)
                return fail(st, "cannot allocate %zu bytes of made-up data for graph input '%s'",
                            s->inputs[i].size, dqg_tensor_name(g, id));
            if (st != DQG_OK)
                return st;
            s->inputs[i].data = s->generated[i];
        }
    }
    if (missing == MISSING_IGNORE)
        return DQG_OK;
    for (size_t i = 0; i < s->n_outputs; i++) {
        dqg_tensor_id id = dqg_graph_output_id(g, i);
        size_t size = dqg_tensor_byte_size(g, id);
        s->outputs[i].id = id;
        s->outputs[i].size = size;
        s->outputs[i].data = calloc(1, size ? size : 1);
        if (!s->outputs[i].data)
            return oom();
    }
    return DQG_OK;
}

void print_warnings(const dqg_graph *g)
{
    size_t n = dqg_graph_warning_count(g);
    for (size_t i = 0; i < n; i++)
        warn("%s", dqg_graph_warning(g, i));
}

static dqg_compile_options compile_options(const tool_opts *o)
{
    dqg_compile_options c = dqg_compile_options_default();
    c.disable_fusion = o->no_fuse;
    c.backend = o->backend;
    c.threads = o->threads;
    c.fpmath = o->fpmath;
    return c;
}

dqg_status compile_graph(const dqg_graph *g, const tool_opts *o, dqg_compiled **out)
{
    dqg_compile_options c = compile_options(o);
    dqg_compiled *compiled = NULL;
    dqg_status st = dqg_compile(g, &c, &compiled);
    if (st != DQG_OK) {
        dqg_compiled_destroy(compiled);
        *out = NULL;
        return lib_fail(st);
    }
    *out = compiled;
    return DQG_OK;
}

dqg_status execute(dqg_compiled *c, session *s)
{
    dqg_status st = dqg_execute(c, s->inputs, s->n_inputs, s->outputs, s->n_outputs);
    return st == DQG_OK ? DQG_OK : lib_fail(st);
}
