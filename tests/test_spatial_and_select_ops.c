/* Pad, Max and Min, Resize, ArgMax and ArgMin: the reference against
 * hand-worked values (the ONNX specification's Pad examples, NumPy's NaN
 * rules), the compiled kernels against the reference on random shapes,
 * types and parameters (fixed seeds), the passes that fold a Pad into a
 * convolution and move Pad and Resize onto int8 tensors, and each builder
 * rule's error. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

/* Builds y = op(x) by `build` on an input x (type t, dims d), finalizes,
 * and runs it on the reference (ref) and compiled (got); returns the
 * compiled partition's kernel in impl (NULL to skip). */
typedef dqg_tensor_id (*build_fn)(dqg_graph *g, dqg_tensor_id x, const void *ctx);

static void run_both(dqg_dtype t, int rank, const int64_t *d, const void *x, build_fn build,
                     const void *ctx, void *ref, void *got, size_t ybytes, char *impl,
                     size_t impl_size)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id in = dqg_input(g, "x", t, rank, d);
    dqg_tensor_id y = build(g, in, ctx);
    cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
    finalize_ok(g);
    cr_assert_eq(dqg_tensor_byte_size(g, y), ybytes);
    size_t xbytes = dqg_tensor_byte_size(g, in);
    cr_assert_eq(run_ref_1(g, in, (void *)x, xbytes, y, ref, ybytes), DQG_OK, "%s",
                 dqg_last_error());
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    dqg_buffer bi = {.name = "x", .data = (void *)x, .size = xbytes};
    dqg_buffer bo = {.name = "y", .data = got, .size = ybytes};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
    if (impl)
        snprintf(impl, impl_size, "%s", dqg_compiled_partition_info(c, 0));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

typedef struct pad_case {
    int64_t pads[2 * DQG_MAX_RANK];
    dqg_pad_mode mode;
    double value;
} pad_case;

static dqg_tensor_id build_pad(dqg_graph *g, dqg_tensor_id x, const void *ctx)
{
    const pad_case *p = ctx;
    return dqg_pad(g, "pad", x, p->pads, p->mode, p->value);
}

/* The three examples of ONNX's Pad specification: x [3, 2], pads
 * [0, 2, 0, 0] (two columns before). */
Test(pad, onnx_specification_examples)
{
    const float x[] = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f};
    const float want[3][12] = {
        {0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f},
        {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f},
        {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f},
    };
    const dqg_pad_mode modes[] = {DQG_PAD_CONSTANT, DQG_PAD_REFLECT, DQG_PAD_EDGE};
    int64_t d[] = {3, 2};
    for (int m = 0; m < 3; m++) {
        pad_case p = {.pads = {0, 2, 0, 0}, .mode = modes[m]};
        float ref[12], got[12];
        char impl[256];
        run_both(DQG_F32, 2, d, x, build_pad, &p, ref, got, sizeof ref, impl, sizeof impl);
        for (int i = 0; i < 12; i++) {
            cr_assert_eq(ref[i], want[m][i], "%s [%d]: ref %g, want %g", dqg_pad_mode_name(m), i,
                         ref[i], want[m][i]);
            cr_assert_eq(got[i], want[m][i], "%s [%d]: got %g, want %g", dqg_pad_mode_name(m), i,
                         got[i], want[m][i]);
        }
        cr_assert(strstr(impl, "dqgraph:pad:"), "%s", impl);
    }
}

/* Wrap, a pattern repeated past the axis (reflect and wrap), negative pads
 * cropping before the other end is padded, and a constant that is NaN. */
Test(pad, wrap_repeats_and_crops)
{
    const float x[] = {1, 2, 3};
    int64_t d[] = {3};
    const struct {
        pad_case p;
        int n;
        float want[9];
    } cases[] = {
        {{{2, 1}, DQG_PAD_WRAP, 0}, 6, {2, 3, 1, 2, 3, 1}},
        {{{5, 1}, DQG_PAD_REFLECT, 0}, 9, {2, 1, 2, 3, 2, 1, 2, 3, 2}},
        {{{4, 0}, DQG_PAD_WRAP, 0}, 7, {3, 1, 2, 3, 1, 2, 3}},
        {{{-1, 2}, DQG_PAD_EDGE, 0}, 4, {2, 3, 3, 3}},
        {{{-2, 2}, DQG_PAD_REFLECT, 0}, 3, {3, 3, 3}},
        {{{2, -1}, DQG_PAD_REFLECT, 0}, 4, {1, 2, 1, 2}},
        {{{1, -2}, DQG_PAD_CONSTANT, -0.5}, 2, {-0.5f, 1}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        float ref[9], got[9];
        size_t bytes = (size_t)cases[k].n * sizeof(float);
        run_both(DQG_F32, 1, d, x, build_pad, &cases[k].p, ref, got, bytes, NULL, 0);
        for (int i = 0; i < cases[k].n; i++) {
            cr_assert_eq(ref[i], cases[k].want[i], "case %zu [%d]: ref %g", k, i, ref[i]);
            cr_assert_eq(got[i], cases[k].want[i], "case %zu [%d]: got %g", k, i, got[i]);
        }
    }
    pad_case nan_pad = {{1, 1}, DQG_PAD_CONSTANT, NAN};
    float ref[5], got[5];
    run_both(DQG_F32, 1, d, x, build_pad, &nan_pad, ref, got, sizeof ref, NULL, 0);
    cr_assert(isnan(ref[0]) && isnan(ref[4]) && isnan(got[0]) && isnan(got[4]) && got[1] == 1);
}

/* The constant in every type's own encoding: s4 -3 (nibble 0xD), f16 1.5
 * (0x3E00), bool 1, s64 -2^40. */
Test(pad, constant_in_each_type)
{
    int64_t d[] = {2};
    {
        const uint8_t x[] = {0x21}; /* s4 {1, 2} */
        pad_case p = {{1, 1}, DQG_PAD_CONSTANT, -3};
        uint8_t ref[2], got[2];
        char impl[256];
        run_both(DQG_S4, 1, d, x, build_pad, &p, ref, got, sizeof ref, impl, sizeof impl);
        cr_assert(ref[0] == 0x1D && ref[1] == 0xD2, "s4: %02x %02x", ref[0], ref[1]);
        cr_assert(got[0] == 0x1D && got[1] == 0xD2, "s4: %02x %02x", got[0], got[1]);
        cr_assert(strstr(impl, "reference"), "%s", impl);
    }
    {
        const uint16_t x[] = {0x3C00, 0x4000};
        pad_case p = {{0, 1}, DQG_PAD_CONSTANT, 1.5};
        uint16_t ref[3], got[3];
        run_both(DQG_F16, 1, d, x, build_pad, &p, ref, got, sizeof ref, NULL, 0);
        cr_assert(ref[2] == 0x3E00 && got[2] == 0x3E00 && got[0] == 0x3C00, "f16: %04x %04x",
                  ref[2], got[2]);
    }
    {
        const uint8_t x[] = {0, 0};
        pad_case p = {{1, 0}, DQG_PAD_CONSTANT, 1};
        uint8_t ref[3], got[3];
        run_both(DQG_BOOL, 1, d, x, build_pad, &p, ref, got, sizeof ref, NULL, 0);
        cr_assert(ref[0] == 1 && got[0] == 1 && got[1] == 0 && got[2] == 0);
    }
    {
        const int64_t x[] = {5, 6};
        pad_case p = {{1, 2}, DQG_PAD_CONSTANT, -1099511627776.0};
        int64_t ref[5], got[5];
        run_both(DQG_S64, 1, d, x, build_pad, &p, ref, got, sizeof ref, NULL, 0);
        for (int i = 0; i < 5; i++) {
            int64_t w = i == 1 ? 5 : i == 2 ? 6 : -((int64_t)1 << 40);
            cr_assert(ref[i] == w && got[i] == w, "s64 [%d]: %lld %lld", i, (long long)ref[i],
                      (long long)got[i]);
        }
    }
}

/* Random ranks 1-4, types of 1, 2, 4 and 8 bytes, every mode, pads from -2
 * to 6 (kept within each axis): the kernel equals the reference byte for
 * byte, and the reference matches a direct evaluation of the rule. */
Test(pad, kernel_matches_reference_on_random_cases)
{
    static const dqg_dtype types[] = {DQG_F32, DQG_U8, DQG_S16, DQG_S64, DQG_BF16, DQG_S32};
    uint32_t first = 1, count = 300;
    test_seed_range("DQG_PAD_CASES", &first, &count);
    for (uint32_t seed = first; seed < first + count; seed++) {
        test_rng = seed * 2654435761u + 1;
        int rank = (int)test_rin(1, 4);
        int64_t d[4], yd[4], xn = 1, yn = 1;
        pad_case p = {.mode = (dqg_pad_mode)test_rin(0, 3)};
        dqg_dtype t = types[test_rin(0, 5)];
        p.value = dqg_dtype_is_float(t) ? (double)test_rin(-9, 9) * 0.25 : (double)test_rin(0, 100);
        for (int i = 0; i < rank; i++) {
            d[i] = test_rin(1, rank > 2 ? 5 : 9);
            int64_t lo = d[i] > 2 ? -2 : 0;
            p.pads[i] = test_rin(lo, 6);
            p.pads[rank + i] = test_rin(lo, 6);
            if (d[i] + (p.pads[i] < 0 ? p.pads[i] : 0) +
                    (p.pads[rank + i] < 0 ? p.pads[rank + i] : 0) <
                1)
                p.pads[i] = 0;
            yd[i] = d[i] + p.pads[i] + p.pads[rank + i];
            if (yd[i] < 1)
                p.pads[rank + i] = 0, yd[i] = d[i] + p.pads[i];
            xn *= d[i];
            yn *= yd[i];
        }
        size_t es = (size_t)dqg_dtype_bits(t) / 8;
        uint8_t *x = malloc((size_t)xn * es), *ref = malloc((size_t)yn * es),
                *got = malloc((size_t)yn * es);
        for (size_t b = 0; b < (size_t)xn * es; b++)
            x[b] = (uint8_t)(test_rnd() % 100); /* bf16/f32 bytes below 0x64: finite values */
        run_both(t, rank, d, x, build_pad, &p, ref, got, (size_t)yn * es, NULL, 0);
        cr_assert_eq(memcmp(ref, got, (size_t)yn * es), 0, "seed %u: kernel differs", seed);
        /* One output element, at random, checked against the rule directly. */
        int64_t i = test_rin(0, yn - 1), rest = i, src = 0, stride = 1;
        for (int a = rank - 1; a >= 0; a--) {
            int64_t o = rest % yd[a];
            rest /= yd[a];
            int64_t b = p.pads[a], e = p.pads[rank + a], lo = b < 0 ? -b : 0;
            int64_t kept = d[a] - lo - (e < 0 ? -e : 0), j = o - (b > 0 ? b : 0), s;
            if (j >= 0 && j < kept)
                s = lo + j;
            else if (p.mode == DQG_PAD_CONSTANT)
                s = -1;
            else if (p.mode == DQG_PAD_EDGE)
                s = lo + (j < 0 ? 0 : kept - 1);
            else if (p.mode == DQG_PAD_WRAP)
                s = lo + ((j % kept) + kept) % kept;
            else {
                /* Reflect by walking: bounce between the ends. */
                int64_t pos = 0, dir = 1, steps = j < 0 ? -j : j;
                if (j < 0)
                    dir = -1;
                for (int64_t k = 0; k < steps && kept > 1; k++) {
                    if (pos + dir < 0 || pos + dir >= kept)
                        dir = -dir;
                    pos += dir;
                }
                s = lo + pos;
            }
            if (s < 0 || src < 0) {
                src = -1;
                continue;
            }
            src += s * stride;
            stride *= d[a];
        }
        if (src >= 0)
            cr_assert_eq(memcmp(ref + (size_t)i * es, x + (size_t)src * es, es), 0,
                         "seed %u: element %lld is not x[%lld]", seed, (long long)i,
                         (long long)src);
        free(x);
        free(ref);
        free(got);
    }
}

/* Each rule of dqg_pad gives DQG_INVALID_ARGUMENT naming the op and the rule. */
Test(pad, builder_rules)
{
    const struct {
        dqg_dtype t;
        int64_t pads[4];
        int mode;
        double value;
        const char *want;
    } cases[] = {
        {DQG_U8, {0, 0, 1, 1}, DQG_PAD_CONSTANT, 256, "the constant value 256 is not a u8 value"},
        {DQG_S8, {0, 0, 1, 1}, DQG_PAD_CONSTANT, 1.5, "1.5 is not a s8 value"},
        {DQG_BOOL, {0, 0, 1, 1}, DQG_PAD_CONSTANT, 2, "[0, 1]"},
        {DQG_S32, {0, 0, 1, 1}, DQG_PAD_CONSTANT, NAN, "not a s32 value"},
        {DQG_F32, {0, 0, 1, 1}, 4, 0, "mode 4 is not one of dqg_pad_mode"},
        {DQG_F32, {0, 0, 1, 1}, -1, 0, "mode -1"},
        {DQG_F32,
         {-1, 0, -1, 0},
         DQG_PAD_CONSTANT,
         0,
         "axis 0 of size 2 with pads (-1, -1) leaves "
         "no element"},
        {DQG_F32, {0, -3, 0, 2}, DQG_PAD_EDGE, 0, "leaves no element of x to pad from"},
        {DQG_F32, {0, (int64_t)1 << 41, 0, 0}, DQG_PAD_CONSTANT, 0, "exceed 2^40"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t d[] = {2, 3};
        dqg_tensor_id x = dqg_input(g, "x", cases[k].t, 2, d);
        cr_assert_eq(dqg_pad(g, "p", x, cases[k].pads, (dqg_pad_mode)cases[k].mode, cases[k].value),
                     DQG_NONE, "case %zu built", k);
        expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Pad 'p'", cases[k].want);
        dqg_graph_destroy(g);
    }
    /* NULL pads: a copy of x; the mode names. */
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t d[] = {2, 3}, yd[2];
    dqg_tensor_id y = dqg_pad(g, "p", dqg_input(g, "x", DQG_F32, 2, d), NULL, DQG_PAD_EDGE, 0);
    cr_assert_eq(dqg_tensor_dims(g, y, yd), 2);
    cr_assert(yd[0] == 2 && yd[1] == 3);
    dqg_graph_destroy(g);
    cr_assert_str_eq(dqg_pad_mode_name(DQG_PAD_WRAP), "wrap");
    cr_assert_str_eq(dqg_pad_mode_name(DQG_PAD_MODE_COUNT), "unknown");
}

/* ---- Max and Min ---------------------------------------------------------- */

typedef struct binary_case {
    dqg_tensor_id (*fn)(dqg_graph *, const char *, dqg_tensor_id, dqg_tensor_id);
    dqg_dtype t;
    int rank_a, rank_b;
    int64_t da[4], db[4];
    const void *b;
} binary_case;

static dqg_tensor_id build_binary(dqg_graph *g, dqg_tensor_id x, const void *ctx)
{
    const binary_case *c = ctx;
    int64_t n = 1;
    for (int i = 0; i < c->rank_b; i++)
        n *= c->db[i];
    dqg_tensor_id b = dqg_constant(g, "b", c->t, c->rank_b, c->db, c->b,
                                   (size_t)n * (size_t)dqg_dtype_bits(c->t) / 8);
    return c->fn(g, "m", x, b);
}

/* NumPy's maximum and minimum: NaN in either operand gives NaN; of two
 * equal values the first (so max(-0, +0) is -0); infinities order. */
Test(minmax, nan_signed_zero_and_infinities)
{
    const float a[] = {NAN, 1.0f, -0.0f, 0.0f, -INFINITY, 3.0f, 2.0f};
    const float b[] = {1.0f, NAN, 0.0f, -0.0f, -5.0f, INFINITY, 2.0f};
    const float want_max[] = {NAN, NAN, -0.0f, 0.0f, -5.0f, INFINITY, 2.0f};
    const float want_min[] = {NAN, NAN, -0.0f, 0.0f, -INFINITY, 3.0f, 2.0f};
    for (int k = 0; k < 2; k++) {
        binary_case c = {k ? dqg_min : dqg_max, DQG_F32, 1, 1, {7}, {7}, b};
        float ref[7], got[7];
        char impl[256];
        run_both(DQG_F32, 1, c.da, a, build_binary, &c, ref, got, sizeof ref, impl, sizeof impl);
        const float *w = k ? want_min : want_max;
        for (int i = 0; i < 7; i++) {
            if (isnan(w[i])) {
                cr_assert(isnan(ref[i]) && isnan(got[i]), "%s [%d]", k ? "min" : "max", i);
                continue;
            }
            cr_assert(ref[i] == w[i] && signbit(ref[i]) == signbit(w[i]), "%s [%d]: ref %g",
                      k ? "min" : "max", i, ref[i]);
            cr_assert(got[i] == w[i] && signbit(got[i]) == signbit(w[i]), "%s [%d]: got %g",
                      k ? "min" : "max", i, got[i]);
        }
        cr_assert(strstr(impl, k ? "dqgraph:broadcast:Min" : "dqgraph:broadcast:Max"), "%s", impl);
    }
}

/* Integers compare as integers, at the ends of their ranges: s8, u32
 * above 2^31, s64 beyond 2^53. */
Test(minmax, integers_at_the_ends_of_their_ranges)
{
    {
        const int8_t a[] = {-128, 127, -1, 5}, b[] = {127, -128, 0, 5};
        binary_case c = {dqg_max, DQG_S8, 1, 1, {4}, {4}, b};
        int8_t ref[4], got[4];
        run_both(DQG_S8, 1, c.da, a, build_binary, &c, ref, got, sizeof ref, NULL, 0);
        const int8_t w[] = {127, 127, 0, 5};
        cr_assert_eq(memcmp(ref, w, 4), 0);
        cr_assert_eq(memcmp(got, w, 4), 0);
    }
    {
        const uint32_t a[] = {4000000000u, 1, 0x80000000u}, b[] = {3, 4000000000u, 0x7FFFFFFFu};
        binary_case c = {dqg_min, DQG_U32, 1, 1, {3}, {3}, b};
        uint32_t ref[3], got[3];
        run_both(DQG_U32, 1, c.da, a, build_binary, &c, ref, got, sizeof ref, NULL, 0);
        const uint32_t w[] = {3, 1, 0x7FFFFFFFu};
        cr_assert_eq(memcmp(ref, w, sizeof w), 0, "%u %u %u", ref[0], ref[1], ref[2]);
        cr_assert_eq(memcmp(got, w, sizeof w), 0);
    }
    {
        const int64_t a[] = {((int64_t)1 << 53) + 1, INT64_MIN}, b[] = {(int64_t)1 << 53, 7};
        binary_case c = {dqg_max, DQG_S64, 1, 1, {2}, {2}, b};
        int64_t ref[2], got[2];
        run_both(DQG_S64, 1, c.da, a, build_binary, &c, ref, got, sizeof ref, NULL, 0);
        cr_assert(ref[0] == a[0] && ref[1] == 7 && got[0] == a[0] && got[1] == 7);
    }
}

/* Broadcasting both ways on f32: the kernel equals the reference, which
 * equals the rule applied element by element. */
Test(minmax, broadcasting_matches_reference)
{
    test_rng = 4242;
    const int64_t da[] = {3, 1, 5};
    float a[15], b[4], ref[60], got[60];
    for (int i = 0; i < 15; i++)
        a[i] = (float)test_rin(-4, 4);
    for (int i = 0; i < 4; i++)
        b[i] = (float)test_rin(-4, 4);
    a[3] = NAN;
    for (int k = 0; k < 2; k++) {
        binary_case c = {k ? dqg_min : dqg_max, DQG_F32, 3, 2, {3, 1, 5}, {4, 1}, b};
        run_both(DQG_F32, 3, da, a, build_binary, &c, ref, got, sizeof ref, NULL, 0);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 5; l++) {
                    float u = a[i * 5 + l], v = b[j];
                    float w = isnan(u) || isnan(v) ? NAN : k ? fminf(u, v) : fmaxf(u, v);
                    int o = (i * 4 + j) * 5 + l;
                    if (isnan(w))
                        cr_assert(isnan(ref[o]) && isnan(got[o]), "[%d]", o);
                    else
                        cr_assert(ref[o] == w && got[o] == w, "%s [%d]: %g %g, want %g",
                                  k ? "min" : "max", o, ref[o], got[o], w);
                }
    }
}

/* The rules of the binary builders: one type, broadcastable shapes. */
Test(minmax, builder_rules)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t d2[] = {2, 3}, d3[] = {4};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, d2), b = dqg_input(g, "b", DQG_F16, 2, d2);
    cr_assert_eq(dqg_max(g, "mx", a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Max 'mx'");
    dqg_graph_destroy(g);
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    a = dqg_input(g, "a", DQG_F32, 2, d2);
    b = dqg_input(g, "b", DQG_F32, 1, d3);
    cr_assert_eq(dqg_min(g, "mn", a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Min 'mn'");
    dqg_graph_destroy(g);
}

/* ---- Pad folded into a convolution's padding --------------------------- */

/* x [1, 3, 9, 9] -> [DQ1 -> ] Pad(H 1/2, W 2/1, value) [ -> Q -> DQ2] ->
 * Convolution 3x3 stride 2 (4 output channels, its own pads 1) -> y: f32
 * (qdq false), or with u8 activations (scale 0.05, zero point 7) and s8
 * weights per channel (qdq true). Compiled with fusion, y must match the
 * reference within 1e-5 of its largest magnitude; returns whether the
 * explain log says the Pad was folded. */
static bool pad_moved; /* the last call's Pad ran on the quantized tensor */

static bool conv_after_pad(bool qdq, double value, bool *int8_conv)
{
    enum { C = 3, H = 9, O = 4 };
    test_rng = 99;
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, C, H, H}, wd[] = {O, C, 3, 3}, one = 1, od = O;
    dqg_tensor_id x = dqg_input(g, "x", qdq ? DQG_U8 : DQG_F32, 4, xd), p;
    int64_t pads[] = {0, 0, 1, 2, 0, 0, 2, 1};
    float w[O * C * 9];
    for (int i = 0; i < O * C * 9; i++)
        w[i] = (float)test_rin(-20, 20) * (qdq ? 1.0f : 0.01f);
    dqg_tensor_id wt;
    if (qdq) {
        const float s = 0.05f, ws[O] = {0.01f, 0.02f, 0.005f, 0.03f};
        const uint8_t z = 7;
        int8_t wq[O * C * 9];
        for (int i = 0; i < O * C * 9; i++)
            wq[i] = (int8_t)w[i];
        dqg_tensor_id sc = dqg_constant(g, "s", DQG_F32, 0, &one, &s, 4);
        dqg_tensor_id zp = dqg_constant(g, "z", DQG_U8, 0, &one, &z, 1);
        dqg_dequantize_linear_attrs da = {.opset = 13};
        dqg_quantize_linear_attrs qa = {.opset = 13};
        dqg_tensor_id a = dqg_dequantize_linear(g, "dq1", x, sc, zp, &da);
        p = dqg_pad(g, "pad", a, pads, DQG_PAD_CONSTANT, value);
        p = dqg_dequantize_linear(g, "dq2", dqg_quantize_linear(g, "q", p, sc, zp, &qa), sc, zp,
                                  &da);
        dqg_dequantize_linear_attrs wa = {.opset = 13, .has_axis = true, .axis = 0};
        wt = dqg_dequantize_linear(g, "wdq", dqg_constant(g, "wq", DQG_S8, 4, wd, wq, sizeof wq),
                                   dqg_constant(g, "ws", DQG_F32, 1, &od, ws, sizeof ws), DQG_NONE,
                                   &wa);
    } else {
        p = dqg_pad(g, "pad", x, pads, DQG_PAD_CONSTANT, value);
        wt = dqg_constant(g, "w", DQG_F32, 4, wd, w, sizeof w);
    }
    dqg_conv_attrs ca = {.spatial_rank = 2,
                         .strides = {2, 2},
                         .pads_begin = {1, 1},
                         .pads_end = {1, 1},
                         .data_format = DQG_FORMAT_NCX};
    dqg_tensor_id y = dqg_convolution(g, "conv", p, wt, DQG_NONE, &ca);
    cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
    dqg_output(g, y, "y");
    finalize_ok(g);
    int64_t yd[4];
    dqg_tensor_dims(g, y, yd);
    size_t xn = C * H * H, yn = (size_t)(yd[0] * yd[1] * yd[2] * yd[3]);
    size_t xs = xn * (qdq ? 1 : 4);
    unsigned char *xv = malloc(xs);
    float *ref = malloc(yn * 4), *got = malloc(yn * 4);
    for (size_t i = 0; i < xn; i++) {
        if (qdq)
            xv[i] = (uint8_t)test_rin(0, 255);
        else
            ((float *)xv)[i] = test_uniform(-1, 1);
    }
    cr_assert_eq(run_ref_1(g, x, xv, xs, y, ref, yn * 4), DQG_OK, "%s", dqg_last_error());
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    dqg_buffer bi = {.name = "x", .data = xv, .size = xs},
               bo = {.name = "y", .data = got, .size = yn * 4};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
    float big = 0;
    for (size_t i = 0; i < yn; i++)
        big = fmaxf(big, fabsf(ref[i]));
    for (size_t i = 0; i < yn; i++)
        cr_assert(fabsf(got[i] - ref[i]) <= 1e-5f * big, "y[%zu]: got %g, ref %g", i, got[i],
                  ref[i]);
    bool folded =
        test_explain_mentions(c, "folded: Pad 'pad'") && !test_explain_mentions(c, "not folded");
    pad_moved = test_explain_mentions(c, "-> Quantize 'q' -> u8 Pad on the quantized tensor");
    *int8_conv = false;
    for (size_t k = 0; k < dqg_compiled_partition_count(c); k++)
        *int8_conv |= strstr(dqg_compiled_partition_info(c, k), "int8 conv") != NULL;
    if (folded) /* no partition is left for the Pad */
        for (size_t k = 0; k < dqg_compiled_partition_count(c); k++)
            cr_assert(!strstr(dqg_compiled_partition_info(c, k), "Pad 'pad'"), "%s",
                      dqg_compiled_partition_info(c, k));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    free(xv);
    free(ref);
    free(got);
    return folded;
}

Test(pad, zeros_fold_into_the_convolution)
{
    bool int8;
    cr_assert(conv_after_pad(false, 0.0, &int8), "f32 Pad of zeros not folded");
    cr_assert_not(conv_after_pad(false, 0.5, &int8), "a Pad of 0.5 was folded");
    /* QDQ: 0.0 quantizes to the zero point; the convolution then fuses. */
    cr_assert(conv_after_pad(true, 0.0, &int8), "QDQ Pad of zeros not folded");
    cr_assert(int8 || !test_int8_fusion(), "the convolution did not fuse");
    /* 0.35 quantizes to 7 + 7 = 14, not the zero point: the Pad stays, on
     * the quantized tensor. */
    cr_assert_not(conv_after_pad(true, 0.35, &int8), "a QDQ Pad of 0.35 was folded");
    cr_assert(pad_moved, "the Pad did not move onto the quantized tensor");
}

/* ---- Resize ---------------------------------------------------------------- */

static dqg_tensor_id build_resize(dqg_graph *g, dqg_tensor_id x, const void *ctx)
{
    return dqg_resize(g, "rs", x, ctx);
}

/* Random ranks 1-4, sizes up and down, every mode, coordinate
 * transformation and rounding, with and without given scales: the kernel
 * against the reference (nearest: byte for byte, on u8 and f32; linear and
 * cubic: within 1e-5 of the output's largest magnitude). */
Test(resize, kernel_matches_reference_on_random_cases)
{
    uint32_t first = 1, count = 200;
    test_seed_range("DQG_RESIZE_CASES", &first, &count);
    for (uint32_t seed = first; seed < first + count; seed++) {
        test_rng = seed * 2246822519u + 7;
        int rank = (int)test_rin(1, 4);
        dqg_resize_attrs a = {.mode = (dqg_resize_mode)test_rin(0, 2),
                              .coord = (dqg_resize_coord)test_rin(0, 4),
                              .nearest = (dqg_resize_nearest)test_rin(0, 3),
                              .cubic_a = test_rin(0, 1) ? -0.5f : 0.0f,
                              .exclude_outside = test_rin(0, 1) == 1};
        dqg_dtype t = a.mode == DQG_RESIZE_NEAREST && test_rin(0, 1) ? DQG_U8 : DQG_F32;
        int64_t d[4], xn = 1, yn = 1;
        for (int i = 0; i < rank; i++) {
            d[i] = test_rin(1, rank > 2 ? 6 : 12);
            a.sizes[i] = test_rin(0, 2) == 0 ? d[i] : test_rin(1, rank > 2 ? 9 : 20);
            if (test_rin(0, 1))
                a.scales[i] = (float)a.sizes[i] / (float)d[i] * (test_rin(0, 1) ? 1.0f : 1.1f);
            xn *= d[i];
            yn *= a.sizes[i];
        }
        size_t es = t == DQG_U8 ? 1 : 4;
        uint8_t *x = malloc((size_t)xn * es), *ref = malloc((size_t)yn * es),
                *got = malloc((size_t)yn * es);
        for (int64_t i = 0; i < xn; i++) {
            if (t == DQG_U8)
                x[i] = (uint8_t)test_rnd();
            else
                ((float *)x)[i] = test_uniform(-4, 4);
        }
        run_both(t, rank, d, x, build_resize, &a, ref, got, (size_t)yn * es, NULL, 0);
        if (a.mode == DQG_RESIZE_NEAREST) {
            cr_assert_eq(memcmp(ref, got, (size_t)yn * es), 0, "seed %u: nearest differs", seed);
        } else {
            const float *r = (const float *)ref, *o = (const float *)got;
            float big = 0;
            for (int64_t i = 0; i < yn; i++)
                big = fmaxf(big, fabsf(r[i]));
            for (int64_t i = 0; i < yn; i++)
                cr_assert(fabsf(o[i] - r[i]) <= 1e-5f * big, "seed %u: [%lld] got %g, ref %g", seed,
                          (long long)i, o[i], r[i]);
        }
        free(x);
        free(ref);
        free(got);
    }
}

/* Hand-worked values: linear half_pixel doubling of {0, 4} is {0, 1, 3, 4}
 * (edges clamped); cubic at a source element reads it alone; an axis of
 * one element stays its value. */
Test(resize, hand_worked_values)
{
    int64_t d[] = {2};
    const float x[] = {0, 4};
    dqg_resize_attrs lin = {.mode = DQG_RESIZE_LINEAR, .sizes = {4}};
    float ref[4], got[4];
    run_both(DQG_F32, 1, d, x, build_resize, &lin, ref, got, sizeof ref, NULL, 0);
    const float want[] = {0, 1, 3, 4};
    for (int i = 0; i < 4; i++)
        cr_assert(ref[i] == want[i] && got[i] == want[i], "[%d]: %g %g", i, ref[i], got[i]);
    /* align_corners, 2 -> 3: {0, 2, 4}; an infinity next to a coordinate
     * that lands on an element does not spread (taps of weight 0 are not
     * read). */
    const float xi[] = {1, INFINITY};
    dqg_resize_attrs ac = {
        .mode = DQG_RESIZE_CUBIC, .coord = DQG_RESIZE_ALIGN_CORNERS, .sizes = {3}};
    float r3[3], g3[3];
    run_both(DQG_F32, 1, d, xi, build_resize, &ac, r3, g3, sizeof r3, NULL, 0);
    cr_assert(r3[0] == 1 && g3[0] == 1 && isinf(r3[2]) && isinf(g3[2]), "%g %g", r3[0], g3[0]);
}

/* Each rule of dqg_resize gives DQG_INVALID_ARGUMENT naming the op and the rule. */
Test(resize, builder_rules)
{
    const struct {
        dqg_dtype t;
        dqg_resize_attrs a;
        const char *want;
    } cases[] = {
        {DQG_F32, {.mode = 3, .sizes = {2, 2}}, "outside its enum"},
        {DQG_F32, {.coord = 9, .sizes = {2, 2}}, "outside its enum"},
        {DQG_U8, {.mode = DQG_RESIZE_LINEAR, .sizes = {2, 2}}, "u8"},
        {DQG_F32, {.sizes = {2, 0}}, "size 0 of axis 1 is outside [1, 2^40]"},
        {DQG_F32, {.sizes = {2, 2}, .scales = {-1, 0}}, "scale -1 of axis 0"},
        {DQG_F32, {.sizes = {2, 2}, .scales = {NAN, 0}}, "scale nan of axis 0"},
        {DQG_F32,
         {.mode = DQG_RESIZE_CUBIC, .cubic_a = INFINITY, .sizes = {2, 2}},
         "cubic_a inf is not finite"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t d[] = {2, 3};
        dqg_tensor_id x = dqg_input(g, "x", cases[k].t, 2, d);
        cr_assert_eq(dqg_resize(g, "r", x, &cases[k].a), DQG_NONE, "case %zu built", k);
        expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Resize 'r'", cases[k].want);
        dqg_graph_destroy(g);
    }
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t d[] = {2, 3};
    cr_assert_eq(dqg_resize(g, "r", dqg_input(g, "x", DQG_F32, 2, d), NULL), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Resize 'r'", "attrs is NULL");
    dqg_graph_destroy(g);
}

/* DQ -> nearest Resize -> Q of equal parameters runs as a u8 Resize on the
 * quantized tensor (a detection neck's upsampling), equal to the reference
 * byte for byte; a linear one stays in float. */
Test(resize, nearest_between_dequantize_and_quantize_runs_on_u8)
{
    for (int linear = 0; linear < 2; linear++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t d[] = {1, 2, 3, 3}, one = 1;
        const float s = 0.1f;
        const uint8_t z = 100;
        dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, d);
        dqg_tensor_id sc = dqg_constant(g, "s", DQG_F32, 0, &one, &s, 4);
        dqg_tensor_id zp = dqg_constant(g, "z", DQG_U8, 0, &one, &z, 1);
        dqg_dequantize_linear_attrs da = {.opset = 13};
        dqg_quantize_linear_attrs qa = {.opset = 13};
        dqg_resize_attrs ra = {.mode = linear ? DQG_RESIZE_LINEAR : DQG_RESIZE_NEAREST,
                               .sizes = {1, 2, 6, 7}};
        dqg_tensor_id y = dqg_quantize_linear(
            g, "q", dqg_resize(g, "up", dqg_dequantize_linear(g, "dq", x, sc, zp, &da), &ra), sc,
            zp, &qa);
        cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
        dqg_output(g, y, "y");
        finalize_ok(g);
        uint8_t xv[18], ref[84], got[84];
        for (int i = 0; i < 18; i++)
            xv[i] = (uint8_t)(i * 13 + 7);
        cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, ref, sizeof ref), DQG_OK);
        dqg_compile_options o = dqg_compile_options_default();
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        dqg_buffer bi = {.name = "x", .data = xv, .size = sizeof xv},
                   bo = {.name = "y", .data = got, .size = sizeof got};
        cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
        bool moved = test_explain_mentions(c, "-> u8 Resize on the quantized tensor");
        cr_assert(moved == !linear, "linear %d: moved %d", linear, moved);
        if (!linear)
            cr_assert_eq(memcmp(ref, got, sizeof ref), 0);
        else
            for (int i = 0; i < 84; i++)
                cr_assert(abs(ref[i] - got[i]) <= 1, "[%d]: %d %d", i, ref[i], got[i]);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* DQ -> Reshape -> Transpose -> [Pad ->] Reshape -> Q of equal parameters
 * (a DepthToSpace as imported, a super-resolution network's last step)
 * runs as u8 data movement on the quantized tensor: byte for byte the
 * reference's, no f32 partition left. `cut` makes the Transpose's result
 * also a graph output: the chain then stops there and stays in float. */
static void depth_to_space_chain(bool pad, bool cut)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    enum { B = 2, C = 3, H = 4, W = 5 };
    int64_t xd[] = {1, B * B * C, H, W}, d6[] = {1, B, B, C, H, W}, perm[] = {0, 3, 4, 1, 5, 2},
            yd[] = {1, C, H * B, W * B};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id sc = test_scalar_f32(g, 0.05f), zp = test_scalar_8bit(g, DQG_U8, 9);
    dqg_tensor_id t = dqg_dequantize_linear(g, "dq", x, sc, zp, &da);
    t = dqg_reshape(g, "split", t, 6, d6);
    dqg_tensor_id mid = t = dqg_transpose(g, "interleave", t, perm);
    if (pad) {
        int64_t pads[12] = {0};
        pads[6 + 2] = 1; /* one more row of blocks, of the constant 0.5 */
        t = dqg_pad(g, "pad", t, pads, DQG_PAD_CONSTANT, 0.5);
        yd[2] += B;
    }
    t = dqg_reshape(g, "merge", t, 4, yd);
    dqg_tensor_id y = dqg_quantize_linear(g, "q", t, sc, zp, &qa);
    cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
    dqg_output(g, y, "y");
    if (cut)
        dqg_output(g, mid, "mid");
    finalize_ok(g);
    size_t yn = (size_t)(yd[1] * yd[2] * yd[3]), xn = B * B * C * H * W;
    uint8_t xv[B * B * C * H * W], *ref = malloc(yn), *got = malloc(yn);
    for (size_t i = 0; i < xn; i++)
        xv[i] = (uint8_t)(i * 37 + 11);
    float *mref = malloc(xn * 4), *mgot = malloc(xn * 4);
    dqg_buffer bi = {.name = "x", .data = xv, .size = xn};
    dqg_buffer bo[2] = {{.name = "y", .data = ref, .size = yn},
                        {.name = "mid", .data = mref, .size = xn * 4}};
    cr_assert_eq(dqg_reference_run(g, &bi, 1, bo, cut ? 2 : 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    bo[0].data = got;
    bo[1].data = mgot;
    cr_assert_eq(dqg_execute(c, &bi, 1, bo, cut ? 2 : 1), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(memcmp(ref, got, yn), 0, "pad %d cut %d: the result differs", pad, cut);
    if (cut)
        cr_assert_eq(memcmp(mref, mgot, xn * 4), 0);
    const char *line = pad ? "-> u8 Reshape, Transpose, Pad, Reshape on the quantized tensor"
                           : "-> u8 Reshape, Transpose, Reshape on the quantized tensor";
    cr_assert_eq(test_explain_mentions(c, line), !cut, "pad %d cut %d", pad, cut);
    bool f32_left = false;
    for (size_t k = 0; k < dqg_compiled_partition_count(c); k++)
        f32_left |= strstr(dqg_compiled_partition_info(c, k), "Dequantize 'dq'") != NULL;
    cr_assert_eq(f32_left, cut, "pad %d cut %d: a dequantize %s", pad, cut,
                 f32_left ? "is left" : "is gone");
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    free(ref);
    free(got);
    free(mref);
    free(mgot);
}

Test(resize, depth_to_space_chains_run_on_u8)
{
    depth_to_space_chain(false, false);
    depth_to_space_chain(true, false);
    depth_to_space_chain(false, true);
}

/* ---- ArgMax and ArgMin ------------------------------------------------------ */

typedef struct arg_case {
    bool min, keepdims, last;
    int axis;
} arg_case;

static dqg_tensor_id build_arg(dqg_graph *g, dqg_tensor_id x, const void *ctx)
{
    const arg_case *a = ctx;
    return (a->min ? dqg_argmin : dqg_argmax)(g, "am", x, a->axis, a->keepdims, a->last);
}

/* Ties (first or last), NaN (it wins; with select_last the last NaN), each
 * axis of a [2, 3] tensor, keepdims or not. */
Test(arg, ties_nan_and_axes)
{
    const float x[] = {1, 5, 5, NAN, 0, NAN};
    int64_t d[] = {2, 3};
    const struct {
        arg_case a;
        int n;
        int64_t want[3];
    } cases[] = {
        {{false, true, false, 1}, 2, {1, 0}},     {{false, true, true, 1}, 2, {2, 2}},
        {{true, false, false, 1}, 2, {0, 0}},     {{true, false, true, 1}, 2, {0, 2}},
        {{false, false, false, 0}, 3, {1, 0, 1}}, {{true, true, false, -2}, 3, {1, 1, 1}},
        {{true, true, true, 0}, 3, {1, 1, 1}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int64_t ref[3], got[3];
        run_both(DQG_F32, 2, d, x, build_arg, &cases[k].a, ref, got,
                 (size_t)cases[k].n * sizeof(int64_t), NULL, 0);
        for (int i = 0; i < cases[k].n; i++)
            cr_assert(ref[i] == cases[k].want[i] && got[i] == cases[k].want[i],
                      "case %zu [%d]: ref %lld, got %lld, want %lld", k, i, (long long)ref[i],
                      (long long)got[i], (long long)cases[k].want[i]);
    }
}

/* s64 values 1 apart above 2^53 are told apart; u8 works too. */
Test(arg, integers_compare_exactly)
{
    const int64_t x[] = {((int64_t)1 << 53) + 1, (int64_t)1 << 53, ((int64_t)1 << 53) + 2};
    int64_t d[] = {3}, ref, got;
    arg_case a = {false, false, false, 0};
    run_both(DQG_S64, 1, d, x, build_arg, &a, &ref, &got, sizeof ref, NULL, 0);
    cr_assert(ref == 2 && got == 2, "%lld %lld", (long long)ref, (long long)got);
    const uint8_t u[] = {200, 7, 255, 7};
    int64_t du[] = {4};
    a.min = a.last = true;
    run_both(DQG_U8, 1, du, u, build_arg, &a, &ref, &got, sizeof ref, NULL, 0);
    cr_assert(ref == 3 && got == 3, "%lld %lld", (long long)ref, (long long)got);
}

Test(arg, builder_rules)
{
    dqg_graph *g;
    int64_t d[] = {2, 3};
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    cr_assert_eq(dqg_argmax(g, "a", dqg_input(g, "x", DQG_F32, 2, d), 2, true, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ArgMax 'a'", "axis 2", "[-2, 2)");
    dqg_graph_destroy(g);
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    cr_assert_eq(dqg_argmin(g, "b", dqg_input(g, "x", DQG_BOOL, 2, d), 0, true, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ArgMin 'b'", "bool");
    dqg_graph_destroy(g);
}

/* ---- ConvTranspose's builder rules ----------------------------------------- */

Test(conv_transpose, builder_rules)
{
    const struct {
        int64_t wd0;
        dqg_conv_transpose_attrs a;
        const char *want;
    } cases[] = {
        {4, {.spatial_rank = 4}, "spatial_rank 4 is outside [1, 3]"},
        {4, {.spatial_rank = 2, .groups = 3}, "divisible by groups 3"},
        {6, {.spatial_rank = 2}, "dimension 0 is 6"},
        {4, {.spatial_rank = 2, .strides = {-1, 1}}, "stride -1"},
        {4, {.spatial_rank = 2, .output_padding = {-1, 0}}, "output_padding -1"},
        {4, {.spatial_rank = 2, .pads_begin = {4, 0}, .pads_end = {4, 0}}, "would be -4"},
        {4, {.spatial_rank = 1}, "spatial_rank 1 needs 3"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t xd[] = {1, 4, 2, 2}, wd[] = {cases[k].wd0, 2, 3, 3};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd), w = dqg_input(g, "w", DQG_F32, 4, wd);
        cr_assert_eq(dqg_conv_transpose(g, "ct", x, w, DQG_NONE, &cases[k].a), DQG_NONE,
                     "case %zu built", k);
        expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ConvTranspose 'ct'",
                     cases[k].want);
        dqg_graph_destroy(g);
    }
}

/* ---- CumSum and TopK --------------------------------------------------------- */

typedef struct cumsum_case {
    int axis;
    bool exclusive, reverse;
} cumsum_case;

static dqg_tensor_id build_cumsum(dqg_graph *g, dqg_tensor_id x, const void *ctx)
{
    const cumsum_case *c = ctx;
    return dqg_cumsum(g, "cs", x, c->axis, c->exclusive, c->reverse);
}

/* ONNX's examples on {1, 2, 3, 4, 5}, along each axis of [2, 3], and s8
 * sums that wrap around. */
Test(cumsum, hand_worked_values)
{
    const float x[] = {1, 2, 3, 4, 5};
    int64_t d[] = {5};
    const struct {
        cumsum_case c;
        float want[5];
    } cases[] = {
        {{0, false, false}, {1, 3, 6, 10, 15}},
        {{0, true, false}, {0, 1, 3, 6, 10}},
        {{-1, false, true}, {15, 14, 12, 9, 5}},
        {{0, true, true}, {14, 12, 9, 5, 0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        float ref[5], got[5];
        run_both(DQG_F32, 1, d, x, build_cumsum, &cases[k].c, ref, got, sizeof ref, NULL, 0);
        for (int i = 0; i < 5; i++)
            cr_assert(ref[i] == cases[k].want[i] && got[i] == cases[k].want[i],
                      "case %zu [%d]: %g %g", k, i, ref[i], got[i]);
    }
    const float m[] = {1, 2, 3, 4, 5, 6};
    int64_t md[] = {2, 3};
    cumsum_case c0 = {0, false, false};
    float r[6], gt[6];
    run_both(DQG_F32, 2, md, m, build_cumsum, &c0, r, gt, sizeof r, NULL, 0);
    const float w0[] = {1, 2, 3, 5, 7, 9};
    cr_assert_eq(memcmp(gt, w0, sizeof w0), 0);
    const int8_t s[] = {100, 100, -100, -128};
    int64_t sd[] = {4};
    int8_t sr[4], sg[4];
    run_both(DQG_S8, 1, sd, s, build_cumsum, &c0, sr, sg, sizeof sr, NULL, 0);
    const int8_t ws[] = {100, -56, 100, -28}; /* 200 - 256, 100, 100 - 128 */
    cr_assert(memcmp(sr, ws, 4) == 0 && memcmp(sg, ws, 4) == 0, "%d %d %d %d", sg[0], sg[1], sg[2],
              sg[3]);
}

Test(cumsum, builder_rules)
{
    dqg_graph *g;
    int64_t d[] = {2, 3};
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    cr_assert_eq(dqg_cumsum(g, "c", dqg_input(g, "x", DQG_F32, 2, d), 2, false, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "CumSum 'c'", "axis 2", "[-2, 2)");
    dqg_graph_destroy(g);
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    cr_assert_eq(dqg_cumsum(g, "c", dqg_input(g, "x", DQG_BOOL, 2, d), 0, false, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "CumSum 'c'", "bool");
    dqg_graph_destroy(g);
}

typedef struct topk_case {
    int64_t k;
    int axis;
    bool largest;
} topk_case;

/* Runs TopK of x [n] on the reference and compiled; both values and
 * indices must agree. */
static void topk_both(const float *x, int64_t n, topk_case t, float *vals, int64_t *idx)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 1, &n), ix;
    dqg_tensor_id y = dqg_topk(g, "tk", in, t.k, t.axis, t.largest, &ix);
    cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
    dqg_output(g, y, "v");
    dqg_output(g, ix, "i");
    finalize_ok(g);
    float rv[16], gv[16];
    int64_t ri[16], gi[16];
    dqg_buffer bi = {.name = "x", .data = (void *)x, .size = (size_t)n * 4};
    dqg_buffer bo[2] = {{.name = "v", .data = rv, .size = (size_t)t.k * 4},
                        {.name = "i", .data = ri, .size = (size_t)t.k * 8}};
    cr_assert_eq(dqg_reference_run(g, &bi, 1, bo, 2), DQG_OK, "%s", dqg_last_error());
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    bo[0].data = gv;
    bo[1].data = gi;
    cr_assert_eq(dqg_execute(c, &bi, 1, bo, 2), DQG_OK, "%s", dqg_last_error());
    cr_assert(memcmp(rv, gv, (size_t)t.k * 4) == 0 && memcmp(ri, gi, (size_t)t.k * 8) == 0);
    memcpy(vals, rv, (size_t)t.k * 4);
    memcpy(idx, ri, (size_t)t.k * 8);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* Ties keep their order, NaN counts as the largest, smallest-first works. */
Test(topk, ties_nan_and_direction)
{
    const float x[] = {3, NAN, 7, 3, -1, 7};
    float v[6];
    int64_t i[6];
    topk_both(x, 6, (topk_case){4, 0, true}, v, i);
    cr_assert(isnan(v[0]) && i[0] == 1 && v[1] == 7 && i[1] == 2 && v[2] == 7 && i[2] == 5 &&
                  v[3] == 3 && i[3] == 0,
              "%lld %lld %lld %lld", (long long)i[0], (long long)i[1], (long long)i[2],
              (long long)i[3]);
    topk_both(x, 6, (topk_case){6, -1, false}, v, i);
    const int64_t want[] = {4, 0, 3, 2, 5, 1};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(i[k], want[k], "[%d]: %lld", k, (long long)i[k]);
}

Test(topk, builder_rules)
{
    dqg_graph *g;
    int64_t d[] = {2, 3};
    dqg_tensor_id ix = 5;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    cr_assert_eq(dqg_topk(g, "t", dqg_input(g, "x", DQG_F32, 2, d), 4, 1, true, &ix), DQG_NONE);
    cr_assert_eq(ix, DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "TopK 't'", "k 4 is outside [1, 3]");
    dqg_graph_destroy(g);
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    cr_assert_eq(dqg_topk(g, "t", dqg_input(g, "x", DQG_F32, 2, d), 1, -3, true, NULL), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "TopK 't'", "axis -3");
    dqg_graph_destroy(g);
}

/* ---- GatherND and ScatterND ------------------------------------------------ */

/* data [2, 3] = 0..5; GatherND of run-time index pairs (negative ones count
 * from the end); an index outside its axis is an error naming the element,
 * compiled and on the reference. */
Test(nd, gather_nd_pairs_and_errors)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t dd[] = {2, 3}, id[] = {3, 2};
    const float data[] = {0, 1, 2, 3, 4, 5};
    dqg_tensor_id d = dqg_constant(g, "d", DQG_F32, 2, dd, data, sizeof data);
    dqg_tensor_id ix = dqg_input(g, "x", DQG_S64, 2, id);
    dqg_tensor_id y = dqg_gather_nd(g, "gnd", d, ix, 0);
    cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
    dqg_output(g, y, "y");
    finalize_ok(g);
    int64_t idx[6] = {1, 2, 0, -1, -2, 0};
    float ref[3], got[3];
    cr_assert_eq(run_ref_1(g, ix, idx, sizeof idx, y, ref, sizeof ref), DQG_OK);
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    dqg_buffer bi = {.name = "x", .data = idx, .size = sizeof idx},
               bo = {.name = "y", .data = got, .size = sizeof got};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
    const float want[] = {5, 2, 0};
    cr_assert(memcmp(ref, want, sizeof want) == 0 && memcmp(got, want, sizeof want) == 0,
              "%g %g %g", got[0], got[1], got[2]);
    idx[3] = 3;
    expect_error(dqg_execute(c, &bi, 1, &bo, 1), DQG_INVALID_ARGUMENT, "GatherND 'gnd'",
                 "element 3 is 3", "[-3, 3) for axis 1");
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* ScatterND with each reduction, integers wrapping; later updates of one
 * place apply after earlier ones. */
Test(nd, scatter_nd_reductions)
{
    const int8_t data[] = {10, 20, 30, 40};
    const int64_t idx[] = {1, 3, 1};
    const int8_t upd[] = {120, 5, 2};
    const struct {
        dqg_scatter_reduction r;
        int8_t want[4];
    } cases[] = {
        {DQG_SCATTER_NONE, {10, 2, 30, 5}},
        {DQG_SCATTER_ADD, {10, -114, 30, 45}}, /* 20 + 120 + 2 = 142, wrapped */
        {DQG_SCATTER_MUL, {10, -64, 30, -56}}, /* 20 * 120 * 2 = 4800 = 18 * 256 + 192 */
        {DQG_SCATTER_MAX, {10, 120, 30, 40}},
        {DQG_SCATTER_MIN, {10, 2, 30, 5}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t dd[] = {4}, id[] = {3, 1}, ud[] = {3};
        dqg_tensor_id x = dqg_input(g, "x", DQG_S8, 1, dd);
        dqg_tensor_id y = dqg_scatter_nd(g, "snd", x, dqg_constant(g, "i", DQG_S64, 2, id, idx, 24),
                                         dqg_constant(g, "u", DQG_S8, 1, ud, upd, 3), cases[k].r);
        cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
        dqg_output(g, y, "y");
        finalize_ok(g);
        int8_t ref[4], got[4];
        cr_assert_eq(run_ref_1(g, x, (void *)data, 4, y, ref, 4), DQG_OK);
        dqg_compile_options o = dqg_compile_options_default();
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        dqg_buffer bi = {.name = "x", .data = (void *)data, .size = 4},
                   bo = {.name = "y", .data = got, .size = 4};
        cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
        cr_assert(memcmp(ref, cases[k].want, 4) == 0 && memcmp(got, cases[k].want, 4) == 0,
                  "case %zu: %d %d %d %d", k, got[0], got[1], got[2], got[3]);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

Test(nd, builder_rules)
{
    dqg_graph *g;
    int64_t dd[] = {2, 3}, i3[] = {2, 3}, bad[] = {1, 2}, ud[] = {4};
    const int64_t far[] = {0, 7};
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id d = dqg_input(g, "d", DQG_F32, 2, dd);
    cr_assert_eq(dqg_gather_nd(g, "g", d, dqg_input(g, "i", DQG_S64, 2, i3), 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherND 'g'", "tuples of 3");
    dqg_graph_destroy(g);
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    d = dqg_input(g, "d", DQG_F32, 2, dd);
    cr_assert_eq(dqg_gather_nd(g, "g", d, dqg_constant(g, "i", DQG_S64, 2, bad, far, 16), 0),
                 DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherND 'g'", "element 1 is 7");
    dqg_graph_destroy(g);
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    d = dqg_input(g, "d", DQG_F32, 2, dd);
    cr_assert_eq(dqg_scatter_nd(g, "s", d, dqg_input(g, "i", DQG_S64, 2, bad),
                                dqg_input(g, "u", DQG_F32, 1, ud), DQG_SCATTER_ADD),
                 DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ScatterND 's'",
                 "input 2 (updates) has shape [4]", "need [1]");
    dqg_graph_destroy(g);
}

/* ---- ScatterElements and Mod ------------------------------------------------ */

/* Along axis 1 of [2, 3], updates added, a duplicate index adding twice. */
Test(nd, scatter_elements_along_an_axis)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t dd[] = {2, 3}, id[] = {2, 2};
    const int32_t idx[] = {2, 2, -3, 1};
    const float upd[] = {1, 10, 100, 1000};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, dd);
    dqg_tensor_id y =
        dqg_scatter_elements(g, "se", x, dqg_constant(g, "i", DQG_S32, 2, id, idx, 16),
                             dqg_constant(g, "u", DQG_F32, 2, id, upd, 16), 1, DQG_SCATTER_ADD);
    cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
    dqg_output(g, y, "y");
    finalize_ok(g);
    const float data[] = {0, 0, 0, 5, 5, 5};
    float ref[6], got[6];
    cr_assert_eq(run_ref_1(g, x, (void *)data, sizeof data, y, ref, sizeof ref), DQG_OK);
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    dqg_buffer bi = {.name = "x", .data = (void *)data, .size = sizeof data},
               bo = {.name = "y", .data = got, .size = sizeof got};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
    const float want[] = {0, 0, 11, 105, 1005, 5};
    cr_assert(memcmp(ref, want, sizeof want) == 0 && memcmp(got, want, sizeof want) == 0,
              "%g %g %g %g %g %g", got[0], got[1], got[2], got[3], got[4], got[5]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

typedef struct mod_case {
    bool fmod;
    const void *b;
    dqg_dtype t;
} mod_case;

static dqg_tensor_id build_mod(dqg_graph *g, dqg_tensor_id x, const void *ctx)
{
    const mod_case *m = ctx;
    int64_t d[] = {4};
    return dqg_mod(g, "md", x,
                   dqg_constant(g, "b", m->t, 1, d, m->b, 4 * (m->t == DQG_S64 ? 8 : 4)), m->fmod);
}

/* The sign follows b (Python's %) or a (fmod); INT64_MIN mod -1 is 0; a
 * float remainder is C's fmodf. */
Test(mod, signs_and_extremes)
{
    const int64_t a[] = {7, -7, INT64_MIN, 5}, b[] = {-3, 3, -1, 5};
    int64_t d[] = {4}, ref[4], got[4];
    mod_case m = {false, b, DQG_S64};
    run_both(DQG_S64, 1, d, a, build_mod, &m, ref, got, sizeof ref, NULL, 0);
    const int64_t py[] = {-2, 2, 0, 0}, c[] = {1, -1, 0, 0};
    cr_assert(memcmp(ref, py, sizeof py) == 0 && memcmp(got, py, sizeof py) == 0, "%lld %lld",
              (long long)got[0], (long long)got[1]);
    m.fmod = true;
    run_both(DQG_S64, 1, d, a, build_mod, &m, ref, got, sizeof ref, NULL, 0);
    cr_assert(memcmp(ref, c, sizeof c) == 0 && memcmp(got, c, sizeof c) == 0);
    const float fa[] = {7.5f, -7.5f, 1.0f, 3.0f}, fb[] = {2.0f, 2.0f, 0.0f, -2.0f};
    float fr[4], fg[4];
    mod_case mf = {true, fb, DQG_F32};
    run_both(DQG_F32, 1, d, fa, build_mod, &mf, fr, fg, sizeof fr, NULL, 0);
    cr_assert(fr[0] == 1.5f && fr[1] == -1.5f && isnan(fr[2]) && fr[3] == 1.0f, "%g %g %g %g",
              fr[0], fr[1], fr[2], fr[3]);
    cr_assert(fg[0] == 1.5f && fg[1] == -1.5f && isnan(fg[2]) && fg[3] == 1.0f);
}

/* An integer divisor of 0 is an error naming the element; floats need fmod. */
Test(mod, rules)
{
    dqg_graph *g;
    int64_t d[] = {3};
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id a = dqg_input(g, "a", DQG_S32, 1, d), b = dqg_input(g, "b", DQG_S32, 1, d);
    dqg_output(g, dqg_mod(g, "m", a, b, false), "y");
    finalize_ok(g);
    int32_t av[3] = {1, 2, 3}, bv[3] = {1, 0, 1}, y[3];
    dqg_buffer in[2] = {{.name = "a", .data = av, .size = 12},
                        {.name = "b", .data = bv, .size = 12}};
    dqg_buffer out = {.name = "y", .data = y, .size = 12};
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    expect_error(dqg_execute(c, in, 2, &out, 1), DQG_INVALID_ARGUMENT, "Mod 'm'",
                 "zero at element 1");
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    a = dqg_input(g, "a", DQG_F32, 1, d);
    cr_assert_eq(dqg_mod(g, "m", a, a, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Mod 'm'", "fmod = 1");
    dqg_graph_destroy(g);
}
