/* Model writers of model_zoo.h. Weights come from a fixed xorshift stream
 * so every run writes byte-identical files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_zoo.h"

enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6, T_UINT4 = 21, T_INT4 = 22 };

static uint32_t next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static float uniform(uint32_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)(next(s) >> 8) / (float)(1u << 24);
}

static int8_t *s8_weights(int64_t n, uint32_t *s)
{
    int8_t *w = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        w[i] = (int8_t)((int)(next(s) % 255) - 127);
    return w;
}

static float *scales(int64_t n, float lo, float hi, uint32_t *s)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = uniform(s, lo, hi);
    return v;
}

static tm_model *matmul_io(int64_t opset, int32_t x_type, int64_t M, int64_t K, int64_t N)
{
    tm_model *m = tm_new(opset);
    int64_t xd[] = {M, K}, yd[] = {M, N};
    tm_input(m, "x", x_type, 2, xd, NULL);
    tm_output(m, "y", T_FLOAT, 2, yd);
    return m;
}

tm_model *zoo_dql_matmul(int64_t M, int64_t K, int64_t N, uint32_t seed)
{
    tm_model *m = matmul_io(13, T_FLOAT, M, K, N);
    int64_t wd[] = {K, N};
    int8_t *w = s8_weights(K * N, &seed);
    float *ws = scales(N, 0.001f, 0.01f, &seed);
    tm_init(m, "w_q", T_INT8, 2, wd, w, (size_t)(K * N));
    tm_init(m, "w_scale", T_FLOAT, 1, &N, ws, (size_t)N * sizeof(float));
    tm_node(m, "DynamicQuantizeLinear", "", "dql", "x", "x_q,x_scale,x_zp");
    tm_node(m, "DequantizeLinear", "", "x_dq", "x_q,x_scale,x_zp", "x_f");
    Onnx__NodeProto *n = tm_node(m, "DequantizeLinear", "", "w_dq", "w_q,w_scale", "w_f");
    tm_attr_int(m, n, "axis", 1);
    tm_node(m, "MatMul", "", "mm", "x_f,w_f", "y");
    free(w);
    free(ws);
    return m;
}

tm_model *zoo_ort_dynamic_matmul(int64_t M, int64_t K, int64_t N, bool bias, uint32_t seed)
{
    tm_model *m = matmul_io(13, T_FLOAT, M, K, N);
    int64_t wd[] = {K, N};
    int8_t *w = s8_weights(K * N, &seed);
    float ws = uniform(&seed, 0.001f, 0.01f);
    float *b = scales(N, -0.5f, 0.5f, &seed);
    tm_init(m, "w_q", T_INT8, 2, wd, w, (size_t)(K * N));
    tm_init(m, "w_scale", T_FLOAT, 0, NULL, &ws, sizeof ws);
    tm_node(m, "DynamicQuantizeLinear", "", "dql", "x", "x_q,x_scale,x_zp");
    tm_node(m, "MatMulInteger", "", "mmi", "x_q,w_q,x_zp", "acc");
    Onnx__NodeProto *c = tm_node(m, "Cast", "", "cast", "acc", "acc_f");
    tm_attr_int(m, c, "to", T_FLOAT);
    tm_node(m, "Mul", "", "scale", "x_scale,w_scale", "s");
    if (bias) {
        tm_init(m, "bias", T_FLOAT, 1, &N, b, (size_t)N * sizeof(float));
        tm_node(m, "Mul", "", "mul", "acc_f,s", "y0");
        tm_node(m, "Add", "", "add_bias", "y0,bias", "y");
    } else {
        tm_node(m, "Mul", "", "mul", "acc_f,s", "y");
    }
    free(w);
    free(b);
    return m;
}

tm_model *zoo_ort_dynamic_matmul_u8w(int64_t M, int64_t K, int64_t N, bool per_column,
                                     uint32_t seed, double *step_bound)
{
    tm_model *m = matmul_io(13, T_FLOAT, M, K, N);
    int64_t wd[] = {K, N}, nz = per_column ? N : 1;
    uint8_t *w = malloc((size_t)(K * N)), *wz = malloc((size_t)nz);
    float *ws = malloc((size_t)nz * sizeof *ws);
    for (int64_t i = 0; i < K * N; i++)
        w[i] = (uint8_t)(next(&seed) % 256);
    for (int64_t n = 0; n < nz; n++) {
        wz[n] = per_column ? (uint8_t)(108 + next(&seed) % 41) : 131;
        ws[n] = uniform(&seed, 0.001f, 0.01f);
    }
    tm_init(m, "w_q", T_UINT8, 2, wd, w, (size_t)(K * N));
    tm_init(m, "w_scale", T_FLOAT, per_column ? 1 : 0, &nz, ws, (size_t)nz * sizeof *ws);
    tm_init(m, "w_zp", T_UINT8, per_column ? 1 : 0, &nz, wz, (size_t)nz);
    tm_node(m, "DynamicQuantizeLinear", "", "dql", "x", "x_q,x_scale,x_zp");
    tm_node(m, "MatMulInteger", "", "mmi", "x_q,w_q,x_zp,w_zp", "acc");
    Onnx__NodeProto *c = tm_node(m, "Cast", "", "cast", "acc", "acc_f");
    tm_attr_int(m, c, "to", T_FLOAT);
    tm_node(m, "Mul", "", "scale", "x_scale,w_scale", "s");
    tm_node(m, "Mul", "", "mul", "acc_f,s", "y");
    double worst = 0;
    for (int64_t n = 0; n < N; n++) {
        double col = 0;
        for (int64_t k = 0; k < K; k++)
            col += fabs((double)w[k * N + n] - wz[per_column ? n : 0]);
        worst = fmax(worst, (double)ws[per_column ? n : 0] * col);
    }
    if (step_bound) /* one step of every activation, x in [-2, 2) */
        *step_bound = 4.0 / 255.0 * worst;
    free(w);
    free(wz);
    free(ws);
    return m;
}

tm_model *zoo_rnn(const char *op_type, int64_t T, int64_t N, int64_t I, int64_t H,
                  bool bidirectional, uint32_t seed)
{
    int64_t D = bidirectional ? 2 : 1;
    int64_t G = strcmp(op_type, "LSTM") == 0 ? 4 : strcmp(op_type, "GRU") == 0 ? 3 : 1;
    tm_model *m = tm_new(14);
    int64_t xd[] = {T, N, I}, yd[] = {T, D, N, H}, hd[] = {D, N, H};
    int64_t wd[] = {D, G * H, I}, rd[] = {D, G * H, H}, bd[] = {D, 2 * G * H};
    tm_input(m, "x", T_FLOAT, 3, xd, NULL);
    float bound = 1.0f / sqrtf((float)H);
    int64_t n[3] = {D * G * H * I, D * G * H * H, D * 2 * G * H};
    const char *names[3] = {"w", "r", "b"};
    const int64_t *dims[3] = {wd, rd, bd};
    for (int k = 0; k < 3; k++) {
        float *v = malloc((size_t)n[k] * sizeof *v);
        for (int64_t i = 0; i < n[k]; i++)
            v[i] = uniform(&seed, -bound, bound);
        tm_init(m, names[k], T_FLOAT, k == 2 ? 2 : 3, dims[k], v, (size_t)n[k] * sizeof *v);
        free(v);
    }
    Onnx__NodeProto *nd = tm_node(m, op_type, "", "rnn", "x,w,r,b", "y,y_h");
    tm_attr_int(m, nd, "hidden_size", H);
    tm_attr_string(m, nd, "direction", bidirectional ? "bidirectional" : "forward");
    tm_output(m, "y", T_FLOAT, 4, yd);
    tm_output(m, "y_h", T_FLOAT, 3, hd);
    return m;
}

tm_model *zoo_dynamic_lstm(int64_t T, int64_t N, int64_t I, int64_t H, uint32_t seed)
{
    const int64_t D = 2, G4 = 4 * H;
    tm_model *m = tm_new(14);
    tm_opset(m, "com.microsoft", 1);
    int64_t xd[] = {T, N, I}, yd[] = {T, D, N, H}, hd[] = {D, N, H};
    int64_t wd[] = {D, I, G4}, rd[] = {D, H, G4}, bd[] = {D, 2 * G4}, dd[] = {D}, cd[] = {D, G4};
    tm_input(m, "x", T_FLOAT, 3, xd, NULL);
    int8_t *w = s8_weights(D * I * G4, &seed), *r = s8_weights(D * H * G4, &seed);
    float bound = 1.0f / sqrtf((float)H);
    float *ws = scales(D, bound / 160, bound / 120, &seed);
    float *rs = scales(D * G4, bound / 160, bound / 120, &seed);
    float *b = scales(D * 2 * G4, -bound, bound, &seed);
    int8_t *wz = calloc((size_t)D, 1), *rz = calloc((size_t)(D * G4), 1);
    tm_init(m, "w", T_INT8, 3, wd, w, (size_t)(D * I * G4));
    tm_init(m, "r", T_INT8, 3, rd, r, (size_t)(D * H * G4));
    tm_init(m, "b", T_FLOAT, 2, bd, b, (size_t)(D * 2 * G4) * sizeof(float));
    tm_init(m, "w_scale", T_FLOAT, 1, dd, ws, (size_t)D * sizeof(float));
    tm_init(m, "w_zp", T_INT8, 1, dd, wz, (size_t)D);
    tm_init(m, "r_scale", T_FLOAT, 2, cd, rs, (size_t)(D * G4) * sizeof(float));
    tm_init(m, "r_zp", T_INT8, 2, cd, rz, (size_t)(D * G4));
    Onnx__NodeProto *nd = tm_node(m, "DynamicQuantizeLSTM", "com.microsoft", "lstm",
                                  "x,w,r,b,,,,,w_scale,w_zp,r_scale,r_zp", "y,y_h");
    tm_attr_int(m, nd, "hidden_size", H);
    tm_attr_string(m, nd, "direction", "bidirectional");
    tm_output(m, "y", T_FLOAT, 4, yd);
    tm_output(m, "y_h", T_FLOAT, 3, hd);
    free(w);
    free(r);
    free(ws);
    free(rs);
    free(b);
    free(wz);
    free(rz);
    return m;
}

tm_model *zoo_qdq_matmul(int64_t M, int64_t K, int64_t N, uint32_t seed)
{
    tm_model *m = matmul_io(13, T_UINT8, M, K, N);
    int64_t wd[] = {K, N};
    int8_t *w = s8_weights(K * N, &seed);
    float *ws = scales(N, 0.001f, 0.01f, &seed);
    float xs = 0.02f;
    uint8_t xz = 128;
    tm_init(m, "x_scale", T_FLOAT, 0, NULL, &xs, sizeof xs);
    tm_init(m, "x_zp", T_UINT8, 0, NULL, &xz, 1);
    tm_init(m, "w_q", T_INT8, 2, wd, w, (size_t)(K * N));
    tm_init(m, "w_scale", T_FLOAT, 1, &N, ws, (size_t)N * sizeof(float));
    tm_node(m, "DequantizeLinear", "", "x_dq", "x,x_scale,x_zp", "x_f");
    Onnx__NodeProto *n = tm_node(m, "DequantizeLinear", "", "w_dq", "w_q,w_scale", "w_f");
    tm_attr_int(m, n, "axis", 1);
    tm_node(m, "MatMul", "", "mm", "x_f,w_f", "y");
    free(w);
    free(ws);
    return m;
}

tm_model *zoo_wo_matmul(int64_t M, int64_t K, int64_t N, int64_t B, bool zp, uint32_t seed)
{
    tm_model *m = matmul_io(21, T_FLOAT, M, K, N);
    int64_t wd[] = {K, N};
    Onnx__NodeProto *n;
    if (B == 0) {
        int8_t *w = s8_weights(K * N, &seed);
        float *ws = scales(N, 0.001f, 0.01f, &seed);
        tm_init(m, "w_q", T_INT8, 2, wd, w, (size_t)(K * N));
        tm_init(m, "w_scale", T_FLOAT, 1, &N, ws, (size_t)N * sizeof(float));
        n = tm_node(m, "DequantizeLinear", "", "w_dq", "w_q,w_scale", "w_f");
        tm_attr_int(m, n, "axis", 1);
        free(w);
        free(ws);
    } else {
        int64_t nb = (K + B - 1) / B, sd[] = {nb, N};
        size_t wbytes = (size_t)((K * N + 1) / 2), zbytes = (size_t)((nb * N + 1) / 2);
        uint8_t *w = malloc(wbytes), *z = malloc(zbytes);
        for (size_t i = 0; i < wbytes; i++)
            w[i] = (uint8_t)next(&seed);
        for (size_t i = 0; i < zbytes; i++)
            z[i] = (uint8_t)(0x88 + (next(&seed) % 3) * 0x11 - 0x11);
        float *ws = scales(nb * N, 0.002f, 0.02f, &seed);
        tm_init(m, "w_q", zp ? T_UINT4 : T_INT4, 2, wd, w, wbytes);
        tm_init(m, "w_scale", T_FLOAT, 2, sd, ws, (size_t)(nb * N) * sizeof(float));
        if (zp)
            tm_init(m, "w_zp", T_UINT4, 2, sd, z, zbytes);
        n = tm_node(m, "DequantizeLinear", "", "w_dq", zp ? "w_q,w_scale,w_zp" : "w_q,w_scale",
                    "w_f");
        tm_attr_int(m, n, "axis", 0);
        tm_attr_int(m, n, "block_size", B);
        free(w);
        free(z);
        free(ws);
    }
    tm_node(m, "MatMul", "", "mm", "x,w_f", "y");
    return m;
}

tm_model *zoo_ort_dynamic_projections(int64_t M, int64_t H, int64_t F, uint32_t seed,
                                      double *step_bound)
{
    tm_model *m = tm_new(13);
    int64_t xd[] = {M, H}, hd[] = {M, H}, fd[] = {M, F};
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    static const char *const names[] = {"q", "k", "v", "ffn"};
    double worst = 0.0;
    tm_node(m, "DynamicQuantizeLinear", "", "x_dql", "x", "x_q,x_scale,x_zp");
    for (int p = 0; p < 4; p++) {
        int64_t N = p == 3 ? F : H, wd[] = {H, N};
        int8_t *w = s8_weights(H * N, &seed);
        float ws = uniform(&seed, 0.001f, 0.01f);
        float *b = scales(N, -0.5f, 0.5f, &seed);
        for (int64_t n = 0; n < N; n++) {
            double col = 0.0;
            for (int64_t k = 0; k < H; k++)
                col += fabs((double)w[k * N + n] * ws);
            worst = col > worst ? col : worst;
        }
        char t[8][64];
        snprintf(t[0], 64, "%s_w", names[p]);
        snprintf(t[1], 64, "%s_w_scale", names[p]);
        snprintf(t[2], 64, "%s_bias", names[p]);
        tm_init(m, t[0], T_INT8, 2, wd, w, (size_t)(H * N));
        tm_init(m, t[1], T_FLOAT, 0, NULL, &ws, sizeof ws);
        tm_init(m, t[2], T_FLOAT, 1, &N, b, (size_t)N * sizeof(float));
        char in[256], node[64], out[64];
        snprintf(in, sizeof in, "x_q,%s,x_zp", t[0]);
        snprintf(node, sizeof node, "%s_matmul", names[p]);
        snprintf(out, sizeof out, "%s_acc", names[p]);
        tm_node(m, "MatMulInteger", "", node, in, out);
        snprintf(in, sizeof in, "%s_acc", names[p]);
        snprintf(node, sizeof node, "%s_cast", names[p]);
        snprintf(out, sizeof out, "%s_acc_f", names[p]);
        tm_attr_int(m, tm_node(m, "Cast", "", node, in, out), "to", T_FLOAT);
        snprintf(in, sizeof in, "x_scale,%s", t[1]);
        snprintf(node, sizeof node, "%s_scale", names[p]);
        snprintf(out, sizeof out, "%s_s", names[p]);
        tm_node(m, "Mul", "", node, in, out);
        snprintf(in, sizeof in, "%s_acc_f,%s_s", names[p], names[p]);
        snprintf(node, sizeof node, "%s_mul", names[p]);
        snprintf(out, sizeof out, "%s_y0", names[p]);
        tm_node(m, "Mul", "", node, in, out);
        snprintf(in, sizeof in, "%s_y0,%s", names[p], t[2]);
        snprintf(node, sizeof node, "%s_add", names[p]);
        tm_node(m, "Add", "", node, in, names[p]);
        tm_output(m, names[p], T_FLOAT, 2, p == 3 ? fd : hd);
        free(w);
        free(b);
    }
    /* One activation step is (max(x, 0) - min(x, 0)) / 255, at most 4 / 255
     * for x in [-2, 2). */
    if (step_bound)
        *step_bound = 4.0 / 255.0 * worst;
    return m;
}
