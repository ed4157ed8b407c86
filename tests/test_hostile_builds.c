/* Hostile use of the builder API with fixed seeds: random builder calls with
 * garbage ids, data types, ranks, dimensions, attributes and NULL pointers.
 * Every call must return cleanly; finalize must either succeed or report an
 * error with a message; a graph that finalizes is compiled and run (when its
 * tensors are small) on both backends, whose results must agree with the
 * reference. Under the sanitizer build this also proves the absence of
 * memory errors and leaks on these paths. DQG_HOSTILE_TRACE=1 prints each
 * finalize error, to see which rules the generator exercises. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

static uint32_t rs;
static int n_finalized, n_run;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return rs;
}
static int64_t pick(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1));
}

/* A tensor of the wanted type (recent ones first) in a well-behaved graph;
 * anything at all, including garbage ids, in a hostile one. */
static bool hostile;
static dqg_tensor_id typed_id(const dqg_graph *g, dqg_dtype want, dqg_tensor_id fallback)
{
    int n = (int)dqg_graph_tensor_count(g);
    for (int tries = 0; tries < 6 && n > 0; tries++) {
        dqg_tensor_id t = (dqg_tensor_id)(n - 1 - (int)(rnd() % (uint32_t)(n < 6 ? n : 6)));
        if (dqg_tensor_dtype(g, t) == want)
            return t;
    }
    return fallback;
}

/* A mostly-valid, sometimes hostile, tensor id among n existing ones. */
static dqg_tensor_id some_id(int n)
{
    switch (rnd() % 16) {
    case 0:
        return DQG_NONE;
    case 1:
        return (dqg_tensor_id)pick(n, n + 5);
    case 2:
        return (dqg_tensor_id)-7;
    default:
        return n ? (dqg_tensor_id)(rnd() % (uint32_t)n) : 0;
    }
}

static dqg_dtype some_dtype(void)
{
    return rnd() % 20 == 0 ? (dqg_dtype)pick(-3, 40) : (dqg_dtype)pick(1, DQG_DTYPE_COUNT - 1);
}

static int some_dims(int64_t *dims)
{
    int rank = rnd() % 24 == 0 ? (int)pick(-2, 10) : (int)pick(0, 4);
    for (int i = 0; i < 10; i++) {
        int r = (int)(rnd() % 40);
        dims[i] = r == 0 ? -pick(0, 3) : r == 1 ? INT64_C(1) << pick(20, 62) : pick(1, 5);
    }
    return rank;
}

static void one_graph(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t dims[10];
    unsigned char data[4096] = {0};
    for (int i = 0; i < (int)sizeof data; i++)
        data[i] = (unsigned char)rnd();
    hostile = rnd() % 4 == 0;
    /* Seed tensors every graph starts from. */
    int64_t d23[] = {2, 3}, d33[] = {3, 3}, d3 = 3, one = 1;
    float wv[9] = {0.5f, -1, 2, 0, 1, -0.5f, 1.5f, 0.25f, -2}, sc = 0.5f, bv[3] = {1, -1, 0.5f};
    uint8_t zp = 3;
    dqg_tensor_id fx = dqg_input(g, "x", DQG_F32, 2, d23);
    dqg_tensor_id qx = dqg_input(g, "q", DQG_U8, 2, d23);
    dqg_tensor_id fw = dqg_constant(g, "w", DQG_F32, 2, d33, wv, sizeof wv);
    dqg_tensor_id fs = dqg_constant(g, "scale", DQG_F32, 0, &one, &sc, 4);
    dqg_tensor_id fz = dqg_constant(g, "zp", DQG_U8, 0, &one, &zp, 1);
    dqg_tensor_id fb = dqg_constant(g, "bias", DQG_F32, 1, &d3, bv, sizeof bv);
    float ev[6] = {0.5f, 1, 2, 0, 0.25f, 4};
    dqg_tensor_id fe = dqg_constant(g, "escale", DQG_F32, 2, d23, ev, sizeof ev);
    int calls = (int)pick(1, 14);
    for (int c = 0; c < calls; c++) {
        int n = (int)dqg_graph_tensor_count(g);
        dqg_tensor_id a = hostile ? some_id(n) : typed_id(g, DQG_F32, fx);
        dqg_tensor_id b = hostile ? some_id(n) : typed_id(g, DQG_F32, fx);
        dqg_tensor_id z = hostile ? some_id(n) : rnd() % 2 ? fz : DQG_NONE;
        int rank = some_dims(dims);
        if (!hostile) {
            rank = 2;
            dims[0] = 2;
            dims[1] = 3;
        }
        char name[16];
        snprintf(name, sizeof name, "t%d", (int)(rnd() % 8));
        const char *nm = hostile ? (rnd() % 10 == 0 ? NULL : name) : NULL;
        switch (rnd() % 18) {
        case 0:
            dqg_input(g, nm, some_dtype(), rank, rnd() % 30 ? dims : NULL);
            break;
        case 1: {
            dqg_dtype t = some_dtype();
            int64_t cnt = 1;
            for (int i = 0; i < rank && i < 10; i++)
                cnt *= dims[i] > 0 && dims[i] < 64 ? dims[i] : 1;
            size_t bytes = rnd() % 8 ? dqg_dtype_storage_size(t, cnt) : (size_t)pick(0, 64);
            dqg_constant(g, nm, t, rank, dims, rnd() % 30 ? data : NULL,
                         bytes <= sizeof data ? bytes : sizeof data);
            break;
        }
        case 2: {
            dqg_matmul_attrs at = {.transpose_a = rnd() & 1, .transpose_b = rnd() & 1};
            if (!hostile) {
                b = fw;
                at.transpose_a = false;
            }
            dqg_matmul(g, nm, a, b, rnd() % 3 ? &at : NULL);
            break;
        }
        case 3: {
            dqg_conv_attrs ca = {.spatial_rank = (int)pick(0, 4),
                                 .groups = pick(-1, 3),
                                 .data_format = (dqg_data_format)pick(0, 2)};
            for (int i = 0; i < 3; i++) {
                ca.strides[i] = pick(-1, 2);
                ca.dilations[i] = pick(-1, 2);
                ca.pads_begin[i] = pick(-1, 2);
                ca.pads_end[i] = pick(-1, 2);
            }
            if (hostile)
                dqg_convolution(g, nm, a, b, z, rnd() % 10 ? &ca : NULL);
            else
                dqg_relu(g, nm, a);
            break;
        }
        case 4:
            if (hostile)
                dqg_bias_add(g, nm, a, b, (dqg_data_format)pick(0, 2));
            else
                dqg_bias_add(g, nm, a, fb, DQG_FORMAT_NXC);
            break;
        case 5:
            dqg_add(g, nm, a, b);
            break;
        case 6:
            dqg_mul(g, nm, a, b);
            break;
        case 7:
            dqg_relu(g, nm, a);
            break;
        case 8:
            dqg_clip(g, nm, a, rnd() % 9 ? -1.0f : NAN, (float)pick(-2, 6));
            break;
        case 9:
            if (hostile) {
                for (int i = 0; i < 10; i++)
                    dims[i] = pick(-2, 6);
                dqg_reshape(g, nm, a, (int)pick(-1, 9), rnd() % 20 ? dims : NULL);
            } else {
                int64_t sh[] = {3, -1};
                dqg_reshape(g, nm, a, 2, sh);
            }
            break;
        case 10:
            for (int i = 0; i < 10; i++)
                dims[i] = pick(-1, 5);
            dqg_transpose(g, nm, a, hostile && rnd() % 3 ? dims : NULL);
            break;
        case 11:
            dqg_typecast(g, nm, a, hostile ? some_dtype() : (dqg_dtype)pick(DQG_F32, DQG_BF16));
            break;
        case 12: {
            dqg_dequantize_linear_attrs at = {.opset = (int)pick(8, 25),
                                              .has_axis = rnd() & 1,
                                              .axis = pick(-5, 5),
                                              .block_size = rnd() % 3 ? 0 : pick(-2, 6),
                                              .output_dtype = rnd() % 3 ? 0 : some_dtype()};
            if (!hostile) {
                a = typed_id(g, DQG_U8, qx);
                b = fs;
                at.opset = rnd() % 2 ? 13 : 21;
                at.block_size = 0;
                at.output_dtype = DQG_DTYPE_UNDEF;
            }
            dqg_dequantize_linear(g, nm, a, b, z, rnd() % 15 ? &at : NULL);
            break;
        }
        case 13:
            if (!hostile) {
                a = typed_id(g, DQG_U8, qx);
                b = dqg_reshape(g, NULL, fs, 1, &one);
                z = DQG_NONE;
            }
            dqg_dynamic_dequantize(g, nm, a, b, z,
                                   rnd() % 4 == 0 ? "per_channel"
                                   : rnd() % 5    ? "per_tensor"
                                                  : "bogus",
                                   hostile ? pick(-4, 4) : 1);
            break;
        case 14:
            if (!hostile) {
                a = typed_id(g, DQG_U8, qx);
                b = fs;
            }
            dqg_extended_dequantize_linear(g, nm, a, b, z, hostile ? pick(-4, 4) : 1);
            break;
        case 15:
            if (!hostile) {
                a = typed_id(g, DQG_U8, qx);
                b = fe;
                z = DQG_NONE;
            }
            dqg_dml_dequantize(g, nm, a, b, z);
            break;
        case 16: {
            dqg_quantize_linear_attrs at = {.opset = (int)pick(8, 23),
                                            .has_axis = rnd() & 1,
                                            .axis = pick(-4, 4),
                                            .block_size = rnd() % 3 ? 0 : pick(-1, 4),
                                            .no_saturate = rnd() % 5 == 0};
            if (!hostile) {
                b = fs;
                at.opset = 13;
                at.block_size = 0;
                at.no_saturate = false;
            }
            dqg_quantize_linear(g, nm, a, b, z, &at);
            break;
        }
        default:
            dqg_output(g, a, rnd() % 2 ? NULL : nm);
            break;
        }
    }
    if (dqg_graph_output_count(g) == 0 && dqg_graph_tensor_count(g) > 0)
        dqg_output(g, (dqg_tensor_id)(dqg_graph_tensor_count(g) - 1), NULL);
    dqg_status st = dqg_graph_finalize(g);
    if (st != DQG_OK) {
        cr_assert(dqg_last_error()[0] != '\0', "failed finalize without a message");
        if (getenv("DQG_HOSTILE_TRACE"))
            fprintf(stderr, "%s\n", dqg_last_error());
        dqg_graph_destroy(g);
        return;
    }
    n_finalized++;
    /* Run it when every input and output is small. */
    size_t n_in = dqg_graph_input_count(g), n_out = dqg_graph_output_count(g);
    size_t total = 0;
    for (size_t i = 0; i < n_in; i++)
        total += dqg_tensor_byte_size(g, dqg_graph_input_id(g, i));
    for (size_t i = 0; i < n_out; i++)
        total += dqg_tensor_byte_size(g, dqg_graph_output_id(g, i));
    if (total > (1 << 16) || n_in > 8 || n_out > 8) {
        dqg_graph_destroy(g);
        return;
    }
    dqg_buffer in[8], out[3][8];
    void *mem[8 * 4] = {0};
    int m = 0;
    for (size_t i = 0; i < n_in; i++) {
        dqg_tensor_id t = dqg_graph_input_id(g, i);
        size_t sz = dqg_tensor_byte_size(g, t);
        mem[m] = calloc(1, sz ? sz : 1);
        /* Small integer-ish values keep dequantize/quantize paths busy. */
        for (size_t k = 0; k < sz; k++)
            ((unsigned char *)mem[m])[k] = (unsigned char)(rnd() & 0x3F);
        in[i] = (dqg_buffer){.id = t, .data = mem[m++], .size = sz};
    }
    for (int w = 0; w < 3; w++)
        for (size_t i = 0; i < n_out; i++) {
            dqg_tensor_id t = dqg_graph_output_id(g, i);
            size_t sz = dqg_tensor_byte_size(g, t);
            mem[m] = calloc(1, sz ? sz : 1);
            out[w][i] = (dqg_buffer){.id = t, .data = mem[m++], .size = sz};
        }
    dqg_status ref = dqg_reference_run(g, in, n_in, out[0], n_out);
    n_run++;
    for (int w = 1; w < 3; w++) {
        dqg_compile_options o = dqg_compile_options_default();
        o.backend = w == 1 ? DQG_BACKEND_ONEDNN : DQG_BACKEND_REFERENCE;
        dqg_compiled *c = NULL;
        st = dqg_compile(g, &o, &c);
        if (st != DQG_OK) {
            cr_assert(dqg_last_error()[0] != '\0');
            continue;
        }
        st = dqg_execute(c, in, n_in, out[w], n_out);
        /* A run-time rule (an int32 zero point, a NaN range) fails the same
         * way on every path. */
        cr_assert_eq(st == DQG_OK, ref == DQG_OK, "execute %s vs reference %s: %s",
                     dqg_status_name(st), dqg_status_name(ref), dqg_last_error());
        if (st == DQG_OK && w == 2)
            for (size_t i = 0; i < n_out; i++)
                cr_assert_arr_eq(out[2][i].data, out[0][i].data, out[0][i].size,
                                 "reference backend differs from the reference run");
        dqg_compiled_destroy(c);
    }
    for (int i = 0; i < m; i++)
        free(mem[i]);
    dqg_graph_destroy(g);
}

Test(hostile, random_builder_sequences_part1)
{
    rs = 0xBAD5EED1u;
    for (int i = 0; i < 1500; i++)
        one_graph();
    /* Not a vacuous walk through errors: many graphs build, run and agree. */
    cr_assert_gt(n_finalized, 200, "only %d graphs finalized", n_finalized);
    cr_assert_gt(n_run, 200, "only %d graphs ran", n_run);
}

Test(hostile, random_builder_sequences_part2)
{
    rs = 0xBAD5EED2u;
    for (int i = 0; i < 1500; i++)
        one_graph();
    cr_assert_gt(n_run, 200, "only %d graphs ran", n_run);
}
