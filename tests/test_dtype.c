/* Tests of graph/dtype.c: names and sizes, and every codec checked against
 * values computed here from the format definitions. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dqgraph.h"
#include "graph/dtype.h"

/* ------------------------------------------------------------------------ */
/* Reference formulas (independent of the code under test)                   */
/* ------------------------------------------------------------------------ */

enum ref_kind {
    KIND_FN,   /* no infinity, exponent and mantissa all ones is NaN, has -0 */
    KIND_FNUZ, /* no infinity, 0x80 is the only NaN, no -0 */
    KIND_IEEE, /* exponent all ones: infinity (mantissa 0) or NaN */
};

typedef struct ref_fmt {
    dqg_dtype dtype;
    const char *name;
    int ebits, mbits, bias;
    enum ref_kind kind;
    double max;         /* documented largest finite value */
    double min_sub;     /* documented smallest positive subnormal */
    unsigned max_code;  /* code of +max */
    unsigned nan_code;  /* NaN code produced for +NaN */
    unsigned over_code; /* non-saturating overflow of a positive value */
} ref_fmt;

static const ref_fmt f8_fmts[] = {
    {DQG_F8E4M3FN, "e4m3fn", 4, 3, 7, KIND_FN, 448.0, 0x1p-9, 0x7E, 0x7F, 0x7F},
    {DQG_F8E4M3FNUZ, "e4m3fnuz", 4, 3, 8, KIND_FNUZ, 240.0, 0x1p-10, 0x7F, 0x80, 0x80},
    {DQG_F8E5M2, "e5m2", 5, 2, 15, KIND_IEEE, 57344.0, 0x1p-16, 0x7B, 0x7F, 0x7C},
    {DQG_F8E5M2FNUZ, "e5m2fnuz", 5, 2, 16, KIND_FNUZ, 57344.0, 0x1p-17, 0x7F, 0x80, 0x80},
};
#define N_F8 (sizeof f8_fmts / sizeof f8_fmts[0])

enum ref_class { CLS_FINITE, CLS_INF, CLS_NAN };

/* Value of `code` in a sign/exponent/mantissa format of 1 + ebits + mbits bits. */
static double ref_decode(int ebits, int mbits, int bias, enum ref_kind kind, unsigned code,
                         enum ref_class *cls)
{
    int nbits = 1 + ebits + mbits;
    unsigned sign = (code >> (nbits - 1)) & 1;
    unsigned e = (code >> mbits) & ((1u << ebits) - 1);
    unsigned m = code & ((1u << mbits) - 1);
    unsigned e_ones = (1u << ebits) - 1, m_ones = (1u << mbits) - 1;
    *cls = CLS_FINITE;
    if (kind == KIND_FNUZ && code == (1u << (nbits - 1))) {
        *cls = CLS_NAN;
        return NAN;
    }
    if (kind == KIND_FN && e == e_ones && m == m_ones) {
        *cls = CLS_NAN;
        return NAN;
    }
    if (kind == KIND_IEEE && e == e_ones) {
        *cls = m == 0 ? CLS_INF : CLS_NAN;
        return m == 0 ? (sign ? -INFINITY : INFINITY) : NAN;
    }
    double mag;
    if (e == 0)
        mag = ldexp((double)m, 1 - bias - mbits); /* subnormal: 0.m * 2^(1-bias) */
    else
        mag = (1.0 + (double)m / (double)(1u << mbits)) * ldexp(1.0, (int)e - bias);
    return sign ? -mag : mag;
}

static double ref_f8(const ref_fmt *f, unsigned code, enum ref_class *cls)
{
    return ref_decode(f->ebits, f->mbits, f->bias, f->kind, code, cls);
}

static double ref_f16(unsigned h, enum ref_class *cls)
{
    return ref_decode(5, 10, 15, KIND_IEEE, h, cls);
}

static double ref_bf16(unsigned b, enum ref_class *cls)
{
    return ref_decode(8, 7, 127, KIND_IEEE, b, cls);
}

/* float4 e2m1: S.EE.M, bias 1, no special values. */
static double ref_f4(unsigned code)
{
    unsigned sign = (code >> 3) & 1, e = (code >> 1) & 3, m = code & 1;
    double mag = e == 0 ? 0.5 * m : (1.0 + 0.5 * m) * ldexp(1.0, (int)e - 1);
    return sign ? -mag : mag;
}

/* Asserts that `got` is the reference value (exactly, with the sign of zero)
 * or a NaN when the reference is one. */
static void expect_value(float got, double want, enum ref_class cls, const char *what,
                         unsigned code)
{
    if (cls == CLS_NAN) {
        cr_assert(isnan(got), "%s code 0x%X: got %a, want NaN", what, code, (double)got);
        return;
    }
    cr_assert((double)got == want && !signbit(got) == !signbit(want),
              "%s code 0x%X: got %a, want %a", what, code, (double)got, want);
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Encodes with the bulk codec (one element). */
static uint8_t enc8(dqg_dtype dt, float v, bool saturate)
{
    uint8_t b = 0xA5;
    dqg_dtype_encode(dt, &v, 1, &b, 0, saturate);
    return b;
}

/* ------------------------------------------------------------------------ */
/* Names, sizes, properties                                                  */
/* ------------------------------------------------------------------------ */

Test(dtype, names_round_trip)
{
    static const char *const want[DQG_DTYPE_COUNT] = {
        "undef",  "f32",        "f16",    "bf16", "s4",   "u4",       "s8",
        "u8",     "s16",        "u16",    "s32",  "u32",  "f8e4m3fn", "f8e4m3fnuz",
        "f8e5m2", "f8e5m2fnuz", "f4e2m1", "s64",  "bool",
    };
    for (int t = 0; t < DQG_DTYPE_COUNT; t++) {
        cr_assert_str_eq(dqg_dtype_name((dqg_dtype)t), want[t]);
        cr_assert_eq(dqg_dtype_from_name(want[t]), (dqg_dtype)t, "%s", want[t]);
    }
    cr_assert_str_eq(dqg_dtype_name(DQG_DTYPE_COUNT), "undef");
    cr_assert_str_eq(dqg_dtype_name((dqg_dtype)-1), "undef");
    cr_assert_str_eq(dqg_dtype_name((dqg_dtype)1000), "undef");
    cr_assert_eq(dqg_dtype_from_name(NULL), DQG_DTYPE_UNDEF);
    cr_assert_eq(dqg_dtype_from_name(""), DQG_DTYPE_UNDEF);
    cr_assert_eq(dqg_dtype_from_name("f8"), DQG_DTYPE_UNDEF);
    cr_assert_eq(dqg_dtype_from_name("f32 "), DQG_DTYPE_UNDEF);
    cr_assert_eq(dqg_dtype_from_name("float32"), DQG_DTYPE_UNDEF);
}

Test(dtype, bits_and_predicates)
{
    static const struct {
        dqg_dtype t;
        int bits;
        bool is_float, is_int, is_signed;
    } rows[] = {
        {DQG_F32, 32, true, false, true},       {DQG_F16, 16, true, false, true},
        {DQG_BF16, 16, true, false, true},      {DQG_S4, 4, false, true, true},
        {DQG_U4, 4, false, true, false},        {DQG_S8, 8, false, true, true},
        {DQG_U8, 8, false, true, false},        {DQG_S16, 16, false, true, true},
        {DQG_U16, 16, false, true, false},      {DQG_S32, 32, false, true, true},
        {DQG_U32, 32, false, true, false},      {DQG_F8E4M3FN, 8, true, false, true},
        {DQG_F8E4M3FNUZ, 8, true, false, true}, {DQG_F8E5M2, 8, true, false, true},
        {DQG_F8E5M2FNUZ, 8, true, false, true}, {DQG_F4E2M1, 4, true, false, true},
        {DQG_S64, 64, false, true, true},       {DQG_DTYPE_UNDEF, 0, false, false, false},
        {DQG_BOOL, 8, false, false, false},     {DQG_DTYPE_COUNT, 0, false, false, false},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const char *n = dqg_dtype_name(rows[r].t);
        cr_assert_eq(dqg_dtype_bits(rows[r].t), rows[r].bits, "%s", n);
        cr_assert_eq(dqg_dtype_is_float(rows[r].t), rows[r].is_float, "%s", n);
        cr_assert_eq(dqg_dtype_is_integer(rows[r].t), rows[r].is_int, "%s", n);
        cr_assert_eq(dqg_dtype_is_signed(rows[r].t), rows[r].is_signed, "%s", n);
    }
}

Test(dtype, storage_sizes)
{
    static const dqg_dtype four[] = {DQG_S4, DQG_U4, DQG_F4E2M1};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(dqg_dtype_storage_size(four[k], 0), 0);
        cr_assert_eq(dqg_dtype_storage_size(four[k], 1), 1);
        cr_assert_eq(dqg_dtype_storage_size(four[k], 2), 1);
        cr_assert_eq(dqg_dtype_storage_size(four[k], 3), 2);
        cr_assert_eq(dqg_dtype_storage_size(four[k], 1001), 501);
        cr_assert_eq(dqg_dtype_storage_size(four[k], -1), 0);
    }
    cr_assert_eq(dqg_dtype_storage_size(DQG_S8, 7), 7);
    cr_assert_eq(dqg_dtype_storage_size(DQG_F8E5M2FNUZ, 7), 7);
    cr_assert_eq(dqg_dtype_storage_size(DQG_F16, 5), 10);
    cr_assert_eq(dqg_dtype_storage_size(DQG_BF16, 5), 10);
    cr_assert_eq(dqg_dtype_storage_size(DQG_U16, 3), 6);
    cr_assert_eq(dqg_dtype_storage_size(DQG_F32, 3), 12);
    cr_assert_eq(dqg_dtype_storage_size(DQG_U32, 3), 12);
    cr_assert_eq(dqg_dtype_storage_size(DQG_S64, 3), 24);
    cr_assert_eq(dqg_dtype_storage_size(DQG_BOOL, 3), 3);
    cr_assert_eq(dqg_dtype_storage_size(DQG_F32, 0), 0);
    cr_assert_eq(dqg_dtype_storage_size(DQG_F32, -5), 0);
    cr_assert_eq(dqg_dtype_storage_size(DQG_DTYPE_UNDEF, 4), 0);
    cr_assert_eq(dqg_dtype_storage_size(DQG_DTYPE_COUNT, 4), 0);
}

Test(dtype, int_min_max)
{
    cr_assert_eq(dqg_int_min(DQG_S4), -8);
    cr_assert_eq(dqg_int_max(DQG_S4), 7);
    cr_assert_eq(dqg_int_min(DQG_U4), 0);
    cr_assert_eq(dqg_int_max(DQG_U4), 15);
    cr_assert_eq(dqg_int_min(DQG_S8), -128);
    cr_assert_eq(dqg_int_max(DQG_S8), 127);
    cr_assert_eq(dqg_int_min(DQG_U8), 0);
    cr_assert_eq(dqg_int_max(DQG_U8), 255);
    cr_assert_eq(dqg_int_min(DQG_S16), -32768);
    cr_assert_eq(dqg_int_max(DQG_S16), 32767);
    cr_assert_eq(dqg_int_max(DQG_U16), 65535);
    cr_assert_eq(dqg_int_min(DQG_S32), -2147483647LL - 1);
    cr_assert_eq(dqg_int_max(DQG_S32), 2147483647LL);
    cr_assert_eq(dqg_int_min(DQG_U32), 0);
    cr_assert_eq(dqg_int_max(DQG_U32), 4294967295LL);
    cr_assert_eq(dqg_int_min(DQG_S64), INT64_MIN);
    cr_assert_eq(dqg_int_max(DQG_S64), INT64_MAX);
}

/* ------------------------------------------------------------------------ */
/* f16 and bf16                                                              */
/* ------------------------------------------------------------------------ */

Test(dtype, f16_decode_all_codes)
{
    for (unsigned h = 0; h < 65536; h++) {
        enum ref_class cls;
        double want = ref_f16(h, &cls);
        float got = dqg_f16_to_f32((uint16_t)h);
        expect_value(got, want, cls, "f16", h);
        if (cls == CLS_NAN)
            cr_assert_eq(signbit(got) != 0, (h & 0x8000) != 0, "f16 NaN sign 0x%X", h);
    }
    /* A few landmarks of the format. */
    cr_assert_eq(dqg_f16_to_f32(0x3C00), 1.0f);
    cr_assert_eq(dqg_f16_to_f32(0x7BFF), 65504.0f);
    cr_assert_eq(dqg_f16_to_f32(0x0001), 0x1p-24f);
    cr_assert_eq(dqg_f16_to_f32(0x0400), 0x1p-14f);
    cr_assert_eq(dqg_f16_to_f32(0xC000), -2.0f);
}

Test(dtype, f16_round_trip_all_codes)
{
    for (unsigned h = 0; h < 65536; h++) {
        float f = dqg_f16_to_f32((uint16_t)h);
        uint16_t back = dqg_f32_to_f16(f);
        if (isnan(f)) {
            /* NaN stays NaN with its sign; quiet NaNs keep their payload. */
            cr_assert((back & 0x7C00) == 0x7C00 && (back & 0x3FF) != 0, "f16 0x%X -> 0x%X", h,
                      back);
            cr_assert_eq(back & 0x8000, h & 0x8000, "f16 NaN sign 0x%X", h);
            if (h & 0x200)
                cr_assert_eq(back, h, "quiet f16 NaN 0x%X -> 0x%X", h, back);
            continue;
        }
        cr_assert_eq(back, h, "f16 0x%X -> %a -> 0x%X", h, (double)f, back);
    }
}

Test(dtype, bf16_decode_all_codes)
{
    for (unsigned b = 0; b < 65536; b++) {
        enum ref_class cls;
        double want = ref_bf16(b, &cls);
        float got = dqg_bf16_to_f32((uint16_t)b);
        expect_value(got, want, cls, "bf16", b);
        if (cls == CLS_NAN)
            cr_assert_eq(signbit(got) != 0, (b & 0x8000) != 0, "bf16 NaN sign 0x%X", b);
    }
    cr_assert_eq(dqg_bf16_to_f32(0x3F80), 1.0f);
    cr_assert_eq(dqg_bf16_to_f32(0x7F7F), 0x1.FEp127f);
    cr_assert_eq(dqg_bf16_to_f32(0x0001), 0x1p-133f);
}

Test(dtype, bf16_round_trip_all_codes)
{
    for (unsigned b = 0; b < 65536; b++) {
        float f = dqg_bf16_to_f32((uint16_t)b);
        uint16_t back = dqg_f32_to_bf16(f);
        if (isnan(f)) {
            cr_assert((back & 0x7F80) == 0x7F80 && (back & 0x7F) != 0, "bf16 0x%X -> 0x%X", b,
                      back);
            cr_assert_eq(back & 0x8000, b & 0x8000, "bf16 NaN sign 0x%X", b);
            if (b & 0x40)
                cr_assert_eq(back, b, "quiet bf16 NaN 0x%X -> 0x%X", b, back);
            continue;
        }
        cr_assert_eq(back, b, "bf16 0x%X -> %a -> 0x%X", b, (double)f, back);
    }
}

/* For every pair of adjacent finite positive codes (c, c + 1) of a 16-bit
 * format: the midpoint goes to the even code, anything just off it to the
 * nearer code; negative values mirror with the sign bit. */
static void check_ties_16(const char *what, unsigned last_finite,
                          double (*ref)(unsigned, enum ref_class *), uint16_t (*enc)(float))
{
    for (unsigned c = 0; c < last_finite; c++) {
        enum ref_class cls;
        double lo = ref(c, &cls), hi = ref(c + 1, &cls);
        double mid = (lo + hi) / 2;
        float fm = (float)mid;
        cr_assert_eq((double)fm, mid, "%s midpoint not exact", what);
        unsigned even = (c & 1) ? c + 1 : c;
        cr_assert_eq(enc(fm), even, "%s tie between 0x%X and 0x%X", what, c, c + 1);
        cr_assert_eq(enc(-fm), 0x8000 | even, "%s -tie between 0x%X and 0x%X", what, c, c + 1);
        cr_assert_eq(enc(nextafterf(fm, INFINITY)), c + 1, "%s above mid 0x%X", what, c);
        cr_assert_eq(enc(nextafterf(fm, 0.0f)), c, "%s below mid 0x%X", what, c);
        cr_assert_eq(enc(-nextafterf(fm, INFINITY)), 0x8000 | (c + 1), "%s -above 0x%X", what, c);
    }
}

Test(dtype, f16_ties_every_adjacent_pair)
{
    check_ties_16("f16", 0x7BFF, ref_f16, dqg_f32_to_f16);
}

Test(dtype, bf16_ties_every_adjacent_pair)
{
    check_ties_16("bf16", 0x7F7F, ref_bf16, dqg_f32_to_bf16);
}

Test(dtype, f16_subnormals_overflow_specials)
{
    /* Subnormals and underflow. */
    cr_assert_eq(dqg_f32_to_f16(0x1p-24f), 0x0001);
    cr_assert_eq(dqg_f32_to_f16(0x1p-25f), 0x0000);      /* tie to even: 0 */
    cr_assert_eq(dqg_f32_to_f16(0x1.8p-24f), 0x0002);    /* tie 1.5 ulp: to 2 */
    cr_assert_eq(dqg_f32_to_f16(0x1.0001p-25f), 0x0001); /* just above the tie */
    cr_assert_eq(dqg_f32_to_f16(0x1p-26f), 0x0000);
    cr_assert_eq(dqg_f32_to_f16(-0x1p-26f), 0x8000);
    cr_assert_eq(dqg_f32_to_f16(0x1.FF8p-15f), 0x03FF); /* largest subnormal */
    cr_assert_eq(dqg_f32_to_f16(0x1.FFCp-15f), 0x0400); /* tie rounds up into the normals */
    cr_assert_eq(dqg_f32_to_f16(0x1.FFBp-15f), 0x03FF);
    cr_assert_eq(dqg_f32_to_f16(0x1p-14f), 0x0400);
    cr_assert_eq(dqg_f32_to_f16(float_of(0x00000001)), 0x0000); /* f32 subnormal */
    cr_assert_eq(dqg_f32_to_f16(float_of(0x80000001)), 0x8000);
    cr_assert_eq(dqg_f32_to_f16(0.0f), 0x0000);
    cr_assert_eq(dqg_f32_to_f16(-0.0f), 0x8000);
    /* Normal rounding. */
    cr_assert_eq(dqg_f32_to_f16(1.0f), 0x3C00);
    cr_assert_eq(dqg_f32_to_f16(1.0f + 0x1p-11f), 0x3C00); /* tie: even */
    cr_assert_eq(dqg_f32_to_f16(1.0f + 0x3p-11f), 0x3C02); /* tie: even (up) */
    cr_assert_eq(dqg_f32_to_f16(0.1f), 0x2E66);
    cr_assert_eq(dqg_f32_to_f16(-2.0f), 0xC000);
    /* Overflow. */
    cr_assert_eq(dqg_f32_to_f16(65504.0f), 0x7BFF);
    cr_assert_eq(dqg_f32_to_f16(65519.996f), 0x7BFF);
    cr_assert_eq(dqg_f32_to_f16(65520.0f), 0x7C00); /* tie with 0x7BFF odd: infinity */
    cr_assert_eq(dqg_f32_to_f16(-65520.0f), 0xFC00);
    cr_assert_eq(dqg_f32_to_f16(1e10f), 0x7C00);
    cr_assert_eq(dqg_f32_to_f16(FLT_MAX), 0x7C00);
    cr_assert_eq(dqg_f32_to_f16(INFINITY), 0x7C00);
    cr_assert_eq(dqg_f32_to_f16(-INFINITY), 0xFC00);
    /* NaN: quiet, sign kept, even a signalling NaN with a low payload. */
    uint16_t n = dqg_f32_to_f16(NAN);
    cr_assert((n & 0x7E00) == 0x7E00 && !(n & 0x8000), "0x%X", n);
    n = dqg_f32_to_f16(-NAN);
    cr_assert((n & 0x7E00) == 0x7E00 && (n & 0x8000), "0x%X", n);
    n = dqg_f32_to_f16(float_of(0x7F800001));
    cr_assert((n & 0x7E00) == 0x7E00, "signalling NaN -> 0x%X", n);
    cr_assert(isnan(dqg_f16_to_f32(0x7C01)));
}

Test(dtype, bf16_specials)
{
    cr_assert_eq(dqg_f32_to_bf16(1.0f), 0x3F80);
    cr_assert_eq(dqg_f32_to_bf16(float_of(0x3F808000)), 0x3F80); /* tie: even */
    cr_assert_eq(dqg_f32_to_bf16(float_of(0x3F818000)), 0x3F82); /* tie: even (up) */
    cr_assert_eq(dqg_f32_to_bf16(float_of(0x3F808001)), 0x3F81);
    cr_assert_eq(dqg_f32_to_bf16(float_of(0x00008000)), 0x0000); /* subnormal tie */
    cr_assert_eq(dqg_f32_to_bf16(float_of(0x00018000)), 0x0002);
    cr_assert_eq(dqg_f32_to_bf16(-0.0f), 0x8000);
    cr_assert_eq(dqg_f32_to_bf16(FLT_MAX), 0x7F80); /* above the last midpoint */
    cr_assert_eq(dqg_f32_to_bf16(float_of(0x7F7F7FFF)), 0x7F7F);
    cr_assert_eq(dqg_f32_to_bf16(-INFINITY), 0xFF80);
    uint16_t n = dqg_f32_to_bf16(float_of(0x7F800001)); /* payload only in the low half */
    cr_assert((n & 0x7FC0) == 0x7FC0 && !(n & 0x8000), "0x%X", n);
    n = dqg_f32_to_bf16(-NAN);
    cr_assert((n & 0x7FC0) == 0x7FC0 && (n & 0x8000), "0x%X", n);
    cr_assert(isnan(dqg_bf16_to_f32(0x7F81)));
}

/* ------------------------------------------------------------------------ */
/* float8                                                                    */
/* ------------------------------------------------------------------------ */

Test(dtype, f8_decode_all_codes)
{
    for (size_t k = 0; k < N_F8; k++) {
        const ref_fmt *f = &f8_fmts[k];
        int nan_count = 0, inf_count = 0;
        for (unsigned c = 0; c < 256; c++) {
            enum ref_class cls;
            double want = ref_f8(f, c, &cls);
            float got = dqg_f8_to_f32(f->dtype, (uint8_t)c);
            expect_value(got, want, cls, f->name, c);
            if (cls == CLS_NAN && f->kind != KIND_FNUZ)
                cr_assert_eq(signbit(got) != 0, (c & 0x80) != 0, "%s NaN sign 0x%X", f->name, c);
            nan_count += cls == CLS_NAN;
            inf_count += cls == CLS_INF;
        }
        /* The reference itself against the documented properties. */
        enum ref_class cls;
        cr_assert_eq(ref_f8(f, f->max_code, &cls), f->max, "%s max", f->name);
        cr_assert_eq(ref_f8(f, 0x01, &cls), f->min_sub, "%s min subnormal", f->name);
        cr_assert_eq(nan_count,
                     f->kind == KIND_FNUZ ? 1
                     : f->kind == KIND_FN ? 2
                                          : 6,
                     "%s", f->name);
        cr_assert_eq(inf_count, f->kind == KIND_IEEE ? 2 : 0, "%s", f->name);
    }
    /* Landmarks. */
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E4M3FN, 0x38), 1.0f);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E4M3FN, 0x7E), 448.0f);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E4M3FN, 0xFE), -448.0f);
    cr_assert(signbit(dqg_f8_to_f32(DQG_F8E4M3FN, 0x80)) && dqg_f8_to_f32(DQG_F8E4M3FN, 0x80) == 0);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E4M3FNUZ, 0x40), 1.0f);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E4M3FNUZ, 0x7F), 240.0f);
    cr_assert(isnan(dqg_f8_to_f32(DQG_F8E4M3FNUZ, 0x80)));
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E4M3FNUZ, 0xFF), -240.0f);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E5M2, 0x3C), 1.0f);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E5M2, 0x7B), 57344.0f);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E5M2, 0x7C), INFINITY);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E5M2, 0xFC), -INFINITY);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E5M2FNUZ, 0x40), 1.0f);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E5M2FNUZ, 0x7F), 57344.0f);
    cr_assert_eq(dqg_f8_to_f32(DQG_F8E5M2FNUZ, 0x01), 0x1p-17f);
}

Test(dtype, f8_round_trip_all_codes)
{
    for (size_t k = 0; k < N_F8; k++) {
        const ref_fmt *f = &f8_fmts[k];
        for (unsigned c = 0; c < 256; c++) {
            float v = dqg_f8_to_f32(f->dtype, (uint8_t)c);
            if (isnan(v))
                continue;
            for (int sat = 0; sat < 2; sat++) {
                uint8_t want = (uint8_t)c;
                if (isinf(v) && sat) /* e5m2 infinity saturates to +/-max */
                    want = (uint8_t)((c & 0x80) | f->max_code);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, v, sat), want, "%s 0x%X sat=%d -> 0x%X",
                             f->name, c, sat, dqg_f32_to_f8(f->dtype, v, sat));
                cr_assert_eq(enc8(f->dtype, v, sat), want, "%s bulk 0x%X sat=%d", f->name, c, sat);
            }
        }
    }
}

Test(dtype, f8_ties_every_adjacent_pair)
{
    for (size_t k = 0; k < N_F8; k++) {
        const ref_fmt *f = &f8_fmts[k];
        for (unsigned c = 0; c < f->max_code; c++) {
            enum ref_class cls;
            double mid = (ref_f8(f, c, &cls) + ref_f8(f, c + 1, &cls)) / 2;
            float fm = (float)mid;
            cr_assert_eq((double)fm, mid);
            unsigned even = (c & 1) ? c + 1 : c;
            /* Negative results: sign bit, except that FNUZ has no -0. */
            unsigned neg_even = (f->kind == KIND_FNUZ && even == 0) ? 0 : (0x80 | even);
            unsigned neg_lo = (f->kind == KIND_FNUZ && c == 0) ? 0 : (0x80 | c);
            float above = nextafterf(fm, INFINITY), below = nextafterf(fm, 0.0f);
            for (int sat = 0; sat < 2; sat++) {
                cr_assert_eq(dqg_f32_to_f8(f->dtype, fm, sat), even, "%s tie 0x%X/0x%X", f->name, c,
                             c + 1);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, -fm, sat), neg_even, "%s -tie 0x%X", f->name,
                             c);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, above, sat), c + 1, "%s above 0x%X", f->name,
                             c);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, below, sat), c, "%s below 0x%X", f->name, c);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, -above, sat), 0x80 | (c + 1), "%s -above 0x%X",
                             f->name, c);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, -below, sat), neg_lo, "%s -below 0x%X",
                             f->name, c);
            }
        }
    }
}

Test(dtype, f8_overflow_saturate_and_not)
{
    for (size_t k = 0; k < N_F8; k++) {
        const ref_fmt *f = &f8_fmts[k];
        /* The would-be next value past max has max's exponent and one more ulp. */
        double ulp = ldexp(1.0, ((int)f->max_code >> f->mbits) - f->bias - f->mbits);
        float mid = (float)(f->max + ulp / 2);
        bool max_even = (f->max_code & 1) == 0;
        unsigned neg_over = f->kind == KIND_FNUZ ? 0x80 : 0x80 | f->over_code;
        const float big[] = {nextafterf(mid, INFINITY),
                             (float)(f->max + ulp),
                             (float)(2 * f->max),
                             1e30f,
                             FLT_MAX,
                             INFINITY};
        for (int sat = 0; sat < 2; sat++) {
            cr_assert_eq(dqg_f32_to_f8(f->dtype, (float)f->max, sat), f->max_code, "%s", f->name);
            cr_assert_eq(dqg_f32_to_f8(f->dtype, nextafterf(mid, 0.0f), sat), f->max_code,
                         "%s below the overflow midpoint", f->name);
            for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) {
                unsigned want = sat ? f->max_code : f->over_code;
                unsigned want_neg = sat ? 0x80 | f->max_code : neg_over;
                cr_assert_eq(dqg_f32_to_f8(f->dtype, big[b], sat), want, "%s %a sat=%d", f->name,
                             (double)big[b], sat);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, -big[b], sat), want_neg, "%s %a sat=%d",
                             f->name, -(double)big[b], sat);
                cr_assert_eq(enc8(f->dtype, -big[b], sat), want_neg, "%s bulk", f->name);
            }
            /* Exactly at the midpoint: rounds to max if max is even, else overflows. */
            unsigned want_mid = (max_even || sat) ? f->max_code : f->over_code;
            cr_assert_eq(dqg_f32_to_f8(f->dtype, mid, sat), want_mid, "%s mid sat=%d", f->name,
                         sat);
        }
    }
    /* Spelled out for the record. */
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E4M3FN, 464.0f, false), 0x7E);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E4M3FN, 465.0f, false), 0x7F);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E4M3FN, 480.0f, false), 0x7F);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E4M3FN, -1000.0f, false), 0xFF);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E4M3FN, -1000.0f, true), 0xFE);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E4M3FNUZ, 247.99f, false), 0x7F);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E4M3FNUZ, 248.0f, false), 0x80);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E4M3FNUZ, -248.0f, true), 0xFF);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E5M2, 61439.0f, false), 0x7B);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E5M2, 61440.0f, false), 0x7C);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E5M2, -INFINITY, false), 0xFC);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E5M2, -INFINITY, true), 0xFB);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E5M2FNUZ, 61440.0f, false), 0x80);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E5M2FNUZ, -INFINITY, false), 0x80);
    cr_assert_eq(dqg_f32_to_f8(DQG_F8E5M2FNUZ, INFINITY, true), 0x7F);
    /* dqg_store_float on float8 is the saturating conversion. */
    uint8_t b = 0;
    dqg_store_float(DQG_F8E4M3FN, &b, 0, 1e6f);
    cr_assert_eq(b, 0x7E);
    dqg_store_float(DQG_F8E5M2, &b, 0, -INFINITY);
    cr_assert_eq(b, 0xFB);
}

Test(dtype, f8_nan_encoding)
{
    const float nans[] = {NAN, float_of(0x7F800001), float_of(0x7FFFFFFF), float_of(0x7FC00000)};
    for (size_t k = 0; k < N_F8; k++) {
        const ref_fmt *f = &f8_fmts[k];
        for (size_t j = 0; j < sizeof nans / sizeof nans[0]; j++) {
            float neg = float_of(bits_of(nans[j]) | 0x80000000u);
            unsigned want_neg = f->kind == KIND_FNUZ ? 0x80 : 0x80 | f->nan_code;
            for (int sat = 0; sat < 2; sat++) {
                cr_assert_eq(dqg_f32_to_f8(f->dtype, nans[j], sat), f->nan_code, "%s", f->name);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, neg, sat), want_neg, "%s -NaN", f->name);
                cr_assert_eq(enc8(f->dtype, neg, sat), want_neg, "%s bulk -NaN", f->name);
            }
        }
        cr_assert(isnan(dqg_f8_to_f32(f->dtype, (uint8_t)f->nan_code)), "%s", f->name);
    }
}

Test(dtype, f8_zero_and_underflow)
{
    for (size_t k = 0; k < N_F8; k++) {
        const ref_fmt *f = &f8_fmts[k];
        unsigned neg_zero = f->kind == KIND_FNUZ ? 0x00 : 0x80;
        const float tiny[] = {0.0f, float_of(1), (float)(f->min_sub / 4), (float)(f->min_sub / 2)};
        for (size_t j = 0; j < sizeof tiny / sizeof tiny[0]; j++) {
            for (int sat = 0; sat < 2; sat++) {
                cr_assert_eq(dqg_f32_to_f8(f->dtype, tiny[j], sat), 0x00, "%s %a", f->name,
                             (double)tiny[j]);
                cr_assert_eq(dqg_f32_to_f8(f->dtype, -tiny[j], sat), neg_zero, "%s -%a", f->name,
                             (double)tiny[j]);
            }
        }
        float just_over = nextafterf((float)(f->min_sub / 2), 1.0f);
        cr_assert_eq(dqg_f32_to_f8(f->dtype, just_over, true), 0x01, "%s", f->name);
        cr_assert_eq(dqg_f32_to_f8(f->dtype, -just_over, true), 0x81, "%s", f->name);
        cr_assert_eq(dqg_f32_to_f8(f->dtype, (float)(f->min_sub * 1.5), true), 0x02, "%s", f->name);
    }
    /* The FNUZ decoders never produce -0. */
    for (unsigned c = 0; c < 256; c++) {
        float a = dqg_f8_to_f32(DQG_F8E4M3FNUZ, (uint8_t)c);
        float b = dqg_f8_to_f32(DQG_F8E5M2FNUZ, (uint8_t)c);
        cr_assert(!(a == 0 && signbit(a)) && !(b == 0 && signbit(b)), "code 0x%X", c);
    }
}

Test(dtype, f8_bulk_matches_scalar)
{
    uint8_t codes[600];
    for (int k = 0; k < 600; k++)
        codes[k] = (uint8_t)(k * 7 + 3);
    float out[600];
    for (size_t k = 0; k < N_F8; k++) {
        const ref_fmt *f = &f8_fmts[k];
        /* Large (table) and small (direct) decodes, with an offset. */
        const int64_t counts[] = {599, 10};
        for (int j = 0; j < 2; j++) {
            memset(out, 0, sizeof out);
            dqg_dtype_decode(f->dtype, codes, 1, counts[j], out);
            for (int64_t e = 0; e < counts[j]; e++) {
                enum ref_class cls;
                double want = ref_f8(f, codes[e + 1], &cls);
                expect_value(out[e], want, cls, f->name, codes[e + 1]);
                cr_assert_eq(bits_of(out[e]), bits_of(dqg_f8_to_f32(f->dtype, codes[e + 1])));
                cr_assert_eq(bits_of(dqg_load_float(f->dtype, codes, e + 1)), bits_of(out[e]));
            }
        }
        /* Encode at an offset leaves neighbours alone. */
        uint8_t buf[5] = {0x11, 0x11, 0x11, 0x11, 0x11};
        const float v[3] = {1.0f, -2.0f, 1e9f};
        dqg_dtype_encode(f->dtype, v, 3, buf, 1, false);
        cr_assert_eq(buf[0], 0x11);
        cr_assert_eq(buf[4], 0x11);
        cr_assert_eq(buf[1], dqg_f32_to_f8(f->dtype, 1.0f, false));
        cr_assert_eq(buf[2], dqg_f32_to_f8(f->dtype, -2.0f, false));
        cr_assert_eq(buf[3], f->over_code, "%s", f->name);
    }
}

/* ------------------------------------------------------------------------ */
/* float4 e2m1                                                               */
/* ------------------------------------------------------------------------ */

Test(dtype, f4_decode_all_codes)
{
    static const double magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (unsigned c = 0; c < 16; c++) {
        double want = ref_f4(c);
        double listed = (c & 8) ? -magnitudes[c & 7] : magnitudes[c & 7];
        cr_assert_eq(want, listed, "reference disagrees with the value list at 0x%X", c);
        expect_value(dqg_f4e2m1_to_f32((uint8_t)c), want, CLS_FINITE, "f4e2m1", c);
        /* Only the low 4 bits count. */
        expect_value(dqg_f4e2m1_to_f32((uint8_t)(0xA0 | c)), want, CLS_FINITE, "f4e2m1 hi", c);
    }
}

Test(dtype, f4_round_trip_ties_saturation)
{
    for (unsigned c = 0; c < 16; c++)
        cr_assert_eq(dqg_f32_to_f4e2m1((float)ref_f4(c)), c, "round trip 0x%X", c);
    for (unsigned c = 0; c < 7; c++) {
        double mid = (ref_f4(c) + ref_f4(c + 1)) / 2;
        unsigned even = (c & 1) ? c + 1 : c;
        float fm = (float)mid;
        cr_assert_eq(dqg_f32_to_f4e2m1(fm), even, "tie 0x%X/0x%X", c, c + 1);
        cr_assert_eq(dqg_f32_to_f4e2m1(-fm), 8 | even, "-tie 0x%X", c);
        cr_assert_eq(dqg_f32_to_f4e2m1(nextafterf(fm, INFINITY)), c + 1);
        cr_assert_eq(dqg_f32_to_f4e2m1(nextafterf(fm, 0.0f)), c);
        cr_assert_eq(dqg_f32_to_f4e2m1(-nextafterf(fm, INFINITY)), 8 | (c + 1));
    }
    /* Spelled out: 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4. */
    cr_assert_eq(dqg_f32_to_f4e2m1(0.25f), 0x0);
    cr_assert_eq(dqg_f32_to_f4e2m1(0.75f), 0x2);
    cr_assert_eq(dqg_f32_to_f4e2m1(1.25f), 0x2);
    cr_assert_eq(dqg_f32_to_f4e2m1(1.75f), 0x4);
    cr_assert_eq(dqg_f32_to_f4e2m1(2.5f), 0x4);
    cr_assert_eq(dqg_f32_to_f4e2m1(3.5f), 0x6);
    cr_assert_eq(dqg_f32_to_f4e2m1(5.0f), 0x6);
    cr_assert_eq(dqg_f32_to_f4e2m1(-5.0f), 0xE);
    /* Saturation, infinities, NaN, zeros. */
    cr_assert_eq(dqg_f32_to_f4e2m1(6.5f), 0x7);
    cr_assert_eq(dqg_f32_to_f4e2m1(7.0f), 0x7);
    cr_assert_eq(dqg_f32_to_f4e2m1(1e30f), 0x7);
    cr_assert_eq(dqg_f32_to_f4e2m1(-100.0f), 0xF);
    cr_assert_eq(dqg_f32_to_f4e2m1(INFINITY), 0x7);
    cr_assert_eq(dqg_f32_to_f4e2m1(-INFINITY), 0xF);
    cr_assert_eq(dqg_f32_to_f4e2m1(NAN), 0x7);
    cr_assert_eq(dqg_f32_to_f4e2m1(-NAN), 0x7);
    cr_assert_eq(dqg_f32_to_f4e2m1(0.0f), 0x0);
    cr_assert_eq(dqg_f32_to_f4e2m1(-0.0f), 0x8);
    cr_assert_eq(dqg_f32_to_f4e2m1(-0.1f), 0x8);
    cr_assert_eq(dqg_f32_to_f4e2m1(0.2500001f), 0x1);
    /* The bulk encoder agrees whatever `saturate` says (float4 always saturates). */
    uint8_t b = 0;
    float v = 100.0f;
    dqg_dtype_encode(DQG_F4E2M1, &v, 1, &b, 1, false);
    cr_assert_eq(b, 0x70);
}

Test(dtype, f4_packing_odd_offsets)
{
    /* (first, count): every mix of leading high nibble, whole bytes and
     * trailing low nibble. */
    static const int64_t runs[][2] = {{3, 15}, {3, 14}, {2, 15}, {2, 14}, {0, 1}, {1, 1}, {1, 2}};
    float v[16];
    for (int k = 0; k < 16; k++)
        v[k] = (float)ref_f4((unsigned)(15 - k));
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        int64_t first = runs[r][0], count = runs[r][1];
        uint8_t buf[10];
        memset(buf, 0xCC, sizeof buf);
        dqg_dtype_encode(DQG_F4E2M1, v, count, buf, first, true);
        for (int64_t i = 0; i < 20; i++) {
            unsigned want = (i >= first && i < first + count) ? (unsigned)(15 - (i - first)) : 0xC;
            cr_assert_eq(dqg_nibble_get(buf, i), want, "run (%lld, %lld): nibble %lld",
                         (long long)first, (long long)count, (long long)i);
        }
        float out[16];
        dqg_dtype_decode(DQG_F4E2M1, buf, first, count, out);
        for (int64_t k = 0; k < count; k++)
            expect_value(out[k], ref_f4((unsigned)(15 - k)), CLS_FINITE, "f4 packed", (unsigned)k);
    }
    /* Explicit bytes: elements 1..3 = +6 (0x7), -0.5 (0x9), +1 (0x2). */
    uint8_t b[2] = {0x00, 0x00};
    const float w[3] = {6.0f, -0.5f, 1.0f};
    dqg_dtype_encode(DQG_F4E2M1, w, 3, b, 1, true);
    cr_assert(b[0] == 0x70 && b[1] == 0x29, "%02X %02X", b[0], b[1]);
}

/* ------------------------------------------------------------------------ */
/* Integers                                                                  */
/* ------------------------------------------------------------------------ */

Test(dtype, s4_u4_packing_odd_counts)
{
    uint8_t buf[4] = {0xAA, 0xAA, 0xAA, 0xAA};
    const float s[3] = {-8.0f, 7.0f, -1.0f};
    dqg_dtype_encode(DQG_S4, s, 3, buf, 1, true);
    cr_assert_eq(buf[0], 0x8A);
    cr_assert_eq(buf[1], 0xF7);
    cr_assert_eq(buf[2], 0xAA);
    float out[8];
    dqg_dtype_decode(DQG_S4, buf, 1, 3, out);
    cr_assert_eq(out[0], -8.0f);
    cr_assert_eq(out[1], 7.0f);
    cr_assert_eq(out[2], -1.0f);
    dqg_dtype_decode(DQG_S4, buf, 0, 1, out); /* the untouched 0xA nibble: -6 */
    cr_assert_eq(out[0], -6.0f);

    /* u4, even start, odd count, with saturation and rounding. */
    memset(buf, 0x55, sizeof buf);
    const float u[5] = {-3.0f, 16.0f, 2.5f, 3.5f, NAN};
    dqg_dtype_encode(DQG_U4, u, 5, buf, 2, true);
    cr_assert_eq(buf[0], 0x55);
    cr_assert_eq(buf[1], 0xF0); /* elements 2 (0) and 3 (15) */
    cr_assert_eq(buf[2], 0x42); /* elements 4 (2) and 5 (4) */
    cr_assert_eq(buf[3], 0x50); /* element 6 (0), element 7 untouched */
    dqg_dtype_decode(DQG_U4, buf, 1, 7, out);
    const float want_u[7] = {5.0f, 0.0f, 15.0f, 2.0f, 4.0f, 0.0f, 5.0f};
    for (int k = 0; k < 7; k++)
        cr_assert_eq(out[k], want_u[k], "u4 element %d: %g", k + 1, (double)out[k]);

    /* Scalar access agrees with the bulk codecs. */
    for (int64_t i = 0; i < 8; i++)
        cr_assert_eq((float)dqg_load_int(DQG_U4, buf, i), dqg_load_float(DQG_U4, buf, i));
    dqg_store_int(DQG_S4, buf, 7, -100);
    cr_assert_eq(buf[3] >> 4, 0x8);
    cr_assert_eq(dqg_load_int(DQG_S4, buf, 7), -8);
    dqg_store_int(DQG_U4, buf, 6, 99);
    cr_assert_eq(buf[3], 0x8F);
}

Test(dtype, s4_load_sign_extends_every_nibble)
{
    for (unsigned c = 0; c < 16; c++) {
        uint8_t b = (uint8_t)(c | (c << 4));
        int64_t want = c < 8 ? (int64_t)c : (int64_t)c - 16;
        cr_assert_eq(dqg_load_int(DQG_S4, &b, 0), want, "nibble 0x%X", c);
        cr_assert_eq(dqg_load_int(DQG_S4, &b, 1), want, "nibble 0x%X", c);
        cr_assert_eq(dqg_load_int(DQG_U4, &b, 1), (int64_t)c);
        cr_assert_eq(dqg_load_double(DQG_S4, &b, 1), (double)want);
    }
}

Test(dtype, int_load_exact)
{
    const int8_t s8[2] = {-128, 127};
    const uint8_t u8[1] = {255};
    const int16_t s16[1] = {-32768};
    const uint16_t u16[1] = {65535};
    const int32_t s32[2] = {INT32_MIN, 16777217};
    const uint32_t u32[1] = {UINT32_MAX};
    const int64_t s64[2] = {INT64_MIN, (INT64_C(1) << 53) + 1};
    cr_assert_eq(dqg_load_int(DQG_S8, s8, 0), -128);
    cr_assert_eq(dqg_load_int(DQG_S8, s8, 1), 127);
    cr_assert_eq(dqg_load_int(DQG_U8, u8, 0), 255);
    cr_assert_eq(dqg_load_int(DQG_S16, s16, 0), -32768);
    cr_assert_eq(dqg_load_int(DQG_U16, u16, 0), 65535);
    cr_assert_eq(dqg_load_int(DQG_S32, s32, 0), INT32_MIN);
    cr_assert_eq(dqg_load_int(DQG_U32, u32, 0), (int64_t)UINT32_MAX);
    cr_assert_eq(dqg_load_int(DQG_S64, s64, 0), INT64_MIN);
    cr_assert_eq(dqg_load_int(DQG_S64, s64, 1), (INT64_C(1) << 53) + 1);
    /* load_double is exact up to 2^53; load_float rounds to nearest even. */
    cr_assert_eq(dqg_load_double(DQG_S32, s32, 1), 16777217.0);
    cr_assert_eq(dqg_load_float(DQG_S32, s32, 1), 16777216.0f);
    cr_assert_eq(dqg_load_double(DQG_U32, u32, 0), 4294967295.0);
    cr_assert_eq(dqg_load_float(DQG_U32, u32, 0), 4294967296.0f);
    cr_assert_eq(dqg_load_double(DQG_S64, s64, 0), -0x1p63);
    /* Float types through load_double. */
    const uint16_t h = 0x3555; /* f16 0.333251953125 */
    cr_assert_eq(dqg_load_double(DQG_F16, &h, 0), 0.333251953125);
    const float f = 0.1f;
    cr_assert_eq(dqg_load_double(DQG_F32, &f, 0), (double)0.1f);
    /* The bulk decoders. */
    float out[2];
    dqg_dtype_decode(DQG_S8, s8, 0, 2, out);
    cr_assert(out[0] == -128.0f && out[1] == 127.0f);
    dqg_dtype_decode(DQG_U32, u32, 0, 1, out);
    cr_assert_eq(out[0], 4294967296.0f);
    dqg_dtype_decode(DQG_S16, s16, 0, 1, out);
    cr_assert_eq(out[0], -32768.0f);
}

Test(dtype, int_round_half_to_even)
{
    static const dqg_dtype types[] = {DQG_S4, DQG_S8, DQG_S16, DQG_S32, DQG_S64};
    static const struct {
        float in;
        int64_t out;
    } cases[] = {
        {2.5f, 2}, {3.5f, 4},   {-2.5f, -2},     {-3.5f, -4},     {0.5f, 0},  {-0.5f, 0},
        {1.5f, 2}, {-1.5f, -2}, {2.4999998f, 2}, {2.5000002f, 3}, {-0.0f, 0}, {0.49999997f, 0},
        {6.5f, 6}, {-6.5f, -6}, {1.0f, 1},       {-7.0f, -7},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            int64_t buf[2] = {0, 0};
            dqg_store_float(types[t], buf, 1, cases[c].in);
            cr_assert_eq(dqg_load_int(types[t], buf, 1), cases[c].out, "%s %a",
                         dqg_dtype_name(types[t]), (double)cases[c].in);
            memset(buf, 0, sizeof buf);
            dqg_dtype_encode(types[t], &cases[c].in, 1, buf, 1, true);
            cr_assert_eq(dqg_load_int(types[t], buf, 1), cases[c].out, "bulk %s %a",
                         dqg_dtype_name(types[t]), (double)cases[c].in);
        }
    }
    /* Unsigned types and large magnitudes. */
    uint8_t u8[3];
    const float in8[3] = {254.5f, 253.5f, 0.5f};
    dqg_dtype_encode(DQG_U8, in8, 3, u8, 0, true);
    cr_assert(u8[0] == 254 && u8[1] == 254 && u8[2] == 0, "%d %d %d", u8[0], u8[1], u8[2]);
    uint32_t u32;
    dqg_store_float(DQG_U32, &u32, 0, 8388607.5f); /* -> 8388608 */
    cr_assert_eq(u32, 8388608u);
    int32_t s32;
    dqg_store_float(DQG_S32, &s32, 0, -8388607.5f); /* -> -8388608 */
    cr_assert_eq(s32, -8388608);
    dqg_store_float(DQG_S32, &s32, 0, 123456792.0f); /* exact integer */
    cr_assert_eq(s32, 123456792);
}

Test(dtype, int_saturation_and_nan)
{
    static const dqg_dtype types[] = {DQG_S4,  DQG_U4,  DQG_S8,  DQG_U8, DQG_S16,
                                      DQG_U16, DQG_S32, DQG_U32, DQG_S64};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        dqg_dtype dt = types[t];
        int64_t lo = dqg_int_min(dt), hi = dqg_int_max(dt);
        const char *n = dqg_dtype_name(dt);
        int64_t buf[2];
        const struct {
            float in;
            int64_t out;
        } cases[] = {
            {1e30f, hi},
            {INFINITY, hi},
            {-1e30f, lo},
            {-INFINITY, lo},
            {NAN, 0},
            {-NAN, 0},
            {1e19f, hi},
            {-1e19f, lo},
            {(float)hi + 0.5f, hi},
            {(float)lo - 0.5f, lo},
        };
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            memset(buf, 0x5A, sizeof buf);
            dqg_store_float(dt, buf, 0, cases[c].in);
            cr_assert_eq(dqg_load_int(dt, buf, 0), cases[c].out, "%s store_float %a", n,
                         (double)cases[c].in);
            memset(buf, 0x5A, sizeof buf);
            dqg_dtype_encode(dt, &cases[c].in, 1, buf, 0, true);
            cr_assert_eq(dqg_load_int(dt, buf, 0), cases[c].out, "%s encode %a", n,
                         (double)cases[c].in);
        }
        /* store_int clamps exactly. */
        const int64_t ints[] = {INT64_MIN, INT64_MAX, lo, hi, 0, -1, 1};
        for (size_t c = 0; c < sizeof ints / sizeof ints[0]; c++) {
            memset(buf, 0, sizeof buf);
            dqg_store_int(dt, buf, 0, ints[c]);
            int64_t want = ints[c] < lo ? lo : ints[c] > hi ? hi : ints[c];
            cr_assert_eq(dqg_load_int(dt, buf, 0), want, "%s store_int %lld", n,
                         (long long)ints[c]);
        }
        if (hi > 1) {
            memset(buf, 0, sizeof buf);
            dqg_store_int(dt, buf, 0, hi - 1);
            cr_assert_eq(dqg_load_int(dt, buf, 0), hi - 1, "%s", n);
        }
    }
    /* Exact values near the 32/64-bit limits. */
    int32_t s32;
    dqg_store_float(DQG_S32, &s32, 0, 2147483520.0f); /* largest float below 2^31 */
    cr_assert_eq(s32, 2147483520);
    dqg_store_float(DQG_S32, &s32, 0, 2147483648.0f);
    cr_assert_eq(s32, INT32_MAX);
    dqg_store_float(DQG_S32, &s32, 0, -2147483648.0f);
    cr_assert_eq(s32, INT32_MIN);
    int64_t s64;
    dqg_store_float(DQG_S64, &s64, 0, 0x1.FFFFFEp62f);
    cr_assert_eq(s64, (int64_t)0x7FFFFF8000000000);
    dqg_store_float(DQG_S64, &s64, 0, 0x1p63f);
    cr_assert_eq(s64, INT64_MAX);
    dqg_store_float(DQG_S64, &s64, 0, -0x1p63f);
    cr_assert_eq(s64, INT64_MIN);
}

Test(dtype, store_int_into_float_types)
{
    float f;
    dqg_store_int(DQG_F32, &f, 0, 16777217);
    cr_assert_eq(f, 16777216.0f);
    /* One rounding, not two: 2^24 + 2^16 + 1 is just above the bf16 midpoint. */
    uint16_t b;
    dqg_store_int(DQG_BF16, &b, 0, (INT64_C(1) << 24) + (1 << 16) + 1);
    cr_assert_eq(b, 0x4B81, "0x%X", b);
    dqg_store_int(DQG_BF16, &b, 0, (INT64_C(1) << 24) + (1 << 16));
    cr_assert_eq(b, 0x4B80, "0x%X", b);
    uint16_t h;
    dqg_store_int(DQG_F16, &h, 0, 2049);
    cr_assert_eq(h, 0x6800); /* tie -> 2048 */
    dqg_store_int(DQG_F16, &h, 0, -70000);
    cr_assert_eq(h, 0xFC00);
    uint8_t q;
    dqg_store_int(DQG_F8E4M3FN, &q, 0, 1000);
    cr_assert_eq(q, 0x7E);
    dqg_store_int(DQG_F8E5M2, &q, 0, -3);
    cr_assert_eq(q, 0xC2);
    /* load_int on a float type rounds half to even and saturates. */
    const float fs[3] = {2.5f, -1e30f, NAN};
    cr_assert_eq(dqg_load_int(DQG_F32, fs, 0), 2);
    cr_assert_eq(dqg_load_int(DQG_F32, fs, 1), INT64_MIN);
    cr_assert_eq(dqg_load_int(DQG_F32, fs, 2), 0);
}

Test(dtype, bulk_f32_f16_bf16_offsets)
{
    const float src[5] = {1.0f, -0.5f, 65520.0f, 0x1p-25f, 3.0f};
    float f32[8];
    memset(f32, 0, sizeof f32);
    dqg_dtype_encode(DQG_F32, src, 5, f32, 2, true);
    cr_assert_eq(f32[1], 0.0f);
    cr_assert_eq(memcmp(f32 + 2, src, sizeof src), 0);
    float out[5];
    dqg_dtype_decode(DQG_F32, f32, 2, 5, out);
    cr_assert_eq(memcmp(out, src, sizeof src), 0);

    uint16_t h[7] = {0x1111, 0x1111, 0x1111, 0x1111, 0x1111, 0x1111, 0x1111};
    dqg_dtype_encode(DQG_F16, src, 5, h, 1, true);
    const uint16_t want_h[7] = {0x1111, 0x3C00, 0xB800, 0x7C00, 0x0000, 0x4200, 0x1111};
    for (int k = 0; k < 7; k++)
        cr_assert_eq(h[k], want_h[k], "f16 element %d: 0x%X", k, h[k]);
    dqg_dtype_decode(DQG_F16, h, 1, 5, out);
    cr_assert(out[0] == 1.0f && out[1] == -0.5f && isinf(out[2]) && out[3] == 0.0f &&
              out[4] == 3.0f);

    uint16_t b[6] = {0};
    const float bsrc[3] = {1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -INFINITY};
    dqg_dtype_encode(DQG_BF16, bsrc, 3, b, 3, true);
    cr_assert(b[2] == 0 && b[3] == 0x3F80 && b[4] == 0x3F82 && b[5] == 0xFF80, "%X %X %X", b[3],
              b[4], b[5]);
    dqg_dtype_decode(DQG_BF16, b, 3, 3, out);
    cr_assert(out[0] == 1.0f && out[1] == 1.015625f && out[2] == -INFINITY);

    /* Invalid requests write nothing. */
    out[0] = 42.0f;
    dqg_dtype_decode(DQG_DTYPE_UNDEF, b, 0, 1, out);
    dqg_dtype_decode(DQG_F32, f32, 0, 0, out);
    dqg_dtype_decode(DQG_F32, f32, 0, -3, out);
    cr_assert_eq(out[0], 42.0f);
}

/* bool: one byte, 0 or 1; any non-zero byte reads as true; a value stored
 * is true when it is not zero (NaN included, as ONNX's Cast). */
Test(dtype, bool_codecs)
{
    const uint8_t b[] = {0, 1, 2, 255};
    float f[4];
    dqg_dtype_decode(DQG_BOOL, b, 0, 4, f);
    cr_assert(f[0] == 0.0f && f[1] == 1.0f && f[2] == 1.0f && f[3] == 1.0f);
    cr_assert_eq(dqg_load_int(DQG_BOOL, b, 0), 0);
    cr_assert_eq(dqg_load_int(DQG_BOOL, b, 3), 1);
    cr_assert_eq(dqg_load_double(DQG_BOOL, b, 2), 1.0);
    const float src[] = {0.0f, -0.0f, 0.5f, -3.0f, NAN, INFINITY};
    uint8_t out[6];
    memset(out, 7, sizeof out);
    dqg_dtype_encode(DQG_BOOL, src, 6, out, 0, false);
    const uint8_t want[] = {0, 0, 1, 1, 1, 1};
    cr_assert_arr_eq(out, want, 6);
    uint8_t one = 9;
    dqg_store_int(DQG_BOOL, &one, 0, -5);
    cr_assert_eq(one, 1);
    dqg_store_int(DQG_BOOL, &one, 0, 0);
    cr_assert_eq(one, 0);
}
