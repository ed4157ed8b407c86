/* weight_only_int4_linear: an LLM-style linear layer — f32 activations,
 * int4 weights with blocked scales along the reduction axis (block 32, then
 * 128). dqgraph dequantizes the constant weights once, at compile time, and
 * runs an f32 MatMul; the sample shows the explain log, the memory the
 * weights take in each form, and checks the result against the reference
 * interpreter: within 1e-5 of it relative to the largest magnitude (the
 * numerical contract for float results); exits 1 otherwise. */
#include <math.h>
#include <string.h>

#include "sample_util.h"

enum { M = 8, K = 2048, N = 1024 };

static bool run(int64_t block)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    uint32_t rng = 12345;
    /* s4 weights [K, N], two per byte, and one f32 scale per block of rows. */
    size_t wbytes = (size_t)K * N / 2;
    uint8_t *w = malloc(wbytes);
    for (size_t i = 0; i < wbytes; i++)
        w[i] = (uint8_t)sample_rand(&rng);
    int64_t nblocks = K / block;
    float *scale = malloc((size_t)(nblocks * N) * sizeof(float));
    for (int64_t i = 0; i < nblocks * N; i++)
        scale[i] = 0.001f + (float)(sample_rand(&rng) % 100) * 1e-5f;

    int64_t xd[] = {M, K}, wd[] = {K, N}, sd[] = {nblocks, N};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    dqg_tensor_id wq = dqg_constant(g, "w_q", DQG_S4, 2, wd, w, wbytes);
    dqg_tensor_id ws =
        dqg_constant(g, "w_scale", DQG_F32, 2, sd, scale, (size_t)(nblocks * N) * sizeof(float));
    dqg_dequantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = 0, .block_size = block};
    dqg_tensor_id wf = dqg_dequantize_linear(g, "w_dq", wq, ws, DQG_NONE, &a);
    CHECK(dqg_output(g, dqg_matmul(g, "linear", x, wf, NULL), "y"));
    CHECK(dqg_graph_finalize(g));

    double t0 = now_ms();
    dqg_compiled *c;
    CHECK(dqg_compile(g, NULL, &c));
    double t_compile = now_ms() - t0;
    printf("block %lld: int4 weights %zu KiB + scales %zu KiB; compiled in %.1f ms\n",
           (long long)block, wbytes / 1024, (size_t)(nblocks * N) * sizeof(float) / 1024,
           t_compile);
    print_explain(c);

    float *xin = malloc((size_t)M * K * sizeof(float));
    for (int i = 0; i < M * K; i++)
        xin[i] = (float)((int)(sample_rand(&rng) % 200) - 100) * 0.01f;
    float *y = malloc((size_t)M * N * sizeof(float)), *ref = malloc((size_t)M * N * sizeof(float));
    dqg_buffer in = {.name = "x", .data = xin, .size = (size_t)M * K * sizeof(float)};
    dqg_buffer out = {.name = "y", .data = y, .size = (size_t)M * N * sizeof(float)};
    dqg_buffer rout = {.name = "y", .data = ref, .size = out.size};
    CHECK(dqg_execute(c, &in, 1, &out, 1));
    t0 = now_ms();
    for (int i = 0; i < 10; i++)
        CHECK(dqg_execute(c, &in, 1, &out, 1));
    double t_exec = (now_ms() - t0) / 10;
    CHECK(dqg_reference_run(g, &in, 1, &rout, 1));
    double maxdiff = 0, maxabs = 0;
    for (int i = 0; i < M * N; i++) {
        maxdiff = fmax(maxdiff, fabs((double)y[i] - ref[i]));
        maxabs = fmax(maxabs, fabs((double)ref[i]));
    }
    bool ok = maxdiff <= 1e-5 * maxabs;
    printf("  execute %.3f ms; largest difference from the reference %.3g (outputs up to %.3g; "
           "bound %.3g): %s\n\n",
           t_exec, maxdiff, maxabs, 1e-5 * maxabs, ok ? "OK" : "MISMATCH");
    free(w);
    free(scale);
    free(xin);
    free(y);
    free(ref);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    return ok;
}

int main(void)
{
    bool ok = run(32);
    ok = run(128) && ok;
    return ok ? 0 : 1;
}
