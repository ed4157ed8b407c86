/* quickstart: a three-layer int8 MLP (batch 256, 1024 -> 4096 -> 4096 ->
 * 1024) built with the C API from ONNX DequantizeLinear and oneDNN Graph
 * DynamicDequantize nodes, MatMul, bias and ReLU. It prints the explain log,
 * compiles twice (the second time from the cache), runs fused and unfused,
 * checks both against the reference interpreter layer by layer, within the
 * numerical contract (u8 activations within one unit, f32 outputs within
 * 1e-5 of the largest magnitude), prints a summary, and exits 1 if a check
 * fails. */
#include <math.h>
#include <string.h>

#include "sample_util.h"

enum { BATCH = 256, CHECK_ROWS = 4, IN = 1024, HID = 4096, OUT = 1024 };
/* Scales of the u8 activations: the input x, and h1 and h2 between layers. */
#define X_SCALE 0.02f
#define H_SCALE 0.05f

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
        float qs = H_SCALE;
        dqg_quantize_linear_attrs qa = {.opset = 21};
        snprintf(n4, sizeof n4, "%s_q", name);
        y = dqg_quantize_linear(g, n4, y, dqg_constant(g, NULL, DQG_F32, 0, &one, &qs, 4),
                                dqg_constant(g, NULL, DQG_U8, 0, &one, &zp, 1), &qa);
    }
    return y;
}

/* The MLP. The hidden activations h1 and h2 (u8) are graph outputs too, so
 * that each layer can be checked on the very input it was given. */
static dqg_graph *build(int64_t batch, layer_data *L)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {batch, IN};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_tensor_id h1 = layer(g, "fc1", x, X_SCALE, &L[0], false, true, true);
    dqg_tensor_id h2 = layer(g, "fc2", h1, H_SCALE, &L[1], true, true, true);
    CHECK(dqg_output(g, layer(g, "fc3", h2, H_SCALE, &L[2], false, false, false), "y"));
    CHECK(dqg_output(g, h1, "h1"));
    CHECK(dqg_output(g, h2, "h2"));
    CHECK(dqg_graph_finalize(g));
    return g;
}

/* Layer i alone, for `rows` rows of its u8 input "in": the reference for it. */
static dqg_graph *build_layer(int i, int64_t rows, layer_data *L)
{
    static const float in_scale[3] = {X_SCALE, H_SCALE, H_SCALE};
    static const char *const names[3] = {"fc1", "fc2", "fc3"};
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    int64_t xd[] = {rows, L[i].k};
    dqg_tensor_id x = dqg_input(g, "in", DQG_U8, 2, xd);
    CHECK(dqg_output(g, layer(g, names[i], x, in_scale[i], &L[i], i == 1, i < 2, i < 2), "out"));
    CHECK(dqg_graph_finalize(g));
    return g;
}

/* The numerical contract, layer by layer: given the same input, a layer's
 * u8 output is within one unit of the reference interpreter's, and its f32
 * output within 1e-5 of it relative to the largest magnitude. Checks the
 * first CHECK_ROWS rows of one execution's h1, h2 and y; returns whether
 * all three hold, and prints each layer's largest difference. */
static bool check_layers(const char *label, layer_data *L, const uint8_t *x, const uint8_t *h1,
                         const uint8_t *h2, const float *y)
{
    const uint8_t *in[3] = {x, h1, h2};
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        dqg_graph *g = build_layer(i, CHECK_ROWS, L);
        size_t n = (size_t)CHECK_ROWS * (size_t)L[i].n;
        void *ref = malloc(n * (i < 2 ? 1 : sizeof(float)));
        dqg_buffer ib = {.name = "in", .data = (void *)in[i], .size = (size_t)CHECK_ROWS * L[i].k};
        dqg_buffer ob = {.name = "out", .data = ref, .size = n * (i < 2 ? 1 : sizeof(float))};
        CHECK(dqg_reference_run(g, &ib, 1, &ob, 1));
        double diff = 0, maxabs = 0, bound;
        size_t off_by_one = 0;
        if (i < 2) {
            const uint8_t *got = i == 0 ? h1 : h2, *want = ref;
            for (size_t e = 0; e < n; e++) {
                int d = abs((int)got[e] - (int)want[e]);
                diff = fmax(diff, d);
                off_by_one += d == 1;
            }
            bound = 1;
            printf("| %s fc%d (u8) | largest difference %.0f unit (%zu of %zu values one unit "
                   "apart); bound 1 unit |\n",
                   label, i + 1, diff, off_by_one, n);
        } else {
            const float *want = ref;
            for (size_t e = 0; e < n; e++) {
                diff = fmax(diff, fabs((double)y[e] - want[e]));
                maxabs = fmax(maxabs, fabs((double)want[e]));
            }
            bound = 1e-5 * maxabs;
            printf("| %s fc3 (f32) | largest difference %.3g (outputs up to %.3g); bound %.3g |\n",
                   label, diff, maxabs, bound);
        }
        ok = ok && diff <= bound;
        free(ref);
        dqg_graph_destroy(g);
    }
    return ok;
}

static double median_exec_ms(dqg_compiled *c, dqg_buffer *in, dqg_buffer *out, int reps)
{
    double t[16];
    CHECK(dqg_execute(c, in, 1, out, 3));
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        CHECK(dqg_execute(c, in, 1, out, 3));
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
    /* One set of outputs per path: y, h1, h2. */
    float *y[2];
    uint8_t *h1[2], *h2[2];
    dqg_buffer out[2][3];
    for (int p = 0; p < 2; p++) {
        y[p] = malloc((size_t)BATCH * OUT * 4);
        h1[p] = malloc((size_t)BATCH * HID);
        h2[p] = malloc((size_t)BATCH * HID);
        out[p][0] = (dqg_buffer){.name = "y", .data = y[p], .size = (size_t)BATCH * OUT * 4};
        out[p][1] = (dqg_buffer){.name = "h1", .data = h1[p], .size = (size_t)BATCH * HID};
        out[p][2] = (dqg_buffer){.name = "h2", .data = h2[p], .size = (size_t)BATCH * HID};
    }
    dqg_buffer in = {.name = "x", .data = x, .size = (size_t)BATCH * IN};
    double fused_ms = median_exec_ms(fused, &in, out[0], 9);
    double unfused_ms = median_exec_ms(unfused, &in, out[1], 5);

    printf("\n| | |\n|---|---|\n");
    printf("| compile (cache miss) | %.1f ms, %zu partitions, %zu fused |\n", compile_ms,
           dqg_compiled_partition_count(fused), dqg_compiled_fused_count(fused));
    printf("| compile again (cache hit) | %.3f ms (%zu of %zu partitions from the cache) |\n",
           recompile_ms, dqg_compiled_cache_hits(again), dqg_compiled_partition_count(again));
    printf("| cache counters | %llu partitions built (misses), %llu whole-graph hits |\n",
           (unsigned long long)cs.misses, (unsigned long long)cs.plan_hits);
    printf("| fused execute (median) | %.2f ms |\n", fused_ms);
    printf("| unfused execute (median) | %.2f ms |\n", unfused_ms);
    printf("| speedup from fusion on this machine | %.1fx |\n", unfused_ms / fused_ms);

    /* The reference interpreter runs plain C loops, so it checks the first
     * rows, each layer on the input that layer was given. */
    t0 = now_ms();
    bool ok = check_layers("fused", L, x, h1[0], h2[0], y[0]);
    ok = check_layers("unfused", L, x, h1[1], h2[1], y[1]) && ok;
    printf("| reference check | first %d rows, %.0f ms |\n", CHECK_ROWS, now_ms() - t0);
    printf("\n%s: every layer of both paths within the numerical contract of the reference\n",
           ok ? "OK" : "MISMATCH");
    dqg_compiled_destroy(fused);
    dqg_compiled_destroy(again);
    dqg_compiled_destroy(unfused);
    dqg_graph_destroy(g);
    for (int i = 0; i < 3; i++) {
        free(L[i].w);
        free(L[i].w_scale);
        free(L[i].bias);
    }
    for (int p = 0; p < 2; p++) {
        free(y[p]);
        free(h1[p]);
        free(h2[p]);
    }
    free(x);
    return ok ? 0 : 1;
}
