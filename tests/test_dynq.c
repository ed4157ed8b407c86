/* DynamicQuantizeLinear: dqgraph's kernel against the reference
 * interpreter, byte for byte (y, y_scale, y_zero_point), on sizes from 1 to
 * 10^8, ties, all-equal, all-zero and one-signed inputs, and the refusals
 * of NaN and of infinite ranges with identical messages. The ISA matrix
 * (isa/<level>/test_dynq) runs this at every instruction-set level. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

typedef struct run_result {
    dqg_status st;
    char message[512];
    uint8_t *y;
    float scale;
    uint8_t zp;
} run_result;

/* Runs DynamicQuantizeLinear on x[0..n) on the reference (way 0) or
 * compiled (way 1). */
static run_result run(const float *x, int64_t n, int way)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id s, z,
        y = dqg_dynamic_quantize_linear(g, "dql", dqg_input(g, "x", DQG_F32, 1, &n), &s, &z);
    dqg_output(g, y, "y");
    dqg_output(g, s, "s");
    dqg_output(g, z, "z");
    finalize_ok(g);
    run_result r = {.y = malloc((size_t)n)};
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = (size_t)n * sizeof(float)};
    dqg_buffer out[3] = {{.name = "y", .data = r.y, .size = (size_t)n},
                         {.name = "s", .data = &r.scale, .size = 4},
                         {.name = "z", .data = &r.zp, .size = 1}};
    if (way == 0) {
        r.st = dqg_reference_run(g, &in, 1, out, 3);
    } else {
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        cr_assert(strstr(dqg_compiled_partition_info(c, 0), "own:dynamic-quantize"), "%s",
                  dqg_compiled_partition_info(c, 0));
        r.st = dqg_execute(c, &in, 1, out, 3);
        dqg_compiled_destroy(c);
    }
    snprintf(r.message, sizeof r.message, "%s", r.st == DQG_OK ? "" : dqg_last_error());
    dqg_graph_destroy(g);
    return r;
}

static void same(const float *x, int64_t n, const char *what)
{
    run_result ref = run(x, n, 0), got = run(x, n, 1);
    cr_assert_eq(got.st, ref.st, "%s: status %s vs %s", what, dqg_status_name(got.st),
                 dqg_status_name(ref.st));
    if (ref.st != DQG_OK) {
        cr_assert_str_eq(got.message, ref.message, "%s", what);
    } else {
        cr_assert(memcmp(&got.scale, &ref.scale, 4) == 0, "%s: scale %.9g vs %.9g", what, got.scale,
                  ref.scale);
        cr_assert_eq(got.zp, ref.zp, "%s: zero point %u vs %u", what, got.zp, ref.zp);
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(got.y[i], ref.y[i], "%s: y[%lld] = %u vs %u (x %.9g)", what, (long long)i,
                         got.y[i], ref.y[i], x[i]);
    }
    free(ref.y);
    free(got.y);
}

Test(dynq, sizes_from_1_to_a_million_match_the_reference)
{
    static const int64_t sizes[] = {1, 2, 7, 15, 16, 17, 31, 33, 100, 4095, 65536, 65537, 1000003};
    test_rng = 5;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int64_t n = sizes[k];
        float *x = malloc((size_t)n * sizeof *x);
        for (int64_t i = 0; i < n; i++)
            x[i] = (float)((int32_t)test_rnd() % 200000) * 1e-4f;
        char what[64];
        snprintf(what, sizeof what, "n=%lld", (long long)n);
        same(x, n, what);
        free(x);
    }
}

Test(dynq, a_hundred_million_elements)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    int64_t n = 10000000; /* the sanitizers' memory and time */
#else
    int64_t n = 100000000;
#endif
    float *x = malloc((size_t)n * sizeof *x);
    cr_assert_not_null(x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(i % 1000003) * 3e-6f - 1.25f;
    same(x, n, "1e8");
    free(x);
}

/* With the range [0, 255] the scale is 1: x = k + 0.5 are all ties, which
 * round to even; and negative ties with the range [-255, 0]. */
Test(dynq, ties_round_half_to_even)
{
    float x[514];
    for (int i = 0; i < 255; i++)
        x[i] = (float)i + 0.5f;
    x[255] = 255.0f;
    x[256] = 0.0f;
    same(x, 257, "positive ties");
    for (int i = 0; i < 257; i++)
        x[i] = -x[i];
    same(x, 257, "negative ties");
}

/* Quotients at and a few ulps around every tie k + 0.5, at 400 scales
 * from 2^-70 to 2^70 (past the range where the vector kernels multiply by
 * the scale's reciprocal and correct the quotient with two FMAs, which
 * must give the IEEE division's quotient), plus random quotients: byte
 * for byte the reference's, which divides. */
Test(dynq, near_ties_at_many_scales_match_the_reference)
{
    test_rng = 0x7135;
    enum { N = 4096 };
    float *x = malloc(N * sizeof *x);
    cr_assert(x);
    for (int it = 0; it < 400; it++) {
        float lo =
            -ldexpf(1.0f + (float)(test_rnd() % 1000) / 1000.0f, -70 + (int)(it * 140 / 400));
        float hi = lo * -((float)(test_rnd() % 3000) / 1000.0f);
        x[0] = lo;
        x[1] = hi;
        float s = (hi - lo) / 255.0f;
        for (int i = 2; i < N; i++) {
            float q = (float)((int)(test_rnd() % 256) - 128) + (i % 4 ? 0.5f : 0.0f);
            float v = q * s;
            if (i % 4 == 3) {
                v = s * ((float)(test_rnd() % 100000) / 390.0f - 128.0f);
            } else {
                uint32_t u;
                memcpy(&u, &v, 4);
                u += (uint32_t)((int)(test_rnd() % 7) - 3);
                memcpy(&v, &u, 4);
            }
            x[i] = fminf(fmaxf(v, lo), hi);
        }
        char what[64];
        snprintf(what, sizeof what, "scale %d (%.3g)", it, (double)s);
        same(x, N, what);
    }
    free(x);
}

Test(dynq, all_equal_all_zero_and_one_signed_inputs)
{
    float x[300];
    for (int v = 0; v < 4; v++) {
        for (int i = 0; i < 300; i++)
            x[i] = v == 0 ? 0.0f : v == 1 ? 3.25f : v == 2 ? -7.5f : 1e-30f;
        same(x, 300, "all equal");
    }
    for (int i = 0; i < 300; i++)
        x[i] = (float)i * 0.01f;
    same(x, 300, "positive only");
    for (int i = 0; i < 300; i++)
        x[i] = -(float)i * 0.01f;
    same(x, 300, "negative only");
    /* All zero: y_scale is 1 / 255 (ONNX's reference and ONNX Runtime). */
    for (int i = 0; i < 300; i++)
        x[i] = 0.0f;
    run_result r = run(x, 300, 1);
    cr_assert_eq(r.st, DQG_OK);
    cr_assert_float_eq(r.scale, 1.0f / 255.0f, 0.0f);
    cr_assert_eq(r.zp, 0);
    free(r.y);
}

Test(dynq, nan_and_infinite_ranges_are_refused_alike)
{
    for (int bad = 0; bad < 4; bad++) {
        float x[40];
        for (int i = 0; i < 40; i++)
            x[i] = (float)i;
        x[17 + bad] = bad == 0 ? NAN : bad == 1 ? INFINITY : bad == 2 ? -INFINITY : -NAN;
        same(x, 40, "bad value");
        run_result r = run(x, 40, 1);
        cr_assert_eq(r.st, DQG_INVALID_ARGUMENT);
        cr_assert(strstr(r.message, "DynamicQuantizeLinear 'dql'"), "%s", r.message);
        free(r.y);
    }
    /* A NaN in each of the four vectors the kernel's range reads at once,
     * and in the vectors and elements after them. */
    static const int at[] = {5, 21, 37, 53, 64 * 7 + 60, 64 * 15 + 20, 999};
    float *y = malloc(1000 * sizeof *y);
    for (size_t p = 0; p < sizeof at / sizeof *at; p++) {
        for (int i = 0; i < 1000; i++)
            y[i] = (float)(i % 97) - 40.0f;
        y[at[p]] = NAN;
        same(y, 1000, "NaN in a long input");
        run_result r = run(y, 1000, 1);
        cr_assert_eq(r.st, DQG_INVALID_ARGUMENT, "NaN at %d", at[p]);
        free(r.y);
    }
    free(y);
    /* A range whose width overflows float32 has no finite scale. */
    float x[2] = {-3e38f, 3e38f};
    same(x, 2, "overflowing range");
}
