/* Run-time scales against constant ones: the same int8 MatMul layer with
 * its activation scale and zero point as constants (static QDQ), as graph
 * inputs (oneDNN Graph's DynamicDequantize), computed by a
 * DynamicQuantizeLinear from f32 activations, and in the form ONNX
 * Runtime's dynamic quantizer writes (DynamicQuantizeLinear ->
 * MatMulInteger -> Cast -> Mul). Each run-time form is timed fused and
 * unfused, alternating with the constant-scale layer so that the ratio
 * "run-time / constant" compares like with like on a shared machine. The
 * DynamicQuantizeLinear forms also quantize M x K floats per run, which
 * the constant-scale layer receives already quantized. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "dqgraph.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        dqg_status st_ = (call);                                                                   \
        if (st_ != DQG_OK) {                                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, dqg_last_error());                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef enum { F_CONST, F_DYN_DEQ, F_DQL, F_ORT, F_COUNT } form;
static const char *const form_name[] = {"constant scales (QDQ)", "DynamicDequantize",
                                        "DynamicQuantizeLinear", "MatMulInteger (ORT)"};

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    return t[n / 2];
}

typedef struct layer {
    dqg_graph *g;
    dqg_buffer in[3];
    int n_in;
    dqg_buffer out;
    dqg_compiled *fused, *unfused;
} layer;

static dqg_tensor_id cf32(dqg_graph *g, int rank, const int64_t *d, const float *v, size_t n)
{
    return dqg_constant(g, NULL, DQG_F32, rank, d, v, n * sizeof(float));
}

static void build(layer *L, form f, int64_t M, int64_t K, int64_t N)
{
    memset(L, 0, sizeof *L);
    CHECK(dqg_graph_create(&L->g));
    dqg_graph *g = L->g;
    int64_t xd[] = {M, K}, wd[] = {K, N}, nd[] = {N}, one = 1;
    int8_t *w = malloc((size_t)(K * N));
    float *ws = malloc((size_t)N * sizeof(float));
    for (int64_t i = 0; i < K * N; i++)
        w[i] = (int8_t)((i * 7 + 3) % 255 - 127);
    for (int64_t i = 0; i < N; i++)
        ws[i] = 0.001f * (float)(1 + i % 9);
    float xs = 0.02f, unit = 1.0f;
    uint8_t xz = 128;
    dqg_dequantize_linear_attrs pt = {.opset = 13}, pc = {.opset = 13, .has_axis = true, .axis = 1};
    dqg_tensor_id wq = dqg_constant(g, "w", DQG_S8, 2, wd, w, (size_t)(K * N)), a, b, y;
    uint8_t *xu = malloc((size_t)(M * K));
    for (int64_t i = 0; i < M * K; i++)
        xu[i] = (uint8_t)((i * 13 + 5) % 256);
    if (f == F_DQL || f == F_ORT) {
        float *xf = malloc((size_t)(M * K) * sizeof(float));
        for (int64_t i = 0; i < M * K; i++)
            xf[i] = ((float)xu[i] - 128.0f) * xs;
        free(xu);
        L->in[L->n_in++] = (dqg_buffer){.name = "x", .data = xf, .size = (size_t)(M * K) * 4};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd), qs, qz;
        dqg_tensor_id xq = dqg_dynamic_quantize_linear(g, "dql", x, &qs, &qz);
        if (f == F_DQL) {
            a = dqg_dequantize_linear(g, "x_dq", xq, qs, qz, &pt);
            b = dqg_dequantize_linear(g, "w_dq", wq, cf32(g, 1, nd, ws, (size_t)N), DQG_NONE, &pc);
            y = dqg_matmul(g, "mm", a, b, NULL);
        } else {
            a = dqg_dequantize_linear(g, "a", xq, cf32(g, 0, &one, &unit, 1), qz, &pt);
            b = dqg_dequantize_linear(g, "b", wq, cf32(g, 0, &one, &unit, 1), DQG_NONE, &pt);
            y = dqg_typecast(g, "cast",
                             dqg_typecast(g, "i32", dqg_matmul(g, "mmi", a, b, NULL), DQG_S32),
                             DQG_F32);
            y = dqg_mul(g, "mul", y, dqg_mul(g, "scale", qs, cf32(g, 1, nd, ws, (size_t)N)));
        }
    } else {
        L->in[L->n_in++] = (dqg_buffer){.name = "x", .data = xu, .size = (size_t)(M * K)};
        dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
        if (f == F_CONST) {
            a = dqg_dequantize_linear(g, "x_dq", x, cf32(g, 0, &one, &xs, 1),
                                      dqg_constant(g, "xz", DQG_U8, 0, &one, &xz, 1), &pt);
        } else {
            float *s = malloc(sizeof *s);
            uint8_t *z = malloc(1);
            *s = xs;
            *z = xz;
            L->in[L->n_in++] = (dqg_buffer){.name = "scale", .data = s, .size = 4};
            L->in[L->n_in++] = (dqg_buffer){.name = "zp", .data = z, .size = 1};
            a = dqg_dynamic_dequantize(g, "x_dq", x, dqg_input(g, "scale", DQG_F32, 1, &one),
                                       dqg_input(g, "zp", DQG_U8, 1, &one), "per_tensor", 0);
        }
        b = dqg_dequantize_linear(g, "w_dq", wq, cf32(g, 1, nd, ws, (size_t)N), DQG_NONE, &pc);
        y = dqg_matmul(g, "mm", a, b, NULL);
    }
    CHECK(dqg_output(g, y, "y"));
    CHECK(dqg_graph_finalize(g));
    L->out = (dqg_buffer){
        .name = "y", .data = aligned_alloc(64, (size_t)(M * N) * 4), .size = (size_t)(M * N) * 4};
    dqg_compile_options opt = dqg_compile_options_default();
    CHECK(dqg_compile(g, &opt, &L->fused));
    opt.disable_fusion = true;
    CHECK(dqg_compile(g, &opt, &L->unfused));
    free(w);
    free(ws);
}

static void destroy(layer *L)
{
    for (int i = 0; i < L->n_in; i++)
        free(L->in[i].data);
    free(L->out.data);
    dqg_compiled_destroy(L->fused);
    dqg_compiled_destroy(L->unfused);
    dqg_graph_destroy(L->g);
}

static double run(layer *L, dqg_compiled *c)
{
    double t0 = bench_now_ms();
    CHECK(dqg_execute(c, L->in, (size_t)L->n_in, &L->out, 1));
    return bench_now_ms() - t0;
}

static void bench_shape(int64_t M, int64_t K, int64_t N, int reps)
{
    layer L[F_COUNT];
    for (int f = 0; f < F_COUNT; f++)
        build(&L[f], (form)f, M, K, N);
    enum { MAXR = 64 };
    double base[MAXR], t[MAXR], ratio[MAXR], un[MAXR];
    for (int f = 0; f < F_COUNT; f++) {
        run(&L[0], L[0].fused);
        run(&L[f], L[f].fused);
        for (int r = 0; r < reps; r++) {
            base[r] = run(&L[0], L[0].fused);
            t[r] = run(&L[f], L[f].fused);
            ratio[r] = t[r] / base[r];
        }
        int ru = reps < 9 ? reps : 9;
        for (int r = 0; r < ru; r++)
            un[r] = run(&L[f], L[f].unfused);
        double tm = median(t, reps), rm = median(ratio, reps), um = median(un, ru);
        printf("| %lldx%lldx%lld | %s | %.3f | %.3f | %.2fx | %.1fx | %zu | %s |\n", (long long)M,
               (long long)K, (long long)N, form_name[f], tm, um, rm, um / tm,
               dqg_compiled_partition_count(L[f].fused),
               strstr(dqg_compiled_partition_info(L[f].fused, 0), "->")
                   ? strstr(dqg_compiled_partition_info(L[f].fused, 0), "->") + 3
                   : "");
        fflush(stdout);
    }
    for (int f = 0; f < F_COUNT; f++)
        destroy(&L[f]);
}

int main(void)
{
    printf("## bench_dynamic: run-time scales vs constant scales (ms, medians)\n\n");
    printf("| M x K x N | form | fused | unfused | fused / constant-scale fused | unfused / "
           "fused | partitions | first partition's kernel |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    static const int64_t shapes[][3] = {
        {1, 4096, 4096}, {4, 4096, 4096}, {128, 1024, 1024}, {128, 768, 3072}, {384, 768, 768}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        bench_shape(shapes[s][0], shapes[s][1], shapes[s][2], 31);
    return 0;
}
