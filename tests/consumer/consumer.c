/* A user's program: builds a quantized layer, runs it, checks the result
 * against values worked out by hand, and checks that the library it runs
 * with is the version of the header it was compiled with. Links only what
 * dqgraph's package says to link. */
#include <dqgraph.h>
#include <dqgraph_onnx.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, dqg_status st)
{
    fprintf(stderr, "consumer: %s: %s: %s\n", what, dqg_status_name(st), dqg_last_error());
    return 1;
}

int main(void)
{
    if (strcmp(dqg_version(), DQG_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: library %s, header %s\n", dqg_version(), DQG_VERSION_STRING);
        return 1;
    }
    /* y = relu(((x - 128) * 0.5) @ (w * [0.25, 1])), x 2x3 u8, w 3x2 s8. */
    const uint8_t x[6] = {128, 130, 126, 140, 128, 129};
    const int8_t w[6] = {1, -1, 2, 0, -4, 3};
    const float x_scale = 0.5f, w_scale[2] = {0.25f, 1.0f};
    const uint8_t x_zp = 128;
    int64_t xd[] = {2, 3}, wd[] = {3, 2}, two = 2, one = 1;
    dqg_graph *g;
    dqg_status st = dqg_graph_create(&g);
    if (st != DQG_OK)
        return fail("dqg_graph_create", st);
    dqg_dequantize_linear_attrs pt = {.opset = 21}, pc = {.opset = 21, .has_axis = true, .axis = 1};
    dqg_tensor_id xq = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_tensor_id xf =
        dqg_dequantize_linear(g, "x_dq", xq, dqg_constant(g, "xs", DQG_F32, 0, &one, &x_scale, 4),
                              dqg_constant(g, "xz", DQG_U8, 0, &one, &x_zp, 1), &pt);
    dqg_tensor_id wf = dqg_dequantize_linear(
        g, "w_dq", dqg_constant(g, "w", DQG_S8, 2, wd, w, sizeof w),
        dqg_constant(g, "ws", DQG_F32, 1, &two, w_scale, sizeof w_scale), DQG_NONE, &pc);
    dqg_output(g, dqg_relu(g, "act", dqg_matmul(g, "fc", xf, wf, NULL)), "y");
    if ((st = dqg_graph_finalize(g)) != DQG_OK)
        return fail("dqg_graph_finalize", st);
    dqg_compiled *c;
    if ((st = dqg_compile(g, NULL, &c)) != DQG_OK)
        return fail("dqg_compile", st);
    float y[4];
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = y, .size = sizeof y};
    if ((st = dqg_execute(c, &in, 1, &out, 1)) != DQG_OK)
        return fail("dqg_execute", st);
    /* x - 128 = [[0, 2, -2], [12, 0, 1]], times 0.5 = [[0, 1, -1], [6, 0, 0.5]];
     * w * scale = [[0.25, -1], [0.5, 0], [-1, 3]]. */
    const float expected[4] = {1.5f, 0.0f, 1.0f, 0.0f};
    for (int i = 0; i < 4; i++)
        if (y[i] != expected[i]) {
            fprintf(stderr, "consumer: y[%d] = %g, expected %g\n", i, y[i], expected[i]);
            return 1;
        }
    /* The ONNX front end links too: a buffer that is no model is refused. */
    dqg_graph *m = NULL;
    if (dqg_onnx_load_memory("not a model", 11, NULL, NULL, &m) != DQG_PARSE_ERROR || m) {
        fprintf(stderr, "consumer: a bogus ONNX model was not refused\n");
        return 1;
    }
    printf("consumer: dqgraph %s, %zu partition(s), y = [%g %g; %g %g]\n", dqg_version(),
           dqg_compiled_partition_count(c), y[0], y[1], y[2], y[3]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    return 0;
}
