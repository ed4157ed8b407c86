/* Whole transformer layers as exporters and quantizers write them (see
 * transformer_zoo.h). Weights come from a fixed xorshift stream, so every
 * run writes byte-identical models. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transformer_zoo.h"

enum { T_FLOAT = 1, T_INT8 = 3, T_INT64 = 7, T_INT4 = 22 };

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

/* A node with printf-formatted inputs; returns it for attributes. */
static Onnx__NodeProto *node(tm_model *m, const char *op, const char *name, const char *out,
                             const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static Onnx__NodeProto *node(tm_model *m, const char *op, const char *name, const char *out,
                             const char *fmt, ...)
{
    char in[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(in, sizeof in, fmt, ap);
    va_end(ap);
    return tm_node(m, op, "", name, in, out);
}

static void f32_const(tm_model *m, const char *name, int rank, const int64_t *dims, const float *v)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    tm_init(m, name, T_FLOAT, rank, dims, v, (size_t)n * sizeof(float));
}

static void scalar(tm_model *m, const char *name, float v)
{
    tm_init(m, name, T_FLOAT, 0, NULL, &v, sizeof v);
}

static void shape_const(tm_model *m, const char *name, int n, const int64_t *v)
{
    int64_t d = n;
    tm_init(m, name, T_INT64, 1, &d, v, (size_t)n * sizeof(int64_t));
}

static float *uniform_vec(int64_t n, float lo, float hi, uint32_t *s)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = uniform(s, lo, hi);
    return v;
}

/* ORT's dynamic quantizer on `x` [S, K] -> `out` [S, N]: DynamicQuantizeLinear
 * (shared per input, `xq` names its outputs), MatMulInteger with s8
 * weights (per-tensor scale ~ 2 / (127 sqrt K), so outputs are O(1)),
 * Cast, Mul by x_scale * w_scale, Add bias. Adds to *worst the largest
 * column sum of |w| (the output change of one activation step). */
static void dyn_projection(tm_model *m, const char *p, const char *xq, int64_t K, int64_t N,
                           uint32_t *s, double *worst)
{
    int64_t wd[] = {K, N};
    int8_t *w = malloc((size_t)(K * N));
    for (int64_t i = 0; i < K * N; i++)
        w[i] = (int8_t)((int)(next(s) % 255) - 127);
    float ws = 2.0f / (127.0f * sqrtf((float)K)) * uniform(s, 0.8f, 1.2f);
    float *b = uniform_vec(N, -0.1f, 0.1f, s);
    for (int64_t n = 0; n < N; n++) {
        double col = 0;
        for (int64_t k = 0; k < K; k++)
            col += fabs((double)w[k * N + n] * ws);
        if (col > *worst)
            *worst = col;
    }
    char t[6][96], nm[96];
    snprintf(t[0], 96, "%s_w", p);
    snprintf(t[1], 96, "%s_w_scale", p);
    snprintf(t[2], 96, "%s_bias", p);
    tm_init(m, t[0], T_INT8, 2, wd, w, (size_t)(K * N));
    scalar(m, t[1], ws);
    f32_const(m, t[2], 1, &N, b);
    snprintf(t[3], 96, "%s_acc", p);
    snprintf(nm, 96, "%s_MatMulInteger", p);
    node(m, "MatMulInteger", nm, t[3], "%s_q,%s,%s_zp", xq, t[0], xq);
    snprintf(t[4], 96, "%s_acc_f", p);
    snprintf(nm, 96, "%s_Cast", p);
    tm_attr_int(m, node(m, "Cast", nm, t[4], "%s", t[3]), "to", T_FLOAT);
    snprintf(t[5], 96, "%s_s", p);
    snprintf(nm, 96, "%s_scale_Mul", p);
    node(m, "Mul", nm, t[5], "%s_scale,%s", xq, t[1]);
    snprintf(nm, 96, "%s_Mul", p);
    char y0[96];
    snprintf(y0, 96, "%s_y0", p);
    node(m, "Mul", nm, y0, "%s,%s", t[4], t[5]);
    snprintf(nm, 96, "%s_Add", p);
    node(m, "Add", nm, p, "%s,%s", y0, t[2]);
    free(w);
    free(b);
}

static void dql(tm_model *m, const char *x, const char *q)
{
    char name[96], outs[200];
    snprintf(name, sizeof name, "%s_DynamicQuantizeLinear", q);
    snprintf(outs, sizeof outs, "%s_q,%s_scale,%s_zp", q, q, q);
    tm_node(m, "DynamicQuantizeLinear", "", name, x, outs);
}

/* LayerNormalization of `x` [S, H] with gamma near 1 and beta near 0. */
static void layer_norm(tm_model *m, const char *x, const char *out, int64_t H, uint32_t *s)
{
    char g[96], b[96], nm[96];
    snprintf(g, 96, "%s_gamma", out);
    snprintf(b, 96, "%s_beta", out);
    float *gv = uniform_vec(H, 0.9f, 1.1f, s), *bv = uniform_vec(H, -0.05f, 0.05f, s);
    f32_const(m, g, 1, &H, gv);
    f32_const(m, b, 1, &H, bv);
    snprintf(nm, 96, "%s_LayerNormalization", out);
    Onnx__NodeProto *n = node(m, "LayerNormalization", nm, out, "%s,%s,%s", x, g, b);
    tm_attr_int(m, n, "axis", -1);
    tm_attr_float(m, n, "epsilon", 1e-12f);
    free(gv);
    free(bv);
}

/* Attention heads: `x` [S, H] -> [heads, S, d] (or [heads, d, S] with
 * transposed). */
static void heads_of(tm_model *m, const char *x, const char *out, int64_t S, int64_t heads,
                     int64_t d, bool transposed)
{
    char shp[96], r[96], nm[96];
    snprintf(shp, 96, "%s_shape", out);
    snprintf(r, 96, "%s_r", out);
    shape_const(m, shp, 3, (const int64_t[]){S, heads, d});
    snprintf(nm, 96, "%s_Reshape", out);
    node(m, "Reshape", nm, r, "%s,%s", x, shp);
    snprintf(nm, 96, "%s_Transpose", out);
    const int64_t perm[] = {1, 0, 2}, perm_t[] = {1, 2, 0};
    tm_attr_ints(m, node(m, "Transpose", nm, out, "%s", r), "perm", transposed ? perm_t : perm, 3);
}

tm_model *zoo_bert_layer(int64_t S, int64_t H, int64_t heads, int64_t F, uint32_t seed,
                         double *step_bound)
{
    tm_model *m = tm_new(17);
    int64_t xd[] = {S, H}, d = H / heads;
    double worst = 0;
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    dql(m, "x", "xq");
    dyn_projection(m, "q", "xq", H, H, &seed, &worst);
    dyn_projection(m, "k", "xq", H, H, &seed, &worst);
    dyn_projection(m, "v", "xq", H, H, &seed, &worst);
    heads_of(m, "q", "qh", S, heads, d, false);
    heads_of(m, "k", "kt", S, heads, d, true);
    heads_of(m, "v", "vh", S, heads, d, false);
    /* Scores, scaled by sqrt(d), masked (the last eighth of the sequence
     * is padding), softmax, context. */
    node(m, "MatMul", "scores_MatMul", "scores", "qh,kt");
    scalar(m, "sqrt_d", sqrtf((float)d));
    node(m, "Div", "scores_Div", "scores_scaled", "scores,sqrt_d");
    float *mask = malloc((size_t)S * sizeof *mask);
    for (int64_t i = 0; i < S; i++)
        mask[i] = i >= S - S / 8 ? -10000.0f : 0.0f;
    f32_const(m, "mask", 3, (const int64_t[]){1, 1, S}, mask);
    free(mask);
    node(m, "Add", "scores_mask_Add", "scores_masked", "scores_scaled,mask");
    tm_attr_int(m, node(m, "Softmax", "probs_Softmax", "probs", "scores_masked"), "axis", -1);
    node(m, "MatMul", "context_MatMul", "context_h", "probs,vh");
    tm_attr_ints(m, node(m, "Transpose", "context_Transpose", "context_t", "context_h"), "perm",
                 (const int64_t[]){1, 0, 2}, 3);
    shape_const(m, "context_shape", 2, xd);
    node(m, "Reshape", "context_Reshape", "context", "context_t,context_shape");
    dql(m, "context", "cq");
    dyn_projection(m, "attn_out", "cq", H, H, &seed, &worst);
    node(m, "Add", "attn_residual_Add", "attn_sum", "attn_out,x");
    layer_norm(m, "attn_sum", "h1", H, &seed);
    /* FFN with GELU written as Div, Erf, Add, Mul, Mul. */
    dql(m, "h1", "h1q");
    dyn_projection(m, "ffn1", "h1q", H, F, &seed, &worst);
    scalar(m, "sqrt2", sqrtf(2.0f));
    scalar(m, "one", 1.0f);
    scalar(m, "half", 0.5f);
    node(m, "Div", "gelu_Div", "gelu_d", "ffn1,sqrt2");
    node(m, "Erf", "gelu_Erf", "gelu_e", "gelu_d");
    node(m, "Add", "gelu_Add", "gelu_a", "gelu_e,one");
    node(m, "Mul", "gelu_Mul", "gelu_m", "ffn1,gelu_a");
    node(m, "Mul", "gelu_Mul_half", "gelu", "gelu_m,half");
    dql(m, "gelu", "gq");
    dyn_projection(m, "ffn2", "gq", F, H, &seed, &worst);
    node(m, "Add", "ffn_residual_Add", "ffn_sum", "ffn2,h1");
    layer_norm(m, "ffn_sum", "y", H, &seed);
    tm_output(m, "y", T_FLOAT, 2, xd);
    if (step_bound)
        *step_bound = worst;
    return m;
}

/* DequantizeLinear-21 of int4 [K, N] weights, blocks of 32 along K (axis
 * 0), f32 scales ~ 1 / (7 sqrt K), then MatMul: `x` [S, K] -> `out`. */
static void wo_projection(tm_model *m, const char *p, const char *x, int64_t K, int64_t N,
                          uint32_t *s)
{
    int64_t B = 32, nb = K / B, wd[] = {K, N}, sd[] = {nb, N};
    size_t wbytes = (size_t)((K * N + 1) / 2);
    uint8_t *w = malloc(wbytes);
    for (size_t i = 0; i < wbytes; i++)
        w[i] = (uint8_t)next(s);
    float *ws =
        uniform_vec(nb * N, 0.6f / (7.0f * sqrtf((float)K)), 1.4f / (7.0f * sqrtf((float)K)), s);
    char t[3][96], nm[96];
    snprintf(t[0], 96, "%s_w", p);
    snprintf(t[1], 96, "%s_w_scale", p);
    snprintf(t[2], 96, "%s_w_f", p);
    tm_init(m, t[0], T_INT4, 2, wd, w, wbytes);
    f32_const(m, t[1], 2, sd, ws);
    snprintf(nm, 96, "%s_DequantizeLinear", p);
    Onnx__NodeProto *n = node(m, "DequantizeLinear", nm, t[2], "%s,%s", t[0], t[1]);
    tm_attr_int(m, n, "axis", 0);
    tm_attr_int(m, n, "block_size", B);
    snprintf(nm, 96, "%s_MatMul", p);
    node(m, "MatMul", nm, p, "%s,%s", x, t[2]);
    free(w);
    free(ws);
}

/* RMSNorm as Pow, ReduceMean, Add, Sqrt, Div, Mul. */
static void rms_norm(tm_model *m, const char *x, const char *out, int64_t H, uint32_t *s)
{
    char t[8][96];
    for (int i = 0; i < 8; i++)
        snprintf(t[i], 96, "%s_%d", out, i);
    float *g = uniform_vec(H, 0.9f, 1.1f, s);
    f32_const(m, t[6], 1, &H, g);
    free(g);
    scalar(m, t[7], 2.0f);
    char nm[96];
    snprintf(nm, 96, "%s_Pow", out);
    node(m, "Pow", nm, t[0], "%s,%s", x, t[7]);
    snprintf(nm, 96, "%s_ReduceMean", out);
    /* Opset 18+: axes is an input (the shared constant [-1]). */
    tm_attr_int(m, node(m, "ReduceMean", nm, t[1], "%s,last_axis", t[0]), "keepdims", 1);
    snprintf(t[5], 96, "%s_eps", out);
    scalar(m, t[5], 1e-6f);
    snprintf(nm, 96, "%s_Add", out);
    node(m, "Add", nm, t[2], "%s,%s", t[1], t[5]);
    snprintf(nm, 96, "%s_Sqrt", out);
    node(m, "Sqrt", nm, t[3], "%s", t[2]);
    snprintf(nm, 96, "%s_Div", out);
    node(m, "Div", nm, t[4], "%s,%s", x, t[3]);
    snprintf(nm, 96, "%s_Mul", out);
    node(m, "Mul", nm, out, "%s,%s", t[4], t[6]);
}

/* Rotary embedding of `x` [heads, S, d]: x cos + rotate_half(x) sin, with
 * rotate_half(x) = Concat(-x[..., d/2:], x[..., :d/2]). */
static void rotary(tm_model *m, const char *x, const char *out, int64_t d)
{
    char t[6][96], nm[96];
    for (int i = 0; i < 6; i++)
        snprintf(t[i], 96, "%s_rot%d", out, i);
    snprintf(nm, 96, "%s_Slice_hi", out);
    node(m, "Slice", nm, t[0], "%s,half_d,big,last_axis", x);
    snprintf(nm, 96, "%s_Slice_lo", out);
    node(m, "Slice", nm, t[1], "%s,zero_i,half_d,last_axis", x);
    snprintf(nm, 96, "%s_Neg", out);
    node(m, "Neg", nm, t[2], "%s", t[0]);
    snprintf(nm, 96, "%s_Concat", out);
    tm_attr_int(m, node(m, "Concat", nm, t[3], "%s,%s", t[2], t[1]), "axis", -1);
    snprintf(nm, 96, "%s_Mul_cos", out);
    node(m, "Mul", nm, t[4], "%s,rope_cos", x);
    snprintf(nm, 96, "%s_Mul_sin", out);
    node(m, "Mul", nm, t[5], "%s,rope_sin", t[3]);
    snprintf(nm, 96, "%s_Add", out);
    node(m, "Add", nm, out, "%s,%s", t[4], t[5]);
    (void)d;
}

/* Grouped-query attention's repeat_kv as exporters write it: `x` [kv, S, d]
 * reshaped to [kv, 1, S, d], expanded to [kv, rep, S, d] and reshaped to
 * [kv rep, S, d], each key and value head serving rep query heads. */
static void repeat_kv(tm_model *m, const char *x, const char *out, int64_t kv, int64_t rep,
                      int64_t S, int64_t d)
{
    char t[4][96], nm[96];
    for (int i = 0; i < 4; i++)
        snprintf(t[i], 96, "%s_rep%d", out, i);
    shape_const(m, t[0], 4, (const int64_t[]){kv, 1, S, d});
    shape_const(m, t[1], 4, (const int64_t[]){kv, rep, S, d});
    shape_const(m, t[2], 3, (const int64_t[]){kv * rep, S, d});
    snprintf(nm, 96, "%s_Reshape_in", out);
    node(m, "Reshape", nm, t[3], "%s,%s", x, t[0]);
    snprintf(nm, 96, "%s_Expand", out);
    char e[96];
    snprintf(e, 96, "%s_expanded", out);
    node(m, "Expand", nm, e, "%s,%s", t[3], t[1]);
    snprintf(nm, 96, "%s_Reshape_out", out);
    node(m, "Reshape", nm, out, "%s,%s", e, t[2]);
}

tm_model *zoo_llama_layer(int64_t S, int64_t H, int64_t heads, int64_t F, uint32_t seed)
{
    return zoo_llama_layer_gqa(S, H, heads, heads, F, seed);
}

tm_model *zoo_llama_layer_gqa(int64_t S, int64_t H, int64_t heads, int64_t kv_heads, int64_t F,
                              uint32_t seed)
{
    tm_model *m = tm_new(21);
    int64_t xd[] = {S, H}, d = H / heads;
    bool gqa = kv_heads != heads;
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    /* Shared constants: Slice bounds, the rotary tables (positions 0..S-1,
     * base 10000) and the causal mask. */
    const int64_t half = d / 2, zero = 0, big = INT64_MAX, last = -1;
    tm_init(m, "half_d", T_INT64, 1, (const int64_t[]){1}, &half, 8);
    tm_init(m, "zero_i", T_INT64, 1, (const int64_t[]){1}, &zero, 8);
    tm_init(m, "big", T_INT64, 1, (const int64_t[]){1}, &big, 8);
    tm_init(m, "last_axis", T_INT64, 1, (const int64_t[]){1}, &last, 8);
    float *cs = malloc((size_t)(S * d) * sizeof *cs), *sn = malloc((size_t)(S * d) * sizeof *sn);
    for (int64_t p = 0; p < S; p++)
        for (int64_t i = 0; i < d; i++) {
            double f = p * pow(10000.0, -2.0 * (double)(i % half) / (double)d);
            cs[p * d + i] = (float)cos(f);
            sn[p * d + i] = (float)sin(f);
        }
    f32_const(m, "rope_cos", 3, (const int64_t[]){1, S, d}, cs);
    f32_const(m, "rope_sin", 3, (const int64_t[]){1, S, d}, sn);
    free(cs);
    free(sn);
    float *mask = malloc((size_t)(S * S) * sizeof *mask);
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++)
            mask[i * S + j] = j > i ? -1e9f : 0.0f;
    f32_const(m, "causal_mask", 2, (const int64_t[]){S, S}, mask);
    free(mask);

    rms_norm(m, "x", "xn", H, &seed);
    wo_projection(m, "q", "xn", H, H, &seed);
    wo_projection(m, "k", "xn", H, kv_heads * d, &seed);
    wo_projection(m, "v", "xn", H, kv_heads * d, &seed);
    heads_of(m, "q", "qh", S, heads, d, false);
    heads_of(m, "k", "kh", S, kv_heads, d, false);
    heads_of(m, "v", gqa ? "vkv" : "vh", S, kv_heads, d, false);
    rotary(m, "qh", "qr", d);
    rotary(m, "kh", gqa ? "krkv" : "kr", d);
    if (gqa) {
        repeat_kv(m, "krkv", "kr", kv_heads, heads / kv_heads, S, d);
        repeat_kv(m, "vkv", "vh", kv_heads, heads / kv_heads, S, d);
    }
    tm_attr_ints(m, node(m, "Transpose", "kt_Transpose", "kt", "kr"), "perm",
                 (const int64_t[]){0, 2, 1}, 3);
    node(m, "MatMul", "scores_MatMul", "scores", "qr,kt");
    scalar(m, "sqrt_d", sqrtf((float)d));
    node(m, "Div", "scores_Div", "scores_scaled", "scores,sqrt_d");
    node(m, "Add", "scores_mask_Add", "scores_masked", "scores_scaled,causal_mask");
    tm_attr_int(m, node(m, "Softmax", "probs_Softmax", "probs", "scores_masked"), "axis", -1);
    node(m, "MatMul", "context_MatMul", "context_h", "probs,vh");
    tm_attr_ints(m, node(m, "Transpose", "context_Transpose", "context_t", "context_h"), "perm",
                 (const int64_t[]){1, 0, 2}, 3);
    shape_const(m, "context_shape", 2, xd);
    node(m, "Reshape", "context_Reshape", "context", "context_t,context_shape");
    wo_projection(m, "o", "context", H, H, &seed);
    node(m, "Add", "attn_residual_Add", "h1", "o,x");
    rms_norm(m, "h1", "h1n", H, &seed);
    wo_projection(m, "gate", "h1n", H, F, &seed);
    wo_projection(m, "up", "h1n", H, F, &seed);
    node(m, "Sigmoid", "silu_Sigmoid", "gate_sig", "gate");
    node(m, "Mul", "silu_Mul", "gate_act", "gate,gate_sig");
    node(m, "Mul", "mlp_Mul", "mlp", "gate_act,up");
    wo_projection(m, "down", "mlp", F, H, &seed);
    node(m, "Add", "mlp_residual_Add", "y", "down,h1");
    tm_output(m, "y", T_FLOAT, 2, xd);
    return m;
}
