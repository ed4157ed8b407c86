/*
 * dqgraph — the command-line tool: run, test, explain, draw and benchmark
 * ONNX models with dqgraph. Uses the public API only (dqgraph.h and
 * dqgraph_onnx.h).
 *
 *   dqgraph run MODEL [-i FILE.pb]... [-o DIR] ...
 *   dqgraph test CASE_DIR...
 *   dqgraph explain MODEL ...
 *   dqgraph dot MODEL [--after-passes] ...
 *   dqgraph bench MODEL [--iters N] [--warmup N] ...
 *   dqgraph selftest [--seconds N] [--seed S] (tools/selftest.c)
 *
 * Exit codes: 0 success, 1 test failures, 2 usage error, 3 invalid model or
 * input, 4 internal or backend error.
 */
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
#include "selftest.h"

/* ------------------------------------------------------------------------ */
/* Exit codes and error reporting                                            */
/* ------------------------------------------------------------------------ */

enum {
    EXIT_OK = 0,
    EXIT_TEST_FAILURES = 1,
    EXIT_USAGE = 2,
    EXIT_INVALID = 3,
    EXIT_INTERNAL = 4,
};

/* The message of the tool's last failure (library messages are copied here). */
static char g_msg[4096];

static int status_exit_code(dqg_status st)
{
    switch (st) {
    case DQG_OK:
        return EXIT_OK;
    case DQG_INVALID_ARGUMENT:
    case DQG_UNSUPPORTED:
    case DQG_PARSE_ERROR:
    case DQG_IO_ERROR:
        return EXIT_INVALID;
    case DQG_OUT_OF_MEMORY:
    case DQG_BACKEND_ERROR:
        return EXIT_INTERNAL;
    }
    return EXIT_INTERNAL;
}

/* Sets the tool's message and returns st. */
static dqg_status fail(dqg_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static dqg_status fail(dqg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    return st;
}

/* Copies the library's message for a failed call and returns st. */
static dqg_status lib_fail(dqg_status st)
{
    const char *m = dqg_last_error();
    snprintf(g_msg, sizeof g_msg, "%s", m && *m ? m : "(no message)");
    return st;
}

static dqg_status oom(void)
{
    return fail(DQG_OUT_OF_MEMORY, "out of memory");
}

/* Prints "dqgraph: <status name>: <message>" and returns the exit code. */
static int report(dqg_status st)
{
    fprintf(stderr, "dqgraph: %s: %s\n", dqg_status_name(st), g_msg);
    return status_exit_code(st);
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------ */

/* Grows an array to hold at least `need` elements; NULL (p unchanged) if out of memory. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem)
            return NULL;
        n *= 2;
    }
    void *q = realloc(p, n * elem);
    if (!q)
        return NULL;
    *cap = n;
    return q;
}

static char *dup_range(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static char *dup_string(const char *s)
{
    return dup_range(s, strlen(s));
}

/* dir + "/" + name, without doubling a trailing slash. */
static char *join_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    bool slash = a > 0 && dir[a - 1] != '/';
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    if (slash)
        p[a++] = '/';
    memcpy(p + a, name, b + 1);
    return p;
}

/* "[1,3,224,224]"; "[]" for a scalar. */
static void format_shape(char *buf, size_t size, int rank, const int64_t *dims)
{
    size_t used = 0;
    int n = snprintf(buf, size, "[");
    used = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < rank && used < size; i++) {
        n = snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)dims[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Parses a whole string as a decimal integer in [lo, hi]: optional '-', then
 * digits only (no spaces, no '+', nothing after).
 */
static bool parse_integer(const char *s, long long lo, long long hi, long long *out)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || !end || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* A non-negative finite real number (strtod, whole string). */
static bool parse_real(const char *s, double *out)
{
    if (!*s || isspace((unsigned char)*s))
        return false;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno == ERANGE || !end || *end != '\0' || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Command-line options                                                      */
/* ------------------------------------------------------------------------ */

enum {
    OPT_INPUT = 1u << 0,
    OPT_OUTDIR = 1u << 1,
    OPT_SHAPE = 1u << 2,
    OPT_DIM = 1u << 3,
    OPT_NOFUSE = 1u << 4,
    OPT_BACKEND = 1u << 5,
    OPT_AFTER = 1u << 6,
    OPT_ITERS = 1u << 7,
    OPT_WARMUP = 1u << 8,
    OPT_RTOL = 1u << 9,
    OPT_ATOL = 1u << 10,
    OPT_THREADS = 1u << 11,
};

typedef struct option_def {
    const char *long_name;
    const char *short_name; /* NULL: none */
    unsigned id;
    bool has_arg;
} option_def;

static const option_def OPTION_DEFS[] = {
    {"--input", "-i", OPT_INPUT, true},         {"--output-dir", "-o", OPT_OUTDIR, true},
    {"--shape", NULL, OPT_SHAPE, true},         {"--dim", NULL, OPT_DIM, true},
    {"--no-fuse", NULL, OPT_NOFUSE, false},     {"--backend", NULL, OPT_BACKEND, true},
    {"--after-passes", NULL, OPT_AFTER, false}, {"--iters", NULL, OPT_ITERS, true},
    {"--warmup", NULL, OPT_WARMUP, true},       {"--rtol", NULL, OPT_RTOL, true},
    {"--atol", NULL, OPT_ATOL, true},           {"--threads", NULL, OPT_THREADS, true},
};

#define MAX_ITERS   10000000LL
#define MAX_THREADS ((long long)DQG_MAX_THREADS)

typedef struct shape_opt {
    char *name;
    int rank;
    int64_t dims[DQG_MAX_RANK];
} shape_opt;

typedef struct tool_opts {
    const char *command;
    const char **pos; /* positional arguments (pointers into argv) */
    size_t n_pos, cap_pos;
    const char **inputs; /* -i files (pointers into argv) */
    size_t n_inputs, cap_inputs;
    const char *out_dir;
    shape_opt *shapes;
    size_t n_shapes, cap_shapes;
    dqg_onnx_dim_param *dims; /* names are owned */
    size_t n_dims, cap_dims;
    bool no_fuse;
    bool after_passes;
    dqg_backend backend;
    long long iters, warmup;
    double rtol, atol;
    int threads;
} tool_opts;

static void opts_free(tool_opts *o)
{
    free(o->pos);
    free(o->inputs);
    for (size_t i = 0; i < o->n_shapes; i++)
        free(o->shapes[i].name);
    free(o->shapes);
    for (size_t i = 0; i < o->n_dims; i++)
        free((void *)o->dims[i].name);
    free(o->dims);
}

static int usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dqgraph: %s%s", command ? command : "", command ? ": " : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'dqgraph %s%s--help'.\n", command ? command : "", command ? " " : "");
    return EXIT_USAGE;
}

static bool push_ptr(const char ***arr, size_t *n, size_t *cap, const char *s)
{
    const char **q = grow(*arr, cap, *n + 1, sizeof **arr);
    if (!q)
        return false;
    *arr = q;
    q[(*n)++] = s;
    return true;
}

/* --shape NAME=D0,D1,... (NAME= alone: a scalar). Returns an exit code (0: ok). */
static int parse_shape_opt(tool_opts *o, const char *arg)
{
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg)
        return usage_error(o->command, "--shape expects NAME=D0,D1,... (got '%s')", arg);
    shape_opt s = {0};
    const char *p = eq + 1;
    while (*p) {
        if (s.rank == DQG_MAX_RANK)
            return usage_error(o->command, "--shape '%s': more than %d dimensions", arg,
                               DQG_MAX_RANK);
        if (!isdigit((unsigned char)*p))
            return usage_error(o->command, "--shape '%s': dimension %d is not a positive integer",
                               arg, s.rank);
        errno = 0;
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (errno == ERANGE || !end || (*end != ',' && *end != '\0'))
            return usage_error(o->command, "--shape '%s': dimension %d is not a positive integer",
                               arg, s.rank);
        if (v < 1)
            return usage_error(o->command, "--shape '%s': dimension %d is %lld; it must be >= 1",
                               arg, s.rank, v);
        s.dims[s.rank++] = (int64_t)v;
        p = end;
        if (*p == ',') {
            p++;
            if (!*p)
                return usage_error(o->command, "--shape '%s': a dimension is missing after ','",
                                   arg);
        }
    }
    size_t len = (size_t)(eq - arg);
    for (size_t i = 0; i < o->n_shapes; i++)
        if (strlen(o->shapes[i].name) == len && strncmp(o->shapes[i].name, arg, len) == 0)
            return usage_error(o->command, "--shape '%s': input '%s' is given twice", arg,
                               o->shapes[i].name);
    s.name = dup_range(arg, len);
    shape_opt *q = s.name ? grow(o->shapes, &o->cap_shapes, o->n_shapes + 1, sizeof *q) : NULL;
    if (!q) {
        free(s.name);
        fprintf(stderr, "dqgraph: %s: out of memory\n", dqg_status_name(DQG_OUT_OF_MEMORY));
        return EXIT_INTERNAL;
    }
    o->shapes = q;
    q[o->n_shapes++] = s;
    return 0;
}

/* --dim SYMBOL=N */
static int parse_dim_opt(tool_opts *o, const char *arg)
{
    const char *eq = strrchr(arg, '=');
    long long v = 0;
    if (!eq || eq == arg)
        return usage_error(o->command, "--dim expects SYMBOL=N (got '%s')", arg);
    if (!parse_integer(eq + 1, 1, INT64_MAX, &v))
        return usage_error(o->command, "--dim '%s': the value must be an integer >= 1", arg);
    size_t len = (size_t)(eq - arg);
    for (size_t i = 0; i < o->n_dims; i++)
        if (strlen(o->dims[i].name) == len && strncmp(o->dims[i].name, arg, len) == 0)
            return usage_error(o->command, "--dim '%s': symbol '%s' is given twice", arg,
                               o->dims[i].name);
    char *name = dup_range(arg, (size_t)(eq - arg));
    dqg_onnx_dim_param *q = name ? grow(o->dims, &o->cap_dims, o->n_dims + 1, sizeof *q) : NULL;
    if (!q) {
        free(name);
        fprintf(stderr, "dqgraph: %s: out of memory\n", dqg_status_name(DQG_OUT_OF_MEMORY));
        return EXIT_INTERNAL;
    }
    o->dims = q;
    q[o->n_dims].name = name;
    q[o->n_dims].value = (int64_t)v;
    o->n_dims++;
    return 0;
}

static int apply_option(tool_opts *o, const option_def *d, const char *value)
{
    long long v = 0;
    switch (d->id) {
    case OPT_INPUT:
        if (!push_ptr(&o->inputs, &o->n_inputs, &o->cap_inputs, value)) {
            fprintf(stderr, "dqgraph: %s: out of memory\n", dqg_status_name(DQG_OUT_OF_MEMORY));
            return EXIT_INTERNAL;
        }
        return 0;
    case OPT_OUTDIR:
        if (!*value)
            return usage_error(o->command, "-o needs a folder name");
        o->out_dir = value;
        return 0;
    case OPT_SHAPE:
        return parse_shape_opt(o, value);
    case OPT_DIM:
        return parse_dim_opt(o, value);
    case OPT_NOFUSE:
        o->no_fuse = true;
        return 0;
    case OPT_AFTER:
        o->after_passes = true;
        return 0;
    case OPT_BACKEND:
        if (strcmp(value, "reference") == 0)
            o->backend = DQG_BACKEND_REFERENCE;
        else if (strcmp(value, "onednn") == 0)
            o->backend = DQG_BACKEND_ONEDNN;
        else
            return usage_error(o->command,
                               "unknown backend '%s' (expected 'reference' or 'onednn')", value);
        return 0;
    case OPT_ITERS:
        if (!parse_integer(value, 1, MAX_ITERS, &v))
            return usage_error(o->command,
                               "bad number '%s' for --iters (expected an integer from 1 to %lld)",
                               value, MAX_ITERS);
        o->iters = v;
        return 0;
    case OPT_WARMUP:
        if (!parse_integer(value, 0, MAX_ITERS, &v))
            return usage_error(o->command,
                               "bad number '%s' for --warmup (expected an integer from 0 to %lld)",
                               value, MAX_ITERS);
        o->warmup = v;
        return 0;
    case OPT_THREADS:
        if (!parse_integer(value, 0, MAX_THREADS, &v))
            return usage_error(o->command,
                               "bad number '%s' for --threads (expected an integer from 0 to %lld)",
                               value, MAX_THREADS);
        o->threads = (int)v;
        return 0;
    case OPT_RTOL:
    case OPT_ATOL:
        if (!parse_real(value, d->id == OPT_RTOL ? &o->rtol : &o->atol))
            return usage_error(o->command, "bad number '%s' for %s (expected a real number >= 0)",
                               value, d->long_name);
        return 0;
    }
    return usage_error(o->command, "internal: unhandled option %s", d->long_name);
}

/*
 * Parses argv[first..argc) for a command that accepts the options in
 * `allowed`. Returns 0, or the exit code of a usage error (already printed).
 */
static int parse_options(tool_opts *o, int argc, char **argv, int first, unsigned allowed)
{
    bool options_done = false;
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || arg[1] == '\0') {
            if (!push_ptr(&o->pos, &o->n_pos, &o->cap_pos, arg)) {
                fprintf(stderr, "dqgraph: %s: out of memory\n", dqg_status_name(DQG_OUT_OF_MEMORY));
                return EXIT_INTERNAL;
            }
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        const option_def *d = NULL;
        const char *value = NULL;
        for (size_t k = 0; k < sizeof OPTION_DEFS / sizeof OPTION_DEFS[0]; k++) {
            const option_def *c = &OPTION_DEFS[k];
            size_t len = strlen(c->long_name);
            if (strcmp(arg, c->long_name) == 0 ||
                (c->short_name && strcmp(arg, c->short_name) == 0)) {
                d = c;
                break;
            }
            if (strncmp(arg, c->long_name, len) == 0 && arg[len] == '=') {
                d = c;
                value = arg + len + 1;
                break;
            }
        }
        if (!d || !(d->id & allowed))
            return usage_error(o->command, "unknown option '%s'", arg);
        if (d->has_arg && !value) {
            if (i + 1 >= argc)
                return usage_error(o->command, "option '%s' needs an argument", arg);
            value = argv[++i];
        } else if (!d->has_arg && value) {
            return usage_error(o->command, "option '%s' takes no argument", d->long_name);
        }
        int rc = apply_option(o, d, value);
        if (rc)
            return rc;
    }
    return 0;
}

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

typedef struct tensor_file {
    const char *path; /* not owned */
    char *name;       /* the TensorProto's name (malloc'd, NULL if none) */
    dqg_dtype dtype;
    int rank;
    int64_t dims[DQG_MAX_RANK];
    void *data;
    size_t size;
    char *target; /* the graph input it gives (owned); NULL: not yet known or unused */
    bool skipped; /* names an initializer: not used */
} tensor_file;

static void tensor_files_free(tensor_file *files, size_t n)
{
    for (size_t i = 0; files && i < n; i++) {
        free(files[i].name);
        free(files[i].data);
        free(files[i].target);
    }
    free(files);
}

static dqg_status tensor_file_load(tensor_file *t, const char *path)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    dqg_status st =
        dqg_tensor_file_read(path, &t->name, &t->dtype, &t->rank, t->dims, &t->data, &t->size);
    if (st != DQG_OK)
        return lib_fail(st);
    return DQG_OK;
}

/* What to do with a graph input that no file gives. */
typedef enum missing_policy {
    MISSING_ERROR,    /* run, test: an error naming the input */
    MISSING_GENERATE, /* bench: deterministic made-up data */
    MISSING_IGNORE,   /* explain, dot: nothing is executed */
} missing_policy;

typedef struct session {
    dqg_graph *graph;
    tensor_file *files;
    size_t n_files;
    dqg_buffer *inputs; /* one per graph input */
    size_t n_inputs;
    void **generated; /* per graph input: made-up data (bench), or NULL */
    dqg_buffer *outputs;
    size_t n_outputs;
} session;

static void session_free(session *s)
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
    dqg_graph_destroy(s->graph);
    memset(s, 0, sizeof *s);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dqgraph: warning: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
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

/*
 * ONNX's test data stores bfloat16 tensors as UINT16 (NumPy has no bfloat16):
 * a u16 file holds the bits of a bf16 tensor, so it is accepted for one.
 */
static bool bf16_as_u16(dqg_dtype tensor, dqg_dtype file)
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

/* Deterministic data: floats uniform in [-1, 1], integers random bytes. */
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
    }
    *out = p;
    return DQG_OK;
}

/*
 * Reads the input files, imports the model with them (and --shape/--dim) as
 * hints, binds each file to its graph input and allocates the outputs.
 */
static dqg_status session_open(session *s, const char *model, const tool_opts *o,
                               const char *const *paths, size_t n_paths, missing_policy missing)
{
    memset(s, 0, sizeof *s);
    dqg_status st = DQG_OK;
    if (n_paths) {
        s->files = calloc(n_paths, sizeof *s->files);
        if (!s->files)
            return oom();
    }
    for (size_t i = 0; i < n_paths; i++) {
        st = tensor_file_load(&s->files[i], paths[i]);
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
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < s->n_inputs; i++) {
        if (s->inputs[i].id != DQG_NONE)
            continue;
        dqg_tensor_id id = dqg_graph_input_id(g, i);
        if (missing == MISSING_ERROR && strcmp(o->command, "test") == 0)
            return fail(DQG_INVALID_ARGUMENT,
                        "graph input '%s' has no data: the data set has no input_%zu.pb for it",
                        dqg_tensor_name(g, id), i);
        if (missing == MISSING_ERROR)
            return fail(DQG_INVALID_ARGUMENT,
                        "graph input '%s' (input %zu of the model, counting from 0) has no data; "
                        "give it with -i FILE.pb",
                        dqg_tensor_name(g, id), i);
        s->inputs[i].id = id;
        s->inputs[i].size = dqg_tensor_byte_size(g, id);
        if (missing == MISSING_GENERATE) {
            st = generate_data(dqg_tensor_dtype(g, id), dqg_tensor_element_count(g, id),
                               s->inputs[i].size, &rng, &s->generated[i]);
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

static void print_warnings(const dqg_graph *g)
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
    return c;
}

static dqg_status compile_graph(const dqg_graph *g, const tool_opts *o, dqg_compiled **out)
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

static dqg_status execute(dqg_compiled *c, session *s)
{
    dqg_status st = dqg_execute(c, s->inputs, s->n_inputs, s->outputs, s->n_outputs);
    return st == DQG_OK ? DQG_OK : lib_fail(st);
}

/* ------------------------------------------------------------------------ */
/* dqgraph run                                                               */
/* ------------------------------------------------------------------------ */

static const char USAGE_RUN[] =
    "usage: dqgraph run MODEL [-i FILE.pb]... [-o DIR] [--shape NAME=D0,D1,...]...\n"
    "                   [--dim SYMBOL=N]... [--no-fuse] [--backend reference|onednn]\n"
    "                   [--threads N]\n"
    "\n"
    "Compiles the ONNX model MODEL, runs it once and writes every output to\n"
    "DIR/output_<i>.pb (a TensorProto), printing one line per output:\n"
    "name, data type, shape and file.\n"
    "\n"
    "Options:\n"
    "  -i, --input FILE.pb     a TensorProto giving a graph input: the input its name\n"
    "                          names, else the input at its position among the -i files;\n"
    "                          also lets the import use its value where an operator\n"
    "                          needs it while building (e.g. Reshape's shape)\n"
    "  -o, --output-dir DIR    where to write output_<i>.pb (default: .)\n"
    "  --shape NAME=D0,D1,...  the shape of graph input NAME (NAME= for a scalar)\n"
    "  --dim SYMBOL=N          the value of a symbolic dimension\n"
    "  --no-fuse               keep every dequantize as its own partition\n"
    "  --backend B             reference or onednn (default: onednn)\n"
    "  --threads N             threads (default 0: all cores)\n"
    "  -h, --help              show this help\n"
    "\n"
    "Example: dqgraph run model.onnx -i input_0.pb -o out\n";

static dqg_status ensure_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return fail(DQG_IO_ERROR, "'%s' is not a folder", dir);
        return DQG_OK;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return fail(DQG_IO_ERROR, "cannot create folder '%s': %s", dir, strerror(errno));
    return DQG_OK;
}

static int cmd_run(const tool_opts *o)
{
    session s;
    dqg_compiled *c = NULL;
    const char *dir = o->out_dir ? o->out_dir : ".";
    dqg_status st = session_open(&s, o->pos[0], o, o->inputs, o->n_inputs, MISSING_ERROR);
    if (st == DQG_OK) {
        print_warnings(s.graph);
        st = compile_graph(s.graph, o, &c);
    }
    if (st == DQG_OK)
        st = execute(c, &s);
    if (st == DQG_OK)
        st = ensure_dir(dir);
    for (size_t i = 0; st == DQG_OK && i < s.n_outputs; i++) {
        char file[64];
        snprintf(file, sizeof file, "output_%zu.pb", i);
        char *path = join_path(dir, file);
        if (!path) {
            st = oom();
            break;
        }
        dqg_tensor_id id = s.outputs[i].id;
        const char *name = dqg_tensor_name(s.graph, id);
        dqg_dtype dt = dqg_tensor_dtype(s.graph, id);
        int64_t dims[DQG_MAX_RANK];
        int rank = dqg_tensor_dims(s.graph, id, dims);
        st = dqg_tensor_file_write(path, name, dt, rank, dims, s.outputs[i].data);
        if (st != DQG_OK) {
            lib_fail(st);
        } else {
            char shape[256];
            format_shape(shape, sizeof shape, rank, dims);
            printf("%s %s %s %s\n", name ? name : "", dqg_dtype_name(dt), shape, path);
        }
        free(path);
    }
    dqg_compiled_destroy(c);
    session_free(&s);
    return st == DQG_OK ? EXIT_OK : report(st);
}

/* ------------------------------------------------------------------------ */
/* dqgraph test                                                              */
/* ------------------------------------------------------------------------ */

static const char USAGE_TEST[] =
    "usage: dqgraph test [--no-fuse] [--backend reference|onednn] [--rtol X] [--atol X]\n"
    "                    [--threads N] CASE_DIR...\n"
    "\n"
    "Runs ONNX backend-test cases: CASE_DIR/model.onnx with the inputs of every\n"
    "CASE_DIR/test_data_set_*/input_*.pb, comparing each output with output_<i>.pb\n"
    "(data type, shape and values). Floats pass when |got - expected| <= atol +\n"
    "rtol * |expected| (NaN equals NaN, an infinity equals the same infinity);\n"
    "integers when they differ by at most 1. As in ONNX's test data, a UINT16\n"
    "file may hold the bits of a bfloat16 tensor.\n"
    "\n"
    "Prints 'PASS <case>' or 'FAIL <case>: <reason>' per case, then\n"
    "'N passed, M failed'. Exit status 1 if any case failed.\n"
    "\n"
    "Options:\n"
    "  --no-fuse           keep every dequantize as its own partition\n"
    "  --backend B         reference or onednn (default: onednn)\n"
    "  --rtol X            relative tolerance for floats (default 1e-3)\n"
    "  --atol X            absolute tolerance for floats (default 1e-5)\n"
    "  --threads N         threads (default 0: all cores)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Example: dqgraph test /usr/share/libonnx-testdata/data/node/test_relu\n";

typedef struct numbered_entry {
    unsigned long long number;
    char *name;
} numbered_entry;

static void numbered_free(numbered_entry *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++)
        free(e[i].name);
    free(e);
}

static int compare_numbered(const void *a, const void *b)
{
    const numbered_entry *x = a, *y = b;
    if (x->number != y->number)
        return x->number < y->number ? -1 : 1;
    return strcmp(x->name, y->name);
}

/*
 * The entries of `dir` named <prefix><digits><suffix> that are folders
 * (want_dirs) or regular files, sorted by the number.
 */
static dqg_status list_numbered(const char *dir, const char *prefix, const char *suffix,
                                bool want_dirs, numbered_entry **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d)
        return fail(DQG_IO_ERROR, "cannot open folder '%s': %s", dir, strerror(errno));
    numbered_entry *list = NULL;
    size_t n = 0, cap = 0;
    dqg_status st = DQG_OK;
    size_t plen = strlen(prefix), slen = strlen(suffix);
    struct dirent *e;
    while (st == DQG_OK && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        size_t len = strlen(name);
        if (len <= plen + slen || strncmp(name, prefix, plen) != 0 ||
            strcmp(name + len - slen, suffix) != 0)
            continue;
        size_t ndig = len - plen - slen;
        bool digits = ndig <= 18;
        for (size_t i = 0; digits && i < ndig; i++)
            digits = isdigit((unsigned char)name[plen + i]);
        if (!digits)
            continue;
        char *full = join_path(dir, name);
        if (!full) {
            st = oom();
            break;
        }
        struct stat sb;
        bool fits = stat(full, &sb) == 0 && (want_dirs ? S_ISDIR(sb.st_mode) : S_ISREG(sb.st_mode));
        if (!fits) {
            free(full);
            continue;
        }
        numbered_entry *q = grow(list, &cap, n + 1, sizeof *q);
        if (!q) {
            free(full);
            st = oom();
            break;
        }
        list = q;
        unsigned long long v = 0;
        for (size_t i = 0; i < ndig; i++)
            v = v * 10 + (unsigned long long)(name[plen + i] - '0');
        list[n].number = v;
        list[n].name = full;
        n++;
    }
    closedir(d);
    if (st != DQG_OK) {
        numbered_free(list, n);
        return st;
    }
    if (n > 1)
        qsort(list, n, sizeof *list, compare_numbered);
    *out = list;
    *n_out = n;
    return DQG_OK;
}

/* One element as a double: exact for every integer type. */
static double element_value(dqg_dtype dt, const void *data, int64_t i)
{
    const unsigned char *p = data;
    switch (dt) {
    case DQG_S32: {
        int32_t v;
        memcpy(&v, p + (size_t)i * 4, 4);
        return (double)v;
    }
    case DQG_U32: {
        uint32_t v;
        memcpy(&v, p + (size_t)i * 4, 4);
        return (double)v;
    }
    case DQG_S64: {
        int64_t v;
        memcpy(&v, p + (size_t)i * 8, 8);
        return (double)v;
    }
    default: {
        float f;
        dqg_dtype_decode(dt, data, i, 1, &f);
        return (double)f;
    }
    }
}

/* How far outside the tolerance got is (0: within). */
static double float_badness(double e, double g, double rtol, double atol)
{
    if (isnan(e) || isnan(g))
        return isnan(e) && isnan(g) ? 0.0 : INFINITY;
    if (isinf(e) || isinf(g))
        return e == g ? 0.0 : INFINITY;
    double diff = fabs(g - e), tol = atol + rtol * fabs(e);
    if (diff <= tol)
        return 0.0;
    return tol > 0 ? diff / tol : INFINITY;
}

typedef struct worst_element {
    double badness;
    int64_t index;
    double expected, got;
} worst_element;

static void compare_values(dqg_dtype dt, const void *got, const void *expected, int64_t n,
                           double rtol, double atol, worst_element *w)
{
    bool is_float = dqg_dtype_is_float(dt);
    bool wide = dt == DQG_S32 || dt == DQG_U32 || dt == DQG_S64;
    float ge[512], ee[512];
    w->badness = 0;
    for (int64_t first = 0; first < n; first += 512) {
        int64_t m = n - first < 512 ? n - first : 512;
        if (!wide) {
            dqg_dtype_decode(dt, got, first, m, ge);
            dqg_dtype_decode(dt, expected, first, m, ee);
        }
        for (int64_t i = 0; i < m; i++) {
            double g = wide ? element_value(dt, got, first + i) : (double)ge[i];
            double e = wide ? element_value(dt, expected, first + i) : (double)ee[i];
            double bad;
            if (is_float) {
                bad = float_badness(e, g, rtol, atol);
            } else {
                double diff = fabs(g - e);
                bad = diff <= 1.0 ? 0.0 : diff;
            }
            if (bad > w->badness) {
                w->badness = bad;
                w->index = first + i;
                w->expected = e;
                w->got = g;
            }
        }
    }
}

static void format_value(char *buf, size_t size, dqg_dtype dt, double v)
{
    if (dqg_dtype_is_float(dt))
        snprintf(buf, size, "%.9g", v);
    else
        snprintf(buf, size, "%.0f", v);
}

/* Checks the outputs of one data set; false with `reason` set on a mismatch. */
static dqg_status check_outputs(const session *s, const numbered_entry *expected, size_t n_expected,
                                const tool_opts *o, char *reason, size_t reason_size, bool *ok,
                                bool *value_mismatch)
{
    *ok = false;
    *value_mismatch = false;
    const dqg_graph *g = s->graph;
    if (n_expected != s->n_outputs) {
        snprintf(reason, reason_size,
                 "the model has %zu output%s, the data set has %zu output_*.pb", s->n_outputs,
                 s->n_outputs == 1 ? "" : "s", n_expected);
        return DQG_OK;
    }
    for (size_t i = 0; i < s->n_outputs; i++) {
        tensor_file t;
        dqg_status st = tensor_file_load(&t, expected[i].name);
        if (st != DQG_OK)
            return st;
        dqg_tensor_id id = s->outputs[i].id;
        const char *name = dqg_tensor_name(g, id);
        dqg_dtype dt = dqg_tensor_dtype(g, id);
        int64_t dims[DQG_MAX_RANK];
        int rank = dqg_tensor_dims(g, id, dims);
        bool same_shape = rank == t.rank;
        for (int d = 0; same_shape && d < rank; d++)
            same_shape = dims[d] == t.dims[d];
        bool done = true;
        if (dt != t.dtype && !bf16_as_u16(dt, t.dtype)) {
            snprintf(reason, reason_size, "%s: data type %s, expected %s", name, dqg_dtype_name(dt),
                     dqg_dtype_name(t.dtype));
        } else if (!same_shape) {
            char a[256], b[256];
            format_shape(a, sizeof a, rank, dims);
            format_shape(b, sizeof b, t.rank, t.dims);
            snprintf(reason, reason_size, "%s: shape %s, expected %s", name, a, b);
        } else if (t.size != s->outputs[i].size) {
            snprintf(reason, reason_size, "%s: %zu bytes, expected %zu", name, s->outputs[i].size,
                     t.size);
        } else {
            worst_element w = {0};
            compare_values(dt, s->outputs[i].data, t.data, dqg_tensor_element_count(g, id), o->rtol,
                           o->atol, &w);
            if (w.badness > 0) {
                char e[64], v[64];
                format_value(e, sizeof e, dt, w.expected);
                format_value(v, sizeof v, dt, w.got);
                snprintf(reason, reason_size, "%s[%lld] expected %s, got %s", name,
                         (long long)w.index, e, v);
                *value_mismatch = true;
            } else {
                done = false;
            }
        }
        free(t.name);
        free(t.data);
        if (done)
            return DQG_OK;
    }
    *ok = true;
    return DQG_OK;
}

/* Runs one data set; false with `reason` set on any failure. */
static bool run_data_set(const char *model, const char *set_dir, const tool_opts *o, char *reason,
                         size_t reason_size, bool *value_mismatch)
{
    *value_mismatch = false;
    numbered_entry *ins = NULL, *outs = NULL;
    size_t n_ins = 0, n_outs = 0;
    const char **paths = NULL;
    session s;
    memset(&s, 0, sizeof s);
    dqg_compiled *c = NULL;
    bool ok = false;
    dqg_status st = list_numbered(set_dir, "input_", ".pb", false, &ins, &n_ins);
    if (st == DQG_OK)
        st = list_numbered(set_dir, "output_", ".pb", false, &outs, &n_outs);
    if (st == DQG_OK && n_ins) {
        paths = calloc(n_ins, sizeof *paths);
        if (!paths)
            st = oom();
        for (size_t i = 0; paths && i < n_ins; i++)
            paths[i] = ins[i].name;
    }
    if (st == DQG_OK)
        st = session_open(&s, model, o, paths, n_ins, MISSING_ERROR);
    if (st == DQG_OK)
        st = compile_graph(s.graph, o, &c);
    if (st == DQG_OK)
        st = execute(c, &s);
    if (st == DQG_OK)
        st = check_outputs(&s, outs, n_outs, o, reason, reason_size, &ok, value_mismatch);
    if (st != DQG_OK)
        snprintf(reason, reason_size, "%s: %s", dqg_status_name(st), g_msg);
    dqg_compiled_destroy(c);
    session_free(&s);
    free(paths);
    numbered_free(ins, n_ins);
    numbered_free(outs, n_outs);
    return ok;
}

/* The folder's last path component (a copy), trailing slashes ignored. */
static char *case_name(const char *dir)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    if (start == len) /* "/" */
        return dup_range(dir, len);
    return dup_range(dir + start, len - start);
}

static bool run_case(const char *dir, const tool_opts *o, char *reason, size_t reason_size)
{
    numbered_entry *sets = NULL;
    size_t n_sets = 0;
    char *model = join_path(dir, "model.onnx");
    if (!model) {
        snprintf(reason, reason_size, "%s: out of memory", dqg_status_name(DQG_OUT_OF_MEMORY));
        return false;
    }
    bool ok = false;
    dqg_status st = list_numbered(dir, "test_data_set_", "", true, &sets, &n_sets);
    if (st != DQG_OK) {
        snprintf(reason, reason_size, "%s: %s", dqg_status_name(st), g_msg);
    } else if (n_sets == 0) {
        snprintf(reason, reason_size, "no test_data_set_* folder in '%s'", dir);
    } else {
        ok = true;
        for (size_t i = 0; ok && i < n_sets; i++) {
            char inner[sizeof g_msg + 512];
            inner[0] = '\0';
            bool value_mismatch = false;
            ok = run_data_set(model, sets[i].name, o, inner, sizeof inner, &value_mismatch);
            if (!ok) {
                /* A value mismatch keeps the exact "<output>[<index>] expected ..." form;
                 * other reasons name the data set when there are several. */
                if (n_sets > 1 && !value_mismatch) {
                    char *set = case_name(sets[i].name);
                    snprintf(reason, reason_size, "%s: %s", set ? set : "?", inner);
                    free(set);
                } else {
                    snprintf(reason, reason_size, "%s", inner);
                }
            }
        }
    }
    numbered_free(sets, n_sets);
    free(model);
    return ok;
}

static int cmd_test(const tool_opts *o)
{
    size_t passed = 0, failed = 0;
    for (size_t i = 0; i < o->n_pos; i++) {
        char reason[sizeof g_msg + 1024];
        reason[0] = '\0';
        char *name = case_name(o->pos[i]);
        bool ok = run_case(o->pos[i], o, reason, sizeof reason);
        if (ok)
            printf("PASS %s\n", name ? name : o->pos[i]);
        else
            printf("FAIL %s: %s\n", name ? name : o->pos[i], reason);
        fflush(stdout);
        free(name);
        if (ok)
            passed++;
        else
            failed++;
    }
    printf("%zu passed, %zu failed\n", passed, failed);
    return failed ? EXIT_TEST_FAILURES : EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* dqgraph explain and dqgraph dot                                           */
/* ------------------------------------------------------------------------ */

static const char USAGE_EXPLAIN[] =
    "usage: dqgraph explain MODEL [-i FILE.pb]... [--shape NAME=D0,D1,...]...\n"
    "                       [--dim SYMBOL=N]... [--no-fuse] [--backend reference|onednn]\n"
    "\n"
    "Compiles MODEL and prints its partitions (ops, kernel, data types), how many\n"
    "fused a dequantize into a MatMul or Convolution, and the explain log: every\n"
    "fusion made or refused, with the reason.\n"
    "\n"
    "Options:\n"
    "  -i, --input FILE.pb     a graph input's value, as for 'dqgraph run' (needed\n"
    "                          when an operator reads it while building)\n"
    "  --shape NAME=D0,D1,...  the shape of graph input NAME\n"
    "  --dim SYMBOL=N          the value of a symbolic dimension\n"
    "  --no-fuse               keep every dequantize as its own partition\n"
    "  --backend B             reference or onednn (default: onednn)\n"
    "  -h, --help              show this help\n";

static int cmd_explain(const tool_opts *o)
{
    session s;
    dqg_compiled *c = NULL;
    dqg_status st = session_open(&s, o->pos[0], o, o->inputs, o->n_inputs, MISSING_IGNORE);
    if (st == DQG_OK) {
        print_warnings(s.graph);
        st = compile_graph(s.graph, o, &c);
    }
    if (st == DQG_OK) {
        size_t np = dqg_compiled_partition_count(c);
        printf("partitions: %zu\n", np);
        for (size_t i = 0; i < np; i++)
            printf("  [%zu] %s\n", i, dqg_compiled_partition_info(c, i));
        printf("fused: %zu\n", dqg_compiled_fused_count(c));
        size_t ne = dqg_compiled_explain_count(c);
        printf("explain: %zu line%s\n", ne, ne == 1 ? "" : "s");
        for (size_t i = 0; i < ne; i++)
            printf("  %s\n", dqg_compiled_explain(c, i));
    }
    dqg_compiled_destroy(c);
    session_free(&s);
    return st == DQG_OK ? EXIT_OK : report(st);
}

static const char USAGE_DOT[] =
    "usage: dqgraph dot MODEL [--after-passes] [-i FILE.pb]... [--shape NAME=D0,D1,...]...\n"
    "                   [--dim SYMBOL=N]... [--no-fuse] [--backend reference|onednn]\n"
    "\n"
    "Writes the graph in Graphviz format to standard output: as imported, or with\n"
    "--after-passes as compiled, each partition drawn as a cluster labelled with\n"
    "its kernel (so the picture shows the fusion).\n"
    "\n"
    "Options:\n"
    "  --after-passes          draw the compiled graph instead of the imported one\n"
    "  -i, --input FILE.pb     a graph input's value, as for 'dqgraph run'\n"
    "  --shape NAME=D0,D1,...  the shape of graph input NAME\n"
    "  --dim SYMBOL=N          the value of a symbolic dimension\n"
    "  --no-fuse               with --after-passes: compile without fusion\n"
    "  --backend B             with --after-passes: reference or onednn\n"
    "  -h, --help              show this help\n"
    "\n"
    "Example: dqgraph dot m.onnx --after-passes | dot -Tpng > m.png\n";

static int cmd_dot(const tool_opts *o)
{
    session s;
    dqg_compiled *c = NULL;
    dqg_status st = session_open(&s, o->pos[0], o, o->inputs, o->n_inputs, MISSING_IGNORE);
    if (st == DQG_OK)
        print_warnings(s.graph);
    if (st == DQG_OK && o->after_passes)
        st = compile_graph(s.graph, o, &c);
    if (st == DQG_OK) {
        st = o->after_passes ? dqg_compiled_dump(c, DQG_DUMP_DOT, stdout)
                             : dqg_graph_dump(s.graph, DQG_DUMP_DOT, stdout);
        if (st != DQG_OK)
            lib_fail(st);
    }
    dqg_compiled_destroy(c);
    session_free(&s);
    return st == DQG_OK ? EXIT_OK : report(st);
}

/* ------------------------------------------------------------------------ */
/* dqgraph bench                                                             */
/* ------------------------------------------------------------------------ */

static const char USAGE_BENCH[] =
    "usage: dqgraph bench MODEL [--iters N] [--warmup N] [--no-fuse] [-i FILE.pb]...\n"
    "                     [--shape NAME=D0,D1,...]... [--dim SYMBOL=N]...\n"
    "                     [--backend reference|onednn] [--threads N]\n"
    "\n"
    "Times the compilation of MODEL (compile_ms), a second compilation of the same\n"
    "graph (recompile_ms: served by the compiled-partition cache) and N executions\n"
    "after the warmup runs (median_ms, min_ms). Each compilation is broken down into\n"
    "the pass pipeline (passes_ms), cache-key hashing (hash_ms), kernel creation\n"
    "with its constant transforms (kernels_ms) and the number of constant\n"
    "transforms run (0 on a cache hit). Inputs without -i get deterministic\n"
    "data: floats uniform in [-1, 1], integers random bytes.\n"
    "\n"
    "Options:\n"
    "  --iters N               timed executions (default 50)\n"
    "  --warmup N              untimed executions first (default 5)\n"
    "  --no-fuse               keep every dequantize as its own partition\n"
    "  -i, --input FILE.pb     a graph input's value, as for 'dqgraph run'\n"
    "  --shape NAME=D0,D1,...  the shape of graph input NAME\n"
    "  --dim SYMBOL=N          the value of a symbolic dimension\n"
    "  --backend B             reference or onednn (default: onednn)\n"
    "  --threads N             threads (default 0: all cores)\n"
    "  -h, --help              show this help\n";

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmd_bench(const tool_opts *o)
{
    session s;
    dqg_compiled *c = NULL, *c2 = NULL;
    double *times = NULL;
    double compile_ms = 0, recompile_ms = 0;
    dqg_status st = session_open(&s, o->pos[0], o, o->inputs, o->n_inputs, MISSING_GENERATE);
    if (st == DQG_OK) {
        print_warnings(s.graph);
        times = malloc((size_t)o->iters * sizeof *times);
        if (!times)
            st = oom();
    }
    /* Where each compile's time went: the cache's counters before and
     * after it. */
    dqg_cache_stats s0, s1, s2;
    dqg_cache_get_stats(&s0);
    if (st == DQG_OK) {
        double t0 = now_ms();
        st = compile_graph(s.graph, o, &c);
        compile_ms = now_ms() - t0;
    }
    dqg_cache_get_stats(&s1);
    if (st == DQG_OK) {
        double t0 = now_ms();
        st = compile_graph(s.graph, o, &c2);
        recompile_ms = now_ms() - t0;
    }
    dqg_cache_get_stats(&s2);
    for (long long i = 0; st == DQG_OK && i < o->warmup; i++)
        st = execute(c, &s);
    for (long long i = 0; st == DQG_OK && i < o->iters; i++) {
        double t0 = now_ms();
        st = execute(c, &s);
        times[i] = now_ms() - t0;
    }
    if (st == DQG_OK) {
        size_t n = (size_t)o->iters;
        qsort(times, n, sizeof *times, compare_doubles);
        double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
        printf("compile_ms: %.3f\n", compile_ms);
        printf("  passes_ms: %.3f\n", s1.passes_ms - s0.passes_ms);
        printf("  hash_ms: %.3f\n", s1.hash_ms - s0.hash_ms);
        printf("  kernels_ms: %.3f\n", s1.compile_ms - s0.compile_ms);
        printf("  constant_transforms: %llu\n",
               (unsigned long long)(s1.constant_transforms - s0.constant_transforms));
        printf("recompile_ms: %.3f\n", recompile_ms);
        printf("  passes_ms: %.3f\n", s2.passes_ms - s1.passes_ms);
        printf("  hash_ms: %.3f\n", s2.hash_ms - s1.hash_ms);
        printf("  kernels_ms: %.3f\n", s2.compile_ms - s1.compile_ms);
        printf("  constant_transforms: %llu\n",
               (unsigned long long)(s2.constant_transforms - s1.constant_transforms));
        printf("  plan_hit: %s\n", s2.plan_hits > s1.plan_hits ? "yes" : "no");
        printf("median_ms: %.3f\n", median);
        printf("min_ms: %.3f\n", times[0]);
        printf("partitions: %zu\n", dqg_compiled_partition_count(c));
        printf("fused: %zu\n", dqg_compiled_fused_count(c));
    }
    free(times);
    dqg_compiled_destroy(c2);
    dqg_compiled_destroy(c);
    session_free(&s);
    return st == DQG_OK ? EXIT_OK : report(st);
}

/* ------------------------------------------------------------------------ */
/* main                                                                      */
/* ------------------------------------------------------------------------ */

static const char USAGE_MAIN[] =
    "usage: dqgraph COMMAND [ARGS...]\n"
    "\n"
    "The command-line tool of dqgraph " DQG_VERSION_STRING ", a graph compiler and runtime for\n"
    "quantized inference on oneDNN.\n"
    "\n"
    "Commands:\n"
    "  run MODEL [-i FILE.pb]... [-o DIR]   run a model, write its outputs as .pb files\n"
    "  test CASE_DIR...                     run ONNX backend-test cases, compare outputs\n"
    "  explain MODEL                        show partitions and fusion decisions\n"
    "  dot MODEL [--after-passes]           write the graph in Graphviz format\n"
    "  bench MODEL [--iters N] [--warmup N] time compilation and execution\n"
    "  selftest [--seconds N] [--seed S]    check fused kernels against the reference\n"
    "                                       at every instruction-set level of this CPU\n"
    "\n"
    "Run 'dqgraph COMMAND --help' for a command's options.\n"
    "Options --shape NAME=D0,D1,... and --dim SYMBOL=N give shapes and symbolic\n"
    "dimensions; --no-fuse disables fusion; --backend reference|onednn picks the backend.\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  test: at least one case failed\n"
    "  2  usage error (unknown command or option, missing argument, bad number)\n"
    "  3  invalid model or input (invalid argument, unsupported, parse or I/O error)\n"
    "  4  internal or backend error (out of memory, backend error)\n";

typedef struct command_def {
    const char *name;
    int (*run)(const tool_opts *);
    unsigned options;
    size_t min_pos, max_pos; /* max_pos 0: unlimited */
    const char *usage;
    const char *pos_name;
} command_def;

#define MODEL_OPTS (OPT_INPUT | OPT_SHAPE | OPT_DIM | OPT_NOFUSE | OPT_BACKEND)

static const command_def COMMANDS[] = {
    {"run", cmd_run, MODEL_OPTS | OPT_OUTDIR | OPT_THREADS, 1, 1, USAGE_RUN, "MODEL"},
    {"test", cmd_test, OPT_NOFUSE | OPT_BACKEND | OPT_RTOL | OPT_ATOL | OPT_THREADS, 1, 0,
     USAGE_TEST, "CASE_DIR"},
    {"explain", cmd_explain, MODEL_OPTS, 1, 1, USAGE_EXPLAIN, "MODEL"},
    {"dot", cmd_dot, MODEL_OPTS | OPT_AFTER, 1, 1, USAGE_DOT, "MODEL"},
    {"bench", cmd_bench, MODEL_OPTS | OPT_ITERS | OPT_WARMUP | OPT_THREADS, 1, 1, USAGE_BENCH,
     "MODEL"},
};

static int run_command(const command_def *cmd, int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(cmd->usage, stdout);
            return EXIT_OK;
        }
    }
    tool_opts o;
    memset(&o, 0, sizeof o);
    o.command = cmd->name;
    o.backend = DQG_BACKEND_ONEDNN;
    o.iters = 50;
    o.warmup = 5;
    o.rtol = 1e-3;
    o.atol = 1e-5;
    int rc = parse_options(&o, argc, argv, 2, cmd->options);
    if (rc == 0 && o.n_pos < cmd->min_pos)
        rc = usage_error(cmd->name, "missing %s", cmd->pos_name);
    else if (rc == 0 && cmd->max_pos && o.n_pos > cmd->max_pos)
        rc = usage_error(cmd->name, "unexpected argument '%s'", o.pos[cmd->max_pos]);
    if (rc == 0)
        rc = cmd->run(&o);
    opts_free(&o);
    return rc;
}

int main(int argc, char **argv)
{
    int rc;
    if (argc < 2) {
        fputs(USAGE_MAIN, stderr);
        rc = EXIT_USAGE;
    } else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
               strcmp(argv[1], "help") == 0) {
        fputs(USAGE_MAIN, stdout);
        rc = EXIT_OK;
    } else if (strcmp(argv[1], "--version") == 0) {
        printf("dqgraph %s\n", DQG_VERSION_STRING);
        rc = EXIT_OK;
    } else if (strcmp(argv[1], "selftest") == 0) {
        rc = dqg_tool_selftest(argc, argv);
    } else {
        const command_def *cmd = NULL;
        for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
            if (strcmp(argv[1], COMMANDS[i].name) == 0)
                cmd = &COMMANDS[i];
        if (!cmd)
            rc = usage_error(NULL, "unknown command '%s'", argv[1]);
        else
            rc = run_command(cmd, argc, argv);
    }
    /* Release the compiled-partition cache so that nothing stays allocated at exit. */
    dqg_cache_clear();
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "dqgraph: %s: writing to standard output failed\n",
                dqg_status_name(DQG_IO_ERROR));
        if (rc == EXIT_OK)
            rc = EXIT_INVALID;
    }
    return rc;
}
