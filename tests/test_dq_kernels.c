/* The dequantize kernels against the definition, on a generated matrix with
 * fixed seeds: every input type x granularity x scale type x output type x
 * zero point present/absent x constant or run-time parameters, on odd shapes
 * (prime sizes, ranks 1 to 5, a large one for the threaded path), for every
 * implementation the CPU offers. Own kernels and oneDNN reorders must be
 * bit-identical to the definition; NaN matches NaN. */
#include <math.h>
#include <stdlib.h>

#include "graph/dtype.h"
#include "runtime/dq_kernel.h"
#include "test_common.h"

static uint32_t rs;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return rs;
}

/* The definition, element by element (as the reference interpreter). */
static float expected(const dqg_dq_desc *d, const void *x, const void *s, const void *z, int64_t i,
                      int64_t si)
{
    float diff;
    bool zp = d->zp_dtype != DQG_DTYPE_UNDEF;
    if (dqg_dtype_is_integer(d->x_dtype))
        diff =
            (float)(dqg_load_int(d->x_dtype, x, i) - (zp ? dqg_load_int(d->zp_dtype, z, si) : 0));
    else
        diff = dqg_load_float(d->x_dtype, x, i) - (zp ? dqg_load_float(d->zp_dtype, z, si) : 0.0f);
    return diff * dqg_load_float(d->scale_dtype, s, si);
}

static int64_t scale_index(const dqg_dq_desc *d, const int64_t *sdims, int64_t i)
{
    int64_t idx[DQG_MAX_RANK], r = i;
    for (int k = d->rank - 1; k >= 0; k--) {
        idx[k] = r % d->dims[k];
        r /= d->dims[k];
    }
    switch (d->granularity) {
    case DQG_PER_TENSOR:
        return 0;
    case DQG_PER_AXIS:
        return idx[d->axis];
    case DQG_ELEMENTWISE:
        return i;
    case DQG_BLOCKED: {
        int64_t s = 0;
        for (int k = 0; k < d->rank; k++)
            s = s * sdims[k] + (k == d->axis ? idx[k] / d->block_size : idx[k]);
        return s;
    }
    }
    return 0;
}

static uint32_t ulp_distance(dqg_dtype t, const void *a, const void *b, int64_t i)
{
    float fa = dqg_load_float(t, a, i), fb = dqg_load_float(t, b, i);
    if (isnan(fa) || isnan(fb))
        return isnan(fa) && isnan(fb) ? 0 : UINT32_MAX;
    if (fa == fb)
        return 0;
    int32_t ia, ib;
    memcpy(&ia, &fa, 4);
    memcpy(&ib, &fb, 4);
    int64_t dd = (int64_t)ia - ib;
    /* distance in the output type's own units */
    int shift = t == DQG_F32 ? 0 : t == DQG_BF16 ? 16 : 13;
    return (uint32_t)(llabs(dd) >> shift);
}

static int tested_impls;

static void check_one(dqg_dtype xt, dqg_granularity gran, dqg_dtype st, dqg_dtype ot, bool zp,
                      bool constant, int rank, const int64_t *dims, int axis, int64_t block)
{
    dqg_dq_desc d = {.x_dtype = xt,
                     .scale_dtype = st,
                     .zp_dtype = zp ? xt : DQG_DTYPE_UNDEF,
                     .out_dtype = ot,
                     .granularity = gran,
                     .rank = rank,
                     .axis = axis,
                     .block_size = block,
                     .scale_is_constant = constant};
    int64_t n = 1, sdims[DQG_MAX_RANK], ns = 1;
    for (int i = 0; i < rank; i++) {
        d.dims[i] = dims[i];
        n *= dims[i];
        sdims[i] = gran == DQG_BLOCKED && i == axis ? (dims[i] + block - 1) / block : dims[i];
    }
    ns = gran == DQG_PER_TENSOR ? 1 : gran == DQG_PER_AXIS ? dims[axis] : 1;
    if (gran == DQG_BLOCKED || gran == DQG_ELEMENTWISE)
        for (int i = 0; i < rank; i++)
            ns *= sdims[i];
    size_t xb = dqg_dtype_storage_size(xt, n), sb = dqg_dtype_storage_size(st, ns);
    size_t zb = dqg_dtype_storage_size(xt, ns), yb = dqg_dtype_storage_size(ot, n);
    uint8_t *x = malloc(xb), *z = malloc(zb + 1), *want = malloc(yb), *got = malloc(yb);
    float *sf = malloc((size_t)ns * sizeof(float));
    void *s = malloc(sb);
    for (size_t i = 0; i < xb; i++)
        x[i] = (uint8_t)rnd();
    for (size_t i = 0; i < zb; i++)
        z[i] = (uint8_t)rnd();
    /* 32-bit zero points kept small so x - zp stays meaningful */
    if (xt == DQG_S32 || xt == DQG_U32)
        for (int64_t i = 0; i < ns; i++)
            dqg_store_int(xt, z, i, (int64_t)(rnd() % 200));
    for (int64_t i = 0; i < ns; i++)
        sf[i] = (i % 11 == 3) ? 0.0f : ldexpf((float)(rnd() % 1000 + 1), -(int)(rnd() % 12));
    dqg_dtype_encode(st, sf, ns, s, 0, true);
    d.const_scale = s;
    d.const_zp = zp ? z : NULL;
    for (int64_t i = 0; i < n; i++)
        dqg_store_float(ot, want, i, expected(&d, x, s, z, i, scale_index(&d, sdims, i)));
    static const int impls[] = {DQG_DQ_IMPL_OWN_SCALAR, DQG_DQ_IMPL_OWN_AVX2,
                                DQG_DQ_IMPL_OWN_AVX512, DQG_DQ_IMPL_ONEDNN};
    for (size_t k = 0; k < sizeof impls / sizeof *impls; k++) {
        dqg_dq_kernel *kern = NULL;
        if (dqg_dq_kernel_create(&d, impls[k], &kern) != DQG_OK)
            continue; /* the CPU or oneDNN lacks this combination */
        tested_impls++;
        memset(got, 0xAB, yb);
        cr_assert_eq(dqg_dq_kernel_run(kern, x, s, zp ? z : NULL, got), DQG_OK, "%s",
                     dqg_last_error());
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = ulp_distance(ot, got, want, i);
            cr_assert(u == 0,
                      "%s: x %s gran %d scale %s out %s zp %d const %d rank %d n %lld: element "
                      "%lld got %.9g want %.9g",
                      dqg_dq_kernel_impl_name(kern), dqg_dtype_name(xt), (int)gran,
                      dqg_dtype_name(st), dqg_dtype_name(ot), zp, constant, rank, (long long)n,
                      (long long)i, dqg_load_float(ot, got, i), dqg_load_float(ot, want, i));
        }
        dqg_dq_kernel_destroy(kern);
    }
    free(x);
    free(z);
    free(want);
    free(got);
    free(sf);
    free(s);
}

/* Every granularity, scale type, output type, zero point and parameter kind
 * for one input type, on shapes drawn with the seed. */
static void matrix_for(dqg_dtype xt, uint32_t seed)
{
    rs = seed;
    static const dqg_dtype floats[] = {DQG_F32, DQG_F16, DQG_BF16};
    static const int64_t primes[] = {1, 2, 3, 5, 7, 13, 17, 31, 37};
    for (int gran = 0; gran < 4; gran++)
        for (int si = 0; si < 3; si++)
            for (int oi = 0; oi < 3; oi++)
                for (int zp = 0; zp < 2; zp++) {
                    int rank = 1 + (int)(rnd() % 5);
                    int64_t dims[5];
                    for (int i = 0; i < rank; i++)
                        dims[i] = primes[rnd() % (rank > 3 ? 5 : 9)];
                    int axis = (int)(rnd() % (uint32_t)rank);
                    int64_t block = 1 + (int64_t)(rnd() % 4);
                    check_one(xt, (dqg_granularity)gran, floats[si], floats[oi], zp, rnd() & 1,
                              rank, dims, axis, block);
                }
    /* One large per-axis case crosses the threading threshold. */
    int64_t big[] = {97, 1031};
    check_one(xt, DQG_PER_AXIS, DQG_F32, DQG_F32, true, true, 2, big, 1, 0);
    int64_t bigb[] = {3, 40000};
    check_one(xt, DQG_BLOCKED, DQG_F32, DQG_F16, false, true, 2, bigb, 1, 32);
}

Test(dq_kernels, integer_8bit)
{
    matrix_for(DQG_U8, 11);
    matrix_for(DQG_S8, 12);
    cr_assert_gt(tested_impls, 100);
}

Test(dq_kernels, integer_16_and_32bit)
{
    matrix_for(DQG_U16, 21);
    matrix_for(DQG_S16, 22);
    matrix_for(DQG_S32, 23);
    matrix_for(DQG_U32, 24);
}

Test(dq_kernels, integer_4bit)
{
    matrix_for(DQG_S4, 31);
    matrix_for(DQG_U4, 32);
}

Test(dq_kernels, float8)
{
    matrix_for(DQG_F8E4M3FN, 41);
    matrix_for(DQG_F8E4M3FNUZ, 42);
    matrix_for(DQG_F8E5M2, 43);
    matrix_for(DQG_F8E5M2FNUZ, 44);
}

/* Outputs of 8 MiB and more are written with streaming stores. */
Test(dq_kernels, large_outputs_streamed)
{
    rs = 61;
    int64_t big[] = {2, 1 << 21};
    check_one(DQG_U8, DQG_PER_TENSOR, DQG_F32, DQG_F32, true, true, 2, big, 0, 0);
    check_one(DQG_F8E4M3FN, DQG_PER_TENSOR, DQG_F32, DQG_F32, false, true, 2, big, 0, 0);
    check_one(DQG_S4, DQG_BLOCKED, DQG_F32, DQG_F32, false, true, 2, big, 1, 32);
    check_one(DQG_U16, DQG_PER_TENSOR, DQG_F32, DQG_F16, false, false, 2, big, 0, 0);
    check_one(DQG_S8, DQG_PER_AXIS, DQG_F32, DQG_BF16, true, true, 2, big, 0, 0);
}

Test(dq_kernels, float4_f16_bf16_inputs)
{
    matrix_for(DQG_F4E2M1, 51);
    matrix_for(DQG_F16, 52);
    matrix_for(DQG_BF16, 53);
}
