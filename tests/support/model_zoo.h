/* The models dqgraph is measured and tested on, written as ONNX files the
 * way the usual tools write them (ONNX Runtime's static and dynamic
 * quantizers, DequantizeLinear-21 blocked int4 weights), with seeded random
 * weights. Shared by the benchmark generator and the tests. */
#ifndef DQG_TEST_MODEL_ZOO_H
#define DQG_TEST_MODEL_ZOO_H

#include <stdbool.h>
#include <stdint.h>

#include "onnx_model.h"

/* DynamicQuantizeLinear(x) -> DequantizeLinear x2 -> MatMul: x f32 [M, K],
 * s8 weights [K, N] with per-channel scales. */
tm_model *zoo_dql_matmul(int64_t M, int64_t K, int64_t N, uint32_t seed);
/* ONNX Runtime's dynamic quantizer: DynamicQuantizeLinear -> MatMulInteger
 * (s8 weights) -> Cast -> Mul(x_scale * w_scale) [-> Add bias]. */
tm_model *zoo_ort_dynamic_matmul(int64_t M, int64_t K, int64_t N, bool bias, uint32_t seed);
/* The same with the quantizer's QUInt8 weights: u8 over the whole range
 * with a zero point of 131 (w - 131 leaves s8), or with `per_column` one
 * scale and zero point (108 .. 148) per column. *step_bound (may be NULL):
 * as for zoo_ort_dynamic_projections. */
tm_model *zoo_ort_dynamic_matmul_u8w(int64_t M, int64_t K, int64_t N, bool per_column,
                                     uint32_t seed, double *step_bound);
/* A BERT-style layer's projections as ONNX Runtime's dynamic quantizer
 * writes them: one DynamicQuantizeLinear of x [M, H] read by four
 * MatMulInteger -> Cast -> Mul(x_scale * w_scale) -> Add(bias) chains, the
 * query, key and value [H, H] and the feed-forward input [H, F], outputs
 * q, k, v and ffn. *step_bound (may be NULL) receives the largest change of
 * an output that one quantization step of every activation can make, for
 * activations in [-2, 2). */
tm_model *zoo_ort_dynamic_projections(int64_t M, int64_t H, int64_t F, uint32_t seed,
                                      double *step_bound);
/* A recurrent layer in f32 (opset 14): op_type "LSTM", "GRU" or "RNN" over
 * x [T, N, I] with hidden size H, bidirectional or forward, the weights
 * and biases initializers uniform in +-1/sqrt(H); outputs Y and Y_h. */
tm_model *zoo_rnn(const char *op_type, int64_t T, int64_t N, int64_t I, int64_t H,
                  bool bidirectional, uint32_t seed);
/* ONNX Runtime's dynamically quantized LSTM (com.microsoft
 * DynamicQuantizeLSTM) over x [T, N, I], hidden size H, bidirectional:
 * int8 weights [D, K, 4H] with zero points 0, W's scale per direction and
 * R's per column; outputs Y and Y_h. */
tm_model *zoo_dynamic_lstm(int64_t T, int64_t N, int64_t I, int64_t H, uint32_t seed);
/* Static int8: DequantizeLinear(u8 x, per tensor) and DequantizeLinear(s8
 * W, per channel) -> MatMul, f32 output. */
tm_model *zoo_qdq_matmul(int64_t M, int64_t K, int64_t N, uint32_t seed);
/* Weight-only: f32 x [M, K] times DequantizeLinear-21 of constant weights
 * [K, N]: int4 blocked along K (block_size B, with a u4 zero point when
 * zp, else s4), or int8 per output channel when B == 0. */
tm_model *zoo_wo_matmul(int64_t M, int64_t K, int64_t N, int64_t B, bool zp, uint32_t seed);

/* Convolutional networks as ONNX Runtime's static quantizer writes them
 * (QDQ, opset 13; see model_zoo_cnn.c), calibrated on one seeded input:
 * graph input "input" f32 [batch, 3, size, size], one f32 output [batch,
 * classes] ([batch, classes, size, size] for ZOO_UNET). */
typedef enum zoo_cnn_net {
    ZOO_RESNET50,
    ZOO_VGG19,
    ZOO_INCEPTION_V1, /* GoogLeNet, with its two LRNs */
    ZOO_DENSENET121,  /* BatchNormalization + Relu after each Concat */
    ZOO_SQUEEZENET11,
    ZOO_SHUFFLENET_V1, /* 3 groups; channel shuffle by Reshape/Transpose/Reshape */
    ZOO_ALEXNET,       /* with LRN; size at least 64 */
    ZOO_MOBILENET_V2,  /* Clip(0, 6), depthwise convolutions, residual Adds */
    /* HardSwish, squeeze-and-excitation gates (HardSigmoid), 5x5
     * depthwise convolutions */
    ZOO_MOBILENET_V3,
    /* BN-Inception: two 3x3 convolutions in place of the 5x5, average
     * pools with 1x1 projections, stride-2 modules with a max-pool
     * pass-through */
    ZOO_INCEPTION_V2,
    /* Segmentation: ConvTranspose upsampling and skip Concats; size a
     * multiple of 8 */
    ZOO_UNET,
    ZOO_CNN_COUNT
} zoo_cnn_net;

typedef struct zoo_cnn_options {
    int64_t size;    /* input height and width (0: 224) */
    int64_t classes; /* 0: 1000 */
    /* Fewer blocks per stage (one or two) and 256-wide hidden fully
     * connected layers, for fast tests. */
    bool reduced;
    uint32_t seed; /* weights; the calibration input uses seed + 1000 */
    /* ONNX Runtime's other settings: activation_type=QInt8 (asymmetric s8
     * activations) and per_channel=False (one weight scale per tensor). */
    bool s8_activations;
    bool per_tensor_weights;
    /* weight_type=QUInt8: u8 weights, asymmetric (zero points anywhere in
     * 0..255), per channel or per tensor as above. */
    bool u8_weights;
    int64_t batch; /* images per run (0: 1) */
} zoo_cnn_options;

/* The network's name ("resnet50", ...), NULL out of range. */
const char *zoo_cnn_name(zoo_cnn_net net);
/* The calibrated QDQ model; NULL (with a message on stderr) when the float
 * network cannot be run for calibration. *logit_absmax (may be NULL)
 * receives the largest magnitude of the logits in the calibration run. */
tm_model *zoo_cnn(zoo_cnn_net net, const zoo_cnn_options *o, double *logit_absmax);
/* A random network of the layers above, its shape and weights drawn from
 * o->seed (o->reduced is ignored), calibrated like the others: random
 * convolutions (grouped, depthwise, strided, padded; ReLU, ReLU6 or
 * HardSwish), pools, residual Adds, channel Concats, BatchNormalization,
 * LRN, squeeze-and-excitation gates (a Sigmoid of [N, C, 1, 1] times the
 * map) and channel shuffles over a pool of live feature maps, some of
 * which are also graph outputs; the last output is a Gemm's logits or a
 * convolution's feature map. */
tm_model *zoo_cnn_random(const zoo_cnn_options *o);
/* The input's element count: batch * 3 * size * size. */
int64_t zoo_cnn_input_elems(const zoo_cnn_options *o);
/* A seeded input, uniform in [-2, 2): x holds zoo_cnn_input_elems(o)
 * floats. */
void zoo_cnn_input(const zoo_cnn_options *o, uint32_t seed, float *x);

/* Rewrites a QDQ model in place into ONNX Runtime's QOperator form
 * (QLinearConv, QGemm, QLinearAdd, QLinearConcat, QLinearGlobalAveragePool,
 * QLinearAveragePool; MaxPool, Flatten, Reshape, Transpose on the quantized
 * tensors; see model_qoperator.c). */
void zoo_to_qoperator(tm_model *m);

#endif
