/* onnx_model: a QDQ model as ONNX Runtime's quantizer writes it — x is
 * quantized to u8 and dequantized again, the weights are s8 per output
 * channel behind DequantizeLinear, then MatMul, bias Add and Relu, twice.
 * The sample writes the model file itself (through protobuf-c, with the
 * small helper the tests use), loads it with dqg_onnx_load_file, compiles
 * it, runs it, checks it against the reference interpreter, and writes an
 * input file so that the same model can be run with the command-line tool:
 *
 *   onnx_model [DIR]       writes DIR/qdq_mlp.onnx and DIR/input_0.pb
 *   dqgraph run DIR/qdq_mlp.onnx -i DIR/input_0.pb -o DIR
 *   dqgraph explain DIR/qdq_mlp.onnx */
#include <math.h>
#include <string.h>

#include "dqgraph_onnx.h"
#include "sample_util.h"
#include "support/onnx_model.h"

enum { BATCH = 64, IN = 256, HIDDEN = 512, OUT = 128 };
enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3 };

/* Adds "<p>_w" (s8 [k, n]), "<p>_w_scale" ([n]) and "<p>_b" (f32 [n]), and
 * the nodes DequantizeLinear(w) -> MatMul(in) -> Add(b) -> Relu -> "<p>_out". */
static void linear(tm_model *m, const char *p, const char *in, int k, int n, uint32_t *rng)
{
    int8_t *w = malloc((size_t)k * n);
    float *s = malloc((size_t)n * sizeof *s), *b = malloc((size_t)n * sizeof *b);
    for (int i = 0; i < k * n; i++)
        w[i] = (int8_t)(sample_rand(rng) % 255 - 127);
    for (int i = 0; i < n; i++) {
        s[i] = 0.5f / (float)k * (float)(1 + i % 4);
        b[i] = 0.01f * (float)(i % 7);
    }
    char nm[6][64];
    const char *sfx[] = {"w", "w_scale", "b", "wf", "mm", "out"};
    for (int i = 0; i < 6; i++)
        snprintf(nm[i], sizeof nm[i], "%s_%s", p, sfx[i]);
    int64_t wd[] = {k, n}, nd[] = {n};
    tm_init(m, nm[0], T_INT8, 2, wd, w, (size_t)k * n);
    tm_init(m, nm[1], T_FLOAT, 1, nd, s, (size_t)n * sizeof *s);
    tm_init(m, nm[2], T_FLOAT, 1, nd, b, (size_t)n * sizeof *b);
    char args[256];
    snprintf(args, sizeof args, "%s,%s", nm[0], nm[1]);
    tm_attr_int(m, tm_node(m, "DequantizeLinear", NULL, NULL, args, nm[3]), "axis", 1);
    snprintf(args, sizeof args, "%s,%s", in, nm[3]);
    tm_node(m, "MatMul", NULL, NULL, args, nm[4]);
    char added[80];
    snprintf(added, sizeof added, "%s_biased", p);
    snprintf(args, sizeof args, "%s,%s", nm[4], nm[2]);
    tm_node(m, "Add", NULL, NULL, args, added);
    tm_node(m, "Relu", NULL, NULL, added, nm[5]);
    free(w);
    free(s);
    free(b);
}

/* Quantize -> dequantize of activation `in` with a fixed scale. */
static void qdq(tm_model *m, const char *p, const char *in, const char *out)
{
    const float scale = 0.02f;
    const uint8_t zp = 128;
    char s[64], z[64], q[64], args[200];
    snprintf(s, sizeof s, "%s_scale", p);
    snprintf(z, sizeof z, "%s_zp", p);
    snprintf(q, sizeof q, "%s_q", p);
    tm_init(m, s, T_FLOAT, 0, NULL, &scale, sizeof scale);
    tm_init(m, z, T_UINT8, 0, NULL, &zp, 1);
    snprintf(args, sizeof args, "%s,%s,%s", in, s, z);
    tm_node(m, "QuantizeLinear", NULL, NULL, args, q);
    snprintf(args, sizeof args, "%s,%s,%s", q, s, z);
    tm_node(m, "DequantizeLinear", NULL, NULL, args, out);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char model_path[512], input_path[512];
    snprintf(model_path, sizeof model_path, "%s/qdq_mlp.onnx", dir);
    snprintf(input_path, sizeof input_path, "%s/input_0.pb", dir);

    /* 1. Write the model. */
    uint32_t rng = 11;
    tm_model *m = tm_new(13);
    int64_t xd[] = {BATCH, IN}, yd[] = {BATCH, OUT};
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    qdq(m, "x", "x", "x_dq");
    linear(m, "fc1", "x_dq", IN, HIDDEN, &rng);
    qdq(m, "h", "fc1_out", "h_dq");
    linear(m, "fc2", "h_dq", HIDDEN, OUT, &rng);
    tm_node(m, "Identity", NULL, NULL, "fc2_out", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    if (tm_write(m, model_path) != 0) {
        fprintf(stderr, "cannot write %s\n", model_path);
        return 1;
    }
    tm_free(m);
    printf("wrote %s\n", model_path);

    /* 2. Load, compile and explain. */
    dqg_graph *g;
    CHECK(dqg_onnx_load_file(model_path, NULL, &g));
    dqg_compiled *c;
    CHECK(dqg_compile(g, NULL, &c));
    printf("%zu ops imported; %zu partitions, %zu fused:\n", dqg_graph_op_count(g),
           dqg_compiled_partition_count(c), dqg_compiled_fused_count(c));
    print_explain(c);

    /* 3. Run, and check against the reference interpreter. */
    static float x[BATCH * IN], y[BATCH * OUT], ref[BATCH * OUT];
    for (int i = 0; i < BATCH * IN; i++)
        x[i] = sinf((float)i * 0.37f);
    CHECK(dqg_tensor_file_write(input_path, "x", DQG_F32, 2, xd, x));
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = y, .size = sizeof y};
    dqg_buffer rout = {.name = "y", .data = ref, .size = sizeof ref};
    double t0 = now_ms();
    CHECK(dqg_execute(c, &in, 1, &out, 1));
    double t1 = now_ms();
    CHECK(dqg_reference_run(g, &in, 1, &rout, 1));
    double maxdiff = 0, maxabs = 0;
    for (int i = 0; i < BATCH * OUT; i++) {
        maxdiff = fmax(maxdiff, fabs((double)y[i] - ref[i]));
        maxabs = fmax(maxabs, fabs((double)ref[i]));
    }
    printf("first run %.2f ms; largest difference from the reference %.3g (outputs up to %.3g)\n",
           t1 - t0, maxdiff, maxabs);
    printf("wrote %s; try: dqgraph run %s -i %s -o %s\n", input_path, model_path, input_path, dir);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    /* Requantized activations can differ by one step where a value lies on
     * a rounding boundary; anything beyond that is a failure. */
    return maxdiff <= 0.02 * maxabs + 1e-5 ? 0 : 1;
}
