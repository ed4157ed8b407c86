/* dqgraph bench */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "tool.h"

const char USAGE_BENCH[] =
    "usage: dqgraph bench MODEL [--iters N | --time S] [--warmup N] [--json]\n"
    "                     [--compare \"OPTS A\" \"OPTS B\"] [--no-fuse] [-i FILE.pb|DIR]...\n"
    "                     [--seed S] [--shape NAME=D0,D1,...]... [--dim SYMBOL=N]...\n"
    "                     [--backend reference|onednn] [--threads N]\n"
    "\n"
    "Times the compilation of MODEL (compile_ms), a second compilation of the same\n"
    "graph (recompile_ms: served by the compiled-partition cache) and the\n"
    "executions after the warmup runs. Each compilation is broken down into the\n"
    "pass pipeline (passes_ms), cache-key hashing (hash_ms), kernel creation with\n"
    "its constant transforms (kernels_ms) and the number of constant transforms\n"
    "run (0 on a cache hit). The executions are summed up as iters, mean_ms,\n"
    "std_ms (sample standard deviation), min_ms, median_ms, p90_ms, p99_ms and\n"
    "max_ms (percentiles interpolated between the nearest ranks). Inputs without\n"
    "-i get deterministic data: floats uniform in [-1, 1], integers uniform over\n"
    "their type's range.\n"
    "\n"
    "With --compare, two configurations, each the command line's options plus\n"
    "OPTS A or OPTS B (--no-fuse, --backend B, --threads N; split at spaces; \"\"\n"
    "for none), are compiled from the same graph and run interleaved (A B, then\n"
    "B A, ...) on the same inputs, so that both see the same machine load. Both\n"
    "are printed, then ratio_median and ratio_mean: B's time over A's.\n"
    "\n"
    "Options:\n"
    "  --iters N               timed executions (default 50)\n"
    "  --time S                run for S seconds (a real number) instead of --iters\n"
    "  --warmup N              untimed executions first (default 5; each configuration)\n"
    "  --json                  print one JSON object instead of 'key: value' lines\n"
    "  --compare \"A\" \"B\"       time two configurations side by side (see above)\n"
    "  --no-fuse               keep every dequantize as its own partition\n"
    "  -i, --input FILE.pb|DIR a graph input's value, or a folder of input_<n>.pb files,\n"
    "                          as for 'dqgraph run'\n"
    "  --seed S                the seed of the made-up inputs (default 0)\n"
    "  --shape NAME=D0,D1,...  the shape of graph input NAME\n"
    "  --dim SYMBOL=N          the value of a symbolic dimension\n"
    "  --backend B             reference or onednn (default: onednn)\n"
    "  --fpmath M              strict, or bf16: f32 MatMul/Convolution may compute in bf16\n"
    "                          or int8: weight-only MatMuls may quantize activations\n"
    "                          to int8 per K-block (approximate)\n"
    "  --threads N             threads (default 0: all cores)\n"
    "  -h, --help              show this help\n"
    "\n"
    "Examples:\n"
    "  dqgraph bench model.onnx --time 5 --json\n"
    "  dqgraph bench model.onnx --iters 200 --compare \"--no-fuse\" \"\"\n";

/* ------------------------------------------------------------------------ */
/* Timings                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct timings {
    double *ms;
    size_t n, cap;
} timings;

static bool timings_add(timings *t, double ms)
{
    double *q = grow(t->ms, &t->cap, t->n + 1, sizeof *q);
    if (!q)
        return false;
    t->ms = q;
    q[t->n++] = ms;
    return true;
}

typedef struct summary {
    size_t iters;
    double mean, std, min, p50, p90, p99, max;
} summary;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The value at fraction p of the sorted v[0..n), interpolated between ranks. */
static double percentile(const double *v, size_t n, double p)
{
    double pos = p * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (pos - (double)lo) * (v[lo + 1] - v[lo]);
}

/* Sorts the timings (n >= 1) and sums them up. */
static summary summarize(timings *t)
{
    summary s = {0};
    size_t n = t->n;
    qsort(t->ms, n, sizeof *t->ms, compare_doubles);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++)
        sum += t->ms[i];
    s.iters = n;
    s.mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += (t->ms[i] - s.mean) * (t->ms[i] - s.mean);
    s.std = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
    s.min = t->ms[0];
    s.max = t->ms[n - 1];
    s.p50 = percentile(t->ms, n, 0.50);
    s.p90 = percentile(t->ms, n, 0.90);
    s.p99 = percentile(t->ms, n, 0.99);
    return s;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void print_json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void print_summary(const summary *s, bool json, const char *indent)
{
    if (json) {
        printf("\"iters\":%zu,\"mean_ms\":%.6g,\"std_ms\":%.6g,\"min_ms\":%.6g,\"median_ms\":%.6g,"
               "\"p90_ms\":%.6g,\"p99_ms\":%.6g,\"max_ms\":%.6g",
               s->iters, s->mean, s->std, s->min, s->p50, s->p90, s->p99, s->max);
        return;
    }
    printf("%siters: %zu\n", indent, s->iters);
    printf("%smean_ms: %.3f\n", indent, s->mean);
    printf("%sstd_ms: %.3f\n", indent, s->std);
    printf("%smin_ms: %.3f\n", indent, s->min);
    printf("%smedian_ms: %.3f\n", indent, s->p50);
    printf("%sp90_ms: %.3f\n", indent, s->p90);
    printf("%sp99_ms: %.3f\n", indent, s->p99);
    printf("%smax_ms: %.3f\n", indent, s->max);
}

/* Whether another timed run is due: --iters runs, or until --time has passed. */
static bool more_runs(const tool_opts *o, size_t done, double start_ms)
{
    if (o->time_s > 0)
        return done < (size_t)MAX_ITERS && (done == 0 || now_ms() - start_ms < o->time_s * 1e3);
    return done < (size_t)o->iters;
}

static dqg_status timed_execute(dqg_compiled *c, session *s, timings *t)
{
    double t0 = now_ms();
    dqg_status st = execute(c, s);
    if (st == DQG_OK && !timings_add(t, now_ms() - t0))
        st = oom();
    return st;
}

/* ------------------------------------------------------------------------ */
/* One configuration                                                         */
/* ------------------------------------------------------------------------ */

static void print_compile(const char *key, double ms, const dqg_cache_stats *before,
                          const dqg_cache_stats *after, bool json)
{
    unsigned long long transforms =
        (unsigned long long)(after->constant_transforms - before->constant_transforms);
    if (json) {
        printf("\"%s_ms\":%.6g,\"%s\":{\"passes_ms\":%.6g,\"hash_ms\":%.6g,\"kernels_ms\":%.6g,"
               "\"constant_transforms\":%llu}",
               key, ms, key, after->passes_ms - before->passes_ms, after->hash_ms - before->hash_ms,
               after->compile_ms - before->compile_ms, transforms);
        return;
    }
    printf("%s_ms: %.3f\n", key, ms);
    printf("  passes_ms: %.3f\n", after->passes_ms - before->passes_ms);
    printf("  hash_ms: %.3f\n", after->hash_ms - before->hash_ms);
    printf("  kernels_ms: %.3f\n", after->compile_ms - before->compile_ms);
    printf("  constant_transforms: %llu\n", transforms);
}

static int bench_one(const tool_opts *o, session *s)
{
    dqg_compiled *c = NULL, *c2 = NULL;
    timings t = {0};
    double compile_ms = 0, recompile_ms = 0;
    /* Where each compile's time went: the cache's counters before and after it. */
    dqg_cache_stats s0, s1, s2;
    dqg_cache_get_stats(&s0);
    double t0 = now_ms();
    dqg_status st = compile_graph(s->graph, o, &c);
    compile_ms = now_ms() - t0;
    dqg_cache_get_stats(&s1);
    if (st == DQG_OK) {
        t0 = now_ms();
        st = compile_graph(s->graph, o, &c2);
        recompile_ms = now_ms() - t0;
    }
    dqg_cache_get_stats(&s2);
    for (long long i = 0; st == DQG_OK && i < o->warmup; i++)
        st = execute(c, s);
    double start = now_ms();
    while (st == DQG_OK && more_runs(o, t.n, start))
        st = timed_execute(c, s, &t);
    if (st == DQG_OK) {
        summary sum = summarize(&t);
        bool hit = s2.plan_hits > s1.plan_hits;
        if (o->json) {
            printf("{\"model\":");
            print_json_string(o->pos[0]);
            putchar(',');
            print_compile("compile", compile_ms, &s0, &s1, true);
            putchar(',');
            print_compile("recompile", recompile_ms, &s1, &s2, true);
            printf(",\"plan_hit\":%s,", hit ? "true" : "false");
            print_summary(&sum, true, "");
            printf(",\"partitions\":%zu,\"fused\":%zu}\n", dqg_compiled_partition_count(c),
                   dqg_compiled_fused_count(c));
        } else {
            print_compile("compile", compile_ms, &s0, &s1, false);
            print_compile("recompile", recompile_ms, &s1, &s2, false);
            printf("  plan_hit: %s\n", hit ? "yes" : "no");
            print_summary(&sum, false, "");
            printf("partitions: %zu\n", dqg_compiled_partition_count(c));
            printf("fused: %zu\n", dqg_compiled_fused_count(c));
        }
    }
    free(t.ms);
    dqg_compiled_destroy(c2);
    dqg_compiled_destroy(c);
    return st == DQG_OK ? EXIT_OK : report(st);
}

/* ------------------------------------------------------------------------ */
/* Two configurations, interleaved (--compare)                               */
/* ------------------------------------------------------------------------ */

typedef struct config {
    tool_opts opts;   /* the command line's options with OPTS applied */
    const char *text; /* OPTS as given */
    dqg_compiled *compiled;
    double compile_ms;
    timings t;
} config;

/* Applies the options in `text` (split at spaces) to c->opts. 0 or an exit code. */
static int config_parse(config *c, const tool_opts *base, const char *text)
{
    c->opts = *base;
    c->text = text;
    tool_opts *o = &c->opts;
    /* parse_options only sets the scalar options allowed here; positional
     * arguments land in a list of the configuration's own. */
    o->pos = NULL;
    o->n_pos = o->cap_pos = 0;
    char *copy = dup_string(text);
    char **argv = calloc(strlen(text) / 2 + 2, sizeof *argv);
    int argc = 0, rc = 0;
    if (!copy || !argv) {
        fprintf(stderr, "dqgraph: %s: out of memory\n", dqg_status_name(DQG_OUT_OF_MEMORY));
        rc = EXIT_INTERNAL;
    }
    for (char *p = copy; rc == 0 && p && *p;) {
        while (*p == ' ' || *p == '\t')
            *p++ = '\0';
        if (!*p)
            break;
        argv[argc++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    if (rc == 0)
        rc = parse_options(o, argc, argv, 0, OPT_NOFUSE | OPT_BACKEND | OPT_THREADS | OPT_FPMATH);
    if (rc == 0 && o->n_pos)
        rc = usage_error(o->command,
                         "--compare '%s': unexpected '%s' (only --no-fuse, --backend, --fpmath and "
                         "--threads may differ)",
                         text, o->pos[0]);
    free(o->pos);
    o->pos = base->pos;
    o->n_pos = base->n_pos;
    free(argv);
    free(copy);
    return rc;
}

static void print_config(const char *key, const config *c, const summary *s, bool json)
{
    if (json) {
        printf("\"%s\":{\"options\":", key);
        print_json_string(c->text);
        printf(",\"compile_ms\":%.6g,", c->compile_ms);
        print_summary(s, true, "");
        printf(",\"partitions\":%zu,\"fused\":%zu}", dqg_compiled_partition_count(c->compiled),
               dqg_compiled_fused_count(c->compiled));
        return;
    }
    printf("%s: %s\n", key, *c->text ? c->text : "(no options)");
    printf("  compile_ms: %.3f\n", c->compile_ms);
    print_summary(s, false, "  ");
    printf("  partitions: %zu\n", dqg_compiled_partition_count(c->compiled));
    printf("  fused: %zu\n", dqg_compiled_fused_count(c->compiled));
}

static int bench_compare(const tool_opts *o, session *s)
{
    config cf[2];
    memset(cf, 0, sizeof cf);
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++)
        rc = config_parse(&cf[k], o, o->compare[k]);
    if (rc)
        return rc;
    dqg_status st = DQG_OK;
    for (int k = 0; k < 2 && st == DQG_OK; k++) {
        double t0 = now_ms();
        st = compile_graph(s->graph, &cf[k].opts, &cf[k].compiled);
        cf[k].compile_ms = now_ms() - t0;
    }
    for (long long i = 0; st == DQG_OK && i < o->warmup; i++)
        for (int k = 0; k < 2 && st == DQG_OK; k++)
            st = execute(cf[k].compiled, s);
    /* A B, B A, A B, ...: neither always runs right after the other. */
    double start = now_ms();
    for (size_t i = 0; st == DQG_OK && more_runs(o, cf[0].t.n, start); i++)
        for (int j = 0; j < 2 && st == DQG_OK; j++) {
            config *c = &cf[(size_t)j ^ (i & 1)];
            st = timed_execute(c->compiled, s, &c->t);
        }
    if (st == DQG_OK) {
        summary a = summarize(&cf[0].t), b = summarize(&cf[1].t);
        double r_median = a.p50 > 0 ? b.p50 / a.p50 : NAN;
        double r_mean = a.mean > 0 ? b.mean / a.mean : NAN;
        if (o->json) {
            printf("{\"model\":");
            print_json_string(o->pos[0]);
            putchar(',');
            print_config("a", &cf[0], &a, true);
            putchar(',');
            print_config("b", &cf[1], &b, true);
            if (isfinite(r_median) && isfinite(r_mean))
                printf(",\"ratio_median\":%.6g,\"ratio_mean\":%.6g}\n", r_median, r_mean);
            else
                printf(",\"ratio_median\":null,\"ratio_mean\":null}\n");
        } else {
            print_config("a", &cf[0], &a, false);
            print_config("b", &cf[1], &b, false);
            printf("ratio_median: %.3f\n", r_median);
            printf("ratio_mean: %.3f\n", r_mean);
        }
    }
    for (int k = 0; k < 2; k++) {
        free(cf[k].t.ms);
        dqg_compiled_destroy(cf[k].compiled);
    }
    return st == DQG_OK ? EXIT_OK : report(st);
}

int cmd_bench(const tool_opts *o)
{
    session s;
    dqg_status st = session_open(&s, o->pos[0], o, o->inputs, o->n_inputs, MISSING_GENERATE);
    int rc;
    if (st != DQG_OK) {
        rc = report(st);
    } else {
        print_warnings(s.graph);
        rc = o->compare[0] ? bench_compare(o, &s) : bench_one(o, &s);
    }
    session_free(&s);
    return rc;
}
