/* Whole transformer layers imported from ONNX (tests/support/
 * transformer_zoo.c) at reduced size: a BERT encoder layer in ONNX
 * Runtime's dynamic-quantization form and a Llama-style decoder layer with
 * int4 blocked weights. Each compiles with every projection fused and
 * matches the reference interpreter within the bound stated per test. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "support/transformer_zoo.h"
#include "test_common.h"

static dqg_graph *load(tm_model *m)
{
    dqg_graph *g;
    dqg_status st = tm_load(m, NULL, &g);
    tm_free(m);
    cr_assert_eq(st, DQG_OK, "import: %s: %s", dqg_status_name(st), dqg_last_error());
    return g;
}

/* Runs g's reference and compiled forms on x; returns the compiled
 * partitions' count of `prefix` partitions in *n_prefix and asserts that
 * no partition is a lone `banned` op (a partition of one op lists no
 * " + "). */
static void run_both(dqg_graph *g, const float *x, size_t xn, float *ref, float *got, size_t yn,
                     const char *prefix, size_t *n_prefix, const char *const *banned)
{
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = xn * sizeof *x};
    dqg_buffer o = {.name = "y", .data = ref, .size = yn * sizeof *ref};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compile_options opt = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &opt, &c), DQG_OK, "%s", dqg_last_error());
    o.data = got;
    cr_assert_eq(dqg_execute(c, &in, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
    *n_prefix = 0;
    for (size_t i = 0; i < dqg_compiled_partition_count(c); i++) {
        const char *info = dqg_compiled_partition_info(c, i);
        *n_prefix += strncmp(info, prefix, strlen(prefix)) == 0;
        for (int b = 0; banned[b]; b++)
            cr_assert(strstr(info, banned[b]) == NULL || strstr(info, " + "), "partition %zu: %s",
                      i, info);
    }
    dqg_compiled_destroy(c);
}

/* BERT, S = 32, H = 64, 4 heads, FFN 128. The compiled layer quantizes
 * each projection's input with the same DynamicQuantizeLinear arithmetic
 * as the reference, and the int8 products are exact; what differs is the
 * order of float roundings (scales, softmax, LayerNorm), which can move a
 * value across a rounding boundary of the next quantization: one step of
 * one activation, whose effect on a projection output is at most
 * step * step_bound. After the final LayerNorm (outputs ~1) the tolerance
 * is 2e-2 absolute for any element and 1e-3 for the mean error. */
/* One BERT layer, its 6 projections int8 matmuls with no Cast, scale Mul
 * or head Transpose left on its own: every element within worst_tol of
 * the reference and the mean error within 1e-3. */
static void bert_case(int64_t S, int64_t H, int64_t heads, int64_t F, uint32_t seed, size_t xk,
                      double worst_tol)
{
    double bound;
    dqg_graph *g = load(zoo_bert_layer(S, H, heads, F, seed, &bound));
    size_t n = (size_t)(S * H);
    float *x = malloc(n * sizeof *x), *ref = malloc(n * sizeof *ref),
          *got = malloc(n * sizeof *got);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 7919 + xk) % 4001) / 1000.0f - 2.0f;
    size_t matmuls;
    /* No Cast or scale Mul left as a partition of its own, and no head
     * transpose: they are the attention matmuls' strides. */
    static const char *const banned[] = {"[TypeCast",
                                         "'q_Mul'",
                                         "'q_Add'",
                                         "'k_Mul'",
                                         "'k_Add'",
                                         "'v_Mul'",
                                         "'v_Add'",
                                         "'attn_out_Mul'",
                                         "'attn_out_Add'",
                                         "'ffn1_Mul'",
                                         "'ffn1_Add'",
                                         "'ffn2_Mul'",
                                         "'ffn2_Add'",
                                         "[Transpose 'qh_Transpose']",
                                         "[Transpose 'kt_Transpose']",
                                         "[Transpose 'vh_Transpose']",
                                         "[Transpose 'context_Transpose']",
                                         NULL};
    run_both(g, x, n, ref, got, n, "int8 matmul", &matmuls,
             test_int8_fusion() ? banned : (const char *const[]){NULL});
    if (test_int8_fusion())
        cr_assert_eq(matmuls, 6, "S %lld H %lld heads %lld F %lld: %zu int8 matmul partitions",
                     (long long)S, (long long)H, (long long)heads, (long long)F, matmuls);
    double worst = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(isfinite(got[i]), "y[%zu] = %g", i, got[i]);
        double e = fabs((double)got[i] - ref[i]);
        worst = fmax(worst, e);
        sum += e;
    }
    cr_assert(worst <= worst_tol && sum / (double)n <= 1e-3,
              "S %lld H %lld heads %lld F %lld: worst %.3g, mean %.3g (one step moves a "
              "projection by <= %.3g / 255 per unit range)",
              (long long)S, (long long)H, (long long)heads, (long long)F, worst, sum / (double)n,
              bound);
    free(x);
    free(ref);
    free(got);
    dqg_graph_destroy(g);
}

Test(transformers, bert_layer_fuses_every_projection)
{
    bert_case(32, 64, 4, 128, 11, 0, 2e-2);
}

/* Llama, S = 1 and 8, H = 128, 4 heads, MLP 256, int4 weights in blocks
 * of 32. Everything is float: the weight-only kernels decode the same
 * int4 values and scales exactly and accumulate in f32 in another order,
 * so the layer agrees with the reference to float rounding, 1e-4 relative
 * to the output's largest magnitude. */
/* One Llama layer: compiled against the reference within 1e-4 of the
 * output's largest magnitude, its 7 projections weight-only partitions,
 * its RMSNorms recognized (no ReduceMean left alone), its softmax in the
 * scores' partition with the causal mask [S, S] (no Softmax alone), its
 * rotary embeddings one partition each (no Slice, Concat or Neg alone),
 * and no op on the reference kernel (grouped-query attention's Expand
 * included). */
static void llama_gqa_case(int64_t S, int64_t H, int64_t heads, int64_t kv_heads, int64_t F,
                           uint32_t seed, size_t xk)
{
    dqg_graph *g = load(zoo_llama_layer_gqa(S, H, heads, kv_heads, F, seed));
    size_t n = (size_t)(S * H);
    float *x = malloc(n * sizeof *x), *ref = malloc(n * sizeof *ref),
          *got = malloc(n * sizeof *got);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 104729 + xk) % 2001) / 1000.0f - 1.0f;
    size_t wo;
    static const char *const banned[] = {"[Dequantize", "[Reduce", "[Softmax",     "[Slice",
                                         "[Concat",     "[Unary",  "-> reference", NULL};
    run_both(g, x, n, ref, got, n, "weight-only", &wo, banned);
    cr_assert_eq(wo, 7, "S %lld H %lld heads %lld F %lld: %zu weight-only partitions", (long long)S,
                 (long long)H, (long long)heads, (long long)F, wo);
    double mx = 0;
    for (size_t i = 0; i < n; i++)
        mx = fmax(mx, fabs(ref[i]));
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs((double)got[i] - ref[i]) <= 1e-4 * mx,
                  "S %lld H %lld heads %lld F %lld y[%zu]: %.9g, ref %.9g", (long long)S,
                  (long long)H, (long long)heads, (long long)F, i, got[i], ref[i]);
    free(x);
    free(ref);
    free(got);
    dqg_graph_destroy(g);
}

/* The explain log counts the seven projections' multiply-adds as
 * weight-only work: S (4 H^2 + 3 H F) of them, the rest (attention) f32;
 * none in int8 kernels (the exact mode's integer dot products are the
 * weight-only kernel's). */
Test(transformers, explain_counts_weight_only_macs)
{
    const int64_t S = 8, H = 128, F = 256;
    dqg_graph *g = load(zoo_llama_layer(S, H, 4, F, 21));
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    double int8 = -1, total = -1, wo = -1;
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        sscanf(dqg_compiled_explain(c, i),
               "MACs: %lf of %lf (%*f%%) run in int8 kernels, %lf (%*f%%) in weight-only kernels",
               &int8, &total, &wo);
    double projections = (double)(S * (4 * H * H + 3 * H * F)); /* the log has 4 digits */
    cr_assert(int8 == 0 && fabs(wo - projections) <= 1e-3 * projections && total > wo,
              "int8 %g, weight-only %g of %g; the projections do %g", int8, wo, total, projections);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

static void llama_case(int64_t S, int64_t H, int64_t heads, int64_t F, uint32_t seed, size_t xk)
{
    llama_gqa_case(S, H, heads, heads, F, seed, xk);
}

/* Grouped-query attention: 2 and 1 key/value heads for 4 query heads,
 * repeated by Reshape -> Expand -> Reshape; the same contract. */
Test(transformers, llama_layer_with_grouped_query_attention)
{
    for (int64_t S = 1; S <= 8; S += 7)
        for (int64_t kv = 2; kv >= 1; kv--)
            llama_gqa_case(S, 128, 4, kv, 256, 31, (size_t)kv);
}

Test(transformers, llama_layer_keeps_int4_weights_packed)
{
    for (int64_t S = 1; S <= 8; S += 7)
        llama_case(S, 128, 4, 256, 21, 0);
}

/* Llama layers of seeded random shapes (sequence 1 to 24; hidden 32 to
 * 256 in blocks of 32 with 1, 2 or 4 heads of an even size; MLP 32 to
 * 288): the same contract, 1e-4 relative to the output's largest
 * magnitude, and every projection a weight-only partition. */
Test(transformers, llama_layers_of_random_shapes, .timeout = 120)
{
    test_rng = 0x11a3a;
    for (int it = 0; it < 12; it++) {
        int64_t heads = (int64_t)1 << (test_rnd() % 3), S = 1 + test_rnd() % 24;
        int64_t H = 32 * (1 + (int64_t)(test_rnd() % 8)), F = 32 * (1 + (int64_t)(test_rnd() % 9));
        if ((H / heads) % 2)
            heads = 1;
        llama_case(S, H, heads, F, 100 + (uint32_t)it, (size_t)it);
    }
}

/* BERT layers of seeded random shapes (sequence 1 to 40, 1 to 4 heads of
 * 8 to 32, FFN 1 to 4 times the hidden size), every projection an int8
 * matmul. The mean error keeps bert_layer_fuses_every_projection's bound
 * (1e-3); one activation moved across a rounding boundary moves a
 * projection output by a step times one weight (about 0.016 x 0.18), which
 * the final LayerNorm divides by its row's deviation, so a row with a few
 * such moves reaches 2.5e-2 (seen at S 17, H 128, F 128): any element
 * within 5e-2. */
Test(transformers, bert_layers_of_random_shapes, .timeout = 120)
{
    test_rng = 0xbe47;
    for (int it = 0; it < 12; it++) {
        int64_t heads = 1 + test_rnd() % 4, d = 8 * (1 + (int64_t)(test_rnd() % 4)),
                S = 1 + test_rnd() % 40;
        int64_t H = heads * d, F = H * (1 + (int64_t)(test_rnd() % 4));
        bert_case(S, H, heads, F, 200 + (uint32_t)it, (size_t)it, 5e-2);
    }
}
