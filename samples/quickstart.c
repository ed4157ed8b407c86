/* quickstart: builds a small quantized linear layer with the C API —
 * int8 weights dequantized per output channel (ONNX DequantizeLinear-21),
 * MatMul, BiasAdd, ReLU — prints it, and runs it on the reference
 * interpreter. */
#include <stdio.h>
#include <stdlib.h>

#include "dqgraph.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        dqg_status st_ = (call);                                                                   \
        if (st_ != DQG_OK) {                                                                       \
            fprintf(stderr, "%s: %s\n", dqg_status_name(st_), dqg_last_error());                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum { M = 4, K = 8, N = 3 };

int main(void)
{
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));

    /* Activations arrive in float; weights are stored as int8 [K, N]. */
    int64_t x_dims[] = {M, K}, w_dims[] = {K, N}, n_dims[] = {N};
    int8_t w_q[K * N];
    for (int i = 0; i < K * N; i++)
        w_q[i] = (int8_t)((i * 37) % 255 - 127);
    float w_scale[N] = {0.01f, 0.02f, 0.005f};
    float bias[N] = {0.5f, -0.25f, 0.0f};

    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, x_dims);
    dqg_tensor_id wq = dqg_constant(g, "w_q", DQG_S8, 2, w_dims, w_q, sizeof w_q);
    dqg_tensor_id ws = dqg_constant(g, "w_scale", DQG_F32, 1, n_dims, w_scale, sizeof w_scale);
    dqg_tensor_id b = dqg_constant(g, "bias", DQG_F32, 1, n_dims, bias, sizeof bias);
    dqg_dequantize_linear_attrs dq = {.opset = 21, .has_axis = true, .axis = 1};
    dqg_tensor_id w = dqg_dequantize_linear(g, "w_dq", wq, ws, DQG_NONE, &dq);
    dqg_tensor_id y = dqg_matmul(g, "fc", x, w, NULL);
    y = dqg_bias_add(g, "fc_bias", y, b, DQG_FORMAT_NXC);
    y = dqg_relu(g, "fc_relu", y);
    CHECK(dqg_output(g, y, "y"));
    CHECK(dqg_graph_finalize(g)); /* the one place a builder error surfaces */

    CHECK(dqg_graph_dump(g, DQG_DUMP_TEXT, stdout));

    float xin[M * K], yout[M * N];
    for (int i = 0; i < M * K; i++)
        xin[i] = (float)(i % 7) - 3.0f;
    dqg_buffer in = {.name = "x", .data = xin, .size = sizeof xin};
    dqg_buffer out = {.name = "y", .data = yout, .size = sizeof yout};
    CHECK(dqg_reference_run(g, &in, 1, &out, 1));

    printf("\ny = relu(x @ dequantize(w_q) + bias), on the reference interpreter:\n");
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++)
            printf(" %9.5f", yout[m * N + n]);
        printf("\n");
    }
    dqg_graph_destroy(g);
    return 0;
}
