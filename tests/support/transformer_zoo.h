/* Whole transformer layers, written as their exporters and quantizers
 * write them, with seeded random weights (tests and benchmarks).
 *
 * zoo_bert_layer: a BERT encoder layer (hidden H, `heads` heads, FFN F,
 * sequence S, batch 1, input and output [S, H]) as ONNX Runtime's dynamic
 * quantizer writes it: every projection DynamicQuantizeLinear ->
 * MatMulInteger -> Cast -> Mul(x_scale * w_scale) -> Add(bias); attention
 * in f32 (MatMul, Div by sqrt(d), Add mask, Softmax, MatMul, with
 * Reshape/Transpose around the heads); residual Add + LayerNormalization;
 * GELU as Div, Erf, Add, Mul, Mul. Opset 17. *step_bound receives the
 * largest column sum of |w| * w_scale over the projections: one
 * activation quantization step times it bounds what a one-step change of
 * one quantized activation does to a projection output.
 *
 * zoo_llama_layer: a Llama-style decoder layer (hidden H, `heads` heads,
 * MLP F, sequence S, input and output [S, H]) with every projection
 * DequantizeLinear-21 (int4 [K, N], axis 0, blocks of 32, f32 scales) ->
 * MatMul; RMSNorm as Pow, ReduceMean, Add, Sqrt, Div, Mul; rotary
 * embedding with Slice, Neg, Concat, Mul, Add; causal attention with
 * Softmax; SiLU as Sigmoid * x. Opset 21. */
#ifndef DQG_TEST_TRANSFORMER_ZOO_H
#define DQG_TEST_TRANSFORMER_ZOO_H

#include <stdint.h>

#include "onnx_model.h"

tm_model *zoo_bert_layer(int64_t S, int64_t H, int64_t heads, int64_t F, uint32_t seed,
                         double *step_bound);
tm_model *zoo_llama_layer(int64_t S, int64_t H, int64_t heads, int64_t F, uint32_t seed);
/* The same with grouped-query attention: the key and value projections
 * give kv_heads heads (a divisor of heads), repeated to `heads` by
 * Reshape -> Expand -> Reshape as exporters write repeat_kv. */
tm_model *zoo_llama_layer_gqa(int64_t S, int64_t H, int64_t heads, int64_t kv_heads, int64_t F,
                              uint32_t seed);

#endif
