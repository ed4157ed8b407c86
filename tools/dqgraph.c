/*
 * dqgraph — the command-line tool: run, test, explain, draw and benchmark
 * ONNX models with dqgraph. Uses the public API only (dqgraph.h and
 * dqgraph_onnx.h).
 *
 *   dqgraph run MODEL [-i FILE.pb|DIR]... [--random] [-o DIR] ...
 *   dqgraph test CASE_DIR... [--strict]
 *   dqgraph tensor FILE.pb [--all]
 *   dqgraph compare A.pb B.pb [--rtol X] [--atol X]
 *   dqgraph explain MODEL ...
 *   dqgraph dot MODEL [--after-passes] ...
 *   dqgraph bench MODEL [--iters N | --time S] [--json] [--compare "A" "B"] ...
 *   dqgraph selftest [--seconds N] [--seed S] (tools/selftest.c)
 *
 * The commands live in run.c, test.c, tensor.c (tensor, compare), bench.c
 * and here (explain, dot);
 * common.c and session.c hold what they share (tool.h).
 *
 * Exit codes (USAGE_MAIN below, README.md): 0 success, 1 test failures or
 * values outside the tolerance, 2 usage error, 3 invalid model or input, 4
 * internal or backend error.
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
#include "tool.h"

/* ------------------------------------------------------------------------ */
/* dqgraph explain and dqgraph dot                                           */
/* ------------------------------------------------------------------------ */

static const char USAGE_EXPLAIN[] =
    "usage: dqgraph explain MODEL [-i FILE.pb|DIR]... [--shape NAME=D0,D1,...]...\n"
    "                       [--dim SYMBOL=N]... [--no-fuse] [--backend reference|onednn]\n"
    "\n"
    "Compiles MODEL and prints its partitions (ops, kernel, data types), how many\n"
    "fused a dequantize into a MatMul or Convolution, and the explain log: every\n"
    "fusion made or refused, with the reason.\n"
    "\n"
    "Options:\n"
    "  -i, --input FILE.pb|DIR a graph input's value, or a folder of input_<n>.pb files,\n"
    "                          as for 'dqgraph run' (needed when an operator reads\n"
    "                          it while building)\n"
    "  --shape NAME=D0,D1,...  the shape of graph input NAME\n"
    "  --dim SYMBOL=N          the value of a symbolic dimension\n"
    "  --no-fuse               keep every dequantize as its own partition\n"
    "  --backend B             reference or onednn (default: onednn)\n"
    "  --fpmath M              strict, or bf16: f32 MatMul/Convolution may compute in bf16\n"
    "                          or int8: weight-only MatMuls may quantize activations\n"
    "                          to int8 per K-block (approximate)\n"
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
    "usage: dqgraph dot MODEL [--after-passes] [-i FILE.pb|DIR]...\n"
    "                   [--shape NAME=D0,D1,...]... [--dim SYMBOL=N]... [--no-fuse]\n"
    "                   [--backend reference|onednn]\n"
    "\n"
    "Writes the graph in Graphviz format to standard output: as imported, or with\n"
    "--after-passes as compiled, each partition drawn as a cluster labelled with\n"
    "its kernel (so the picture shows the fusion).\n"
    "\n"
    "Options:\n"
    "  --after-passes          draw the compiled graph instead of the imported one\n"
    "  -i, --input FILE.pb|DIR a graph input's value, or a folder of input_<n>.pb files,\n"
    "                          as for 'dqgraph run'\n"
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
/* main                                                                      */
/* ------------------------------------------------------------------------ */

static const char USAGE_MAIN[] =
    "usage: dqgraph COMMAND [ARGS...]\n"
    "\n"
    "The command-line tool of dqgraph " DQG_VERSION_STRING ", a graph compiler and runtime for\n"
    "quantized inference on oneDNN.\n"
    "\n"
    "Commands:\n"
    "  run MODEL [-i FILE.pb|DIR]... [-o DIR] [--random]\n"
    "                                       run a model, write its outputs as .pb files\n"
    "  test CASE_DIR...                     run ONNX backend-test cases, compare outputs\n"
    "  tensor FILE.pb [--all]               print a tensor: type, shape, statistics, values\n"
    "  compare A.pb B.pb [--rtol X] [--atol X]\n"
    "                                       compare two tensors: errors, cosine, mismatches\n"
    "  explain MODEL                        show partitions and fusion decisions\n"
    "  dot MODEL [--after-passes]           write the graph in Graphviz format\n"
    "  bench MODEL [--iters N | --time S] [--json] [--compare \"OPTS A\" \"OPTS B\"]\n"
    "                                       time compilation and execution\n"
    "  selftest [--seconds N] [--seed S]    check fused kernels against the reference\n"
    "                                       at every instruction-set level of this CPU\n"
    "\n"
    "Run 'dqgraph COMMAND --help' for a command's options.\n"
    "Options --shape NAME=D0,D1,... and --dim SYMBOL=N give shapes and symbolic\n"
    "dimensions; --no-fuse disables fusion; --backend reference|onednn picks the backend.\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  test: a case failed (or was skipped, with --strict);\n"
    "     compare: elements outside the tolerance; selftest: a mismatch\n"
    "  2  usage error (unknown command or option, missing argument, bad number,\n"
    "     run: a graph input without data)\n"
    "  3  invalid model or input (invalid argument, unsupported, parse or I/O error;\n"
    "     test: a case that cannot be run; compare: different types or shapes)\n"
    "  4  internal or backend error (out of memory, backend error)\n";

typedef struct command_def {
    const char *name;
    int (*run)(const tool_opts *);
    unsigned options;
    size_t min_pos, max_pos; /* max_pos 0: unlimited */
    const char *usage;
    const char *pos_name;
} command_def;

#define MODEL_OPTS (OPT_INPUT | OPT_SHAPE | OPT_DIM | OPT_NOFUSE | OPT_BACKEND | OPT_FPMATH)

static const command_def COMMANDS[] = {
    {"run", cmd_run, MODEL_OPTS | OPT_OUTDIR | OPT_THREADS | OPT_RANDOM | OPT_SEED, 1, 1, USAGE_RUN,
     "MODEL"},
    {"test", cmd_test,
     OPT_NOFUSE | OPT_BACKEND | OPT_FPMATH | OPT_RTOL | OPT_ATOL | OPT_THREADS | OPT_STRICT, 1, 0,
     USAGE_TEST, "CASE_DIR"},
    {"tensor", cmd_tensor, OPT_ALL, 1, 1, USAGE_TENSOR, "FILE.pb"},
    {"compare", cmd_compare, OPT_RTOL | OPT_ATOL, 2, 2, USAGE_COMPARE,
     "A.pb or B.pb (compare takes two files)"},
    {"explain", cmd_explain, MODEL_OPTS, 1, 1, USAGE_EXPLAIN, "MODEL"},
    {"dot", cmd_dot, MODEL_OPTS | OPT_AFTER, 1, 1, USAGE_DOT, "MODEL"},
    {"bench", cmd_bench,
     MODEL_OPTS | OPT_ITERS | OPT_WARMUP | OPT_THREADS | OPT_SEED | OPT_TIME | OPT_JSON |
         OPT_COMPARE,
     1, 1, USAGE_BENCH, "MODEL"},
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
