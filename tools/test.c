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
    "                    [--threads N] [--strict] CASE_DIR...\n"
    "\n"
    "Runs ONNX backend-test cases: CASE_DIR/model.onnx with the inputs of every\n"
    "CASE_DIR/test_data_set_*/input_*.pb, comparing each output with output_<i>.pb\n"
    "(data type, shape and values). Floats pass when |got - expected| <= atol +\n"
    "rtol * |expected| (NaN equals NaN, an infinity equals the same infinity);\n"
    "integers when they differ by at most 1. As in ONNX's test data, a UINT16\n"
    "file may hold the bits of a bfloat16 tensor.\n"
    "\n"
    "Prints one line per case, then one line per data set and output compared:\n"
    "  PASS <case>\n"
    "  FAIL <case>: <reason>         wrong values, type or shape, or the case's\n"
    "                                data does not fit the model\n"
    "  SKIP <case>: <reason>         the model uses something dqgraph does not\n"
    "                                support (an operator, a data type)\n"
    "  ERROR <case>: <reason>        the case cannot be run: no folder, no\n"
    "                                test_data_set_*, an unreadable model or file\n"
    "    <set> <output>: max_abs_error A, max_rel_error R, outside tolerance K of N\n"
    "(max_rel_error is over the elements whose expected value is not 0), and a\n"
    "summary: 'N passed, M failed, K skipped, E errors'.\n"
    "\n"
    "Exit status: 3 if any case is an ERROR, else 1 if any failed (or, with\n"
    "--strict, was skipped), else 0.\n"
    "\n"
    "Options:\n"
    "  --no-fuse           keep every dequantize as its own partition\n"
    "  --backend B         reference or onednn (default: onednn)\n"
    "  --fpmath M          strict, or bf16: f32 MatMul/Convolution may compute in bf16\n"
    "                      or int8: weight-only MatMuls may quantize activations\n"
    "                      to int8 per K-block (approximate)\n"
    "  --rtol X            relative tolerance for floats (default 1e-3)\n"
    "  --atol X            absolute tolerance for floats (default 1e-5)\n"
    "  --threads N         threads (default 0: all cores)\n"
    "  --strict            count a skipped case as a failure\n"
    "  -h, --help          show this help\n"
    "\n"
    "Example: dqgraph test /usr/share/libonnx-testdata/data/node/test_relu\n";

typedef enum outcome {
    OUTCOME_PASS,
    OUTCOME_FAIL,
    OUTCOME_SKIP,
    OUTCOME_ERROR,
} outcome;

/* The worse of two outcomes: ERROR > FAIL > SKIP > PASS. */
static outcome worse(outcome a, outcome b)
{
    static const int rank[] = {
        [OUTCOME_PASS] = 0, [OUTCOME_SKIP] = 1, [OUTCOME_FAIL] = 2, [OUTCOME_ERROR] = 3};
    return rank[b] > rank[a] ? b : a;
}

/* What a failed library or tool call makes of the case. */
static outcome status_outcome(dqg_status st)
{
    switch (st) {
    case DQG_UNSUPPORTED:
        return OUTCOME_SKIP;
    case DQG_IO_ERROR:
    case DQG_PARSE_ERROR:
        return OUTCOME_ERROR;
    default:
        return OUTCOME_FAIL;
    }
}

/* A growing text: the per-output lines, printed after the case's verdict. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *q = grow(t->s, &t->cap, t->len + (size_t)n + 1, 1);
    if (!q)
        return; /* the report loses a line; the verdict stands */
    t->s = q;
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
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

/* One case being run: its verdict (the first reason of the worst outcome) and report. */
typedef struct case_run {
    const tool_opts *o;
    outcome result;
    char reason[sizeof g_msg + 1024];
    text lines;
    const char *set_name; /* the data set being run */
    bool many_sets;
} case_run;

static void case_verdict(case_run *r, outcome out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void case_verdict(case_run *r, outcome out, const char *fmt, ...)
{
    if (worse(r->result, out) == r->result && r->reason[0])
        return; /* a reason as bad or worse is already there */
    r->result = worse(r->result, out);
    size_t used = 0;
    if (r->many_sets) {
        int n = snprintf(r->reason, sizeof r->reason, "%s: ", r->set_name);
        used = n > 0 && (size_t)n < sizeof r->reason ? (size_t)n : 0;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason + used, sizeof r->reason - used, fmt, ap);
    va_end(ap);
}

/* Compares the outputs of one data set with its output_<i>.pb files. */
static void check_outputs(case_run *r, const session *s, const numbered_entry *expected,
                          size_t n_expected)
{
    const tool_opts *o = r->o;
    const dqg_graph *g = s->graph;
    if (n_expected != s->n_outputs) {
        case_verdict(r, OUTCOME_FAIL,
                     "the model has %zu output%s, the data set has %zu output_*.pb", s->n_outputs,
                     s->n_outputs == 1 ? "" : "s", n_expected);
        return;
    }
    for (size_t i = 0; i < s->n_outputs; i++) {
        tensor_file t;
        dqg_status st = tensor_file_load(&t, expected[i].name);
        if (st != DQG_OK) {
            case_verdict(r, OUTCOME_ERROR, "%s: %s", dqg_status_name(st), g_msg);
            continue;
        }
        dqg_tensor_id id = s->outputs[i].id;
        const char *name = dqg_tensor_name(g, id);
        dqg_dtype dt = dqg_tensor_dtype(g, id);
        int64_t dims[DQG_MAX_RANK];
        int rank = dqg_tensor_dims(g, id, dims);
        bool same_shape = rank == t.rank;
        for (int d = 0; same_shape && d < rank; d++)
            same_shape = dims[d] == t.dims[d];
        if (dt != t.dtype && !bf16_as_u16(dt, t.dtype)) {
            case_verdict(r, OUTCOME_FAIL, "%s: data type %s, expected %s", name, dqg_dtype_name(dt),
                         dqg_dtype_name(t.dtype));
            text_add(&r->lines, "    %s %s: data type %s, expected %s\n", r->set_name, name,
                     dqg_dtype_name(dt), dqg_dtype_name(t.dtype));
        } else if (!same_shape || t.size != s->outputs[i].size) {
            char a[256], b[256];
            format_shape(a, sizeof a, rank, dims);
            format_shape(b, sizeof b, t.rank, t.dims);
            case_verdict(r, OUTCOME_FAIL, "%s: shape %s, expected %s", name, a, b);
            text_add(&r->lines, "    %s %s: shape %s, expected %s\n", r->set_name, name, a, b);
        } else {
            tensor_diff d;
            diff_tensors(dt, s->outputs[i].data, t.data, dqg_tensor_element_count(g, id), o->rtol,
                         o->atol, true, &d);
            text_add(&r->lines,
                     "    %s %s: max_abs_error %.6g, max_rel_error %.6g, outside tolerance %lld "
                     "of %lld\n",
                     r->set_name, name, d.max_abs, d.max_rel, (long long)d.outside, (long long)d.n);
            if (d.outside) {
                char e[64], v[64];
                format_value(e, sizeof e, dt, d.first_expected);
                format_value(v, sizeof v, dt, d.first_got);
                case_verdict(r, OUTCOME_FAIL,
                             "%s: %lld of %lld elements outside tolerance; first %s[%lld] "
                             "expected %s, got %s",
                             name, (long long)d.outside, (long long)d.n, name,
                             (long long)d.first_outside, e, v);
            }
        }
        free(t.name);
        free(t.data);
    }
}

/* Runs one data set. */
static void run_data_set(case_run *r, const char *model, const char *set_dir)
{
    const tool_opts *o = r->o;
    numbered_entry *ins = NULL, *outs = NULL;
    size_t n_ins = 0, n_outs = 0;
    const char **paths = NULL;
    session s;
    memset(&s, 0, sizeof s);
    dqg_compiled *c = NULL;
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
        check_outputs(r, &s, outs, n_outs);
    else
        case_verdict(r, status_outcome(st), "%s: %s", dqg_status_name(st), g_msg);
    dqg_compiled_destroy(c);
    session_free(&s);
    free(paths);
    numbered_free(ins, n_ins);
    numbered_free(outs, n_outs);
}

static void run_case(case_run *r, const char *dir)
{
    numbered_entry *sets = NULL;
    size_t n_sets = 0;
    struct stat sb;
    char *model = join_path(dir, "model.onnx");
    if (!model) {
        case_verdict(r, OUTCOME_ERROR, "%s: out of memory", dqg_status_name(DQG_OUT_OF_MEMORY));
        return;
    }
    dqg_status st = list_numbered(dir, "test_data_set_", "", true, &sets, &n_sets);
    if (st != DQG_OK) {
        case_verdict(r, OUTCOME_ERROR, "%s: %s", dqg_status_name(st), g_msg);
    } else if (stat(model, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        case_verdict(r, OUTCOME_ERROR, "no model.onnx in '%s'", dir);
    } else if (n_sets == 0) {
        case_verdict(r, OUTCOME_ERROR, "no test_data_set_* folder in '%s'", dir);
    } else {
        r->many_sets = n_sets > 1;
        for (size_t i = 0; i < n_sets; i++) {
            char *set = case_name(sets[i].name);
            r->set_name = set ? set : "?";
            run_data_set(r, model, sets[i].name);
            r->set_name = NULL;
            free(set);
            /* A model that cannot be imported or run fails the same way on every set. */
            if (r->result == OUTCOME_SKIP || r->result == OUTCOME_ERROR)
                break;
        }
    }
    numbered_free(sets, n_sets);
    free(model);
}

int cmd_test(const tool_opts *o)
{
    size_t count[4] = {0};
    static const char *const verdict[] = {[OUTCOME_PASS] = "PASS",
                                          [OUTCOME_FAIL] = "FAIL",
                                          [OUTCOME_SKIP] = "SKIP",
                                          [OUTCOME_ERROR] = "ERROR"};
    for (size_t i = 0; i < o->n_pos; i++) {
        case_run *r = calloc(1, sizeof *r);
        if (!r) {
            oom();
            return report(DQG_OUT_OF_MEMORY);
        }
        r->o = o;
        run_case(r, o->pos[i]);
        char *name = case_name(o->pos[i]);
        const char *shown = name ? name : o->pos[i];
        if (r->result == OUTCOME_PASS)
            printf("PASS %s\n", shown);
        else
            printf("%s %s: %s\n", verdict[r->result], shown, r->reason);
        if (r->lines.len)
            fputs(r->lines.s, stdout);
        fflush(stdout);
        count[r->result]++;
        free(name);
        free(r->lines.s);
        free(r);
    }
    printf("%zu passed, %zu failed, %zu skipped, %zu error%s\n", count[OUTCOME_PASS],
           count[OUTCOME_FAIL], count[OUTCOME_SKIP], count[OUTCOME_ERROR],
           count[OUTCOME_ERROR] == 1 ? "" : "s");
    if (count[OUTCOME_ERROR])
        return EXIT_INVALID;
    if (count[OUTCOME_FAIL] || (o->strict && count[OUTCOME_SKIP]))
        return EXIT_TEST_FAILURES;
    return EXIT_OK;
}
