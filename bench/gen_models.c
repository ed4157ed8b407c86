/* Writes the benchmark models (tests/support/model_zoo.h) into a folder, one
 * .onnx file each, for scripts/bench_ort.sh to run on dqgraph and on ONNX
 * Runtime side by side. Usage: gen_models OUTDIR */
#include <stdio.h>
#include <string.h>

#include "support/model_zoo.h"
#include "support/transformer_zoo.h"

static int write(tm_model *m, const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    int rc = tm_write(m, path);
    tm_free(m);
    if (rc != 0)
        fprintf(stderr, "gen_models: cannot write %s\n", path);
    else
        printf("%s\n", name);
    return rc;
}

/* NAME.atol: the tolerance of the ONNX Runtime cross-check. */
static int write_atol(const char *dir, const char *name, double atol)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.atol", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    int bad = fprintf(f, "%.6g\n", atol) < 0;
    return (fclose(f) != 0 || bad) ? 1 : 0;
}

/* The tolerance of the CNNs' logits, as a share of their magnitude. */
#define CNN_LOGIT_SHARE 0.1

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_models OUTDIR\n");
        return 2;
    }
    const char *d = argv[1];
    int rc = 0;
    /* Dynamic quantization (run-time activation scales). */
    rc |= write(zoo_dql_matmul(1, 4096, 4096, 1), d, "dql_matmul_1x4096x4096");
    rc |= write(zoo_dql_matmul(128, 1024, 1024, 2), d, "dql_matmul_128x1024x1024");
    rc |= write(zoo_ort_dynamic_matmul(128, 1024, 1024, false, 3), d,
                "ort_dynamic_matmul_128x1024x1024");
    rc |=
        write(zoo_ort_dynamic_matmul(1, 4096, 4096, false, 4), d, "ort_dynamic_matmul_1x4096x4096");
    for (int pc = 0; pc < 2; pc++) {
        /* u8 weights (the quantizer's QUInt8), one zero point or one per
         * column (per_channel). */
        double bound;
        const char *name = pc ? "ort_dynamic_matmul_u8w_per_column_128x768x3072"
                              : "ort_dynamic_matmul_u8w_128x768x3072";
        rc |= write(zoo_ort_dynamic_matmul_u8w(128, 768, 3072, pc, 5, &bound), d, name);
        rc |= write_atol(d, name, bound);
    }
    {
        /* BERT-base's projections, sequence 128, with the tolerance of the
         * ONNX Runtime cross-check: one quantization step of every
         * activation. */
        double bound;
        const char *name = "ort_bert_projections_128x768x3072";
        rc |= write(zoo_ort_dynamic_projections(128, 768, 3072, 7, &bound), d, name);
        rc |= write_atol(d, name, bound);
    }
    /* Whole transformer layers: BERT-base's encoder layer in ONNX
     * Runtime's dynamic-quantization form (sequence 128), and a Llama-style
     * decoder layer (hidden 2048, MLP 5632, 16 heads) with int4 weights at
     * sequence 1 and 32. The BERT layer's cross-check tolerance: a one-step
     * change of a quantized activation moves a projection output by at most
     * step * bound, and after LayerNorm (outputs ~1) the layer agrees to
     * 5e-2. */
    {
        double bound;
        rc |= write(zoo_bert_layer(128, 768, 12, 3072, 8, &bound), d, "bert_layer_128x768");
        char path[4096];
        snprintf(path, sizeof path, "%s/bert_layer_128x768.atol", d);
        FILE *f = fopen(path, "w");
        if (!f || fprintf(f, "0.05\n") < 0 || fclose(f) != 0)
            rc |= 1;
    }
    rc |= write(zoo_llama_layer(1, 2048, 16, 5632, 9), d, "wo_llama_layer_s1_2048x5632");
    rc |= write(zoo_llama_layer(32, 2048, 16, 5632, 9), d, "wo_llama_layer_s32_2048x5632");
    /* Recurrent layers in f32 (speech and sequence models): a bidirectional
     * LSTM over 64 steps, one sequence, and a GRU over 8 sequences. Both
     * engines compute in f32: the cross-check allows 1e-4. */
    rc |= write(zoo_rnn("LSTM", 64, 1, 256, 512, true, 11), d, "rnn_lstm_bidir_64x1x256x512");
    rc |= write_atol(d, "rnn_lstm_bidir_64x1x256x512", 1e-4);
    rc |= write(zoo_rnn("GRU", 32, 8, 256, 256, false, 12), d, "rnn_gru_32x8x256x256");
    rc |= write_atol(d, "rnn_gru_32x8x256x256", 1e-4);
    /* The LSTM as ONNX Runtime's dynamic quantizer writes it: dqgraph runs
     * it on the dequantized weights in f32, ONNX Runtime with activations
     * quantized to u8 at every step, so the two differ by that
     * quantization's error (measured, not derived: 0.05 holds it). */
    rc |= write(zoo_dynamic_lstm(64, 1, 256, 512, 13), d, "ort_dynamic_lstm_64x1x256x512");
    rc |= write_atol(d, "ort_dynamic_lstm_64x1x256x512", 0.05);
    /* Static int8 at small M. */
    static const int64_t small_m[] = {1, 4, 16};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "qdq_matmul_%lldx4096x4096", (long long)small_m[i]);
        rc |= write(zoo_qdq_matmul(small_m[i], 4096, 4096, 5), d, name);
    }
    /* Weight-only low-bit. */
    static const int64_t wo_m[] = {1, 4, 16, 64, 128, 512};
    for (int i = 0; i < 6; i++)
        for (int v = 0; v < 4; v++) {
            static const int64_t blocks[] = {32, 32, 128, 0};
            bool zp = v == 1;
            char name[64];
            if (blocks[v])
                snprintf(name, sizeof name, "wo_int4_b%lld%s_%lldx4096x4096", (long long)blocks[v],
                         zp ? "_zp" : "", (long long)wo_m[i]);
            else
                snprintf(name, sizeof name, "wo_int8_%lldx4096x4096", (long long)wo_m[i]);
            rc |= write(zoo_wo_matmul(wo_m[i], 4096, 4096, blocks[v], zp, 6), d, name);
        }
    /* Quantized CNNs at 224x224 as ONNX Runtime's static quantizer writes
     * them. ONNX Runtime's int8 kernels round some requantized activations
     * one unit away from dqgraph's (both within the contract), and such
     * differences travel through the layers: the logits are compared within
     * a share of their calibrated magnitude. */
    for (int n = 0; n < ZOO_CNN_COUNT; n++) {
        /* The U-Net: 21 classes per pixel (PASCAL VOC's), compared value
         * by value, without a top-1. */
        bool seg = n == ZOO_UNET;
        zoo_cnn_options o = {.size = 224, .classes = seg ? 21 : 1000, .seed = 21};
        double absmax = 0.0;
        tm_model *m = zoo_cnn((zoo_cnn_net)n, &o, &absmax);
        char name[64];
        snprintf(name, sizeof name, "qdq_%s_%s_224", seg ? "seg" : "cnn",
                 zoo_cnn_name((zoo_cnn_net)n));
        if (!m) {
            rc |= 1;
            continue;
        }
        /* ResNet-50 and MobileNetV2 also in ONNX Runtime's QOperator form
         * (QLinearConv, QLinearAdd, ...), which ONNX Runtime runs with its
         * own kernels for those operators. */
        if (n == ZOO_RESNET50 || n == ZOO_MOBILENET_V2) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s.onnx", d, name);
            if (tm_write(m, path) != 0) {
                fprintf(stderr, "gen_models: cannot write %s\n", path);
                rc |= 1;
            } else {
                printf("%s\n", name);
            }
            rc |= write_atol(d, name, CNN_LOGIT_SHARE * absmax);
            zoo_to_qoperator(m);
            snprintf(name, sizeof name, "qop_cnn_%s_224", zoo_cnn_name((zoo_cnn_net)n));
        }
        rc |= write(m, d, name);
        rc |= write_atol(d, name, CNN_LOGIT_SHARE * absmax);
    }
    {
        /* ResNet-50 with the quantizer's weight_type=QUInt8 and
         * per_channel=False: u8 weights, one asymmetric zero point per
         * tensor, which leaves s8 after subtraction. */
        zoo_cnn_options o = {.size = 224,
                             .classes = 1000,
                             .seed = 21,
                             .u8_weights = true,
                             .per_tensor_weights = true};
        double absmax = 0.0;
        tm_model *m = zoo_cnn(ZOO_RESNET50, &o, &absmax);
        const char *name = "qdq_cnn_resnet50_u8w_224";
        if (!m) {
            rc |= 1;
        } else {
            rc |= write(m, d, name);
            rc |= write_atol(d, name, CNN_LOGIT_SHARE * absmax);
        }
    }
    return rc ? 1 : 0;
}
