/* onnx_model: a QDQ model as ONNX Runtime's quantizer writes it — x is
 * quantized to u8 and dequantized again, the weights are s8 per output
 * channel behind DequantizeLinear, then MatMul, bias Add and Relu, twice.
 * The sample writes the model file itself (through protobuf-c, with the
 * small helper the tests use), loads it with dqg_onnx_load_file, compiles
 * it, runs it, checks it against the reference interpreter (exit 1 if a
 * check fails), and writes an input file so that the same model can be run
 * with the command-line tool:
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
 * the nodes DequantizeLinear(w) -> MatMul(in) -> Add(b) -> Relu -> "<p>_out".
 * Keeps the weights and their scales in w_out and s_out (the caller frees
 * them). */
static void linear(tm_model *m, const char *p, const char *in, int k, int n, uint32_t *rng,
                   int8_t **w_out, float **s_out)
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
    *w_out = w;
    *s_out = s;
    free(b);
}

/* The activations' quantization step. */
#define ACT_SCALE 0.02f

/* Quantize -> dequantize of activation `in` with a fixed scale; the u8
 * tensor between them is "<p>_q". */
static void qdq(tm_model *m, const char *p, const char *in, const char *out)
{
    const float scale = ACT_SCALE;
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
    int64_t xd[] = {BATCH, IN}, yd[] = {BATCH, OUT}, hd[] = {BATCH, HIDDEN};
    int8_t *w[2];
    float *ws[2];
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    qdq(m, "x", "x", "x_dq");
    linear(m, "fc1", "x_dq", IN, HIDDEN, &rng, &w[0], &ws[0]);
    qdq(m, "h", "fc1_out", "h_dq");
    linear(m, "fc2", "h_dq", HIDDEN, OUT, &rng, &w[1], &ws[1]);
    tm_node(m, "Identity", NULL, NULL, "fc2_out", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    /* The hidden activations, as quantized between the layers: an output
     * too, so that fc2 can be checked on the input it was given. */
    tm_output(m, "h_q", T_UINT8, 2, hd);
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
    static uint8_t h[BATCH * HIDDEN], h_ref[BATCH * HIDDEN];
    for (int i = 0; i < BATCH * IN; i++)
        x[i] = sinf((float)i * 0.37f);
    CHECK(dqg_tensor_file_write(input_path, "x", DQG_F32, 2, xd, x));
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out[2] = {{.name = "y", .data = y, .size = sizeof y},
                         {.name = "h_q", .data = h, .size = sizeof h}};
    dqg_buffer rout[2] = {{.name = "y", .data = ref, .size = sizeof ref},
                          {.name = "h_q", .data = h_ref, .size = sizeof h_ref}};
    double t0 = now_ms();
    CHECK(dqg_execute(c, &in, 1, out, 2));
    double t1 = now_ms();
    CHECK(dqg_reference_run(g, &in, 1, rout, 2));
    /* The numerical contract: the u8 activations within one unit of the
     * reference's. Where one lands a unit apart (a value on a rounding
     * boundary), fc2's input differs there by ACT_SCALE, which moves output
     * n by at most ACT_SCALE * |w[k][n]| * w_scale[n] (the bias Add and Relu
     * after the MatMul never widen a difference); beyond those moves, y is
     * within 1e-5 of the reference relative to its largest magnitude. */
    int h_diff = 0, h_apart = 0;
    for (int i = 0; i < BATCH * HIDDEN; i++) {
        int d = abs((int)h[i] - (int)h_ref[i]);
        h_diff = d > h_diff ? d : h_diff;
        h_apart += d != 0;
    }
    double maxabs = 0, maxdiff = 0, worst = 0;
    for (int i = 0; i < BATCH * OUT; i++)
        maxabs = fmax(maxabs, fabs((double)ref[i]));
    bool ok = h_diff <= 1;
    for (int r = 0; r < BATCH; r++)
        for (int n = 0; n < OUT; n++) {
            double moved = 0;
            for (int k = 0; k < HIDDEN; k++)
                moved += abs((int)h[r * HIDDEN + k] - (int)h_ref[r * HIDDEN + k]) * ACT_SCALE *
                         fabs((double)w[1][k * OUT + n] * ws[1][n]);
            double diff = fabs((double)y[r * OUT + n] - ref[r * OUT + n]);
            maxdiff = fmax(maxdiff, diff);
            worst = fmax(worst, diff - moved);
            ok = ok && diff <= moved + 1e-5 * maxabs;
        }
    printf("first run %.2f ms\nh_q (u8): largest difference from the reference %d unit, %d of %d "
           "values apart (bound 1)\ny (f32): largest difference %.3g (outputs up to %.3g); beyond "
           "what h_q's differences explain: %.3g (bound %.3g)\n%s\n",
           t1 - t0, h_diff, h_apart, BATCH * HIDDEN, maxdiff, maxabs, fmax(worst, 0), 1e-5 * maxabs,
           ok ? "OK" : "MISMATCH");
    printf("wrote %s; try: dqgraph run %s -i %s -o %s\n", input_path, model_path, input_path, dir);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    for (int i = 0; i < 2; i++) {
        free(w[i]);
        free(ws[i]);
    }
    return ok ? 0 : 1;
}
