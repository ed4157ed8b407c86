/* dqgraph bench */
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
/* dqgraph bench                                                             */
/* ------------------------------------------------------------------------ */

const char USAGE_BENCH[] =
    "usage: dqgraph bench MODEL [--iters N] [--warmup N] [--no-fuse] [-i FILE.pb|DIR]...\n"
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
    "  -i, --input FILE.pb|DIR a graph input's value, or a folder of input_<n>.pb files,\n"
    "                          as for 'dqgraph run'\n"
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

int cmd_bench(const tool_opts *o)
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
