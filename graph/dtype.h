/* Scalar codecs for every dqgraph data type (internal). The public
 * dqg_dtype_* functions in dqgraph.h are built on these. */
#ifndef DQG_DTYPE_H
#define DQG_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "dqgraph.h"

/* IEEE binary16 and bfloat16, round to nearest even; NaN stays NaN (quiet). */
float dqg_f16_to_f32(uint16_t h);
uint16_t dqg_f32_to_f16(float f);
float dqg_bf16_to_f32(uint16_t b);
uint16_t dqg_f32_to_bf16(float f);

/* The four ONNX float8 types (dtype selects the format):
 * - f8e4m3fn:   bias 7, no infinity, S.1111.111 is NaN, max 448
 * - f8e4m3fnuz: bias 8, no infinity, no negative zero, 0x80 is the only NaN, max 240
 * - f8e5m2:     bias 15, IEEE-like (infinity, NaNs), max 57344
 * - f8e5m2fnuz: bias 16, no infinity, no negative zero, 0x80 is the only NaN, max 57344
 * Encoding rounds to nearest even. With saturate (the ONNX default) values
 * beyond the largest finite value, and infinities, become +/-max; without it
 * they become infinity (e5m2) or NaN (types without infinity), following the
 * ONNX conversion table. NaN always encodes as NaN. */
float dqg_f8_to_f32(dqg_dtype dtype, uint8_t v);
uint8_t dqg_f32_to_f8(dqg_dtype dtype, float f, bool saturate);

/* float4 e2m1 (ONNX FLOAT4E2M1): values 0, 0.5, 1, 1.5, 2, 3, 4, 6 with sign;
 * no infinity or NaN. Encoding rounds to nearest even and saturates to +/-6;
 * NaN encodes as +6 (ONNX: NaN maps to the maximum). Uses the low 4 bits. */
float dqg_f4e2m1_to_f32(uint8_t nibble);
uint8_t dqg_f32_to_f4e2m1(float f);

/* 4-bit element access: element i lives in byte i/2, low nibble when i is even. */
static inline uint8_t dqg_nibble_get(const void *base, int64_t i)
{
    uint8_t b = ((const uint8_t *)base)[i >> 1];
    return (uint8_t)((i & 1) ? (b >> 4) : (b & 0x0F));
}
static inline void dqg_nibble_set(void *base, int64_t i, uint8_t v)
{
    uint8_t *p = (uint8_t *)base + (i >> 1);
    *p = (i & 1) ? (uint8_t)((*p & 0x0F) | ((v & 0x0F) << 4)) : (uint8_t)((*p & 0xF0) | (v & 0x0F));
}

/* Exact integer value of element i of an integer tensor (s4..u32, s64);
 * a bool reads as 0 or 1 (any non-zero byte is 1). */
int64_t dqg_load_int(dqg_dtype dtype, const void *base, int64_t i);
/* Writes an integer, saturating to the type's range (bool: v != 0). */
void dqg_store_int(dqg_dtype dtype, void *base, int64_t i, int64_t v);

/* Element i of any tensor as double (exact for every type). */
double dqg_load_double(dqg_dtype dtype, const void *base, int64_t i);
/* Element i as float: integers above 2^24 in magnitude round to nearest even. */
float dqg_load_float(dqg_dtype dtype, const void *base, int64_t i);
/* Writes a float into element i: float types round to nearest even (float8
 * saturating), integer types round half to even and saturate. */
void dqg_store_float(dqg_dtype dtype, void *base, int64_t i, float v);

/* Smallest and largest value of an integer type. */
int64_t dqg_int_min(dqg_dtype dtype);
int64_t dqg_int_max(dqg_dtype dtype);

/* Round half to even of a float, whatever the floating-point environment's
 * rounding mode (the SIMD kernels' roundscale/cvt round the same way). */
static inline float dqg_rne_f(float v)
{
    float f = floorf(v), d = v - f;
    if (d > 0.5f || (d == 0.5f && fmodf(f, 2.0f) != 0.0f))
        return f + 1.0f;
    return f;
}

#endif /* DQG_DTYPE_H */
