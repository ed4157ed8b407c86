/* `dqgraph selftest`: the randomized fused-vs-reference check on the
 * user's own CPU. Random int8 MatMul and Convolution layers (QDQ sources
 * and weights, zero points, per-tensor and per-channel scales, bias,
 * ReLU/Clip, an optional QuantizeLinear) are compiled with the default
 * options and compared with the reference interpreter: float results
 * within the contract's 1e-5 of the output's largest magnitude, quantized
 * results within one step. The check runs once per instruction-set level
 * the CPU has, each in a child process with oneDNN capped by
 * ONEDNN_MAX_CPU_ISA and dqgraph's own kernels by DQG_MAX_ISA (both are
 * read once per process). Every case is reproducible from the seed and
 * its number: `dqgraph selftest --seed S --case N --level L`. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dqgraph.h"
#include "selftest.h"

/* ---- Random layers ----------------------------------------------------- */

static uint32_t rng;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static int64_t rin(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1));
}

typedef struct layer {
    dqg_graph *g;
    dqg_tensor_id y;
    int64_t n_in, n_out, K; /* K: the products summed per output */
    bool quantized;
    bool bare; /* stop before the epilogue (drawing the same random numbers) */
    char what[256];
} layer;

static dqg_tensor_id cf32(dqg_graph *g, int rank, const int64_t *d, const float *v, int64_t n)
{
    return dqg_constant(g, NULL, DQG_F32, rank, d, v, (size_t)n * sizeof(float));
}

/* DQ of constant s8/u8 weights [dims], per tensor or per channel on axis;
 * with `wide`, u8 weights may span their whole range with zero points
 * anywhere in it (a MatMul's common offset or row term, a convolution's
 * window term). */
static dqg_tensor_id weights(dqg_graph *g, int rank, const int64_t *d, int axis, bool wide,
                             bool *per_ch)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    bool u8 = rin(0, 3) == 0;
    wide = wide && u8 && rin(0, 1);
    int8_t *w = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        w[i] = !u8    ? (int8_t)rin(-127, 127)
               : wide ? (int8_t)(uint8_t)rin(0, 255)
                      : (int8_t)(uint8_t)rin(100, 156);
    *per_ch = rin(0, 1);
    int64_t ns = *per_ch ? d[axis] : 1, one = 1;
    float *s = malloc((size_t)ns * sizeof *s);
    uint8_t *z = malloc((size_t)ns);
    for (int64_t i = 0; i < ns; i++) {
        s[i] = 0.005f + 0.0005f * (float)rin(0, 40);
        z[i] = !u8 ? 0 : wide ? (uint8_t)rin(0, 255) : (uint8_t)(128 + rin(-3, 3));
    }
    dqg_tensor_id q = dqg_constant(g, NULL, u8 ? DQG_U8 : DQG_S8, rank, d, w, (size_t)n);
    dqg_tensor_id sc = *per_ch ? cf32(g, 1, &ns, s, ns) : cf32(g, 0, &one, s, 1);
    dqg_tensor_id zp =
        u8 ? dqg_constant(g, NULL, DQG_U8, *per_ch ? 1 : 0, *per_ch ? &ns : &one, z, (size_t)ns)
           : DQG_NONE;
    dqg_dequantize_linear_attrs a = {.opset = 13, .has_axis = true, .axis = axis};
    free(w);
    free(s);
    free(z);
    return dqg_dequantize_linear(g, NULL, q, sc, zp, &a);
}

/* Bias, ReLU/Clip and an optional QuantizeLinear after t (channel axis ca
 * with C channels, rank r). */
static dqg_tensor_id epilogue(layer *L, dqg_tensor_id t, int r, int ca, int64_t C)
{
    dqg_graph *g = L->g;
    dqg_tensor_id t0 = t;
    if (rin(0, 1)) {
        float *b = malloc((size_t)C * sizeof *b);
        int64_t d[8];
        for (int i = 0; i < r; i++)
            d[i] = i == ca ? C : 1;
        for (int64_t i = 0; i < C; i++)
            b[i] = 0.01f * (float)rin(-100, 100);
        t = dqg_add(g, NULL, t, cf32(g, ca == r - 1 ? 1 : r, ca == r - 1 ? &C : d, b, C));
        free(b);
    }
    switch (rin(0, 2)) {
    case 0:
        t = dqg_relu(g, NULL, t);
        break;
    case 1:
        t = dqg_clip(g, NULL, t, -0.5f * (float)rin(0, 4), 0.5f + 0.5f * (float)rin(0, 6));
        break;
    default:
        break;
    }
    if (rin(0, 2) == 0) {
        float qs = 0.05f;
        uint8_t qz = rin(0, 1) ? 10 : 0;
        int64_t one = 1;
        dqg_dtype qt = rin(0, 1) ? DQG_U8 : DQG_S8;
        dqg_quantize_linear_attrs qa = {.opset = 13};
        t = dqg_quantize_linear(g, NULL, t, cf32(g, 0, &one, &qs, 1),
                                dqg_constant(g, NULL, qt, 0, &one, &qz, 1), &qa);
        L->quantized = true;
    }
    return L->bare ? t0 : t;
}

static dqg_tensor_id source(layer *L, int rank, const int64_t *d, dqg_dtype *xt)
{
    dqg_graph *g = L->g;
    *xt = rin(0, 1) ? DQG_U8 : DQG_S8;
    int64_t one = 1;
    float s = 0.01f + 0.001f * (float)rin(0, 40);
    uint8_t z = *xt == DQG_U8 ? (uint8_t)rin(0, 255) : (uint8_t)(int8_t)rin(-20, 20);
    dqg_tensor_id x = dqg_input(g, "x", *xt, rank, d);
    dqg_dequantize_linear_attrs a = {.opset = 13};
    return dqg_dequantize_linear(g, NULL, x, cf32(g, 0, &one, &s, 1),
                                 rin(0, 2) ? dqg_constant(g, NULL, *xt, 0, &one, &z, 1) : DQG_NONE,
                                 &a);
}

static void matmul_layer(layer *L)
{
    static const int64_t ks[] = {1, 3, 16, 17, 31, 64, 65, 125, 126, 127, 128, 255, 1000};
    int64_t M = rin(0, 2) ? rin(1, 16) : rin(17, 300), K = ks[rin(0, 12)], N = rin(1, 300);
    int64_t xd[] = {M, K}, wd[] = {K, N};
    dqg_dtype xt;
    bool pc;
    dqg_tensor_id a = source(L, 2, xd, &xt);
    dqg_tensor_id b = weights(L->g, 2, wd, 1, true, &pc);
    dqg_tensor_id y = dqg_matmul(L->g, "mm", a, b, NULL);
    L->y = epilogue(L, y, 2, 1, N);
    L->n_in = M * K;
    L->n_out = M * N;
    L->K = K;
    snprintf(L->what, sizeof L->what, "MatMul M=%lld K=%lld N=%lld src %s weights %s%s",
             (long long)M, (long long)K, (long long)N, dqg_dtype_name(xt),
             pc ? "per-channel" : "per-tensor", L->quantized ? " quantized output" : "");
}

static void conv_layer(layer *L)
{
    int sr = (int)rin(1, 3);
    int64_t groups = rin(0, 3) == 0 ? rin(2, 6) : 1;
    bool dw = groups > 1 && rin(0, 1);
    int64_t cg = dw ? 1 : rin(1, 8), og = dw ? 1 : rin(1, 40), C = groups * cg, O = groups * og;
    dqg_conv_attrs a = {.spatial_rank = sr,
                        .groups = groups,
                        .data_format = rin(0, 1) ? DQG_FORMAT_NXC : DQG_FORMAT_NCX};
    int64_t xd[5] = {rin(1, 2)}, wd[5] = {O, cg}, n_in = xd[0] * C, n_out = xd[0] * O;
    for (int i = 0; i < sr; i++) {
        int64_t k = rin(1, 3);
        a.strides[i] = rin(1, 2);
        a.dilations[i] = rin(1, 2);
        a.pads_begin[i] = rin(0, k - 1);
        a.pads_end[i] = rin(0, k - 1);
        wd[2 + i] = k;
        int64_t in = (k - 1) * a.dilations[i] + 1 + rin(0, sr == 3 ? 3 : 9);
        xd[a.data_format == DQG_FORMAT_NCX ? 2 + i : 1 + i] = in;
        n_in *= in;
        n_out *=
            (in + a.pads_begin[i] + a.pads_end[i] - (k - 1) * a.dilations[i] - 1) / a.strides[i] +
            1;
    }
    int ca = a.data_format == DQG_FORMAT_NCX ? 1 : sr + 1;
    xd[ca] = C;
    dqg_dtype xt;
    bool pc;
    dqg_tensor_id x = source(L, sr + 2, xd, &xt);
    dqg_tensor_id w = weights(L->g, sr + 2, wd, 0, true, &pc);
    dqg_tensor_id y = dqg_convolution(L->g, "conv", x, w, DQG_NONE, &a);
    L->y = epilogue(L, y, sr + 2, ca, O);
    L->n_in = n_in;
    L->n_out = n_out;
    L->K = cg * wd[2] * (sr > 1 ? wd[3] : 1) * (sr > 2 ? wd[4] : 1);
    snprintf(L->what, sizeof L->what,
             "Convolution %dD %s groups=%lld C=%lld O=%lld src %s weights %s%s", sr,
             a.data_format == DQG_FORMAT_NCX ? "NCX" : "NXC", (long long)groups, (long long)C,
             (long long)O, dqg_dtype_name(xt), pc ? "per-channel" : "per-tensor",
             L->quantized ? " quantized output" : "");
}

/* Whether a field of an implementation name is its data types ("u8s8",
 * "f32"). */
static bool is_type(const char *f)
{
    static const char *const types[] = {"u8", "s8", "f32", "bf16", "f16", "s32"};
    while (*f) {
        size_t n = 0;
        for (size_t t = 0; t < sizeof types / sizeof *types && !n; t++)
            if (!strncmp(f, types[t], strlen(types[t])))
                n = strlen(types[t]);
        if (!n)
            return false;
        f += n;
    }
    return true;
}

/* Case `index` of `seed`: the layer, or without its epilogue when bare
 * (whose largest magnitude measures the rounding of the sums). */
static dqg_status build(layer *L, uint32_t seed, long index, bool bare)
{
    rng = seed * 2654435761u + (uint32_t)index * 40503u + 1u;
    if (!rng)
        rng = 1;
    memset(L, 0, sizeof *L);
    L->bare = bare;
    dqg_status st = dqg_graph_create(&L->g);
    if (st != DQG_OK)
        return st;
    if (rin(0, 1))
        matmul_layer(L);
    else
        conv_layer(L);
    if ((st = dqg_output(L->g, L->y, "y")) == DQG_OK)
        st = dqg_graph_finalize(L->g);
    return st;
}

/* The largest magnitude of the case's sums before the epilogue, on the
 * reference (0 when it cannot be had). */
static double sums_magnitude(uint32_t seed, long index, const uint8_t *x)
{
    layer B;
    double m = 0.0;
    if (build(&B, seed, index, true) == DQG_OK) {
        size_t ob = dqg_tensor_byte_size(B.g, B.y);
        float *r = malloc(ob);
        dqg_buffer in = {.name = "x", .data = (void *)x, .size = (size_t)B.n_in};
        dqg_buffer o = {.name = "y", .data = r, .size = ob};
        if (r && dqg_reference_run(B.g, &in, 1, &o, 1) == DQG_OK)
            for (size_t i = 0; i < ob / sizeof(float); i++)
                m = fmax(m, fabs(r[i]));
        free(r);
    }
    dqg_graph_destroy(B.g);
    return m;
}

/* Runs case `index` of `seed`; returns 0 when it agrees, 1 on a mismatch
 * (described in msg), 2 when it could not run (msg says why). The
 * implementations of its partitions are appended to impls. */
static int run_case(uint32_t seed, long index, char *msg, size_t msg_size, char *impls,
                    size_t impls_size)
{
    layer L = {0};
    if (build(&L, seed, index, false) != DQG_OK) {
        snprintf(msg, msg_size, "%s", dqg_last_error());
        dqg_graph_destroy(L.g);
        return 2;
    }
    int rc = 2;
    dqg_compiled *c = NULL;
    uint8_t *x = NULL;
    void *ref = NULL, *got = NULL;
    size_t ob = dqg_tensor_byte_size(L.g, L.y);
    x = malloc((size_t)L.n_in);
    ref = malloc(ob);
    got = malloc(ob);
    if (!x || !ref || !got) {
        snprintf(msg, msg_size, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < L.n_in; i++)
        x[i] = (uint8_t)rnd();
    dqg_buffer in = {.name = "x", .data = x, .size = (size_t)L.n_in};
    dqg_buffer o_ref = {.name = "y", .data = ref, .size = ob};
    dqg_buffer o_got = {.name = "y", .data = got, .size = ob};
    dqg_compile_options opt = dqg_compile_options_default();
    opt.threads = 0;
    dqg_status st = dqg_reference_run(L.g, &in, 1, &o_ref, 1);
    if (st == DQG_OK)
        st = dqg_compile(L.g, &opt, &c);
    if (st == DQG_OK)
        st = dqg_execute(c, &in, 1, &o_got, 1);
    if (st != DQG_OK) {
        snprintf(msg, msg_size, "%s: %s: %s", L.what, dqg_status_name(st), dqg_last_error());
        goto done;
    }
    bool integer = true; /* every MatMul/Convolution in an int8 kernel */
    for (size_t p = 0; p < dqg_compiled_partition_count(c); p++) {
        const char *info = dqg_compiled_partition_info(c, p), *k = strstr(info, "] -> ");
        if (!k)
            continue;
        if ((strstr(info, "MatMul '") || strstr(info, "Convolution '")) &&
            strncmp(info, "int8 ", 5) != 0)
            integer = false;
        /* "onednn:conv:u8s8:f32:brgconv:avx512_core_vnni" as "conv
         * brgconv:avx512_core_vnni": the implementation, not the types. */
        char name[200], full[200];
        snprintf(full, sizeof full, "%s", k + 5);
        full[strcspn(full, ", (")] = 0;
        char *f[8];
        int nf = 0;
        for (char *t = strtok(full, ":"); t && nf < 8; t = strtok(NULL, ":"))
            f[nf++] = t;
        if (nf >= 3 && !strcmp(f[0], "onednn")) {
            size_t pos = (size_t)snprintf(name, sizeof name, "%s", f[1]);
            for (int j = 2; j < nf && pos < sizeof name; j++)
                if (!is_type(f[j]))
                    pos += (size_t)snprintf(name + pos, sizeof name - pos, "%s%s",
                                            pos > strlen(f[1]) ? ":" : " ", f[j]);
        } else {
            snprintf(name, sizeof name, "%s", k + 5);
            name[strcspn(name, ", (")] = 0;
            char *blk = strstr(name, ":k-block");
            if (blk)
                *blk = 0;
        }
        if (!strstr(impls, name) && strlen(impls) + strlen(name) + 3 < impls_size) {
            if (impls[0])
                strcat(impls, ", ");
            strcat(impls, name);
        }
    }
    rc = 0;
    int64_t n = L.n_out;
    if (L.quantized) {
        bool u8 = dqg_tensor_dtype(L.g, L.y) == DQG_U8;
        for (int64_t i = 0; i < n && rc == 0; i++) {
            int r = u8 ? ((uint8_t *)ref)[i] : ((int8_t *)ref)[i];
            int v = u8 ? ((uint8_t *)got)[i] : ((int8_t *)got)[i];
            if (abs(v - r) > 1) {
                snprintf(msg, msg_size, "%s: element %lld is %d, the reference %d", L.what,
                         (long long)i, v, r);
                rc = 1;
            }
        }
    } else {
        /* The contract: 1e-5 of the largest magnitude, of the result or
         * of the sums before a Clip that narrows it. Integer kernels sum
         * exactly; an f32 MatMul (where int8 is refused) rounds its sums,
         * with an error that grows with K. */
        const float *r = ref, *v = got;
        double mx = sums_magnitude(seed, index, x);
        for (int64_t i = 0; i < n; i++)
            mx = fmax(mx, fabs(r[i]));
        double tol = 1e-5 * fmax(mx, 1e-30) * (integer ? 1.0 : fmax(1.0, (double)L.K / 16));
        for (int64_t i = 0; i < n && rc == 0; i++)
            if (!(fabs((double)v[i] - r[i]) <= tol)) {
                snprintf(msg, msg_size, "%s: element %lld is %.9g, the reference %.9g (max %.3g)",
                         L.what, (long long)i, v[i], r[i], mx);
                rc = 1;
            }
    }
done:
    free(x);
    free(ref);
    free(got);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(L.g);
    return rc;
}

/* ---- Levels ------------------------------------------------------------ */

typedef struct level {
    const char *name;    /* as printed */
    const char *onednn;  /* ONEDNN_MAX_CPU_ISA, NULL: not capped */
    const char *own;     /* DQG_MAX_ISA, NULL: not capped */
    const char *cpuflag; /* what /proc/cpuinfo must list, NULL: always */
} level;

static const level LEVELS[] = {
    {"best", NULL, NULL, NULL},
    {"avx2", "AVX2", "avx2", "avx2"},
    {"avx2_vnni", "AVX2_VNNI", "avx2", "avx_vnni"},
    {"avx512_core", "AVX512_CORE", "avx512", "avx512bw"},
    {"avx512_core_vnni", "AVX512_CORE_VNNI", "avx512_vnni", "avx512_vnni"},
    {"avx512_core_bf16", "AVX512_CORE_BF16", "avx512_bf16", "avx512_bf16"},
    {"own kernels in C", NULL, "scalar", NULL},
};

static bool cpu_has(const char *flag)
{
    if (!flag)
        return true;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            for (char *t = strtok(line, " \t\n"); t && !found; t = strtok(NULL, " \t\n"))
                found = strcmp(t, flag) == 0;
            break;
        }
    fclose(f);
    return found;
}

/* The child: cases of one level for `seconds`; prints one line
 * "cases mismatches|impls" and, on a mismatch, the case. */
static int child(uint32_t seed, double seconds, long only_case)
{
    char msg[1024] = "", impls[2048] = "";
    long cases = 0, bad = 0, errors = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = only_case >= 0 ? only_case : 0;; i++) {
        int rc = run_case(seed, i, msg, sizeof msg, impls, sizeof impls);
        cases++;
        if (rc == 1) {
            bad++;
            printf("MISMATCH case %ld: %s\n", i, msg);
        } else if (rc == 2) {
            errors++;
            printf("ERROR case %ld: %s\n", i, msg);
        }
        if (only_case >= 0 || bad || errors)
            break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) >= seconds)
            break;
    }
    printf("RESULT %ld %ld %ld|%s\n", cases, bad, errors, impls);
    return bad || errors ? 1 : 0;
}

static const char USAGE[] =
    "usage: dqgraph selftest [--seconds N] [--seed S] [--level NAME] [--case N]\n"
    "\n"
    "Checks dqgraph on this CPU: random int8 MatMul and Convolution layers\n"
    "(QDQ sources and weights, zero points, per-tensor and per-channel scales,\n"
    "bias, ReLU/Clip, QuantizeLinear) compiled and compared with the reference\n"
    "interpreter, at every instruction-set level the CPU has (oneDNN capped by\n"
    "ONEDNN_MAX_CPU_ISA, the own kernels by DQG_MAX_ISA), each in its own process.\n"
    "Prints a table of levels, cases, mismatches and the implementations seen.\n"
    "On a mismatch it prints the case, with the command that repeats it, and\n"
    "exits 1.\n"
    "\n"
    "Options:\n"
    "  --seconds N   time per level (default 10)\n"
    "  --seed S      the random seed (default 1)\n"
    "  --level NAME  run one level only (best, avx2, avx2_vnni, avx512_core,\n"
    "                avx512_core_vnni, avx512_core_bf16, c)\n"
    "  --case N      run case N only (with --level: repeat a reported mismatch)\n"
    "  -h, --help    show this help\n";

static bool parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

int dqg_tool_selftest(int argc, char **argv)
{
    double seconds = 10, seed = 1, one_case = -1;
    const char *only = NULL;
    bool is_child = getenv("DQG_SELFTEST_CHILD") != NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        }
        bool ok = i + 1 < argc;
        if (ok && !strcmp(a, "--seconds"))
            ok = parse_num(argv[++i], 0.01, 86400, &seconds);
        else if (ok && !strcmp(a, "--seed"))
            ok = parse_num(argv[++i], 0, 4294967295.0, &seed) && seed == floor(seed);
        else if (ok && !strcmp(a, "--case"))
            ok = parse_num(argv[++i], 0, 1e15, &one_case) && one_case == floor(one_case);
        else if (ok && !strcmp(a, "--level"))
            only = argv[++i];
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, "dqgraph selftest: bad or incomplete option '%s'\n%s", a, USAGE);
            return 2;
        }
    }
    if (is_child)
        return child((uint32_t)seed, seconds, (long)one_case);
    printf("| level | cases | mismatches | implementations seen |\n|---|---|---|---|\n");
    fflush(stdout);
    int rc = 0;
    for (size_t l = 0; l < sizeof LEVELS / sizeof *LEVELS; l++) {
        const level *L = &LEVELS[l];
        const char *key = l + 1 == sizeof LEVELS / sizeof *LEVELS ? "c" : L->name;
        if ((only && strcmp(only, key) != 0) || !cpu_has(L->cpuflag))
            continue;
        int fds[2];
        if (pipe(fds) != 0) {
            perror("dqgraph selftest: pipe");
            return 4;
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("dqgraph selftest: fork");
            return 4;
        }
        if (pid == 0) {
            dup2(fds[1], STDOUT_FILENO);
            close(fds[0]);
            close(fds[1]);
            setenv("DQG_SELFTEST_CHILD", "1", 1);
            if (L->onednn)
                setenv("ONEDNN_MAX_CPU_ISA", L->onednn, 1);
            if (L->own)
                setenv("DQG_MAX_ISA", L->own, 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        close(fds[1]);
        FILE *f = fdopen(fds[0], "r");
        char line[4096];
        long cases = 0, bad = 0, errors = 0;
        char impls[2048] = "", report[4096] = "";
        while (f && fgets(line, sizeof line, f)) {
            if (!strncmp(line, "RESULT ", 7)) {
                char *bar = strchr(line, '|');
                sscanf(line + 7, "%ld %ld %ld", &cases, &bad, &errors);
                if (bar)
                    snprintf(impls, sizeof impls, "%s", bar + 1);
                impls[strcspn(impls, "\n")] = 0;
            } else if (strlen(report) + strlen(line) < sizeof report) {
                strcat(report, line);
            }
        }
        if (f)
            fclose(f);
        int status = 0;
        waitpid(pid, &status, 0);
        bool crashed = !WIFEXITED(status) || (WEXITSTATUS(status) != 0 && !bad && !errors);
        printf("| %s | %ld | %ld%s | %s |\n", L->name, cases, bad + errors,
               crashed ? " (the check crashed)" : "", impls);
        if (bad || errors || crashed) {
            printf("\n%s", report);
            long n = -1;
            if (sscanf(report, "%*s case %ld", &n) == 1)
                printf("repeat with: dqgraph selftest --seed %.0f --level %s --case %ld\n\n", seed,
                       key, n);
            rc = 1;
        }
        fflush(stdout);
    }
    return rc;
}
