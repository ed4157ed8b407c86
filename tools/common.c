/* Error reporting, small helpers and option parsing of the dqgraph tool. */
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
/* Exit codes and error reporting                                            */
/* ------------------------------------------------------------------------ */

/* The message of the tool's last failure (library messages are copied here). */
char g_msg[4096];

int status_exit_code(dqg_status st)
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
dqg_status fail(dqg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    return st;
}

/* Copies the library's message for a failed call and returns st. */
dqg_status lib_fail(dqg_status st)
{
    const char *m = dqg_last_error();
    snprintf(g_msg, sizeof g_msg, "%s", m && *m ? m : "(no message)");
    return st;
}

dqg_status oom(void)
{
    return fail(DQG_OUT_OF_MEMORY, "out of memory");
}

/* Prints "dqgraph: <status name>: <message>" and returns the exit code. */
int report(dqg_status st)
{
    fprintf(stderr, "dqgraph: %s: %s\n", dqg_status_name(st), g_msg);
    return status_exit_code(st);
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------ */

/* Grows an array to hold at least `need` elements; NULL (p unchanged) if out of memory. */
void *grow(void *p, size_t *cap, size_t need, size_t elem)
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

char *dup_range(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *dup_string(const char *s)
{
    return dup_range(s, strlen(s));
}

/* dir + "/" + name, without doubling a trailing slash. */
char *join_path(const char *dir, const char *name)
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
void format_shape(char *buf, size_t size, int rank, const int64_t *dims)
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

double now_ms(void)
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
    {"--random", NULL, OPT_RANDOM, false},      {"--seed", NULL, OPT_SEED, true},
    {"--strict", NULL, OPT_STRICT, false},      {"--all", NULL, OPT_ALL, false},
    {"--time", NULL, OPT_TIME, true},           {"--json", NULL, OPT_JSON, false},
    {"--compare", NULL, OPT_COMPARE, true},     {"--fpmath", NULL, OPT_FPMATH, true},
};

void opts_free(tool_opts *o)
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

int usage_error(const char *command, const char *fmt, ...)
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
    case OPT_FPMATH:
        if (strcmp(value, "strict") == 0)
            o->fpmath = DQG_FPMATH_STRICT;
        else if (strcmp(value, "bf16") == 0)
            o->fpmath = DQG_FPMATH_BF16;
        else if (strcmp(value, "int8") == 0)
            o->fpmath = DQG_FPMATH_INT8;
        else
            return usage_error(o->command,
                               "unknown fpmath '%s' (expected 'strict', 'bf16' or 'int8')", value);
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
    case OPT_RANDOM:
        o->random = true;
        return 0;
    case OPT_SEED:
        if (!parse_integer(value, 0, INT64_MAX, &v))
            return usage_error(o->command,
                               "bad number '%s' for --seed (expected an integer from 0 to %lld)",
                               value, (long long)INT64_MAX);
        o->seed = (uint64_t)v;
        return 0;
    case OPT_STRICT:
        o->strict = true;
        return 0;
    case OPT_ALL:
        o->all = true;
        return 0;
    case OPT_JSON:
        o->json = true;
        return 0;
    case OPT_TIME:
        if (!parse_real(value, &o->time_s) || o->time_s <= 0 || o->time_s > MAX_TIME_S)
            return usage_error(o->command,
                               "bad number '%s' for --time (expected seconds, more than 0 and at "
                               "most %g)",
                               value, MAX_TIME_S);
        return 0;
    case OPT_COMPARE:
        o->compare[0] = value; /* the second configuration: see parse_options */
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
int parse_options(tool_opts *o, int argc, char **argv, int first, unsigned allowed)
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
        if (d->id == OPT_COMPARE) { /* --compare "OPTS A" "OPTS B": two arguments */
            if (i + 1 >= argc)
                return usage_error(o->command, "option '%s' needs two arguments", d->long_name);
            o->compare[1] = argv[++i];
        }
        int rc = apply_option(o, d, value);
        if (rc)
            return rc;
    }
    return 0;
}

void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dqgraph: warning: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

void numbered_free(numbered_entry *e, size_t n)
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
dqg_status list_numbered(const char *dir, const char *prefix, const char *suffix, bool want_dirs,
                         numbered_entry **out, size_t *n_out)
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
