/* Weight-only MatMul: f32 activations times constant low-bit weights behind
 * a DequantizeLinear, against the reference interpreter. Every weight type
 * x granularity (per tensor, per output channel, blocks along K of 16, 32,
 * 64, 128 and odd sizes) x with and without zero point x M from 1 to 257 x
 * K and N off the block and panel sizes x weights stored transposed, with a
 * bias and a ReLU. The numerical contract: within 1e-5 of the reference
 * relative to the largest magnitude of the output and of the MatMul's own
 * result (a bias can cancel most of that, and the bias and ReLU carry its
 * rounding unchanged). Which kernel runs is checked too: dqgraph's own
 * (weights kept at their width) at M <= 16, three int8 codes per
 * activation on VNNI for 4- and 8-bit integer weights, else its AVX-512
 * BF16, AVX-512, AVX2 or plain-C copy by the CPU (and DQG_MAX_ISA);
 * oneDNN's f32 matmul on expanded weights otherwise. DQG_WO_CASES=FIRST:COUNT runs COUNT
 * random cases from seed FIRST in each randomized test. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "graph/dtype.h"
#include "runtime/cpu_isa.h"
#include "test_common.h"

static int64_t rin(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(test_rnd() % (uint32_t)(hi - lo + 1));
}

static size_t storage_bytes(dqg_dtype t, int64_t n)
{
    return t == DQG_S4 || t == DQG_U4 || t == DQG_F4E2M1 ? (size_t)(n + 1) / 2
           : t == DQG_S16 || t == DQG_U16                ? (size_t)n * 2
                                                         : (size_t)n;
}

static bool is_float8(dqg_dtype t)
{
    return t == DQG_F8E4M3FN || t == DQG_F8E4M3FNUZ || t == DQG_F8E5M2 || t == DQG_F8E5M2FNUZ;
}

typedef struct wcase {
    dqg_dtype wt;
    int64_t M, K, N, block; /* block: 0 per tensor, -1 per channel, else along K */
    bool zp, transposed, bias_relu;
    bool int8; /* compiled with fpmath int8 */
} wcase;

/* The case's graph (weights drawn from test_rnd); with `bound`, also an
 * input "e" and an output "b" = e . |W| (see run_case). */
static dqg_graph *build_case(const wcase *c, bool bound)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t M = c->M, K = c->K, N = c->N, one = 1;
    int64_t xd[] = {M, K}, wd[2] = {c->transposed ? N : K, c->transposed ? K : N};
    int ka = c->transposed ? 1 : 0, na = 1 - ka; /* axes of K and N in the storage */
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    size_t wb = storage_bytes(c->wt, K * N);
    uint8_t *w = malloc(wb);
    for (size_t i = 0; i < wb; i++)
        w[i] = (uint8_t)test_rnd();
    if (is_float8(c->wt)) /* every finite code below 2^15 (the rest: float8_codes_outside) */
        for (size_t i = 0; i < wb; i++)
            while (!(fabsf(dqg_load_float(c->wt, w, (int64_t)i)) < 32768.0f))
                w[i] = (uint8_t)test_rnd();
    dqg_tensor_id wq = dqg_constant(g, "w_q", c->wt, 2, wd, w, wb);
    free(w);
    /* Scales (and zero points) of shape: [] per tensor, [N] per channel,
     * the storage's shape with K divided into blocks. */
    int64_t sd[2], ns = 1;
    int srank = 0;
    dqg_dequantize_linear_attrs a = {.opset = c->wt == DQG_F4E2M1 ? 23 : 21};
    if (c->block == -1) {
        srank = 1;
        sd[0] = N;
        a.has_axis = true;
        a.axis = na;
    } else if (c->block > 0) {
        srank = 2;
        sd[ka] = (K + c->block - 1) / c->block;
        sd[na] = N;
        a.has_axis = true;
        a.axis = ka;
        a.block_size = c->block;
    }
    for (int i = 0; i < srank; i++)
        ns *= sd[i];
    float *s = malloc((size_t)ns * sizeof *s);
    for (int64_t i = 0; i < ns; i++)
        s[i] = 0.002f + 0.0001f * (float)rin(0, 100);
    dqg_tensor_id sc =
        dqg_constant(g, "w_s", DQG_F32, srank, srank ? sd : &one, s, (size_t)ns * sizeof *s);
    free(s);
    dqg_tensor_id zp = DQG_NONE;
    if (c->zp) {
        size_t zb = storage_bytes(c->wt, ns);
        uint8_t *z = malloc(zb);
        bool fl = c->wt == DQG_F4E2M1 || is_float8(c->wt);
        for (size_t i = 0; i < zb; i++) /* float types: zero, as ONNX requires */
            z[i] = fl ? 0 : (uint8_t)test_rnd();
        zp = dqg_constant(g, "w_zp", c->wt, srank, srank ? sd : &one, z, zb);
        free(z);
    }
    dqg_tensor_id wf = dqg_dequantize_linear(g, "w_dq", wq, sc, zp, &a);
    dqg_matmul_attrs ma = {.transpose_b = c->transposed};
    dqg_tensor_id y = dqg_matmul(g, "mm", x, wf, &ma);
    if (c->bias_relu) {
        float *b = malloc((size_t)N * sizeof *b);
        for (int64_t i = 0; i < N; i++)
            b[i] = 0.05f * (float)rin(-10, 10);
        y = dqg_relu(g, "relu", dqg_add(g, "bias", y, test_const_f32(g, 1, &N, b)));
        free(b);
    }
    dqg_output(g, y, "y");
    if (bound) {
        /* The MatMul's own result, whose magnitude the contract's 1e-5
         * is relative to: the bias may cancel most of it, and the bias and
         * ReLU carry its rounding unchanged (as in test_postop_chains).
         * b = e . |W|: with e[m, k] the most an activation moves when
         * rounded to its int8 code, the most y[m, n] moves (the bias adds
         * nothing and ReLU does not widen a difference). */
        if (c->bias_relu)
            dqg_output(g, dqg_matmul(g, "mm_alone", x, wf, &ma), "mm_y");
        dqg_tensor_id e = dqg_input(g, "e", DQG_F32, 2, xd);
        dqg_tensor_id wa = dqg_unary(g, "w_abs", DQG_UNARY_ABS, wf, 0.0f, 0.0f);
        dqg_output(g, dqg_matmul(g, "bound", e, wa, &ma), "b");
    }
    cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s", dqg_last_error());
    return g;
}

/* y = g(x) on the reference (ref) and on the compiled graph (got), x [nx]
 * and y [ny] f32. */
static void run_both(const dqg_graph *g, dqg_compiled *cc, const float *x, int64_t nx, float *ref,
                     float *got, int64_t ny)
{
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = (size_t)nx * 4};
    dqg_buffer o_ref = {.name = "y", .data = ref, .size = (size_t)ny * 4};
    dqg_buffer o_got = {.name = "y", .data = got, .size = (size_t)ny * 4};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &o_ref, 1), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(cc, &in, 1, &o_got, 1), DQG_OK, "%s", dqg_last_error());
}

/* g compiled with fpmath. */
static dqg_compiled *compile_with(const dqg_graph *g, dqg_fpmath_mode fpmath)
{
    dqg_compiled *cc;
    dqg_compile_options opt = dqg_compile_options_default();
    opt.fpmath = fpmath;
    cr_assert_eq(dqg_compile(g, &opt, &cc), DQG_OK, "%s", dqg_last_error());
    return cc;
}

/* Runs one case; returns the partition info of the weight-only partition. */
static void run_case(const wcase *c, char *info, size_t info_size)
{
    uint32_t seed = test_rng;
    dqg_graph *g = build_case(c, false);
    int64_t M = c->M, K = c->K, N = c->N;
    float *xv = malloc((size_t)(M * K) * sizeof *xv);
    for (int64_t i = 0; i < M * K; i++)
        xv[i] = (float)rin(-1000, 1000) / 250.0f;
    float *ref = malloc((size_t)(M * N) * sizeof *ref), *got = malloc((size_t)(M * N) * 4);
    dqg_buffer in = {.name = "x", .data = xv, .size = (size_t)(M * K) * 4};
    dqg_compiled *cc = compile_with(g, c->int8 ? DQG_FPMATH_INT8 : DQG_FPMATH_STRICT);
    run_both(g, cc, xv, M * K, ref, got, M * N);
    info[0] = 0;
    for (size_t i = 0; i < dqg_compiled_partition_count(cc); i++)
        if (strstr(dqg_compiled_partition_info(cc, i), "weight-only matmul"))
            snprintf(info, info_size, "%s", dqg_compiled_partition_info(cc, i));
    /* Int8 activations: each y[m, n] may move by b[m, n] = e . |W|, e[m, k]
     * half the int8 step of x's block (max|x| / 127 / 2); 0 for the exact
     * kernels. */
    float *bound = calloc((size_t)(M * N), sizeof *bound);
    float *e = calloc((size_t)(M * K), sizeof *e);
    const char *xb = strstr(info, "x-block");
    if (xb) {
        long long xblock = atoll(xb + 7);
        cr_assert_gt(xblock, 0, "%s", info);
        for (int64_t m = 0; m < M; m++)
            for (int64_t k0 = 0; k0 < K; k0 += xblock) {
                int64_t k1 = k0 + xblock < K ? k0 + xblock : K;
                float amax = 0;
                for (int64_t k = k0; k < k1; k++)
                    amax = fmaxf(amax, fabsf(xv[m * K + k]));
                for (int64_t k = k0; k < k1; k++)
                    e[m * K + k] = amax / 127.0f / 2.0f;
            }
    }
    uint32_t after = test_rng;
    test_rng = seed;
    dqg_graph *gb = build_case(c, true);
    test_rng = after;
    float *y2 = malloc((size_t)(M * N) * sizeof *y2), *mm = malloc((size_t)(M * N) * sizeof *mm);
    dqg_buffer ins[2] = {in, {.name = "e", .data = e, .size = (size_t)(M * K) * 4}};
    dqg_buffer outs[3] = {{.name = "y", .data = y2, .size = (size_t)(M * N) * 4},
                          {.name = "b", .data = bound, .size = (size_t)(M * N) * 4},
                          {.name = "mm_y", .data = mm, .size = (size_t)(M * N) * 4}};
    cr_assert_eq(dqg_reference_run(gb, ins, 2, outs, c->bias_relu ? 3 : 2), DQG_OK, "%s",
                 dqg_last_error());
    cr_assert_eq(memcmp(y2, ref, (size_t)(M * N) * 4), 0, "the bound's graph differs");
    /* a = |x| . |W|: a sum whose terms cancel to far below their magnitudes
     * is only known to a few f32 roundings of those (the reference's own
     * order has that error too): 2^-22 a is allowed beside the 1e-5. */
    float *xa = malloc((size_t)(M * K) * sizeof *xa), *a = malloc((size_t)(M * N) * sizeof *a);
    for (int64_t i = 0; i < M * K; i++)
        xa[i] = fabsf(xv[i]);
    dqg_buffer ains[2] = {in, {.name = "e", .data = xa, .size = (size_t)(M * K) * 4}};
    outs[1].data = a;
    cr_assert_eq(dqg_reference_run(gb, ains, 2, outs, c->bias_relu ? 3 : 2), DQG_OK, "%s",
                 dqg_last_error());
    free(xa);
    dqg_graph_destroy(gb);
    double mx = 1e-30;
    for (int64_t i = 0; i < M * N; i++)
        mx = fmax(mx, fmax(fabs(ref[i]), c->bias_relu ? fabs(mm[i]) : 0.0));
    free(e);
    free(y2);
    free(mm);
    for (int64_t i = 0; i < M * N; i++)
        cr_assert(
            fabs((double)got[i] - ref[i]) <= bound[i] * (1 + 1e-5) + 1e-5 * mx + 0x1p-22 * a[i],
            "%s M=%lld K=%lld N=%lld block %lld zp %d transposed %d: y[%lld] = %.9g, "
            "reference %.9g (max %.3g, the MatMul's result's included)\n%s",
            dqg_dtype_name(c->wt), (long long)M, (long long)K, (long long)N, (long long)c->block,
            c->zp, c->transposed, (long long)i, got[i], ref[i], mx, info);
    cr_assert(info[0], "no weight-only partition");
    free(a);
    free(bound);
    free(xv);
    free(ref);
    free(got);
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(g);
}

/* Three int8 codes per activation (the exact mode on a VNNI CPU) take 4-
 * and 8-bit integer weights at any M, when the scales' K-blocks hold whole
 * groups of 8 (4-bit) or 4 (8-bit) k. */
/* Above 16 rows on AVX-512, K-blocks under 64 take the f32 kernel for
 * many rows instead (the parts' per-block epilogue costs more there). */
static bool gemm_kernel_preferred(const wcase *c)
{
    return c->M > 16 && dqg_cpu_has(DQG_ISA_AVX512) && c->block > 0 && c->block < c->K &&
           c->block < 64;
}

static bool parts_kernel_expected(const wcase *c)
{
    bool four = c->wt == DQG_S4 || c->wt == DQG_U4;
    bool eight = c->wt == DQG_S8 || c->wt == DQG_U8;
    return !c->int8 && (four || eight) && dqg_cpu_has(DQG_ISA_AVX512_VNNI) &&
           !gemm_kernel_preferred(c) &&
           (c->block <= 0 || c->block >= c->K || c->block % (four ? 8 : 4) == 0);
}

/* Every weight type is decoded by the own kernel at small M and, on AVX2
 * and AVX-512, at any M; integer ones on VNNI at any M. */
static bool own_kernel_expected(const wcase *c)
{
    return c->M <= 16 || dqg_cpu_has(DQG_ISA_AVX2) || parts_kernel_expected(c);
}

/* The exact kernel's copy for this CPU, DQG_MAX_ISA and case: integer
 * weights on VNNI dot products (above), else one row of 4-bit weights on
 * bf16 dot products where its K-blocks hold whole groups of 8 k, else the
 * f32 kernel of the instruction set. */
static const char *own_kernel_name(const wcase *c)
{
    bool four = c->wt == DQG_S4 || c->wt == DQG_U4 || c->wt == DQG_F4E2M1;
    bool one_block = c->block <= 0 || c->block >= c->K;
    if (parts_kernel_expected(c))
        return "own:avx512_vnni:wo-int8-parts3";
    if (four && c->M == 1 && dqg_cpu_bf16_dot_fast() && (one_block || c->block % 8 == 0))
        return "own:avx512_bf16:wo-gemv";
    if (c->M > 16)
        return dqg_cpu_has(DQG_ISA_AVX512) ? "own:avx512:wo-gemm" : "own:avx2:wo-gemm";
    return dqg_cpu_has(DQG_ISA_AVX512) ? "own:avx512:wo-gemv"
           : dqg_cpu_has(DQG_ISA_AVX2) ? "own:avx2:wo-gemv"
                                       : "own:scalar:wo-gemv";
}

/* fpmath int8 quantizes the activations for 4- and 8-bit integer weights
 * on a VNNI CPU at any M, when the scales' K-blocks hold whole groups of 8 (4-bit)
 * or 4 (8-bit) k. */
static bool int8_kernel_expected(const wcase *c)
{
    bool four = c->wt == DQG_S4 || c->wt == DQG_U4;
    bool eight = c->wt == DQG_S8 || c->wt == DQG_U8;
    return c->int8 && (four || eight) && dqg_cpu_has(DQG_ISA_AVX512_VNNI) &&
           (c->block <= 0 || c->block >= c->K || c->block % (four ? 8 : 4) == 0);
}

/* `count` cases from `seed`, or as DQG_WO_CASES=FIRST:COUNT says (a wider
 * search than the suite's). */
static void random_cases_in(uint32_t seed, int count, const dqg_dtype *types, int n_types,
                            bool int8)
{
    uint32_t n = (uint32_t)count;
    test_seed_range("DQG_WO_CASES", &seed, &n);
    count = (int)n;
    test_rng = seed;
    static const int64_t Ms[] = {1, 2, 3, 7, 16, 33, 128, 257};
    static const int64_t blocks[] = {0, -1, 16, 32, 64, 128, 1, 24, 7};
    for (int i = 0; i < count; i++) {
        wcase c = {.wt = types[rin(0, n_types - 1)],
                   .M = Ms[rin(0, 7)],
                   .K = rin(1, 300),
                   .N = rin(1, 100),
                   .block = blocks[rin(0, 8)],
                   .zp = rin(0, 1),
                   .transposed = rin(0, 3) == 0,
                   .bias_relu = rin(0, 1),
                   .int8 = int8};
        if (c.M > 16 && rin(0, 1))
            c.M = rin(1, 16); /* most cases where the own kernel runs */
        char info[1024];
        run_case(&c, info, sizeof info);
        bool q8 = strstr(info, "own:avx512_vnni:wo-int8-act") != NULL;
        bool own = q8 || strstr(info, own_kernel_name(&c)) != NULL;
        cr_assert_eq(own, own_kernel_expected(&c) || int8_kernel_expected(&c), "M=%lld %s: %s",
                     (long long)c.M, dqg_dtype_name(c.wt), info);
        cr_assert_eq(q8, int8_kernel_expected(&c), "M=%lld %s block %lld: %s", (long long)c.M,
                     dqg_dtype_name(c.wt), (long long)c.block, info);
    }
}

static void random_cases(uint32_t seed, int count, const dqg_dtype *types, int n_types)
{
    random_cases_in(seed, count, types, n_types, false);
}

Test(weight_only, int4_every_granularity)
{
    const dqg_dtype t[] = {DQG_S4, DQG_U4};
    random_cases(1301, 70, t, 2);
}

Test(weight_only, int8_every_granularity)
{
    const dqg_dtype t[] = {DQG_S8, DQG_U8};
    random_cases(1302, 50, t, 2);
}

Test(weight_only, float8_float4_and_16_bit)
{
    const dqg_dtype t[] = {DQG_F8E4M3FN, DQG_F8E4M3FNUZ, DQG_F8E5M2, DQG_F8E5M2FNUZ,
                           DQG_F4E2M1,   DQG_S16,        DQG_U16};
    random_cases(1303, 60, t, 7);
}

/* fpmath int8: activations rounded to int8 per K-block, each result within
 * the bound that rounding implies (e . |W|, see run_case); weights the mode
 * does not take (float types, blocks splitting a group of k) run the exact
 * kernels, within 1e-5. */
Test(weight_only, int8_activations_within_their_rounding_bound)
{
    const dqg_dtype t[] = {DQG_S4, DQG_U4, DQG_S8, DQG_U8, DQG_F8E4M3FN, DQG_S16};
    random_cases_in(1305, 90, t, 6, true);
}

/* The layer sizes of real models, where the K-block loop runs long and the
 * panels split between threads. */
Test(weight_only, large_layers)
{
    test_rng = 1304;
    const wcase cases[] = {
        {DQG_S4, 1, 4096, 512, 32, false, false, false, false},
        {DQG_U4, 4, 2048, 1000, 128, true, false, true, false},
        {DQG_S4, 16, 1024, 4096, 64, true, true, false, false},
        {DQG_S8, 1, 4096, 1024, -1, false, false, true, false},
        {DQG_U8, 3, 1536, 777, 0, true, true, false, false},
        {DQG_S4, 1, 4096, 1000, 32, false, false, true, true},
        {DQG_U4, 16, 2048, 700, 128, true, true, false, true},
        {DQG_S8, 5, 3000, 512, -1, true, false, true, true},
        /* K-blocks above 256: the three-code kernel's x-blocks are their
         * largest divisors up to 256 that hold whole quads (256, 88, 200) */
        {DQG_S4, 2, 2048, 300, 512, false, false, true, false},
        {DQG_U4, 3, 2640, 100, 264, true, true, false, false},
        {DQG_S8, 1, 3000, 64, 1000, true, false, false, false},
        /* many rows: the f32 kernel for many rows on AVX2 and AVX-512 (blocks under
         * 64, other types), several blocks of rows and chunks of K, the
         * last of each partial; three int8 parts for the rest */
        {DQG_S4, 150, 1000, 200, 32, true, false, true, false},
        {DQG_U4, 77, 2048, 96, 16, false, true, false, false},
        {DQG_S8, 40, 1100, 130, -1, true, true, true, false},
        {DQG_F8E4M3FN, 90, 600, 70, 0, false, false, true, false},
        {DQG_S4, 64, 4096, 256, 128, false, false, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char info[1024];
        run_case(&cases[i], info, sizeof info);
        cr_assert_eq(strstr(info, "own:") != NULL,
                     own_kernel_expected(&cases[i]) || int8_kernel_expected(&cases[i]), "%s", info);
        cr_assert_eq(strstr(info, "wo-int8-act") != NULL, int8_kernel_expected(&cases[i]), "%s",
                     info);
    }
}

/* A 4096 x 4096 int4 layer (blocks of 32): the compiled object keeps its
 * weights at their width, at most 1.25x the stored bytes (8 MiB of
 * weights and 2 MiB of scales), not 64 MiB of f32. */
static void weights_kept(int64_t M)
{
    const int64_t K = 4096, N = 4096, B = 32, one = 1;
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {M, K}, wd[] = {K, N}, sd[] = {K / B, N};
    size_t wb = (size_t)(K * N) / 2, sb = (size_t)(K / B * N) * sizeof(float);
    uint8_t *w = malloc(wb);
    float *s = malloc(sb);
    for (size_t i = 0; i < wb; i++)
        w[i] = (uint8_t)(i * 37);
    for (size_t i = 0; i < sb / 4; i++)
        s[i] = 0.01f;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    dqg_dequantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = 0, .block_size = B};
    dqg_tensor_id wf =
        dqg_dequantize_linear(g, "w_dq", dqg_constant(g, "w", DQG_S4, 2, wd, w, wb),
                              dqg_constant(g, "s", DQG_F32, 2, sd, s, sb), DQG_NONE, &a);
    (void)one;
    dqg_output(g, dqg_matmul(g, "mm", x, wf, NULL), "y");
    cr_assert_eq(dqg_graph_finalize(g), DQG_OK);
    free(w);
    free(s);
    dqg_compiled *c;
    dqg_compile_options opt = dqg_compile_options_default();
    cr_assert_eq(dqg_compile(g, &opt, &c), DQG_OK, "%s", dqg_last_error());
    const char *info = dqg_compiled_partition_info(c, 0);
    const char *p = strstr(info, ", ");
    cr_assert(p && strstr(info, "weight bytes"), "%s", info);
    size_t kept = strtoull(p + 2, NULL, 10);
    cr_assert(kept > 0 && (double)kept <= 1.25 * (double)(wb + sb),
              "M=%lld: %zu bytes kept of %zu: %s", (long long)M, kept, wb + sb, info);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* ... at one row (the own kernel on every CPU) and at 64 (the kernel for
 * many rows, on AVX2 and AVX-512). */
Test(weight_only, weights_stay_at_their_width)
{
    weights_kept(1);
    if (dqg_cpu_has(DQG_ISA_AVX2))
        weights_kept(64);
}

/* Float8 codes the own kernel cannot decode through an f16 (E4M3FN's NaN,
 * E5M2FNUZ's largest binade, FNUZ's NaN at 0x80) send the layer to the
 * expanded path, which stays exact: the NaN reaches its column only, the
 * large value is kept. */
Test(weight_only, float8_codes_outside_the_kernel)
{
    const struct {
        dqg_dtype t;
        uint8_t code;
    } cases[] = {{DQG_F8E4M3FN, 0x7F}, {DQG_F8E5M2FNUZ, 0x7E}, {DQG_F8E4M3FNUZ, 0x80}};
    enum { K = 40, N = 48 };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t xd[] = {1, K}, wd[] = {K, N}, one = 1;
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
        uint8_t w[K * N];
        for (int i = 0; i < K * N; i++)
            w[i] = (uint8_t)(0x30 + i % 7); /* small finite values in every type */
        w[5 * N + 9] = cases[c].code;       /* k = 5, column 9 */
        const float s = 0.5f;
        dqg_dequantize_linear_attrs a = {.opset = 21};
        dqg_tensor_id wf = dqg_dequantize_linear(
            g, "w_dq", dqg_constant(g, "w_q", cases[c].t, 2, wd, w, sizeof w),
            dqg_constant(g, "w_s", DQG_F32, 0, &one, &s, sizeof s), DQG_NONE, &a);
        dqg_output(g, dqg_matmul(g, "mm", x, wf, &(dqg_matmul_attrs){0}), "y");
        cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s", dqg_last_error());
        float xv[K], ref[N], got[N];
        for (int i = 0; i < K; i++)
            xv[i] = (float)(i % 5) - 1.5f;
        dqg_buffer in = {.name = "x", .data = xv, .size = sizeof xv};
        dqg_buffer o_ref = {.name = "y", .data = ref, .size = sizeof ref};
        dqg_buffer o_got = {.name = "y", .data = got, .size = sizeof got};
        cr_assert_eq(dqg_reference_run(g, &in, 1, &o_ref, 1), DQG_OK, "%s", dqg_last_error());
        dqg_compiled *cc;
        dqg_compile_options opt = dqg_compile_options_default();
        cr_assert_eq(dqg_compile(g, &opt, &cc), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_execute(cc, &in, 1, &o_got, 1), DQG_OK, "%s", dqg_last_error());
        const char *info = dqg_compiled_partition_info(cc, 0);
        cr_assert(strstr(info, "weight-only") && !strstr(info, "wo-gemv"), "%s: %s",
                  dqg_dtype_name(cases[c].t), info);
        bool nan = isnan(dqg_load_float(cases[c].t, &cases[c].code, 0));
        float mx = 0;
        for (int n = 0; n < N; n++)
            mx = fmaxf(mx, isnan(ref[n]) ? 0 : fabsf(ref[n]));
        for (int n = 0; n < N; n++) {
            cr_assert_eq(isnan(ref[n]), nan && n == 9, "%s: reference y[%d] = %g",
                         dqg_dtype_name(cases[c].t), n, ref[n]);
            if (isnan(ref[n]))
                cr_assert(isnan(got[n]), "%s: y[%d] = %g, not NaN", dqg_dtype_name(cases[c].t), n,
                          got[n]);
            else
                cr_assert(fabsf(got[n] - ref[n]) <= 1e-5f * mx, "%s: y[%d] = %.9g vs %.9g",
                          dqg_dtype_name(cases[c].t), n, got[n], ref[n]);
        }
        dqg_compiled_destroy(cc);
        dqg_graph_destroy(g);
    }
}

/* y = x . W for one row of 4-bit weights [K, N], s4 or f4e2m1 (scale 1
 * per column, so W holds the codes' values), compiled and run; the
 * reference's y too. */
typedef struct row_layer {
    dqg_graph *g;
    dqg_compiled *cc;
    int64_t K, N;
} row_layer;

/* count s4 codes from test_rnd, seeded. */
static void random_s4(int8_t *q, int count, uint32_t seed)
{
    test_rng = seed;
    for (int i = 0; i < count; i++)
        q[i] = (int8_t)rin(-8, 7);
}

/* The value of 4-bit code q (as random_s4 draws it) in type t. */
static float value_of(dqg_dtype t, int8_t q)
{
    uint8_t code = (uint8_t)(q & 0x0F);
    return t == DQG_S4 ? (float)q : dqg_load_float(t, &code, 0);
}

/* block: the scales' K-block, or 0 for one scale per column; t: s4 or
 * f4e2m1, the codes q[] taken as that type's; compiled with fpmath. */
static row_layer row_layer_build(int64_t K, int64_t N, int64_t block, const int8_t *q, dqg_dtype t,
                                 dqg_fpmath_mode fpmath)
{
    row_layer L = {.K = K, .N = N};
    cr_assert_eq(dqg_graph_create(&L.g), DQG_OK);
    int64_t xd[] = {1, K}, wd[] = {K, N};
    size_t wb = (size_t)(K * N + 1) / 2;
    uint8_t *w = calloc(wb, 1);
    for (int64_t i = 0; i < K * N; i++)
        w[i / 2] |= (uint8_t)((q[i] & 0x0F) << (i % 2 * 4));
    int64_t sd[] = {block ? (K + block - 1) / block : N, N}, ns = block ? sd[0] * N : N;
    float *s = malloc((size_t)ns * sizeof *s);
    for (int64_t i = 0; i < ns; i++)
        s[i] = 1.0f;
    dqg_tensor_id x = dqg_input(L.g, "x", DQG_F32, 2, xd);
    dqg_dequantize_linear_attrs a = {.opset = t == DQG_F4E2M1 ? 23 : 21,
                                     .has_axis = true,
                                     .axis = block ? 0 : 1,
                                     .block_size = block};
    dqg_tensor_id wf = dqg_dequantize_linear(
        L.g, "w_dq", dqg_constant(L.g, "w", t, 2, wd, w, wb),
        dqg_constant(L.g, "s", DQG_F32, block ? 2 : 1, sd, s, (size_t)ns * sizeof *s), DQG_NONE,
        &a);
    dqg_output(L.g, dqg_matmul(L.g, "mm", x, wf, NULL), "y");
    cr_assert_eq(dqg_graph_finalize(L.g), DQG_OK, "%s", dqg_last_error());
    free(w);
    free(s);
    L.cc = compile_with(L.g, fpmath);
    const char *info = dqg_compiled_partition_info(L.cc, 0);
    wcase c = {
        .wt = t, .M = 1, .K = K, .block = block ? block : -1, .int8 = fpmath == DQG_FPMATH_INT8};
    cr_assert(strstr(info, int8_kernel_expected(&c) ? "wo-int8-act" : own_kernel_name(&c)), "%s",
              info);
    return L;
}

static void row_layer_run(const row_layer *L, const float *x, float *got, float *ref)
{
    run_both(L->g, L->cc, x, L->K, ref, got, L->N);
}

static void row_layer_destroy(row_layer *L)
{
    dqg_compiled_destroy(L->cc);
    dqg_graph_destroy(L->g);
}

/* One row of 4-bit float weights runs on bf16 dot products where the CPU
 * has them (integer weights take int8 codes instead, see
 * three_int8_parts_...), with x split into three bf16 parts: all 24 bits
 * of x count. x[a] = 1 + 2^-9 + 2^-20 and x[b] = -(1 + 2^-9) over equal
 * rows a and b of W leave exactly w[a, n] 2^-20 in every column (the
 * reference's f32 sum is exact here): two parts (16 bits) would give 0.
 * Pairs of k at every place of a group of 8, across groups, in the last
 * (short) group, with one scale per column and per K-block of 16. */
Test(weight_only, one_row_keeps_every_bit_of_the_activations)
{
    /* the bf16 copy wherever the CPU has the instructions, not only where
     * it is the faster one */
    setenv("DQG_BF16_DOT", "fast", 1);
    enum { K = 77, N = 40 };
    int8_t q[K * N];
    random_s4(q, K * N, 1307);
    const int pairs[][2] = {{0, 1}, {2, 7}, {5, 3}, {8, 15}, {13, 64}, {70, 76}, {75, 40}};
    for (size_t t = 0; t < 2 * sizeof pairs / sizeof *pairs; t++) {
        int a = pairs[t / 2][0], b = pairs[t / 2][1];
        int64_t block = t % 2 ? 16 : 0;
        int8_t qt[K * N];
        memcpy(qt, q, sizeof q);
        for (int n = 0; n < N; n++) {
            while (value_of(DQG_F4E2M1, q[a * N + n]) == 0.0f)
                q[a * N + n] = (int8_t)rin(-8, 7);
            qt[a * N + n] = qt[b * N + n] = q[a * N + n];
        }
        row_layer L = row_layer_build(K, N, block, qt, DQG_F4E2M1, DQG_FPMATH_STRICT);
        float x[K] = {0}, got[N], ref[N];
        x[a] = 1.0f + 0x1p-9f + 0x1p-20f;
        x[b] = -(1.0f + 0x1p-9f);
        row_layer_run(&L, x, got, ref);
        for (int n = 0; n < N; n++) {
            float want = value_of(DQG_F4E2M1, q[a * N + n]) * 0x1p-20f;
            cr_assert_eq(ref[n], want, "reference y[%d] = %a", n, ref[n]);
            cr_assert_eq(got[n], want, "k %d and %d, K-block %lld: y[%d] = %a, want %a", a, b,
                         (long long)block, n, got[n], want);
        }
        row_layer_destroy(&L);
    }
}

/* The exact mode's integer kernel represents each activation by three
 * int8 codes, x ~ sx (q0 + q1 / 254 + q2 / 254^2) with sx = max|x| / 127
 * of its x-block: what it leaves out is at most sx / (2 x 254^2) (~2^-24
 * of the block's largest magnitude) plus the f32 rounding of x / sx
 * (2^-22 |x|). So |y - x . W| <= sum_k e[k] |w[k, n]| + the f32 rounding of
 * combining the blocks' integer sums (2^-24 (4 blocks + 16) sum_k |x w|),
 * against x . W in double. Activations of a wide range of magnitudes in
 * every block (where such codes are weakest: two codes per activation
 * would be 254 times off), s4 weights in blocks of 32 with zero points,
 * u8 per channel with zero points and s8 per tensor, M from 1 to 300
 * (passes of two rows, the panels left over at N = 70, and two blocks of
 * rows turned into codes at a time, one of them also with a NaN). */
Test(weight_only, three_int8_parts_keep_activations_to_2_24_of_their_block_maximum)
{
    if (!dqg_cpu_has(DQG_ISA_AVX512_VNNI))
        cr_skip("no AVX512-VNNI at this DQG_MAX_ISA");
    enum { K = 256, N = 70 };
    test_rng = 1311;
    const struct {
        dqg_dtype t;
        int64_t block; /* 0: per tensor, -1: per channel */
        bool zp;
    } kinds[] = {{DQG_S4, 64, true}, {DQG_U8, -1, true}, {DQG_S8, 0, false}};
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 21, 300};
    for (size_t v = 0; v < sizeof kinds / sizeof *kinds; v++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++) {
            int64_t M = Ms[mi];
            bool four = kinds[v].t == DQG_S4;
            int64_t block = kinds[v].block, nb = block > 0 ? K / block : 1;
            int64_t ns = block > 0 ? nb * N : block < 0 ? N : 1;
            static int16_t q[K * N];
            static uint8_t w[K * N];
            float s[K / 32 * N], zf[K / 32 * N];
            uint8_t z[K / 32 * N];
            memset(w, 0, sizeof w);
            for (int i = 0; i < K * N; i++) {
                q[i] = (int16_t)(four                   ? rin(-8, 7)
                                 : kinds[v].t == DQG_U8 ? rin(0, 255)
                                                        : rin(-128, 127));
                if (four)
                    w[i / 2] |= (uint8_t)((q[i] & 0x0F) << (i % 2 * 4));
                else
                    w[i] = (uint8_t)q[i];
            }
            for (int64_t i = 0; i < ns; i++) {
                s[i] = 0.001f * (float)rin(1, 100);
                z[i] = kinds[v].zp ? (uint8_t)(four ? rin(-8, 7) & 0x0F : rin(0, 255)) : 0;
                zf[i] = four ? (float)(int8_t)(z[i] << 4) / 16.0f : (float)z[i];
            }
            dqg_graph *g;
            cr_assert_eq(dqg_graph_create(&g), DQG_OK);
            int64_t xd[] = {M, K}, wd[] = {K, N}, sd[] = {block > 0 ? nb : N, N};
            int srank = block > 0 ? 2 : block < 0 ? 1 : 0;
            const int64_t *sdims = block > 0 ? sd : &sd[1];
            dqg_dequantize_linear_attrs a = {.opset = 21,
                                             .has_axis = block != 0,
                                             .axis = block > 0 ? 0 : 1,
                                             .block_size = block > 0 ? block : 0};
            size_t wb = four ? K * N / 2 : K * N;
            dqg_tensor_id zt = DQG_NONE;
            if (kinds[v].zp) {
                uint8_t zs[K / 32 * N] = {0};
                for (int64_t i = 0; i < ns; i++)
                    if (four)
                        zs[i / 2] |= (uint8_t)(z[i] << (i % 2 * 4));
                    else
                        zs[i] = z[i];
                zt = dqg_constant(g, "w_zp", kinds[v].t, srank, sdims, zs,
                                  four ? (size_t)(ns + 1) / 2 : (size_t)ns);
            }
            dqg_tensor_id wf = dqg_dequantize_linear(
                g, "w_dq", dqg_constant(g, "w", kinds[v].t, 2, wd, w, wb),
                dqg_constant(g, "w_s", DQG_F32, srank, sdims, s, (size_t)ns * sizeof(float)), zt,
                &a);
            dqg_output(g, dqg_matmul(g, "mm", dqg_input(g, "x", DQG_F32, 2, xd), wf, NULL), "y");
            cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s", dqg_last_error());
            /* magnitudes from 2^-16 to 2^4 in every block of 32 */
            float *x = malloc((size_t)(M * K) * sizeof *x), *y = malloc((size_t)(M * N) * 4);
            for (int64_t i = 0; i < M * K; i++)
                x[i] = (rin(0, 1) ? 1.0f : -1.0f) * (float)rin(1, 1000) / 64.0f *
                       ldexpf(1.0f, -(int)rin(0, 14));
            dqg_compiled *cc = compile_with(g, DQG_FPMATH_STRICT);
            const char *info = dqg_compiled_partition_info(cc, 0);
            cr_assert(strstr(info, "wo-int8-parts3"), "%s", info);
            dqg_buffer in = {.name = "x", .data = x, .size = (size_t)(M * K) * 4};
            dqg_buffer out = {.name = "y", .data = y, .size = (size_t)(M * N) * 4};
            cr_assert_eq(dqg_execute(cc, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
            for (int64_t m = 0; m < M; m++) {
                double e[K];
                for (int64_t k = 0; k < K; k++) {
                    int64_t c0 = k / 32 * 32; /* x-blocks: 32, or 128 per channel / tensor */
                    if (block <= 0)
                        c0 = k / 128 * 128;
                    double amax = 0;
                    for (int64_t j = c0; j < c0 + (block > 0 ? 32 : 128); j++)
                        amax = fmax(amax, fabs(x[m * K + j]));
                    e[k] = amax / 127.0 / (2.0 * 254.0 * 254.0) + 0x1p-22 * fabs(x[m * K + k]);
                }
                for (int64_t n = 0; n < N; n++) {
                    double want = 0, bound = 0, mag = 0;
                    for (int64_t k = 0; k < K; k++) {
                        int64_t si = block > 0 ? (k / block) * N + n : block < 0 ? n : 0;
                        double wv = ((double)q[k * N + n] - zf[si]) * (double)s[si];
                        want += (double)x[m * K + k] * wv;
                        bound += e[k] * fabs(wv);
                        mag += fabs((double)x[m * K + k] * wv);
                    }
                    bound += 0x1p-24 * (4.0 * (double)(K / 32) + 16.0) * mag;
                    cr_assert(fabs((double)y[m * N + n] - want) <= bound,
                              "%s block %lld M=%lld: y[%lld, %lld] = %.9g, x . W = %.9g, off by "
                              "%.3g, bound %.3g",
                              dqg_dtype_name(kinds[v].t), (long long)block, (long long)M,
                              (long long)m, (long long)n, y[m * N + n], want,
                              fabs((double)y[m * N + n] - want), bound);
                }
            }
            if (M == 300) {
                /* A NaN in the second block of rows: that block takes the
                 * f32 loop (its row NaN in every column, the others as
                 * the reference's), the first keeps its codes. */
                float *ref = malloc((size_t)(M * N) * sizeof *ref);
                x[280 * K + 5] = NAN;
                run_both(g, cc, x, M * K, ref, y, M * N);
                float mx = 0.0f;
                for (int64_t i = 0; i < M * N; i++)
                    mx = i / N == 280 ? mx : fmaxf(mx, fabsf(ref[i]));
                for (int64_t i = 0; i < M * N; i++)
                    cr_assert(i / N == 280 ? isnan(y[i]) && isnan(ref[i])
                                           : fabsf(y[i] - ref[i]) <= 1e-5f * mx,
                              "%s: y[%lld] = %.9g, reference %.9g (max %g)",
                              dqg_dtype_name(kinds[v].t), (long long)i, y[i], ref[i], mx);
                free(ref);
            }
            free(x);
            free(y);
            dqg_compiled_destroy(cc);
            dqg_graph_destroy(g);
        }
}

/* Rows the integer codes or the bf16 split cannot carry take f32 code:
 * NaN and infinity (they reach the columns they reach in the reference,
 * infinity times a zero weight giving NaN), a value near FLT_MAX (bf16
 * would round it to infinity, and 0 . inf is NaN where the reference has
 * 0; int8 codes stop at 2^64) and rows of magnitudes near 2^-126 (bf16
 * arithmetic flushes the parts below; int8 codes stop at 2^-64). s4
 * weights (three int8 codes per activation on a VNNI CPU, one under
 * fpmath int8) and f4e2m1 ones (bf16 where the CPU has it). */
Test(weight_only, one_row_with_nan_infinity_or_extreme_magnitudes)
{
    enum { K = 64, N = 48 };
    int8_t q[K * N];
    random_s4(q, K * N, 1308);
    for (int n = 0; n < N; n += 3)
        q[9 * N + n] = 0; /* k = 9: a zero weight in every third column */
    for (int v = 0; v < 3; v++) {
        row_layer L = row_layer_build(K, N, 0, q, v == 1 ? DQG_F4E2M1 : DQG_S4,
                                      v == 2 ? DQG_FPMATH_INT8 : DQG_FPMATH_STRICT);
        for (int t = 0; t < 4; t++) {
            float x[K], got[N], ref[N];
            for (int k = 0; k < K; k++)
                x[k] = t == 3 ? (float)rin(1, 1000) * 1e-40f : (float)rin(-1000, 1000) / 256.0f;
            if (t == 0)
                x[9] = NAN;
            else if (t == 1)
                x[9] = -INFINITY;
            else if (t == 2)
                x[9] = 3.4e38f;
            row_layer_run(&L, x, got, ref);
            double mx = 0;
            for (int n = 0; n < N; n++)
                mx = isfinite(ref[n]) ? fmax(mx, fabs(ref[n])) : mx;
            for (int n = 0; n < N; n++) {
                if (isnan(ref[n]) || isinf(ref[n]))
                    cr_assert(isnan(ref[n]) ? isnan(got[n]) : got[n] == ref[n],
                              "row %d: y[%d] = %g, reference %g", t, n, got[n], ref[n]);
                else
                    cr_assert(fabs((double)got[n] - ref[n]) <= 1e-5 * mx,
                              "row %d: y[%d] = %.9g, reference %.9g (max %g)", t, n, got[n], ref[n],
                              mx);
            }
            if (t < 2) /* the zero weights' columns too: NaN times 0, inf times 0 */
                for (int n = 0; n < N; n++)
                    cr_assert(!isfinite(ref[n]), "row %d: reference y[%d] = %g", t, n, ref[n]);
        }
        row_layer_destroy(&L);
    }
}

/* The kernel's epilogue keeps NaN as the reference's ReLU and Clip do
 * (NaN fails their comparisons): a row of x holding a NaN is NaN in every
 * column after them, at M = 1 and 2. */
Test(weight_only, relu_and_clip_in_the_epilogue_keep_nan)
{
    enum { K = 40, N = 36 };
    int8_t q[K * N];
    random_s4(q, K * N, 1309);
    uint8_t w[K * N / 2] = {0};
    for (int i = 0; i < K * N; i++)
        w[i / 2] |= (uint8_t)((q[i] & 0x0F) << (i % 2 * 4));
    for (int clip = 0; clip < 2; clip++)
        for (int64_t M = 1; M <= 2; M++) {
            dqg_graph *g;
            cr_assert_eq(dqg_graph_create(&g), DQG_OK);
            int64_t xd[] = {M, K}, wd[] = {K, N}, one = 1;
            const float s = 0.25f;
            dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
            dqg_dequantize_linear_attrs a = {.opset = 21};
            dqg_tensor_id wf = dqg_dequantize_linear(
                g, "w_dq", dqg_constant(g, "w", DQG_S4, 2, wd, w, sizeof w),
                dqg_constant(g, "s", DQG_F32, 0, &one, &s, sizeof s), DQG_NONE, &a);
            dqg_tensor_id y = dqg_matmul(g, "mm", x, wf, NULL);
            y = clip ? dqg_clip(g, "act", y, -1.0f, 1.0f) : dqg_relu(g, "act", y);
            dqg_output(g, y, "y");
            cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s", dqg_last_error());
            float xv[2 * K], ref[2 * N], got[2 * N];
            for (int i = 0; i < 2 * K; i++)
                xv[i] = (float)rin(-100, 100) / 64.0f;
            xv[3] = NAN;
            dqg_compiled *cc = compile_with(g, DQG_FPMATH_STRICT);
            run_both(g, cc, xv, M * K, ref, got, M * N);
            const char *info = dqg_compiled_partition_info(cc, 0);
            cr_assert(strstr(info, "own:") && strstr(info, clip ? "Clip" : "ReLU"), "%s", info);
            for (int64_t i = 0; i < M * N; i++) {
                if (i < N) {
                    cr_assert(isnan(ref[i]), "reference y[%lld] = %g", (long long)i, ref[i]);
                    cr_assert(isnan(got[i]), "%s M=%lld: y[%lld] = %g, reference NaN",
                              clip ? "Clip" : "ReLU", (long long)M, (long long)i, got[i]);
                } else
                    cr_assert(fabsf(got[i] - ref[i]) <= 1e-5f * 8.0f, "y[%lld] = %g vs %g",
                              (long long)i, got[i], ref[i]);
            }
            dqg_compiled_destroy(cc);
            dqg_graph_destroy(g);
        }
}

/* 8- and 16-bit unsigned weights with zero points in the middle of their
 * range (codes within a few tens of it, as a min/max quantizer of centred
 * weights writes them) and activations of one sign (after a ReLU or GELU):
 * sum x q and zp sum x then nearly cancel, and computing the result as
 * their difference in f32 was 9e-5 of the output's magnitude off at
 * K = 4096. Every kernel copy (the ISA matrix caps the CPU) subtracts the
 * zero point from the code first; within 1e-5. */
Test(weight_only, mid_range_zero_points_with_activations_of_one_sign)
{
    test_rng = 2611;
    const struct {
        dqg_dtype t;
        int64_t M, K, N, block; /* block: -1 per channel, else along K */
    } cases[] = {{DQG_U8, 1, 4096, 300, -1},  {DQG_U8, 3, 4096, 200, -1},
                 {DQG_U8, 16, 4096, 100, -1}, {DQG_U8, 2, 4096, 96, 1024},
                 {DQG_U16, 4, 4096, 64, -1},  {DQG_S8, 5, 3000, 70, -1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t M = cases[c].M, K = cases[c].K, N = cases[c].N, B = cases[c].block;
        int64_t nb = B < 0 ? 1 : K / B;
        bool wide = cases[c].t == DQG_U16, sgn = cases[c].t == DQG_S8;
        int64_t mid = wide ? 32768 : sgn ? 0 : 128, spread = wide ? 300 : 28;
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t xd[] = {M, K}, wd[] = {K, N}, sd[] = {nb, N};
        size_t esz = wide ? 2 : 1;
        uint8_t *w = malloc((size_t)(K * N) * esz), *z = malloc((size_t)(nb * N) * esz);
        float *s = malloc((size_t)(nb * N) * sizeof *s);
        for (int64_t i = 0; i < nb * N; i++) {
            int64_t zv = mid + rin(-3, 3);
            s[i] = 0.001f * (float)rin(1, 20);
            if (wide)
                ((uint16_t *)z)[i] = (uint16_t)zv;
            else
                z[i] = (uint8_t)zv;
        }
        for (int64_t i = 0; i < K * N; i++) {
            int64_t v = mid + rin(-spread, spread);
            if (wide)
                ((uint16_t *)w)[i] = (uint16_t)v;
            else
                w[i] = (uint8_t)v;
        }
        dqg_dequantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = B < 0 ? 1 : 0};
        if (B > 0)
            a.block_size = B;
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
        dqg_tensor_id wf = dqg_dequantize_linear(
            g, "w_dq", dqg_constant(g, "w", cases[c].t, 2, wd, w, (size_t)(K * N) * esz),
            dqg_constant(g, "s", DQG_F32, B < 0 ? 1 : 2, B < 0 ? &N : sd, s,
                         (size_t)(nb * N) * sizeof *s),
            dqg_constant(g, "z", cases[c].t, B < 0 ? 1 : 2, B < 0 ? &N : sd, z,
                         (size_t)(nb * N) * esz),
            &a);
        dqg_output(g, dqg_matmul(g, "mm", x, wf, NULL), "y");
        cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s", dqg_last_error());
        float *xv = malloc((size_t)(M * K) * 4), *ref = malloc((size_t)(M * N) * 4),
              *got = malloc((size_t)(M * N) * 4);
        for (int64_t i = 0; i < M * K; i++)
            xv[i] = (float)rin(0, 1000) / 256.0f;
        dqg_compiled *cc = compile_with(g, DQG_FPMATH_STRICT);
        run_both(g, cc, xv, M * K, ref, got, M * N);
        const char *info = dqg_compiled_partition_info(cc, 0);
        double mx = 1e-30;
        for (int64_t i = 0; i < M * N; i++)
            mx = fmax(mx, fabs(ref[i]));
        for (int64_t i = 0; i < M * N; i++)
            cr_assert(fabs((double)got[i] - ref[i]) <= 1e-5 * mx,
                      "%s M=%lld K=%lld N=%lld block %lld: y[%lld] = %.9g, reference %.9g (max "
                      "%.3g)\n%s",
                      dqg_dtype_name(cases[c].t), (long long)M, (long long)K, (long long)N,
                      (long long)B, (long long)i, got[i], ref[i], mx, info);
        free(xv);
        free(ref);
        free(got);
        free(w);
        free(z);
        free(s);
        dqg_compiled_destroy(cc);
        dqg_graph_destroy(g);
    }
}

/* y = x . DequantizeLinear(w, s, z) with x [M, K] and w [K, N] of type t,
 * compiled strictly; the graph in *g. */
static dqg_compiled *wo_layer(dqg_graph **g, int64_t M, int64_t K, int64_t N, dqg_dtype t,
                              const void *w, size_t wb, const float *s, const void *z, size_t zb,
                              int srank, const int64_t *sd, const dqg_dequantize_linear_attrs *a)
{
    size_t ns = 1;
    for (int i = 0; i < srank; i++)
        ns *= (size_t)sd[i];
    cr_assert_eq(dqg_graph_create(g), DQG_OK);
    int64_t xd[] = {M, K}, wd[] = {K, N};
    dqg_tensor_id x = dqg_input(*g, "x", DQG_F32, 2, xd);
    dqg_tensor_id wf =
        dqg_dequantize_linear(*g, "w_dq", dqg_constant(*g, "w", t, 2, wd, w, wb),
                              dqg_constant(*g, "s", DQG_F32, srank, sd, s, ns * sizeof(float)),
                              dqg_constant(*g, "z", t, srank, sd, z, zb), a);
    dqg_output(*g, dqg_matmul(*g, "mm", x, wf, NULL), "y");
    cr_assert_eq(dqg_graph_finalize(*g), DQG_OK, "%s", dqg_last_error());
    return compile_with(*g, DQG_FPMATH_STRICT);
}

/* got against ref ([M, N]): NaN where it is NaN, the same infinity, and
 * within 1e-5 of the largest finite magnitude elsewhere. */
static void agrees_with_non_finite(const float *got, const float *ref, int64_t M, int64_t N,
                                   const char *info)
{
    double mx = 0;
    for (int64_t i = 0; i < M * N; i++)
        mx = isfinite(ref[i]) ? fmax(mx, fabs(ref[i])) : mx;
    for (int64_t i = 0; i < M * N; i++) {
        int m = (int)(i / N), n = (int)(i % N);
        if (!isfinite(ref[i]))
            cr_assert(isnan(ref[i]) ? isnan(got[i]) : got[i] == ref[i],
                      "M=%lld row %d: y[%d] = %g, reference %g\n%s", (long long)M, m, n, got[i],
                      ref[i], info);
        else
            cr_assert(fabs((double)got[i] - ref[i]) <= 1e-5 * mx,
                      "M=%lld row %d: y[%d] = %.9g, reference %.9g (max %g)\n%s", (long long)M, m,
                      n, got[i], ref[i], mx, info);
    }
}

/* 4-bit zero points with non-finite activations: a code equal to its zero
 * point is a weight of exactly 0 in the reference, and an infinite
 * activation times it NaN; the kernels must agree (the kernel for many
 * rows dequantizes each weight as the reference does, (q - zp) s; at few
 * rows, rows that are not finite take a loop that does). Rows: NaN,
 * -infinity, 3.4e38 at k = 9, then ordinary ones. */
static void zero_points_and_non_finite(int64_t M)
{
    enum { K = 96, N = 40, B = 32, NB = K / B, M_MAX = 24 };
    int8_t q[K * N], z[NB * N];
    random_s4(q, K * N, 1321);
    for (int i = 0; i < NB * N; i++)
        z[i] = (int8_t)rin(-8, 7);
    for (int n = 0; n < N; n += 3)
        q[9 * N + n] = z[n]; /* k = 9 (block 0): (q - zp) = 0 in every third column */
    uint8_t w[K * N / 2] = {0}, zb[NB * N / 2] = {0};
    for (int i = 0; i < K * N; i++)
        w[i / 2] |= (uint8_t)((q[i] & 0x0F) << (i % 2 * 4));
    for (int i = 0; i < NB * N; i++)
        zb[i / 2] |= (uint8_t)((z[i] & 0x0F) << (i % 2 * 4));
    float s[NB * N];
    for (int i = 0; i < NB * N; i++)
        s[i] = 0.01f * (float)rin(1, 100);
    int64_t sd[] = {NB, N};
    dqg_dequantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = 0, .block_size = B};
    dqg_graph *g;
    dqg_compiled *cc = wo_layer(&g, M, K, N, DQG_S4, w, sizeof w, s, zb, sizeof zb, 2, sd, &a);
    const char *info = dqg_compiled_partition_info(cc, 0);
    wcase c = {.wt = DQG_S4, .M = M, .K = K, .N = N, .block = B, .zp = true};
    cr_assert(strstr(info, own_kernel_expected(&c) ? own_kernel_name(&c) : "matmul"), "%s", info);
    static float xv[M_MAX * K], got[M_MAX * N], ref[M_MAX * N];
    for (int i = 0; i < M * K; i++)
        xv[i] = (float)rin(-1000, 1000) / 256.0f;
    xv[0 * K + 9] = NAN;
    xv[1 * K + 9] = -INFINITY;
    xv[2 * K + 9] = 3.4e38f;
    run_both(g, cc, xv, M * K, ref, got, M * N);
    for (int n = 0; n < N; n++) /* NaN times anything, -infinity times 0: NaN */
        for (int m = 0; m < 2; m++)
            cr_assert(!isfinite(ref[m * N + n]) && (n % 3 || isnan(ref[m * N + n])),
                      "row %d: reference y[%d] = %g", m, n, ref[m * N + n]);
    agrees_with_non_finite(got, ref, M, N, info);
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(g);
}

Test(weight_only, zero_points_with_non_finite_activations)
{
    zero_points_and_non_finite(24); /* many rows */
    zero_points_and_non_finite(3);
}

/* u8 weights, per-column scales of 0.0001 to 0.003 and zero points: a row of
 * x holding 3.4e38 gives finite results in the reference (each weight is
 * dequantized before it multiplies x), which summing x q first would
 * overflow; with an infinite scale in one column (inf_scale), that column
 * is infinite or NaN where the reference's is, and the rest as before. */
static void huge_rows(int64_t M, bool inf_scale)
{
    enum { K = 80, N = 36, M_MAX = 24 };
    uint8_t w[K * N], z[N];
    float s[N];
    test_rng = 1322;
    for (int i = 0; i < K * N; i++)
        w[i] = (uint8_t)rin(0, 255);
    for (int n = 0; n < N; n++) {
        z[n] = (uint8_t)rin(0, 255);
        s[n] = 0.0001f * (float)rin(1, 30); /* 255 s < 1 */
        w[4 * N + n] = z[n];                /* k = 4: weights of exactly 0 */
    }
    if (inf_scale)
        s[7] = INFINITY;
    int64_t sd[] = {N};
    dqg_dequantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = 1};
    dqg_graph *g;
    dqg_compiled *cc = wo_layer(&g, M, K, N, DQG_U8, w, sizeof w, s, z, sizeof z, 1, sd, &a);
    const char *info = dqg_compiled_partition_info(cc, 0);
    static float xv[M_MAX * K], got[M_MAX * N], ref[M_MAX * N];
    for (int i = 0; i < M * K; i++)
        xv[i] = (float)rin(-1000, 1000) / 256.0f;
    xv[0 * K + 9] = 3.4e38f;
    xv[1 * K + 9] = -3.0e38f;
    xv[2 * K + 4] = INFINITY; /* times the zero weights: NaN */
    run_both(g, cc, xv, M * K, ref, got, M * N);
    for (int n = 0; n < N; n++) {
        for (int m = 0; m < 2 && n != 7; m++) /* the overflow summing x q first would have */
            cr_assert(isfinite(ref[m * N + n]), "row %d: reference y[%d] = %g", m, n,
                      ref[m * N + n]);
        cr_assert(isnan(ref[2 * N + n]), "row 2: reference y[%d] = %g", n, ref[2 * N + n]);
    }
    agrees_with_non_finite(got, ref, M, N, info);
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(g);
}

Test(weight_only, huge_activations_and_infinite_scales)
{
    for (int inf_scale = 0; inf_scale < 2; inf_scale++) {
        huge_rows(3, inf_scale);
        huge_rows(24, inf_scale);
    }
}
