/* dqgraph test */
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
/* dqgraph test                                                              */
/* ------------------------------------------------------------------------ */

const char USAGE_TEST[] =
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

int cmd_test(const tool_opts *o)
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
