/* quickstart: a three-layer int8 MLP (batch 256, 1024 -> 4096 -> 4096 ->
 * 1024) built with the C API from ONNX DequantizeLinear and oneDNN Graph
 * DynamicDequantize nodes, MatMul, bias and ReLU. It prints the explain log,
 * compiles twice (the second time from the cache), runs fused and unfused,
 * checks both against the reference interpreter, and prints a summary. */
#include <math.h>
#include <string.h>

#include "sample_util.h"

enum { BATCH = 256, CHECK_ROWS = 4, IN = 1024, HID = 4096, OUT = 1024 };

typedef struct layer_data {
    int64_t k, n;
    int8_t *w;
    float *w_scale, *bias;
} layer_data;

static layer_data make_layer(int64_t k, int64_t n, uint32_t *rng)
{
    layer_data l = {k, n, malloc((size_t)(k * n)), malloc((size_t)n * 4), malloc((size_t)n * 4)};
    for (int64_t i = 0; i < k * n; i++)
        l.w[i] = (int8_t)(sample_rand(rng) % 255 - 127);
    for (int64_t i = 0; i < n; i++) {
        l.w_scale[i] = 0.0004f + 0.0001f * (float)(i % 5);
        l.bias[i] = 0.01f * (float)((int)(i % 21) - 10);
    }
    return l;
}

/* u8 activations -> DQ -> MatMul(DQ(s8 weights)) -> bias [-> ReLU] [-> Q]. */
static dqg_tensor_id layer(dqg_graph *g, const char *name, dqg_tensor_id x_u8, float x_scale,
                           const layer_data *l, bool dynamic, bool relu, bool quantize)
{
    char n1[64], n2[64], n3[64], n4[64];
    int64_t one = 1, kn[] = {l->k, l->n};
    uint8_t zp = 0;
    dqg_tensor_id xf;
    snprintf(n1, sizeof n1, "%s_x_dq", name);
    if (dynamic) {
        /* oneDNN Graph's DynamicDequantize: scale given as a 1-D tensor. */
        dqg_tensor_id s = dqg_constant(g, NULL, DQG_F32, 1, &one, &x_scale, 4);
        xf = dqg_dynamic_dequantize(g, n1, x_u8, s, DQG_NONE, "per_tensor", 0);
    } else {
        dqg_dequantize_linear_attrs a = {.opset = 21};
        xf =
            dqg_dequantize_linear(g, n1, x_u8, dqg_constant(g, NULL, DQG_F32, 0, &one, &x_scale, 4),
                                  dqg_constant(g, NULL, DQG_U8, 0, &one, &zp, 1), &a);
    }
    snprintf(n2, sizeof n2, "%s_w_dq", name);
    dqg_dequantize_linear_attrs wa = {.opset = 21, .has_axis = true, .axis = 1};
    dqg_tensor_id wf = dqg_dequantize_linear(
        g, n2, dqg_constant(g, NULL, DQG_S8, 2, kn, l->w, (size_t)(l->k * l->n)),
        dqg_constant(g, NULL, DQG_F32, 1, &l->n, l->w_scale, (size_t)l->n * 4), DQG_NONE, &wa);
    dqg_tensor_id y = dqg_matmul(g, name, xf, wf, NULL);
    snprintf(n3, sizeof n3, "%s_bias", name);
    y = dqg_bias_add(g, n3, y, dqg_constant(g, NULL, DQG_F32, 1, &l->n, l->bias, (size_t)l->n * 4),
                     DQG_FORMAT_NXC);
    if (relu) {
        snprintf(n4, sizeof n4, "%s_relu", name);
        y = dqg_relu(g, n4, y);
    }
    if (quantize) {
        float qs = 0.05f;
        dqg_quantize_linear_attrs qa = {.opset = 21};
        snprintf(n4, sizeof n4, "%s_q", name);
        y = dqg_quantize_linear(g, n4, y, dqg_constant(g, NULL, DQG_F32, 0, &one, &qs, 4),
                                dqg_constant(g, NULL, DQG_U8, 0, &one, &zp, 1), &qa);
    }
    return y;
}

static dqg_graph *build(int64_t batch, layer_data *L)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {batch, IN};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_tensor_id h = layer(g, "fc1", x, 0.02f, &L[0], false, true, true);
    h = layer(g, "fc2", h, 0.05f, &L[1], true, true, true);
    CHECK(dqg_output(g, layer(g, "fc3", h, 0.05f, &L[2], false, false, false), "y"));
    CHECK(dqg_graph_finalize(g));
    return g;
}

static double median_exec_ms(dqg_compiled *c, dqg_buffer *in, dqg_buffer *out, int reps)
{
    double t[16];
    CHECK(dqg_execute(c, in, 1, out, 1));
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        CHECK(dqg_execute(c, in, 1, out, 1));
        t[r] = now_ms() - t0;
    }
    for (int i = 0; i < reps; i++)
        for (int j = i + 1; j < reps; j++)
            if (t[j] < t[i]) {
                double tmp = t[i];
                t[i] = t[j];
                t[j] = tmp;
            }
    return t[reps / 2];
}

int main(void)
{
    uint32_t rng = 2024;
    layer_data L[3] = {make_layer(IN, HID, &rng), make_layer(HID, HID, &rng),
                       make_layer(HID, OUT, &rng)};
    dqg_graph *g = build(BATCH, L);
    printf("dqgraph quickstart: int8 MLP, batch %d, %d -> %d -> %d -> %d\n\n", BATCH, IN, HID, HID,
           OUT);

    dqg_cache_clear();
    double t0 = now_ms();
    dqg_compiled *fused;
    CHECK(dqg_compile(g, NULL, &fused));
    double compile_ms = now_ms() - t0;
    printf("explain:\n");
    print_explain(fused);
    t0 = now_ms();
    dqg_compiled *again;
    CHECK(dqg_compile(g, NULL, &again));
    double recompile_ms = now_ms() - t0;
    dqg_cache_stats cs;
    dqg_cache_get_stats(&cs);
    dqg_compile_options off = dqg_compile_options_default();
    off.disable_fusion = true;
    dqg_compiled *unfused;
    CHECK(dqg_compile(g, &off, &unfused));

    uint8_t *x = malloc((size_t)BATCH * IN);
    for (int i = 0; i < BATCH * IN; i++)
        x[i] = (uint8_t)(sample_rand(&rng) % 128);
    float *y_f = malloc((size_t)BATCH * OUT * 4), *y_u = malloc((size_t)BATCH * OUT * 4);
    dqg_buffer in = {.name = "x", .data = x, .size = (size_t)BATCH * IN};
    dqg_buffer of = {.name = "y", .data = y_f, .size = (size_t)BATCH * OUT * 4};
    dqg_buffer ou = {.name = "y", .data = y_u, .size = of.size};
    double fused_ms = median_exec_ms(fused, &in, &of, 9);
    double unfused_ms = median_exec_ms(unfused, &in, &ou, 5);

    /* The reference interpreter runs plain C loops, so it checks the first
     * rows: the same network built for CHECK_ROWS rows of the same input. */
    dqg_graph *small = build(CHECK_ROWS, L);
    float ref[CHECK_ROWS * OUT];
    dqg_buffer sin = {.name = "x", .data = x, .size = (size_t)CHECK_ROWS * IN};
    dqg_buffer sout = {.name = "y", .data = ref, .size = sizeof ref};
    t0 = now_ms();
    CHECK(dqg_reference_run(small, &sin, 1, &sout, 1));
    double ref_ms = now_ms() - t0;
    double maxabs = 0, dfused = 0, dunfused = 0;
    for (int i = 0; i < CHECK_ROWS * OUT; i++) {
        maxabs = fmax(maxabs, fabs(ref[i]));
        dfused = fmax(dfused, fabs((double)y_f[i] - ref[i]));
        dunfused = fmax(dunfused, fabs((double)y_u[i] - ref[i]));
    }

    printf("\n| | |\n|---|---|\n");
    printf("| compile (cache miss) | %.1f ms, %zu partitions, %zu fused |\n", compile_ms,
           dqg_compiled_partition_count(fused), dqg_compiled_fused_count(fused));
    printf("| compile again (cache hit) | %.3f ms (%zu of %zu partitions from the cache) |\n",
           recompile_ms, dqg_compiled_cache_hits(again), dqg_compiled_partition_count(again));
    printf("| cache | %llu hits, %llu misses |\n", (unsigned long long)cs.hits,
           (unsigned long long)cs.misses);
    printf("| fused execute (median) | %.2f ms |\n", fused_ms);
    printf("| unfused execute (median) | %.2f ms |\n", unfused_ms);
    printf("| speedup from fusion | %.1fx |\n", unfused_ms / fused_ms);
    printf("| largest difference from the reference, fused | %.3g (outputs up to %.3g) |\n", dfused,
           maxabs);
    printf("| largest difference from the reference, unfused | %.3g |\n", dunfused);
    printf("| reference check | first %d rows, %.0f ms |\n", CHECK_ROWS, ref_ms);
    /* Intermediate activations are re-quantized to u8 (scale 0.05): a value
     * on a rounding boundary may land one step apart, which fc3 can move by
     * at most 0.05 x sum |w x w_scale| of one column. */
    double bound = 0;
    for (int n = 0; n < OUT; n++) {
        double col = 0;
        for (int k = 0; k < HID; k++)
            col += fabs((double)L[2].w[k * OUT + n] * L[2].w_scale[n]);
        bound = fmax(bound, 0.05 * col);
    }
    bool ok = dfused <= bound && dunfused <= bound;
    printf("\n%s: both paths within one quantization step of the reference (bound %.3g)\n",
           ok ? "OK" : "MISMATCH", bound);
    dqg_compiled_destroy(fused);
    dqg_compiled_destroy(again);
    dqg_compiled_destroy(unfused);
    dqg_graph_destroy(g);
    dqg_graph_destroy(small);
    for (int i = 0; i < 3; i++) {
        free(L[i].w);
        free(L[i].w_scale);
        free(L[i].bias);
    }
    free(x);
    free(y_f);
    free(y_u);
    return ok ? 0 : 1;
}
