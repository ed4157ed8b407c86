/* Compiled kernels against the reference interpreter on randomized graphs
 * with fixed seeds: MatMul (broadcast batches, transposes, vectors),
 * Convolution (1-D to 3-D, strides, pads, dilations, groups, NCX/NXC, bias,
 * constant and run-time weights) and the element-wise and layout ops. f32
 * results agree within 1e-5 relative to the output's largest magnitude. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

static uint32_t rng_state;

static uint32_t next_u32(void)
{
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return rng_state = x;
}

static int64_t rand_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next_u32() % (uint32_t)(hi - lo + 1));
}
static float rand_f(void)
{
    return (float)((int)(next_u32() % 2001) - 1000) / 250.0f;
}

static float *rand_buf(int64_t n)
{
    float *p = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        p[i] = rand_f();
    return p;
}

static const char *matmul_kernel_line(const dqg_compiled *c);

/* Compiles the finalized g, runs it and the reference on random data, and
 * compares output `y` (f32); destroys g. With `line`, keeps the MatMul's
 * kernel line there and checks the graph ran as one partition. */
static void compare_finalized(dqg_graph *g, dqg_tensor_id y, const char *what, char *line,
                              size_t line_size)
{
    size_t n_in = dqg_graph_input_count(g);
    dqg_buffer in[4];
    float *data[4];
    for (size_t i = 0; i < n_in; i++) {
        dqg_tensor_id t = dqg_graph_input_id(g, i);
        data[i] = rand_buf(dqg_tensor_element_count(g, t));
        in[i] = (dqg_buffer){.id = t, .data = data[i], .size = dqg_tensor_byte_size(g, t)};
    }
    int64_t n = dqg_tensor_element_count(g, y);
    float *got = calloc((size_t)n, sizeof(float)), *want = calloc((size_t)n, sizeof(float));
    dqg_buffer o1 = {.id = y, .data = got, .size = (size_t)n * sizeof(float)};
    dqg_buffer o2 = {.id = y, .data = want, .size = o1.size};
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s: compile: %s", what, dqg_last_error());
    if (line) {
        snprintf(line, line_size, "%s", matmul_kernel_line(c));
        cr_assert_eq(dqg_compiled_partition_count(c), 1, "%s: %s", what,
                     dqg_compiled_partition_info(c, 0));
    }
    cr_assert_eq(dqg_execute(c, in, n_in, &o1, 1), DQG_OK, "%s: %s", what, dqg_last_error());
    cr_assert_eq(dqg_reference_run(g, in, n_in, &o2, 1), DQG_OK, "%s: %s", what, dqg_last_error());
    double maxabs = 0, maxdiff = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < n; i++) {
        maxabs = fmax(maxabs, fabs(want[i]));
        double d = fabs((double)got[i] - want[i]);
        if (d > maxdiff) {
            maxdiff = d;
            worst = i;
        }
    }
    cr_assert(maxdiff <= 1e-5 * fmax(maxabs, 1e-30), "%s [%s]: element %lld: got %g, want %g", what,
              dqg_compiled_partition_info(c, 0), (long long)worst, got[worst], want[worst]);
    dqg_compiled_destroy(c);
    for (size_t i = 0; i < n_in; i++)
        free(data[i]);
    free(got);
    free(want);
    dqg_graph_destroy(g);
}

/* Marks `y` as the output of g (inputs already marked), then as above. */
static void compare(dqg_graph *g, dqg_tensor_id y, const char *what)
{
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s: %s", what, dqg_last_error());
    finalize_ok(g);
    compare_finalized(g, y, what, NULL, 0);
}

static dqg_graph *G(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

Test(kernels, matmul_random_shapes)
{
    rng_state = 0x1234567u;
    for (int it = 0; it < 60; it++) {
        dqg_graph *g = G();
        int64_t M = rand_in(1, 37), K = rand_in(1, 41), N = rand_in(1, 29);
        int ra = (int)rand_in(1, 4), rb = (int)rand_in(1, 4);
        bool ta = rand_in(0, 1) && ra > 1, tb = rand_in(0, 1) && rb > 1;
        int64_t ad[4], bd[4];
        /* Batch dims: each operand independently 1 or the shared size. */
        int64_t batch[2] = {rand_in(1, 3), rand_in(1, 3)};
        for (int i = 0; i < ra - 2; i++)
            ad[i] = rand_in(0, 1) ? batch[i + (4 - ra)] : 1;
        for (int i = 0; i < rb - 2; i++)
            bd[i] = rand_in(0, 1) ? batch[i + (4 - rb)] : 1;
        if (ra == 1)
            ad[0] = K;
        else {
            ad[ra - 2] = ta ? K : M;
            ad[ra - 1] = ta ? M : K;
        }
        if (rb == 1)
            bd[0] = K;
        else {
            bd[rb - 2] = tb ? N : K;
            bd[rb - 1] = tb ? K : N;
        }
        dqg_tensor_id a = dqg_input(g, "a", DQG_F32, ra, ad);
        dqg_tensor_id b;
        if (rand_in(0, 1)) {
            b = dqg_input(g, "b", DQG_F32, rb, bd);
        } else {
            int64_t nb = 1;
            for (int i = 0; i < rb; i++)
                nb *= bd[i];
            float *w = rand_buf(nb);
            b = dqg_constant(g, "b", DQG_F32, rb, bd, w, (size_t)nb * sizeof(float));
            free(w);
        }
        dqg_matmul_attrs at = {.transpose_a = ta, .transpose_b = tb};
        char what[128];
        snprintf(what, sizeof what, "matmul #%d M=%lld K=%lld N=%lld ra=%d rb=%d ta=%d tb=%d", it,
                 (long long)M, (long long)K, (long long)N, ra, rb, ta, tb);
        compare(g, dqg_matmul(g, "mm", a, b, &at), what);
    }
}

/* A random permutation of 0..r-1. */
static void rand_perm(int r, int64_t *perm)
{
    for (int i = 0; i < r; i++)
        perm[i] = i;
    for (int i = r - 1; i > 0; i--) {
        int j = (int)rand_in(0, i);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* An input whose Transpose by a random permutation has dims `d`: the
 * operand seen through a transposed view. */
static dqg_tensor_id transposed_input(dqg_graph *g, const char *name, int r, const int64_t *d)
{
    int64_t perm[4], xd[4];
    rand_perm(r, perm);
    for (int i = 0; i < r; i++)
        xd[perm[i]] = d[i];
    char nm[32];
    snprintf(nm, sizeof nm, "%s_t", name);
    return dqg_transpose(g, nm, dqg_input(g, name, DQG_F32, r, xd), perm);
}

/* How the compiled graph ran the MatMul: the explain's kernel line. */
static const char *matmul_kernel_line(const dqg_compiled *c)
{
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        if (strstr(dqg_compiled_explain(c, i), "kernel: MatMul"))
            return dqg_compiled_explain(c, i);
    return "";
}

/* Transposes of run-time operands and of the result (attention heads) are
 * the matmul's strides: one partition, results as the reference's, for
 * random permutations (some leave the unit stride outside the matrix, and
 * the kernel copies them instead). */
Test(kernels, matmul_transposes_as_strides)
{
    rng_state = 0x7e57ab1eu;
    int strided = 0, copied = 0;
    for (int it = 0; it < 48; it++) {
        dqg_graph *g = G();
        int R = (int)rand_in(2, 4);
        int64_t M = rand_in(1, 33), K = rand_in(1, 40), N = rand_in(1, 35), B0 = rand_in(1, 3),
                B1 = rand_in(1, 4);
        int64_t ad[4], bd[4], yd[4], batch[2] = {B0, B1};
        for (int i = 0; i < R - 2; i++)
            ad[i] = bd[i] = yd[i] = batch[i + 4 - R];
        ad[R - 2] = M, ad[R - 1] = K, bd[R - 2] = K, bd[R - 1] = N, yd[R - 2] = M, yd[R - 1] = N;
        int which = (int)rand_in(1, 7); /* bits: A, B, result transposed */
        dqg_tensor_id a =
            which & 1 ? transposed_input(g, "a", R, ad) : dqg_input(g, "a", DQG_F32, R, ad);
        dqg_tensor_id b =
            which & 2 ? transposed_input(g, "b", R, bd) : dqg_input(g, "b", DQG_F32, R, bd);
        dqg_tensor_id y = dqg_matmul(g, "mm", a, b, NULL);
        int epilogue = (int)rand_in(0, 2);
        if (epilogue == 1) {
            y = dqg_relu(g, "relu", y);
        } else if (epilogue == 2) {
            /* The attention scores' Div by a scalar and Add of a mask. */
            float d = 8.0f, *mask = rand_buf(N);
            int64_t md[4] = {1, 1, 1, 1};
            md[R - 1] = N;
            y = dqg_div(g, "div", y, dqg_constant(g, "d", DQG_F32, 0, NULL, &d, 4));
            y = dqg_add(g, "mask", y,
                        dqg_constant(g, "m", DQG_F32, R, md, mask, (size_t)N * sizeof(float)));
            free(mask);
        }
        if (which & 4) {
            int64_t perm[4];
            rand_perm(R, perm);
            y = dqg_transpose(g, "y_t", y, perm);
        }
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
        finalize_ok(g);
        char what[160], line[512];
        snprintf(what, sizeof what, "#%d R=%d M=%lld K=%lld N=%lld transposed %d epilogue %d", it,
                 R, (long long)M, (long long)K, (long long)N, which, epilogue);
        compare_finalized(g, y, what, line, sizeof line);
        cr_assert(!strstr(line, ":ref"), "%s: %s", what, line);
        cr_assert(strstr(line, "transposes "), "%s: %s", what, line);
        strided += strstr(line, "transposes planned as strides") != NULL;
        copied += strstr(line, "transposes copied") != NULL;
    }
    cr_assert(strided > 0 && copied > 0, "strided %d, copied %d", strided, copied);
}

/* Dimensions of 1 in a matmul whose result is transposed: such a
 * dimension's stride means nothing, and a [1, 3] result stored as the
 * transposed [3, 1] (strides 1 and 1) once failed to execute on oneDNN's
 * gemm matmul. Every M, K, N of 1 or 3, rank 2 and 3. */
Test(kernels, matmul_transposed_result_with_dimensions_of_one)
{
    rng_state = 0x51u;
    for (int it = 0; it < 16; it++) {
        int R = it < 8 ? 2 : 3;
        int64_t M = it & 1 ? 1 : 3, K = it & 2 ? 1 : 3, N = it & 4 ? 1 : 3;
        int64_t ad[3] = {2, M, K}, bd[3] = {2, K, N}, perm[3] = {1, 0, 2};
        if (R == 2) {
            ad[0] = M, ad[1] = K, bd[0] = K, bd[1] = N;
            perm[0] = 1, perm[1] = 0;
        } else {
            perm[0] = 2, perm[1] = 1, perm[2] = 0;
        }
        dqg_graph *g = G();
        dqg_tensor_id y = dqg_matmul(g, "mm", dqg_input(g, "a", DQG_F32, R, ad),
                                     dqg_input(g, "b", DQG_F32, R, bd), NULL);
        y = dqg_transpose(g, "y_t", y, perm);
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
        finalize_ok(g);
        char what[96], line[512];
        snprintf(what, sizeof what, "R=%d M=%lld K=%lld N=%lld", R, (long long)M, (long long)K,
                 (long long)N);
        compare_finalized(g, y, what, line, sizeof line);
    }
}

/* A transpose that something else also reads, or that is an output,
 * stays its own partition (its result must exist). */
Test(kernels, matmul_transpose_read_elsewhere_stays_a_copy)
{
    for (int variant = 0; variant < 2; variant++) {
        dqg_graph *g = G();
        int64_t xd[] = {8, 3, 5}, wd[] = {3, 5, 4}, perm[] = {1, 0, 2};
        dqg_tensor_id t = dqg_transpose(g, "t", dqg_input(g, "x", DQG_F32, 3, xd), perm);
        dqg_tensor_id y = dqg_matmul(g, "mm", t, dqg_input(g, "w", DQG_F32, 3, wd), NULL);
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
        if (variant == 0)
            cr_assert_eq(dqg_output(g, t, "t_out"), DQG_OK);
        else
            cr_assert_eq(dqg_output(g, dqg_relu(g, "r", t), "r_out"), DQG_OK);
        finalize_ok(g);
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        size_t n = dqg_compiled_partition_count(c);
        cr_assert_geq(n, 2);
        for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
            cr_assert(!strstr(dqg_compiled_explain(c, i), "transposes"), "%s",
                      dqg_compiled_explain(c, i));
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* An f32 convolution whose epilogue adds a graph input of its result's
 * shape (row-major) -- another input, or its own source -- while its
 * result feeds another convolution: the result keeps the operand's
 * layout. */
Test(kernels, conv_residual_from_a_graph_input_between_convolutions)
{
    rng_state = 0xc0ffeeu;
    for (int own = 0; own < 2; own++) {
        dqg_graph *g = G();
        int64_t xd[] = {1, 8, 6, 6}, wd[] = {8, 8, 3, 3};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd);
        dqg_tensor_id r = own ? x : dqg_input(g, "r", DQG_F32, 4, xd);
        dqg_conv_attrs a = {.spatial_rank = 2,
                            .pads_begin = {1, 1},
                            .pads_end = {1, 1},
                            .data_format = DQG_FORMAT_NCX};
        float *w1 = rand_buf(8 * 8 * 9), *w2 = rand_buf(8 * 8 * 9);
        dqg_tensor_id y = dqg_convolution(
            g, "conv1", x, dqg_constant(g, "w1", DQG_F32, 4, wd, w1, 8 * 8 * 9 * 4), DQG_NONE, &a);
        y = dqg_relu(g, "relu", dqg_add(g, "add", y, r));
        y = dqg_convolution(g, "conv2", y, dqg_constant(g, "w2", DQG_F32, 4, wd, w2, 8 * 8 * 9 * 4),
                            DQG_NONE, &a);
        free(w1);
        free(w2);
        compare(g, y, own ? "conv(x) + x -> conv" : "conv + Add(graph input) -> conv");
    }
}

Test(kernels, convolution_random)
{
    rng_state = 0xC0FFEEu;
    for (int it = 0; it < 40; it++) {
        dqg_graph *g = G();
        int sr = (int)rand_in(1, 3);
        int64_t groups = rand_in(1, 3), cg = rand_in(1, 4), og = rand_in(1, 4);
        if (rand_in(0, 4) == 0) { /* depthwise */
            cg = 1;
            og = 1;
            groups = rand_in(2, 8);
        }
        int64_t C = groups * cg, O = groups * og;
        dqg_conv_attrs a = {.spatial_rank = sr,
                            .groups = groups,
                            .data_format = rand_in(0, 1) ? DQG_FORMAT_NXC : DQG_FORMAT_NCX};
        int64_t xd[5], wd[5];
        xd[0] = rand_in(1, 2);
        wd[0] = O;
        wd[1] = cg;
        for (int i = 0; i < sr; i++) {
            int64_t k = rand_in(1, 3), dil = rand_in(1, 2), s = rand_in(1, 2);
            int64_t span = (k - 1) * dil + 1;
            int64_t X = span + rand_in(0, sr == 3 ? 3 : 7);
            a.strides[i] = s;
            a.dilations[i] = dil;
            a.pads_begin[i] = rand_in(0, k - 1);
            a.pads_end[i] = rand_in(0, k - 1);
            wd[2 + i] = k;
            xd[a.data_format == DQG_FORMAT_NCX ? 2 + i : 1 + i] = X;
        }
        xd[a.data_format == DQG_FORMAT_NCX ? 1 : sr + 1] = C;
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, sr + 2, xd);
        dqg_tensor_id w, b = DQG_NONE;
        int64_t nw = O * cg;
        for (int i = 0; i < sr; i++)
            nw *= wd[2 + i];
        if (rand_in(0, 1)) {
            w = dqg_input(g, "w", DQG_F32, sr + 2, wd);
        } else {
            float *wv = rand_buf(nw);
            w = dqg_constant(g, "w", DQG_F32, sr + 2, wd, wv, (size_t)nw * sizeof(float));
            free(wv);
        }
        if (rand_in(0, 1)) {
            float *bv = rand_buf(O);
            b = dqg_constant(g, "b", DQG_F32, 1, &O, bv, (size_t)O * sizeof(float));
            free(bv);
        }
        char what[160];
        snprintf(what, sizeof what, "conv #%d sr=%d C=%lld O=%lld groups=%lld %s", it, sr,
                 (long long)C, (long long)O, (long long)groups,
                 a.data_format == DQG_FORMAT_NCX ? "NCX" : "NXC");
        compare(g, dqg_convolution(g, "conv", x, w, b, &a), what);
    }
}

Test(kernels, elementwise_and_layout)
{
    rng_state = 0xBEEFu;
    int64_t d23[] = {2, 3}, d3[] = {3}, d21[] = {2, 1}, d13[] = {1, 3}, d234[] = {2, 3, 4};
    dqg_graph *g = G();
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, d23), b = dqg_input(g, "b", DQG_F32, 1, d3);
    compare(g, dqg_add(g, "add", a, b), "add, second operand broadcast");
    g = G();
    b = dqg_input(g, "b", DQG_F32, 1, d3);
    a = dqg_input(g, "a", DQG_F32, 2, d23);
    compare(g, dqg_mul(g, "mul", b, a), "mul, first operand broadcast");
    g = G();
    a = dqg_input(g, "a", DQG_F32, 2, d21);
    b = dqg_input(g, "b", DQG_F32, 2, d13);
    compare(g, dqg_add(g, "add", a, b), "add, both operands broadcast");
    g = G();
    a = dqg_input(g, "a", DQG_F32, 3, d234);
    b = dqg_input(g, "b", DQG_F32, 1, d3);
    compare(g, dqg_bias_add(g, "ba", a, b, DQG_FORMAT_NCX), "bias_add NCX");
    g = G();
    a = dqg_input(g, "a", DQG_F32, 3, d234);
    compare(g, dqg_clip(g, "c", a, -1.5f, 2.25f), "clip");
    g = G();
    a = dqg_input(g, "a", DQG_F32, 3, d234);
    int64_t perm[] = {1, 2, 0};
    compare(g, dqg_transpose(g, "t", a, perm), "transpose");
    g = G();
    a = dqg_input(g, "a", DQG_F32, 3, d234);
    compare(g, dqg_typecast(g, "tc", dqg_typecast(g, "to_bf16", a, DQG_BF16), DQG_F32),
            "typecast f32 -> bf16 -> f32");
    g = G();
    a = dqg_input(g, "a", DQG_F32, 3, d234);
    int64_t shape[] = {4, -1};
    compare(g, dqg_relu(g, "r", dqg_reshape(g, "rs", a, 2, shape)), "reshape + relu");
}

/* A leftover f32 MatMul or Convolution takes the bias and element-wise ops
 * after it as oneDNN post-ops: one partition, the reference's results. */
Test(kernels, f32_epilogue_as_post_ops)
{
    rng_state = 0xE911u;
    int64_t one = 1;
    for (int variant = 0; variant < 3; variant++) {
        dqg_graph *g = G();
        dqg_tensor_id y;
        float bias[16], mulv[16], add = 0.5f;
        for (int i = 0; i < 16; i++) {
            bias[i] = rand_f();
            mulv[i] = 0.5f + 0.1f * (float)i;
        }
        int64_t c16 = 16;
        if (variant == 0) {
            int64_t xd[] = {3, 5, 12}, wd[] = {12, 16};
            dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
            float *w = rand_buf(12 * 16);
            y = dqg_matmul(g, "mm", x, dqg_constant(g, "w", DQG_F32, 2, wd, w, 12 * 16 * 4), NULL);
            free(w);
            y = dqg_bias_add(g, "b", y, dqg_constant(g, "bias", DQG_F32, 1, &c16, bias, 64),
                             DQG_FORMAT_NXC);
            y = dqg_relu(g, "r", y);
            int64_t md[] = {1, 1, 16};
            y = dqg_mul(g, "m", y, dqg_constant(g, "mul", DQG_F32, 3, md, mulv, 64));
            y = dqg_add(g, "a", y, dqg_constant(g, "add", DQG_F32, 0, &one, &add, 4));
        } else {
            dqg_data_format f = variant == 1 ? DQG_FORMAT_NCX : DQG_FORMAT_NXC;
            int64_t xd_ncx[] = {1, 8, 7, 7}, xd_nxc[] = {1, 7, 7, 8}, wd[] = {16, 8, 3, 3};
            dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, f == DQG_FORMAT_NCX ? xd_ncx : xd_nxc);
            float *w = rand_buf(16 * 8 * 9);
            dqg_conv_attrs a = {
                .spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}, .data_format = f};
            y = dqg_convolution(g, "conv", x,
                                dqg_constant(g, "w", DQG_F32, 4, wd, w, 16 * 8 * 9 * 4),
                                dqg_constant(g, "bias", DQG_F32, 1, &c16, bias, 64), &a);
            free(w);
            y = dqg_clip(g, "c", dqg_relu(g, "r", y), 0.0f, 3.0f);
        }
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
        finalize_ok(g);
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_compiled_partition_count(c), 1, "variant %d: %s", variant,
                     dqg_compiled_partition_info(c, 0));
        bool combined = false;
        for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
            combined |= strstr(dqg_compiled_explain(c, i), "combined:") != NULL;
        cr_assert(combined);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
        /* and the same graph against the reference, through compare() */
        g = G();
        if (variant == 0) {
            int64_t xd[] = {3, 5, 12}, wd[] = {12, 16}, md[] = {1, 1, 16};
            dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
            float *w = rand_buf(12 * 16);
            y = dqg_matmul(g, "mm", x, dqg_constant(g, "w", DQG_F32, 2, wd, w, 12 * 16 * 4), NULL);
            free(w);
            y = dqg_relu(g, "r",
                         dqg_bias_add(g, "b", y,
                                      dqg_constant(g, "bias", DQG_F32, 1, &c16, bias, 64),
                                      DQG_FORMAT_NXC));
            y = dqg_add(g, "a",
                        dqg_mul(g, "m", y, dqg_constant(g, "mul", DQG_F32, 3, md, mulv, 64)),
                        dqg_constant(g, "add", DQG_F32, 0, &one, &add, 4));
            compare(g, y, "matmul + bias + relu + mul + add");
        } else {
            dqg_data_format f = variant == 1 ? DQG_FORMAT_NCX : DQG_FORMAT_NXC;
            int64_t xd_ncx[] = {1, 8, 7, 7}, xd_nxc[] = {1, 7, 7, 8}, wd[] = {16, 8, 3, 3};
            dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, f == DQG_FORMAT_NCX ? xd_ncx : xd_nxc);
            float *w = rand_buf(16 * 8 * 9);
            dqg_conv_attrs a = {
                .spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}, .data_format = f};
            y = dqg_convolution(g, "conv", x,
                                dqg_constant(g, "w", DQG_F32, 4, wd, w, 16 * 8 * 9 * 4),
                                dqg_constant(g, "bias", DQG_F32, 1, &c16, bias, 64), &a);
            free(w);
            compare(g, dqg_clip(g, "c", dqg_relu(g, "r", y), 0.0f, 3.0f),
                    variant == 1 ? "conv NCX + bias + relu + clip"
                                 : "conv NXC + bias + relu + clip");
        }
    }
}

/* A lone QuantizeLinear runs on dqgraph's own kernel: f32 to u8, s8, u16
 * or s16, per tensor or per axis (a middle axis and the last), scales and
 * zero points constant or given at run time; bit-exact against the
 * reference interpreter, with ties (x / scale = k + 0.5, odd zero points),
 * saturation, infinities, NaN (gives 0), and scales that are not powers of
 * two, subnormal, or 2^-140 (whose reciprocal overflows). */
Test(kernels, quantize_own_kernel)
{
    rng_state = 0x9A9Au;
    const dqg_dtype types[] = {DQG_U8, DQG_S8, DQG_U16, DQG_S16};
    for (int variant = 0; variant < 64; variant++) {
        dqg_dtype yt = types[variant % 4];
        int gran = (variant / 4) % 3; /* per tensor, axis 1 of 3, last axis */
        bool runtime = (variant / 12) % 2, with_zp = variant % 5 != 0;
        int scales = variant % 4 + (variant / 16) % 2; /* 0..4 */
        dqg_graph *g = G();
        int64_t xd[] = {5, 23, 19}, one = 1, ns = gran == 0 ? 1 : gran == 1 ? 23 : 19;
        int64_t n = 5 * 23 * 19;
        float sc[23];
        int16_t zp16[23];
        uint8_t zp8[23];
        for (int i = 0; i < 23; i++) {
            sc[i] = scales == 0   ? ldexpf(1.0f, -3 - i % 6)
                    : scales == 1 ? 0.01f + 0.003f * (float)i
                    : scales == 2 ? 1e-40f
                    : scales == 3 ? ldexpf(1.0f, -140)
                                  : -0.07f * (float)(i + 1);
            zp16[i] = (int16_t)(yt == DQG_U16 ? 1001 + 7 * i : -333 + 7 * i);
            zp8[i] = (uint8_t)(yt == DQG_U8 ? 101 + 3 * i : (uint8_t)(int8_t)(-31 + 3 * i));
        }
        size_t zsize = (size_t)ns * (dqg_dtype_bits(yt) / 8);
        const void *zdata = dqg_dtype_bits(yt) == 16 ? (const void *)zp16 : (const void *)zp8;
        int srank = gran == 0 ? 0 : 1;
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
        dqg_tensor_id st =
            runtime ? dqg_input(g, "s", DQG_F32, srank, srank ? &ns : &one)
                    : dqg_constant(g, "s", DQG_F32, srank, srank ? &ns : &one, sc, (size_t)ns * 4);
        dqg_tensor_id zt = !with_zp ? DQG_NONE
                           : runtime
                               ? dqg_input(g, "z", yt, srank, srank ? &ns : &one)
                               : dqg_constant(g, "z", yt, srank, srank ? &ns : &one, zdata, zsize);
        dqg_quantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = gran == 2 ? 2 : 1};
        if (!with_zp)
            a.output_dtype = yt;
        dqg_tensor_id y = dqg_quantize_linear(g, "q", x, st, zt, &a);
        cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
        cr_assert_eq(dqg_tensor_dtype(g, y), yt);
        dqg_output(g, y, "y");
        finalize_ok(g);
        float *in = rand_buf(n);
        for (int64_t i = 0; i < n; i++) {
            int64_t si = gran == 0 ? 0 : gran == 1 ? (i / 19) % 23 : i % 19;
            if (i % 7 == 0) /* ties */
                in[i] = ((float)(i % 9) - 4.5f) * sc[si];
            else if (i % 11 == 0) /* far outside every range */
                in[i] = ((float)(i % 3) - 1.0f) * 1e30f;
            else if (i % 13 == 0)
                in[i] = i % 2 ? NAN : (i % 3 ? INFINITY : -INFINITY);
            else
                in[i] *= 300.0f * sc[si];
        }
        uint16_t got[5 * 23 * 19], want[5 * 23 * 19];
        dqg_buffer ib[3] = {{.name = "x", .data = in, .size = (size_t)n * 4},
                            {.name = "s", .data = sc, .size = (size_t)ns * 4},
                            {.name = "z", .data = (void *)zdata, .size = zsize}};
        size_t n_in = runtime ? (with_zp ? 3 : 2) : 1;
        size_t ysize = dqg_tensor_byte_size(g, y);
        dqg_buffer o1 = {.name = "y", .data = got, .size = ysize};
        dqg_buffer o2 = {.name = "y", .data = want, .size = ysize};
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        const char *impl = dqg_compiled_partition_info(c, 0);
        cr_assert(strstr(impl, ":quantize:f32->"), "variant %d: %s", variant, impl);
        cr_assert_eq(dqg_execute(c, ib, n_in, &o1, 1), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_reference_run(g, ib, n_in, &o2, 1), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(memcmp(got, want, ysize), 0, "variant %d (%s): outputs differ", variant, impl);
        int saturated = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = dqg_dtype_bits(yt) == 16
                            ? (yt == DQG_S16 ? (int16_t)want[i] : want[i])
                            : (yt == DQG_S8 ? ((int8_t *)want)[i] : ((uint8_t *)want)[i]);
            saturated += v == (yt == DQG_U8    ? 255
                               : yt == DQG_S8  ? 127
                               : yt == DQG_U16 ? 65535
                                               : 32767);
        }
        cr_assert(saturated > 0, "variant %d: saturated values", variant);
        dqg_compiled_destroy(c);
        free(in);
        dqg_graph_destroy(g);
    }
}

/* A per-tensor QuantizeLinear divides without a division instruction
 * (runtime/quotient.h: Markstein's correction of x times the reciprocal)
 * for scales in [2^-60, 2^60], and must give the division's result
 * everywhere: quotients at and next to the ties k + 1/2 (where x * (1 /
 * scale) alone rounds the wrong way for scales whose reciprocal is
 * inexact), next to 1/2 itself, tiny and subnormal inputs, quotients that
 * overflow f32 (3e38 / 2^-59), infinities and NaN; u8 with an odd zero
 * point and s16, against the reference bit for bit. */
Test(kernels, quantize_without_division_matches_the_division)
{
    const float scales[] = {0x1p-60f, 1.3f * 0x1p-59f, 0.0173f, 0.1f,      1.0f / 3.0f,
                            7.0f,     0x1p60f,         3e17f,   0.999e-18f};
    enum { N = 4099 };
    float *in = malloc(N * sizeof *in);
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
        for (int t = 0; t < 2; t++) {
            dqg_dtype yt = t ? DQG_S16 : DQG_U8;
            float s = scales[si];
            rng_state = 0x51u + (uint32_t)si;
            for (int i = 0; i < N; i++) {
                float k = (float)((int)(next_u32() % 601) - 300);
                float v = (k + 0.5f) * s; /* a tie, as close as f32 holds it */
                switch (i % 8) {
                case 0:
                    break;
                case 1:
                    v = nextafterf(v, INFINITY);
                    break;
                case 2:
                    v = nextafterf(v, -INFINITY);
                    break;
                case 3: /* next to a quotient of 1/2 */
                    v = nextafterf(0.5f * s, (i & 8) ? INFINITY : 0.0f);
                    break;
                case 4:
                    v = rand_f() * 200.0f * s;
                    break;
                case 5:
                    v = (i & 8) ? 1e-41f * (float)(i % 50) : -1e-30f;
                    break;
                case 6:
                    v = (i & 8) ? 3e38f : -3.3e38f;
                    break;
                default:
                    v = (i & 8) ? NAN : (i & 16) ? INFINITY : -INFINITY;
                }
                in[i] = v;
            }
            dqg_graph *g = G();
            int64_t n = N, one = 1;
            int16_t z16 = -77;
            uint8_t z8 = 131;
            dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &n);
            dqg_tensor_id st = dqg_constant(g, "s", DQG_F32, 0, &one, &s, 4);
            dqg_tensor_id zt =
                dqg_constant(g, "z", yt, 0, &one, t ? (void *)&z16 : (void *)&z8, t ? 2u : 1u);
            dqg_quantize_linear_attrs a = {.opset = 21};
            dqg_tensor_id y = dqg_quantize_linear(g, "q", x, st, zt, &a);
            dqg_output(g, y, "y");
            finalize_ok(g);
            uint16_t got[N], want[N];
            size_t ysize = dqg_tensor_byte_size(g, y);
            dqg_buffer ib = {.name = "x", .data = in, .size = N * 4};
            dqg_buffer o1 = {.name = "y", .data = got, .size = ysize};
            dqg_buffer o2 = {.name = "y", .data = want, .size = ysize};
            dqg_compiled *c = NULL;
            cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(dqg_execute(c, &ib, 1, &o1, 1), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(dqg_reference_run(g, &ib, 1, &o2, 1), DQG_OK, "%s", dqg_last_error());
            for (int i = 0; i < N; i++) {
                int gv = t ? (int16_t)got[i] : ((uint8_t *)got)[i];
                int wv = t ? (int16_t)want[i] : ((uint8_t *)want)[i];
                cr_assert_eq(gv, wv, "scale %g, %s, x[%d] = %.9g: %d, reference %d", (double)s,
                             dqg_dtype_name(yt), i, (double)in[i], gv, wv);
            }
            dqg_compiled_destroy(c);
            dqg_graph_destroy(g);
        }
    free(in);
}

/* f32 Add/Sub/Mul/Div whose operands oneDNN cannot broadcast (both
 * broadcast, or the first operand of Sub/Div) run on dqgraph's own loop
 * (impl dqgraph:broadcast), bit for bit the reference's: 200 seeded cases
 * of rank 1 to 5, each operand of fewer dimensions or with 1s, rows of 1
 * to 37 elements, special values (NaN, infinities, -0, division by 0),
 * and one large enough to run on every thread. */
Test(kernels, broadcast_loop_matches_the_reference)
{
    rng_state = 0xB0CA57u;
    for (int it = 0; it <= 200; it++) {
        int R = (int)rand_in(1, 5);
        int64_t dy[5], da[5], db[5];
        for (int i = 0; i < R; i++)
            dy[i] = it == 200 ? (i == R - 1 ? 300 : 6) : rand_in(1, i == R - 1 ? 37 : 4);
        int ra = (int)rand_in(1, R), rb = (int)rand_in(1, R);
        for (int i = 0; i < ra; i++)
            da[i] = next_u32() % 2 ? dy[R - ra + i] : 1;
        for (int i = 0; i < rb; i++)
            db[i] = next_u32() % 2 ? dy[R - rb + i] : 1;
        if (it % 3 == 0) /* the first one full: Sub and Div need the loop */
            for (int i = 0; i < R; i++)
                da[i] = dy[i], ra = R;
        dqg_op_kind kinds[] = {DQG_OP_ADD, DQG_OP_SUB, DQG_OP_MUL, DQG_OP_DIV};
        dqg_op_kind k = kinds[it % 4];
        dqg_graph *g = G();
        dqg_tensor_id a = dqg_input(g, "a", DQG_F32, ra, da),
                      b = dqg_input(g, "b", DQG_F32, rb, db);
        dqg_tensor_id y = k == DQG_OP_ADD   ? dqg_add(g, "y", a, b)
                          : k == DQG_OP_SUB ? dqg_sub(g, "y", a, b)
                          : k == DQG_OP_MUL ? dqg_mul(g, "y", a, b)
                                            : dqg_div(g, "y", a, b);
        cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
        dqg_output(g, y, "y");
        finalize_ok(g);
        int64_t na = dqg_tensor_element_count(g, a), nb = dqg_tensor_element_count(g, b),
                ny = dqg_tensor_element_count(g, y);
        float *av = rand_buf(na), *bv = rand_buf(nb), *got = malloc((size_t)ny * 4),
              *want = malloc((size_t)ny * 4);
        const float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f};
        for (int64_t i = 0; i < na; i += 7)
            av[i] = special[(i / 7) % 5];
        for (int64_t i = 3; i < nb; i += 5)
            bv[i] = special[(i / 5) % 5];
        dqg_buffer in[2] = {{.name = "a", .data = av, .size = (size_t)na * 4},
                            {.name = "b", .data = bv, .size = (size_t)nb * 4}};
        dqg_buffer o = {.name = "y", .data = want, .size = (size_t)ny * 4};
        cr_assert_eq(dqg_reference_run(g, in, 2, &o, 1), DQG_OK, "%s", dqg_last_error());
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        o.data = got;
        cr_assert_eq(dqg_execute(c, in, 2, &o, 1), DQG_OK, "%s", dqg_last_error());
        bool loop = (na != ny && nb != ny) || ((k == DQG_OP_SUB || k == DQG_OP_DIV) && na != ny);
        cr_assert_eq(strstr(dqg_compiled_partition_info(c, 0), "dqgraph:broadcast") != NULL, loop,
                     "case %d: %s", it, dqg_compiled_partition_info(c, 0));
        for (int64_t i = 0; i < ny; i++)
            cr_assert(memcmp(&got[i], &want[i], 4) == 0 || (isnan(got[i]) && isnan(want[i])),
                      "case %d (%s) y[%lld]: %g, reference %g", it,
                      dqg_compiled_partition_info(c, 0), (long long)i, got[i], want[i]);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
        free(av);
        free(bv);
        free(got);
        free(want);
    }
}
