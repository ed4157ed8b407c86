/* Data types: names, sizes, and the scalar and bulk codecs of every dqgraph
 * element type (IEEE half, bfloat16, the ONNX float8 and float4 formats,
 * packed 4-bit and wider integers). */
#include "graph/dtype.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Names and properties                                                      */
/* ------------------------------------------------------------------------ */

static const char *const dtype_names[DQG_DTYPE_COUNT] = {
    [DQG_DTYPE_UNDEF] = "undef",
    [DQG_F32] = "f32",
    [DQG_F16] = "f16",
    [DQG_BF16] = "bf16",
    [DQG_S4] = "s4",
    [DQG_U4] = "u4",
    [DQG_S8] = "s8",
    [DQG_U8] = "u8",
    [DQG_S16] = "s16",
    [DQG_U16] = "u16",
    [DQG_S32] = "s32",
    [DQG_U32] = "u32",
    [DQG_F8E4M3FN] = "f8e4m3fn",
    [DQG_F8E4M3FNUZ] = "f8e4m3fnuz",
    [DQG_F8E5M2] = "f8e5m2",
    [DQG_F8E5M2FNUZ] = "f8e5m2fnuz",
    [DQG_F4E2M1] = "f4e2m1",
    [DQG_S64] = "s64",
    [DQG_BOOL] = "bool",
};

static bool dtype_valid(dqg_dtype dtype)
{
    return (int)dtype > (int)DQG_DTYPE_UNDEF && (int)dtype < (int)DQG_DTYPE_COUNT;
}

const char *dqg_dtype_name(dqg_dtype dtype)
{
    return dtype_valid(dtype) ? dtype_names[dtype] : "undef";
}

dqg_dtype dqg_dtype_from_name(const char *name)
{
    if (!name)
        return DQG_DTYPE_UNDEF;
    for (int t = DQG_DTYPE_UNDEF + 1; t < DQG_DTYPE_COUNT; t++)
        if (strcmp(name, dtype_names[t]) == 0)
            return (dqg_dtype)t;
    return DQG_DTYPE_UNDEF;
}

int dqg_dtype_bits(dqg_dtype dtype)
{
    switch (dtype) {
    case DQG_S4:
    case DQG_U4:
    case DQG_F4E2M1:
        return 4;
    case DQG_S8:
    case DQG_U8:
    case DQG_F8E4M3FN:
    case DQG_F8E4M3FNUZ:
    case DQG_F8E5M2:
    case DQG_F8E5M2FNUZ:
    case DQG_BOOL:
        return 8;
    case DQG_F16:
    case DQG_BF16:
    case DQG_S16:
    case DQG_U16:
        return 16;
    case DQG_F32:
    case DQG_S32:
    case DQG_U32:
        return 32;
    case DQG_S64:
        return 64;
    default:
        return 0;
    }
}

size_t dqg_dtype_storage_size(dqg_dtype dtype, int64_t nelems)
{
    int bits = dqg_dtype_bits(dtype);
    if (bits == 0 || nelems < 0)
        return 0;
    uint64_t n = (uint64_t)nelems;
    if (bits == 4)
        return (size_t)((n + 1) / 2);
    uint64_t bytes = (uint64_t)bits / 8;
    if (n > (uint64_t)SIZE_MAX / bytes)
        return SIZE_MAX; /* cannot exist; any size check against it fails */
    return (size_t)(n * bytes);
}

bool dqg_dtype_is_float(dqg_dtype dtype)
{
    switch (dtype) {
    case DQG_F32:
    case DQG_F16:
    case DQG_BF16:
    case DQG_F8E4M3FN:
    case DQG_F8E4M3FNUZ:
    case DQG_F8E5M2:
    case DQG_F8E5M2FNUZ:
    case DQG_F4E2M1:
        return true;
    default:
        return false;
    }
}

bool dqg_dtype_is_integer(dqg_dtype dtype)
{
    switch (dtype) {
    case DQG_S4:
    case DQG_U4:
    case DQG_S8:
    case DQG_U8:
    case DQG_S16:
    case DQG_U16:
    case DQG_S32:
    case DQG_U32:
    case DQG_S64:
        return true;
    default:
        return false;
    }
}

/* Signed integers, and every float type (they all have a sign bit). */
bool dqg_dtype_is_signed(dqg_dtype dtype)
{
    switch (dtype) {
    case DQG_S4:
    case DQG_S8:
    case DQG_S16:
    case DQG_S32:
    case DQG_S64:
        return true;
    default:
        return dqg_dtype_is_float(dtype);
    }
}

int64_t dqg_int_min(dqg_dtype dtype)
{
    switch (dtype) {
    case DQG_S4:
        return -8;
    case DQG_S8:
        return INT8_MIN;
    case DQG_S16:
        return INT16_MIN;
    case DQG_S32:
        return INT32_MIN;
    case DQG_S64:
        return INT64_MIN;
    default:
        return 0;
    }
}

int64_t dqg_int_max(dqg_dtype dtype)
{
    switch (dtype) {
    case DQG_S4:
        return 7;
    case DQG_U4:
        return 15;
    case DQG_S8:
        return INT8_MAX;
    case DQG_U8:
        return UINT8_MAX;
    case DQG_S16:
        return INT16_MAX;
    case DQG_U16:
        return UINT16_MAX;
    case DQG_S32:
        return INT32_MAX;
    case DQG_U32:
        return UINT32_MAX;
    case DQG_S64:
        return INT64_MAX;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* Bit helpers                                                               */
/* ------------------------------------------------------------------------ */

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#define F32_SIGN  0x80000000u
#define F32_ABS   0x7FFFFFFFu
#define F32_INF   0x7F800000u
#define F32_QNAN  0x7FC00000u
#define F32_QUIET 0x00400000u

/* 2^k as a float, for -126 <= k <= 127. */
static inline float pow2f(int k)
{
    return bits_f32((uint32_t)(k + 127) << 23);
}

/* ------------------------------------------------------------------------ */
/* Generic small binary floating point                                       */
/* ------------------------------------------------------------------------ */

/*
 * Rounds a finite, non-negative float32 (given by its bits `u`) to nearest
 * even in a format with `mbits` stored mantissa bits, exponent bias `bias`,
 * subnormals, and an unbounded exponent range above. Returns the magnitude
 * code (exponent field << mbits | mantissa); a code beyond the format's
 * largest finite code means overflow. Valid for formats whose smallest normal
 * exponent 1 - bias is above float32's (-126).
 */
static uint32_t round_to_code(uint32_t u, int mbits, int bias)
{
    uint32_t sig = u & 0x7FFFFFu;
    int e; /* value = sig * 2^(e - 23) */
    if ((u >> 23) == 0) {
        e = -126;
    } else {
        sig |= 0x800000u;
        e = (int)(u >> 23) - 127;
    }
    int emin = 1 - bias;
    int shift = 23 - mbits;
    bool subnormal = e < emin;
    if (subnormal)
        shift += emin - e;
    uint32_t q;
    if (shift > 25) {
        q = 0; /* sig < 2^24 <= half an ulp */
    } else {
        uint32_t rem = sig & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        q = sig >> shift;
        if (rem > half || (rem == half && (q & 1)))
            q++;
    }
    if (subnormal)
        return q; /* q == 1 << mbits is exactly the smallest normal */
    /* A carry out of the mantissa (q == 2 << mbits) moves to the exponent. */
    return ((uint32_t)(e + bias) << mbits) + q - (1u << mbits);
}

/* The value of a finite magnitude code. */
static inline float code_to_value(uint32_t code, int mbits, int bias)
{
    uint32_t e = code >> mbits;
    uint32_t m = code & ((1u << mbits) - 1);
    if (e == 0)
        return (float)m * pow2f(1 - bias - mbits);
    return bits_f32(((uint32_t)((int)e - bias + 127) << 23) | (m << (23 - mbits)));
}

/* ------------------------------------------------------------------------ */
/* f16 and bf16                                                              */
/* ------------------------------------------------------------------------ */

float dqg_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1F;
    uint32_t m = h & 0x3FFu;
    if (e == 0x1F) /* infinity, or NaN made quiet with its payload */
        return bits_f32(sign | F32_INF | (m ? F32_QUIET | (m << 13) : 0));
    float v = code_to_value(h & 0x7FFFu, 10, 15);
    return bits_f32(f32_bits(v) | sign);
}

uint16_t dqg_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & F32_ABS;
    if (a > F32_INF) /* NaN: quiet, sign and top payload bits kept */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a == F32_INF)
        return (uint16_t)(sign | 0x7C00u);
    uint32_t code = round_to_code(a, 10, 15);
    if (code > 0x7BFFu)
        code = 0x7C00u; /* overflow: infinity */
    return (uint16_t)(sign | code);
}

float dqg_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    if ((u & F32_ABS) > F32_INF)
        u |= F32_QUIET;
    return bits_f32(u);
}

uint16_t dqg_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & F32_ABS) > F32_INF)
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Round to nearest even on the low 16 bits; a carry into the exponent
     * field is correct, and overflow lands exactly on infinity. */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ------------------------------------------------------------------------ */
/* float8                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct f8_format {
    int mbits;
    int bias;
    uint8_t max_code; /* largest finite magnitude code */
    bool fnuz;        /* 0x80 is the only NaN, no negative zero, no infinity */
    bool has_inf;     /* IEEE-like exponent field all ones (e5m2) */
} f8_format;

static const f8_format f8_e4m3fn = {3, 7, 0x7E, false, false};
static const f8_format f8_e4m3fnuz = {3, 8, 0x7F, true, false};
static const f8_format f8_e5m2 = {2, 15, 0x7B, false, true};
static const f8_format f8_e5m2fnuz = {2, 16, 0x7F, true, false};

static const f8_format *f8_format_of(dqg_dtype dtype)
{
    switch (dtype) {
    case DQG_F8E4M3FN:
        return &f8_e4m3fn;
    case DQG_F8E4M3FNUZ:
        return &f8_e4m3fnuz;
    case DQG_F8E5M2:
        return &f8_e5m2;
    case DQG_F8E5M2FNUZ:
        return &f8_e5m2fnuz;
    default:
        return NULL;
    }
}

static float f8_decode(const f8_format *fmt, uint8_t v)
{
    uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    uint32_t mag = v & 0x7Fu;
    if (fmt->fnuz) {
        if (v == 0x80)
            return bits_f32(F32_QNAN);
    } else if (mag > fmt->max_code) {
        if (fmt->has_inf && mag == 0x7C)
            return bits_f32(sign | F32_INF);
        return bits_f32(sign | F32_QNAN);
    }
    return bits_f32(f32_bits(code_to_value(mag, fmt->mbits, fmt->bias)) | sign);
}

static uint8_t f8_encode(const f8_format *fmt, float f, bool saturate)
{
    uint32_t u = f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & F32_ABS;
    if (a > F32_INF) /* NaN */
        return fmt->fnuz ? 0x80 : (uint8_t)(sign | 0x7F);
    uint32_t code = a == F32_INF ? 0x100u : round_to_code(a, fmt->mbits, fmt->bias);
    if (code > fmt->max_code) {
        if (saturate)
            return (uint8_t)(sign | fmt->max_code);
        if (fmt->has_inf)
            return (uint8_t)(sign | 0x7C);
        return fmt->fnuz ? 0x80 : (uint8_t)(sign | 0x7F);
    }
    if (fmt->fnuz && code == 0)
        return 0; /* no negative zero */
    return (uint8_t)(sign | code);
}

float dqg_f8_to_f32(dqg_dtype dtype, uint8_t v)
{
    const f8_format *fmt = f8_format_of(dtype);
    return fmt ? f8_decode(fmt, v) : bits_f32(F32_QNAN);
}

uint8_t dqg_f32_to_f8(dqg_dtype dtype, float f, bool saturate)
{
    const f8_format *fmt = f8_format_of(dtype);
    return fmt ? f8_encode(fmt, f, saturate) : 0;
}

/* ------------------------------------------------------------------------ */
/* float4 e2m1                                                               */
/* ------------------------------------------------------------------------ */

float dqg_f4e2m1_to_f32(uint8_t nibble)
{
    uint32_t sign = (uint32_t)(nibble & 0x8u) << 28;
    return bits_f32(f32_bits(code_to_value(nibble & 0x7u, 1, 1)) | sign);
}

uint8_t dqg_f32_to_f4e2m1(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t a = u & F32_ABS;
    if (a > F32_INF)
        return 0x7; /* NaN: +max */
    uint8_t sign = (uint8_t)((u >> 28) & 0x8u);
    uint32_t code = a == F32_INF ? 0x8u : round_to_code(a, 1, 1);
    if (code > 0x7u)
        code = 0x7u;
    return (uint8_t)(sign | code);
}

/* ------------------------------------------------------------------------ */
/* Integers                                                                  */
/* ------------------------------------------------------------------------ */

/* Round half to even, then saturate to [lo, hi]; NaN gives 0. Independent of
 * the floating-point rounding mode. */
static inline int64_t round_sat(double v, int64_t lo, int64_t hi)
{
    if (v != v)
        return 0;
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    /* lo < v < hi, so the truncation fits; v - trunc(v) is exact. */
    int64_t i = (int64_t)v;
    double frac = v - (double)i;
    if (frac > 0.5 || (frac == 0.5 && (i & 1)))
        i++;
    else if (frac < -0.5 || (frac == -0.5 && (i & 1)))
        i--;
    return i;
}

/* The same for ranges within int32, in float arithmetic (hot loops). */
static inline int32_t round_sat_small(float v, int32_t lo, int32_t hi)
{
    if (v != v)
        return 0;
    if (v <= (float)lo)
        return lo;
    if (v >= (float)hi)
        return hi;
    int32_t i = (int32_t)v;
    float frac = v - (float)i;
    if (frac > 0.5f || (frac == 0.5f && (i & 1)))
        i++;
    else if (frac < -0.5f || (frac == -0.5f && (i & 1)))
        i--;
    return i;
}

static inline int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* An int64 converted to float with round-to-odd: a later rounding to any
 * format of at most 22 significand bits is then as if done once, exactly. */
static float int64_to_float_odd(int64_t v)
{
    uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int k = 0;
    while ((a >> k) >= (1u << 24))
        k++;
    uint64_t q = a >> k;
    if (k > 0 && (a & ((UINT64_C(1) << k) - 1)))
        q |= 1;
    float f = ldexpf((float)q, k);
    return v < 0 ? -f : f;
}

static inline void store_bytes(void *base, int64_t i, const void *v, size_t size)
{
    memcpy((uint8_t *)base + (size_t)i * size, v, size);
}

static inline uint16_t load_u16(const void *base, int64_t i)
{
    uint16_t x;
    memcpy(&x, (const uint8_t *)base + (size_t)i * 2, 2);
    return x;
}

static inline uint32_t load_u32(const void *base, int64_t i)
{
    uint32_t x;
    memcpy(&x, (const uint8_t *)base + (size_t)i * 4, 4);
    return x;
}

static inline uint64_t load_u64(const void *base, int64_t i)
{
    uint64_t x;
    memcpy(&x, (const uint8_t *)base + (size_t)i * 8, 8);
    return x;
}

static inline float load_f32(const void *base, int64_t i)
{
    return bits_f32(load_u32(base, i));
}

static inline int64_t s4_value(uint8_t nibble)
{
    return (int64_t)((nibble ^ 8) & 0xF) - 8;
}

/* Integer element i, for integer types only. */
static int64_t load_integer(dqg_dtype dtype, const void *base, int64_t i)
{
    const uint8_t *p = base;
    switch (dtype) {
    case DQG_S4:
        return s4_value(dqg_nibble_get(base, i));
    case DQG_U4:
        return dqg_nibble_get(base, i);
    case DQG_S8:
        return (int8_t)p[i];
    case DQG_U8:
        return p[i];
    case DQG_S16:
        return (int16_t)load_u16(base, i);
    case DQG_U16:
        return load_u16(base, i);
    case DQG_S32:
        return (int32_t)load_u32(base, i);
    case DQG_U32:
        return load_u32(base, i);
    case DQG_S64:
        return (int64_t)load_u64(base, i);
    default:
        return 0;
    }
}

/* Stores v, already within the type's range. */
static void store_integer(dqg_dtype dtype, void *base, int64_t i, int64_t v)
{
    uint8_t *p = base;
    switch (dtype) {
    case DQG_S4:
    case DQG_U4:
        dqg_nibble_set(base, i, (uint8_t)(v & 0xF));
        break;
    case DQG_S8:
    case DQG_U8:
        p[i] = (uint8_t)v;
        break;
    case DQG_S16:
    case DQG_U16: {
        uint16_t x = (uint16_t)v;
        store_bytes(base, i, &x, 2);
        break;
    }
    case DQG_S32:
    case DQG_U32: {
        uint32_t x = (uint32_t)v;
        store_bytes(base, i, &x, 4);
        break;
    }
    case DQG_S64: {
        uint64_t x = (uint64_t)v;
        store_bytes(base, i, &x, 8);
        break;
    }
    default:
        break;
    }
}

/* ------------------------------------------------------------------------ */
/* Scalar element access                                                     */
/* ------------------------------------------------------------------------ */

int64_t dqg_load_int(dqg_dtype dtype, const void *base, int64_t i)
{
    if (dqg_dtype_is_integer(dtype))
        return load_integer(dtype, base, i);
    if (dtype == DQG_BOOL)
        return ((const uint8_t *)base)[i] != 0;
    if (dqg_dtype_is_float(dtype)) /* not meant for floats; defined anyway */
        return round_sat(dqg_load_double(dtype, base, i), INT64_MIN, INT64_MAX);
    return 0;
}

void dqg_store_int(dqg_dtype dtype, void *base, int64_t i, int64_t v)
{
    if (dqg_dtype_is_integer(dtype)) {
        store_integer(dtype, base, i, clamp_i64(v, dqg_int_min(dtype), dqg_int_max(dtype)));
    } else if (dtype == DQG_BOOL) {
        ((uint8_t *)base)[i] = v != 0;
    } else if (dtype == DQG_F32) {
        float f = (float)v;
        store_bytes(base, i, &f, 4);
    } else if (dqg_dtype_is_float(dtype)) {
        dqg_store_float(dtype, base, i, int64_to_float_odd(v));
    }
}

double dqg_load_double(dqg_dtype dtype, const void *base, int64_t i)
{
    if (dqg_dtype_is_integer(dtype))
        return (double)load_integer(dtype, base, i); /* s64 beyond 2^53 rounds */
    return (double)dqg_load_float(dtype, base, i);
}

float dqg_load_float(dqg_dtype dtype, const void *base, int64_t i)
{
    const uint8_t *p = base;
    switch (dtype) {
    case DQG_F32:
        return load_f32(base, i);
    case DQG_F16:
        return dqg_f16_to_f32(load_u16(base, i));
    case DQG_BF16:
        return dqg_bf16_to_f32(load_u16(base, i));
    case DQG_F8E4M3FN:
    case DQG_F8E4M3FNUZ:
    case DQG_F8E5M2:
    case DQG_F8E5M2FNUZ:
        return f8_decode(f8_format_of(dtype), p[i]);
    case DQG_F4E2M1:
        return dqg_f4e2m1_to_f32(dqg_nibble_get(base, i));
    case DQG_BOOL:
        return p[i] != 0 ? 1.0f : 0.0f;
    default:
        if (dqg_dtype_is_integer(dtype))
            return (float)load_integer(dtype, base, i);
        return 0.0f;
    }
}

/* store_float with an explicit float8 saturation mode. */
static void store_float_sat(dqg_dtype dtype, void *base, int64_t i, float v, bool saturate)
{
    uint8_t *p = base;
    switch (dtype) {
    case DQG_F32:
        store_bytes(base, i, &v, 4);
        break;
    case DQG_F16: {
        uint16_t h = dqg_f32_to_f16(v);
        store_bytes(base, i, &h, 2);
        break;
    }
    case DQG_BF16: {
        uint16_t b = dqg_f32_to_bf16(v);
        store_bytes(base, i, &b, 2);
        break;
    }
    case DQG_F8E4M3FN:
    case DQG_F8E4M3FNUZ:
    case DQG_F8E5M2:
    case DQG_F8E5M2FNUZ:
        p[i] = f8_encode(f8_format_of(dtype), v, saturate);
        break;
    case DQG_F4E2M1:
        dqg_nibble_set(base, i, dqg_f32_to_f4e2m1(v));
        break;
    case DQG_BOOL:
        p[i] = v != 0.0f; /* NaN is non-zero: true, as ONNX's Cast */
        break;
    default:
        if (dqg_dtype_is_integer(dtype))
            store_integer(dtype, base, i,
                          round_sat((double)v, dqg_int_min(dtype), dqg_int_max(dtype)));
        break;
    }
}

void dqg_store_float(dqg_dtype dtype, void *base, int64_t i, float v)
{
    store_float_sat(dtype, base, i, v, true);
}

/* ------------------------------------------------------------------------ */
/* Bulk codecs                                                               */
/* ------------------------------------------------------------------------ */

/* Below this many elements, a float8 decode does not build its table. */
#define F8_TABLE_MIN 256

void dqg_dtype_decode(dqg_dtype dtype, const void *src, int64_t first, int64_t n, float *dst)
{
    if (!dtype_valid(dtype) || n <= 0 || first < 0 || !src || !dst)
        return;
    switch (dtype) {
    case DQG_F32:
        memcpy(dst, (const uint8_t *)src + (size_t)first * 4, (size_t)n * 4);
        return;
    case DQG_F16:
        for (int64_t k = 0; k < n; k++)
            dst[k] = dqg_f16_to_f32(load_u16(src, first + k));
        return;
    case DQG_BF16:
        for (int64_t k = 0; k < n; k++)
            dst[k] = dqg_bf16_to_f32(load_u16(src, first + k));
        return;
    case DQG_S8: {
        const int8_t *s = (const int8_t *)src + first;
        for (int64_t k = 0; k < n; k++)
            dst[k] = (float)s[k];
        return;
    }
    case DQG_U8: {
        const uint8_t *s = (const uint8_t *)src + first;
        for (int64_t k = 0; k < n; k++)
            dst[k] = (float)s[k];
        return;
    }
    case DQG_F8E4M3FN:
    case DQG_F8E4M3FNUZ:
    case DQG_F8E5M2:
    case DQG_F8E5M2FNUZ: {
        const f8_format *fmt = f8_format_of(dtype);
        const uint8_t *s = (const uint8_t *)src + first;
        if (n < F8_TABLE_MIN) {
            for (int64_t k = 0; k < n; k++)
                dst[k] = f8_decode(fmt, s[k]);
            return;
        }
        float table[256];
        for (int c = 0; c < 256; c++)
            table[c] = f8_decode(fmt, (uint8_t)c);
        for (int64_t k = 0; k < n; k++)
            dst[k] = table[s[k]];
        return;
    }
    case DQG_S4:
    case DQG_U4:
    case DQG_F4E2M1: {
        float table[16];
        for (int c = 0; c < 16; c++)
            table[c] = dtype == DQG_S4   ? (float)s4_value((uint8_t)c)
                       : dtype == DQG_U4 ? (float)c
                                         : dqg_f4e2m1_to_f32((uint8_t)c);
        int64_t k = 0;
        if (first & 1) /* leading high nibble */
            dst[k++] = table[dqg_nibble_get(src, first)];
        const uint8_t *bytes = (const uint8_t *)src + ((first + k) >> 1);
        for (; k + 1 < n; k += 2) {
            uint8_t b = *bytes++;
            dst[k] = table[b & 0xF];
            dst[k + 1] = table[b >> 4];
        }
        if (k < n)
            dst[k] = table[dqg_nibble_get(src, first + k)];
        return;
    }
    default:
        for (int64_t k = 0; k < n; k++)
            dst[k] = dqg_load_float(dtype, src, first + k);
        return;
    }
}

void dqg_dtype_encode(dqg_dtype dtype, const float *src, int64_t n, void *dst, int64_t first,
                      bool saturate)
{
    if (!dtype_valid(dtype) || n <= 0 || first < 0 || !src || !dst)
        return;
    switch (dtype) {
    case DQG_F32:
        memcpy((uint8_t *)dst + (size_t)first * 4, src, (size_t)n * 4);
        return;
    case DQG_F16:
        for (int64_t k = 0; k < n; k++) {
            uint16_t h = dqg_f32_to_f16(src[k]);
            store_bytes(dst, first + k, &h, 2);
        }
        return;
    case DQG_BF16:
        for (int64_t k = 0; k < n; k++) {
            uint16_t b = dqg_f32_to_bf16(src[k]);
            store_bytes(dst, first + k, &b, 2);
        }
        return;
    case DQG_S8: {
        int8_t *d = (int8_t *)dst + first;
        for (int64_t k = 0; k < n; k++)
            d[k] = (int8_t)round_sat_small(src[k], INT8_MIN, INT8_MAX);
        return;
    }
    case DQG_U8: {
        uint8_t *d = (uint8_t *)dst + first;
        for (int64_t k = 0; k < n; k++)
            d[k] = (uint8_t)round_sat_small(src[k], 0, UINT8_MAX);
        return;
    }
    case DQG_F8E4M3FN:
    case DQG_F8E4M3FNUZ:
    case DQG_F8E5M2:
    case DQG_F8E5M2FNUZ: {
        const f8_format *fmt = f8_format_of(dtype);
        uint8_t *d = (uint8_t *)dst + first;
        for (int64_t k = 0; k < n; k++)
            d[k] = f8_encode(fmt, src[k], saturate);
        return;
    }
    case DQG_S4:
    case DQG_U4:
    case DQG_F4E2M1: {
        int32_t lo = dtype == DQG_S4 ? -8 : 0, hi = dtype == DQG_S4 ? 7 : 15;
#define ENC4(x)                                                                                    \
    (dtype == DQG_F4E2M1 ? dqg_f32_to_f4e2m1(x) : (uint8_t)(round_sat_small((x), lo, hi) & 0xF))
        int64_t k = 0;
        if (first & 1) { /* leading high nibble */
            dqg_nibble_set(dst, first, ENC4(src[0]));
            k = 1;
        }
        uint8_t *bytes = (uint8_t *)dst + ((first + k) >> 1);
        for (; k + 1 < n; k += 2)
            *bytes++ = (uint8_t)(ENC4(src[k]) | (ENC4(src[k + 1]) << 4));
        if (k < n)
            dqg_nibble_set(dst, first + k, ENC4(src[k]));
#undef ENC4
        return;
    }
    default:
        for (int64_t k = 0; k < n; k++)
            store_float_sat(dtype, dst, first + k, src[k], saturate);
        return;
    }
}
