/* Writes the hostile-model corpus of tests/corpus/ (the files are checked
 * in; this program documents how each was made and regenerates them):
 *
 *   gen_corpus DIR
 *
 * Every model is small and broken in one specific way; tests/corpus/
 * expected.txt lists the exit code and message `dqgraph run` must give. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/onnx_model.h"

enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6 };

static const char *dir;

static void save(tm_model *m, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (tm_write(m, path) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    tm_free(m);
}

static void save_bytes(const char *name, const uint8_t *b, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* x [1, 8] f32 -> DequantizeLinear(w s8 [8, 4], scale) -> MatMul -> y: the
 * healthy model the broken ones derive from. `scale` has 4 values. */
static tm_model *base(const float *scale)
{
    tm_model *m = tm_new(13);
    int64_t xd[] = {1, 8}, wd[] = {8, 4}, sd[] = {4}, yd[] = {1, 4};
    int8_t w[32];
    for (int i = 0; i < 32; i++)
        w[i] = (int8_t)(i * 7 - 100);
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_init(m, "w", T_INT8, 2, wd, w, sizeof w);
    tm_init(m, "w_scale", T_FLOAT, 1, sd, scale, 16);
    Onnx__NodeProto *n = tm_node(m, "DequantizeLinear", NULL, "dq_w", "w,w_scale", "wf");
    tm_attr_int(m, n, "axis", 1);
    tm_node(m, "MatMul", NULL, "mm", "x,wf", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    return m;
}

static const float good_scale[4] = {0.1f, 0.2f, 0.3f, 0.4f};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus DIR\n");
        return 2;
    }
    dir = argv[1];

    /* Truncated and bit-flipped bytes of the healthy model. */
    tm_model *m = base(good_scale);
    size_t n;
    uint8_t *bytes = tm_pack(m, &n);
    tm_free(m);
    save_bytes("truncated.onnx", bytes, n * 2 / 3);
    uint32_t rng = 12345;
    for (int k = 0; k < 4; k++) {
        uint8_t *flipped = malloc(n);
        memcpy(flipped, bytes, n);
        for (int f = 0; f < 3; f++) {
            rng = rng * 1103515245u + 12345u;
            size_t at = (rng >> 8) % n;
            flipped[at] ^= (uint8_t)(1u << ((rng >> 4) & 7));
        }
        char name[64];
        snprintf(name, sizeof name, "bitflip_%d.onnx", k);
        save_bytes(name, flipped, n);
        free(flipped);
    }
    free(bytes);
    save_bytes("empty.onnx", (const uint8_t *)"", 0);
    save_bytes("text.onnx", (const uint8_t *)"ir_version: 8\ngraph { }\n", 24);

    /* Dimensions: overflowing element count, negative, zero, rank 9. */
    m = tm_new(13);
    int64_t huge[] = {1LL << 31, 1LL << 31, 1LL << 31};
    tm_input(m, "x", T_FLOAT, 3, huge, NULL);
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    save(m, "overflow_dims.onnx");

    m = tm_new(13);
    int64_t neg[] = {2, -3};
    tm_input(m, "x", T_FLOAT, 2, neg, NULL);
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    save(m, "negative_dim.onnx");

    m = tm_new(13);
    int64_t zero[] = {2, 0};
    tm_input(m, "x", T_FLOAT, 2, zero, NULL);
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    save(m, "zero_dim.onnx");

    m = tm_new(13);
    int64_t r9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
    tm_input(m, "x", T_FLOAT, 9, r9, NULL);
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    save(m, "rank9.onnx");

    /* An initializer whose raw data is shorter than its shape. */
    int64_t sd[] = {4};
    m = tm_new(13);
    int64_t xd[] = {4};
    tm_input(m, "x", T_FLOAT, 1, xd, NULL);
    tm_init(m, "b", T_FLOAT, 1, sd, good_scale, 10);
    tm_node(m, "Add", NULL, "add", "x,b", "y");
    tm_output(m, "y", T_FLOAT, 1, xd);
    save(m, "short_raw.onnx");

    /* A tensor that claims 2 GiB (2^29 floats) and holds 16 bytes. */
    m = tm_new(13);
    int64_t big[] = {1LL << 29};
    tm_input(m, "x", T_FLOAT, 1, big, NULL);
    tm_init(m, "b", T_FLOAT, 1, big, good_scale, 16);
    tm_node(m, "Add", NULL, "add", "x,b", "y");
    tm_output(m, "y", T_FLOAT, 1, big);
    save(m, "claims_2gib.onnx");

    /* NaN, infinite and zero scales. */
    const float nan_scale[4] = {0.1f, NAN, 0.3f, 0.4f};
    const float inf_scale[4] = {0.1f, 0.2f, INFINITY, 0.4f};
    const float zero_scale[4] = {0.1f, 0.2f, 0.3f, 0.0f};
    save(base(nan_scale), "nan_scale.onnx");
    save(base(inf_scale), "inf_scale.onnx");
    save(base(zero_scale), "zero_scale.onnx");

    /* Out-of-range axis and block_size. */
    m = tm_new(13);
    int64_t wd[] = {8, 4}, yd[] = {8, 4};
    int8_t w[32] = {0};
    tm_init(m, "w", T_INT8, 2, wd, w, sizeof w);
    tm_init(m, "s", T_FLOAT, 1, sd, good_scale, 16);
    Onnx__NodeProto *node = tm_node(m, "DequantizeLinear", NULL, "dq", "w,s", "y");
    tm_attr_int(m, node, "axis", 5);
    tm_output(m, "y", T_FLOAT, 2, yd);
    save(m, "axis_out_of_range.onnx");

    m = tm_new(21);
    int64_t bsd[] = {2, 4};
    float bs[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    tm_init(m, "w", T_INT8, 2, wd, w, sizeof w);
    tm_init(m, "s", T_FLOAT, 2, bsd, bs, sizeof bs);
    node = tm_node(m, "DequantizeLinear", NULL, "dq", "w,s", "y");
    tm_attr_int(m, node, "axis", 0);
    tm_attr_int(m, node, "block_size", 3);
    tm_output(m, "y", T_FLOAT, 2, yd);
    save(m, "bad_block_size.onnx");

    /* int32 input with a non-zero zero point. */
    m = tm_new(13);
    int32_t x32[4] = {1, 2, 3, 4}, zp32 = 5;
    const float one = 1.0f;
    tm_init(m, "x", T_INT32, 1, sd, x32, sizeof x32);
    tm_init(m, "s", T_FLOAT, 0, NULL, &one, 4);
    tm_init(m, "zp", T_INT32, 0, NULL, &zp32, 4);
    tm_node(m, "DequantizeLinear", NULL, "dq", "x,s,zp", "y");
    tm_output(m, "y", T_FLOAT, 1, sd);
    save(m, "int32_zero_point.onnx");

    /* A cycle through names. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, xd, NULL);
    tm_node(m, "Add", NULL, "a", "x,c", "b");
    tm_node(m, "Relu", NULL, "r", "b", "c");
    tm_output(m, "c", T_FLOAT, 1, xd);
    save(m, "cycle.onnx");

    /* An initializer shadowing an input of another type. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, xd, NULL);
    tm_input(m, "b", T_UINT8, 1, xd, NULL);
    tm_init(m, "b", T_FLOAT, 1, sd, good_scale, 16);
    tm_node(m, "Add", NULL, "add", "x,b", "y");
    tm_output(m, "y", T_FLOAT, 1, xd);
    save(m, "shadowed_input.onnx");

    /* An operator dqgraph does not import, and a model without outputs. */
    m = tm_new(17);
    tm_input(m, "x", T_FLOAT, 1, xd, NULL);
    tm_node(m, "NonZero", NULL, "nonzero_1", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, xd);
    save(m, "unsupported_op.onnx");

    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, xd, NULL);
    tm_node(m, "Relu", NULL, "r", "x", "y");
    save(m, "no_outputs.onnx");

    /* External data that escapes the model's folder. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, xd, NULL);
    tm_init_external(m, "b", T_FLOAT, 1, sd, "../../../etc/passwd");
    tm_node(m, "Add", NULL, "add", "x,b", "y");
    tm_output(m, "y", T_FLOAT, 1, xd);
    save(m, "external_escape.onnx");

    /* A symbolic dimension nobody gives a value. */
    m = tm_new(13);
    int64_t symd[] = {-1, 4};
    tm_input(m, "x", T_FLOAT, 2, symd, "batch");
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    save(m, "symbolic_dim.onnx");
    return 0;
}
