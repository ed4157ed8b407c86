/* dynamic_quantization: activations quantized at run time —
 * DynamicQuantizeLinear computes a u8 tensor with its scale and zero point,
 * oneDNN Graph's DynamicDequantize takes those as run-time inputs, and a
 * MatMul with int8 per-channel weights follows. The result is checked
 * against the reference interpreter. */
#include <math.h>

#include "sample_util.h"

enum { M = 32, K = 256, N = 64 };

int main(void)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    uint32_t rng = 7;
    int64_t xd[] = {M, K}, wd[] = {K, N}, nd[] = {N}, one[] = {1};
    static int8_t w[K * N];
    static float ws[N];
    for (int i = 0; i < K * N; i++)
        w[i] = (int8_t)(sample_rand(&rng) % 255 - 127);
    for (int i = 0; i < N; i++)
        ws[i] = 0.002f * (float)(1 + i % 5);

    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    dqg_tensor_id xs, xz;
    dqg_tensor_id xq = dqg_dynamic_quantize_linear(g, "x_q", x, &xs, &xz);
    /* DynamicDequantize takes 1-D scales and zero points. */
    dqg_tensor_id xs1 = dqg_reshape(g, "x_scale_1d", xs, 1, one);
    dqg_tensor_id xz1 = dqg_reshape(g, "x_zp_1d", xz, 1, one);
    dqg_tensor_id xf = dqg_dynamic_dequantize(g, "x_dq", xq, xs1, xz1, "per_tensor", 1);
    dqg_tensor_id wq = dqg_constant(g, "w_q", DQG_S8, 2, wd, w, sizeof w);
    dqg_tensor_id wsc = dqg_constant(g, "w_scale", DQG_F32, 1, nd, ws, sizeof ws);
    dqg_tensor_id wf = dqg_dynamic_dequantize(g, "w_dq", wq, wsc, DQG_NONE, "per_channel", 1);
    CHECK(dqg_output(g, dqg_matmul(g, "mm", xf, wf, NULL), "y"));
    CHECK(dqg_graph_finalize(g));

    dqg_compiled *c;
    CHECK(dqg_compile(g, NULL, &c));
    printf("DynamicQuantizeLinear -> DynamicDequantize -> MatMul:\n");
    print_explain(c);

    static float xin[M * K], y[M * N], ref[M * N];
    for (int i = 0; i < M * K; i++)
        xin[i] = sinf((float)i * 0.01f) * 3.0f;
    dqg_buffer in = {.name = "x", .data = xin, .size = sizeof xin};
    dqg_buffer out = {.name = "y", .data = y, .size = sizeof y};
    dqg_buffer rout = {.name = "y", .data = ref, .size = sizeof ref};
    CHECK(dqg_execute(c, &in, 1, &out, 1));
    CHECK(dqg_reference_run(g, &in, 1, &rout, 1));
    double maxdiff = 0, maxabs = 0;
    for (int i = 0; i < M * N; i++) {
        maxdiff = fmax(maxdiff, fabs((double)y[i] - ref[i]));
        maxabs = fmax(maxabs, fabs((double)ref[i]));
    }
    printf("largest difference from the reference: %.3g (outputs up to %.3g)\n", maxdiff, maxabs);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    return maxdiff <= 1e-5 * maxabs ? 0 : 1;
}
