/*
 * Declarations shared by the files of the dqgraph command-line tool: exit
 * codes and error reporting (common.c), options (common.c), loading a model
 * with its input files (session.c) and the commands (run.c, test.c, bench.c,
 * dqgraph.c).
 */
#ifndef DQG_TOOLS_TOOL_H
#define DQG_TOOLS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"

/* Exit codes (README.md and `dqgraph --help` list them). */
enum {
    EXIT_OK = 0,
    EXIT_TEST_FAILURES = 1,
    EXIT_USAGE = 2,
    EXIT_INVALID = 3,
    EXIT_INTERNAL = 4,
};
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
    OPT_RANDOM = 1u << 12,
    OPT_SEED = 1u << 13,
    OPT_STRICT = 1u << 14,
    OPT_ALL = 1u << 15,
    OPT_TIME = 1u << 16,
    OPT_JSON = 1u << 17,
    OPT_COMPARE = 1u << 18,
    OPT_FPMATH = 1u << 19,
};

#define MAX_ITERS   10000000LL
#define MAX_THREADS ((long long)DQG_MAX_THREADS)
#define MAX_TIME_S  86400.0

typedef struct shape_opt {
    char *name;
    int rank;
    int64_t dims[DQG_MAX_RANK];
} shape_opt;

typedef struct tool_opts {
    const char *command;
    const char **pos; /* positional arguments (pointers into argv) */
    size_t n_pos, cap_pos;
    const char **inputs; /* -i files and folders (pointers into argv) */
    size_t n_inputs, cap_inputs;
    const char *out_dir;
    shape_opt *shapes;
    size_t n_shapes, cap_shapes;
    dqg_onnx_dim_param *dims; /* names are owned */
    size_t n_dims, cap_dims;
    bool no_fuse;
    bool after_passes;
    dqg_backend backend;
    dqg_fpmath_mode fpmath; /* --fpmath strict|bf16 */
    long long iters, warmup;
    double rtol, atol;
    int threads;
    bool random;            /* --random: make up the inputs no file gives */
    uint64_t seed;          /* --seed: of the made-up inputs */
    bool strict;            /* test --strict: a skipped case fails */
    bool all;               /* tensor --all: every value */
    double time_s;          /* bench --time: seconds of timed runs (0: --iters) */
    bool json;              /* bench --json */
    const char *compare[2]; /* bench --compare "OPTS A" "OPTS B" (NULL: not given) */
} tool_opts;

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

/* What to do with a graph input that no file gives. */
typedef enum missing_policy {
    MISSING_ERROR,    /* run, test: an error naming the input */
    MISSING_GENERATE, /* bench, run --random: deterministic made-up data */
    MISSING_IGNORE,   /* explain, dot: nothing is executed */
} missing_policy;

typedef struct session {
    dqg_graph *graph;
    char **paths; /* the input files, -i folders expanded (owned) */
    size_t n_paths;
    tensor_file *files;
    size_t n_files;
    dqg_buffer *inputs; /* one per graph input */
    size_t n_inputs;
    void **generated; /* per graph input: made-up data (bench), or NULL */
    dqg_buffer *outputs;
    size_t n_outputs;
    bool missing_input; /* failed because a graph input has no data (g_msg names it) */
} session;

typedef struct numbered_entry {
    unsigned long long number;
    char *name;
} numbered_entry;

/* ---- common.c ----------------------------------------------------------- */

/* The message of the tool's last failure (library messages are copied here). */
extern char g_msg[4096];

int status_exit_code(dqg_status st);
/* Sets the tool's message and returns st. */
dqg_status fail(dqg_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies the library's message for a failed call and returns st. */
dqg_status lib_fail(dqg_status st);
dqg_status oom(void);
/* Prints "dqgraph: <status name>: <message>" and returns the exit code. */
int report(dqg_status st);
/* Prints "dqgraph: <command>: <message>" and a pointer to --help; returns EXIT_USAGE. */
int usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Grows an array to hold at least `need` elements; NULL (p unchanged) if out of memory. */
void *grow(void *p, size_t *cap, size_t need, size_t elem);
char *dup_range(const char *s, size_t len);
char *dup_string(const char *s);
/* dir + "/" + name, without doubling a trailing slash. */
char *join_path(const char *dir, const char *name);
/* "[1,3,224,224]"; "[]" for a scalar. */
void format_shape(char *buf, size_t size, int rank, const int64_t *dims);
double now_ms(void);

void opts_free(tool_opts *o);
/*
 * Parses argv[first..argc) for a command that accepts the options in
 * `allowed`. Returns 0, or the exit code of a usage error (already printed).
 */
int parse_options(tool_opts *o, int argc, char **argv, int first, unsigned allowed);

void numbered_free(numbered_entry *e, size_t n);
/*
 * The entries of `dir` named <prefix><digits><suffix> that are folders
 * (want_dirs) or regular files, sorted by the number.
 */
dqg_status list_numbered(const char *dir, const char *prefix, const char *suffix, bool want_dirs,
                         numbered_entry **out, size_t *n_out);

/* ---- session.c ---------------------------------------------------------- */

dqg_status tensor_file_load(tensor_file *t, const char *path);
/*
 * ONNX's test data stores bfloat16 tensors as UINT16 (NumPy has no bfloat16):
 * a u16 file holds the bits of a bf16 tensor, so it is accepted for one.
 */
bool bf16_as_u16(dqg_dtype tensor, dqg_dtype file);
/*
 * Reads the input files (a folder stands for its input_<n>.pb files, in the
 * order of n), imports the model with them (and --shape/--dim) as
 * hints, binds each file to its graph input and allocates the outputs.
 */
dqg_status session_open(session *s, const char *model, const tool_opts *o, const char *const *paths,
                        size_t n_paths, missing_policy missing);
void session_free(session *s);
void print_warnings(const dqg_graph *g);
dqg_status compile_graph(const dqg_graph *g, const tool_opts *o, dqg_compiled **out);
dqg_status execute(dqg_compiled *c, session *s);

/* ---- tensor.c ----------------------------------------------------------- */

/* How a tensor `got` differs from `expected` (the reference), element-wise. */
typedef struct tensor_diff {
    int64_t n;
    double max_abs;        /* max |got - expected| (infinity for a NaN or infinity mismatch) */
    double max_rel;        /* max |got - expected| / |expected|, where expected != 0 */
    double cosine;         /* over the elements finite in both; 1 when both are all zeros */
    int64_t outside;       /* elements outside the tolerance */
    int64_t first_outside; /* -1: none */
    double first_got, first_expected;
} tensor_diff;

/*
 * Compares n elements of type dt. Within the tolerance: |got - expected| <=
 * atol + rtol * |expected|, or for integer types with int_slack_one a
 * difference of at most 1; NaN matches NaN, an infinity the same infinity.
 */
void diff_tensors(dqg_dtype dt, const void *got, const void *expected, int64_t n, double rtol,
                  double atol, bool int_slack_one, tensor_diff *d);
/* A value of type dt: integers without a fraction, floats with 9 digits. */
void format_value(char *buf, size_t size, dqg_dtype dt, double v);

/* ---- the commands -------------------------------------------------------- */

extern const char USAGE_RUN[];
extern const char USAGE_TEST[];
extern const char USAGE_BENCH[];
extern const char USAGE_TENSOR[];
extern const char USAGE_COMPARE[];
int cmd_tensor(const tool_opts *o);
int cmd_compare(const tool_opts *o);
int cmd_run(const tool_opts *o);
int cmd_test(const tool_opts *o);
int cmd_bench(const tool_opts *o);

#endif
