/* Pooling on oneDNN's pooling primitive (max, average with and without
 * padding; f32, bf16, u8 and s8 in, the same type out), in the layout its
 * source is stored in (row-major or channels-last); a result stored in the
 * other layout is reordered. oneDNN's int8 kernels want channels-last: on
 * a row-major source the primitive would be oneDNN's reference loop, so the
 * source is reordered into channels-last first.
 *
 * ceil_mode reaches oneDNN as extra right padding. oneDNN's
 * avg_include_padding then divides the last windows by the whole kernel,
 * where ONNX counts padding only up to pads_end: those windows (the last
 * one along such a dimension) are recomputed after the primitive with the
 * reference's own per-element code, and so is every window of a max pooling
 * whose float source holds a NaN. An integer pooling the quantized-pooling
 * pass requantized carries its scale and offset as a linear post-op. */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu_isa.h"
#include "runtime/kernel.h"
#include "runtime/nan_scan.h"
#include "runtime/onednn_layout.h"

typedef struct pool_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    dqg_conv_io io;
    int x_arg, y_arg;
    size_t pad_offset;
    /* The windows oneDNN counts differently (include-padding averages
     * with ceil_mode's extra padding): the last output along each marked
     * dimension. */
    bool fixup, edge[3];
    dqg_pool_params params;
    dqg_tensor x; /* shape, type and layout only */
    int64_t ydims[DQG_MAX_RANK], ys[DQG_MAX_RANK], xs[DQG_MAX_RANK];
    /* dqgraph's own u8/s8 max pooling in the primitive's place (2-D,
     * channels-last, AVX-512): a window's maximum is exact, and oneDNN's
     * int8 max pooling ran MobileNet's and Inception's pools at 8-35 GB/s.
     * The geometry: batch, channels, input, output, window, strides,
     * dilations and padding at the top and left. */
    bool own;
    int64_t on, oc, oih, oiw, ooh, oow, okh, okw, osh, osw, odh, odw, opt, opl;
} pool_kernel;

/* One output row's maxima of the own max pooling: every window's taps
 * inside the image (padding takes no part in a maximum), 64 channels at a
 * time. */
__attribute__((target("avx512f,avx512bw"))) static void
max_row(const pool_kernel *k, const uint8_t *x, uint8_t *y, int64_t n, int64_t oy)
{
    const int64_t C = k->oc, W = k->oiw;
    int64_t ky0 = 0, ky1 = k->okh, y0 = oy * k->osh - k->opt;
    while (ky0 < ky1 && y0 + ky0 * k->odh < 0)
        ky0++;
    while (ky1 > ky0 && y0 + (ky1 - 1) * k->odh >= k->oih)
        ky1--;
    const bool s8 = k->x.dtype == DQG_S8;
    uint8_t *out = y + (n * k->ooh + oy) * k->oow * C;
    for (int64_t ox = 0; ox < k->oow; ox++) {
        int64_t kx0 = 0, kx1 = k->okw, x0 = ox * k->osw - k->opl;
        while (kx0 < kx1 && x0 + kx0 * k->odw < 0)
            kx0++;
        while (kx1 > kx0 && x0 + (kx1 - 1) * k->odw >= W)
            kx1--;
        const uint8_t *first = x + ((n * k->oih + y0 + ky0 * k->odh) * W + x0 + kx0 * k->odw) * C;
        for (int64_t c = 0; c < C; c += 64) {
            __mmask64 m = C - c >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (C - c)) - 1);
            __m512i v = _mm512_maskz_loadu_epi8(m, first + c);
            for (int64_t ky = ky0; ky < ky1; ky++) {
                const uint8_t *row = x + ((n * k->oih + y0 + ky * k->odh) * W + x0) * C + c;
                for (int64_t kx = kx0; kx < kx1; kx++) {
                    __m512i t = _mm512_maskz_loadu_epi8(m, row + kx * k->odw * C);
                    v = s8 ? _mm512_max_epi8(v, t) : _mm512_max_epu8(v, t);
                }
            }
            _mm512_mask_storeu_epi8(out + ox * C + c, m, v);
        }
    }
}

static void max_run(const pool_kernel *k, const void *x, void *y)
{
    const int64_t rows = k->on * k->ooh;
    int threads = rows * k->oow * k->oc * k->okh * k->okw >= (1 << 16) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++)
        max_row(k, (const uint8_t *)x, (uint8_t *)y, r / k->ooh, r % k->ooh);
}

/* Recomputes the windows oneDNN counts differently, or with `all` every
 * window, with the reference's per-element code. */
static void recompute(const pool_kernel *k, const void *X, void *Y, bool all)
{
    const dqg_pool_params *a = &k->params;
    int sr = a->spatial_rank;
    int64_t os[3] = {1, 1, 1};
    for (int i = 0; i < sr; i++)
        os[i] = k->ydims[2 + i];
    for (int64_t o0 = 0; o0 < os[0]; o0++)
        for (int64_t o1 = 0; o1 < os[1]; o1++)
            for (int64_t o2 = 0; o2 < os[2]; o2++) {
                int64_t o[3] = {o0, o1, o2};
                bool on_edge = all;
                int64_t off = 0;
                for (int i = 0; i < sr; i++) {
                    on_edge |= k->edge[i] && o[i] == os[i] - 1;
                    off += o[i] * k->ys[2 + i];
                }
                if (!on_edge)
                    continue;
                for (int64_t n = 0; n < k->ydims[0]; n++)
                    for (int64_t c = 0; c < k->ydims[1]; c++)
                        dqg_pool_element(a, &k->x, X, k->xs, n, c, o, Y,
                                         off + n * k->ys[0] + c * k->ys[1]);
            }
}

static dqg_status pool_execute(dqg_kernel *kb, void *const *args, void *scratch)
{
    pool_kernel *k = (pool_kernel *)kb;
    void *pad = (char *)scratch + k->pad_offset, *h[2];
    dqg_status st = dqg_conv_io_begin(&k->io, args[k->x_arg], args[k->y_arg], scratch, pad, &h[0],
                                      &h[1], k->base.impl);
    if (st != DQG_OK)
        return st;
    void *dst = h[1];
    if (k->own) {
        max_run(k, h[0], h[1]);
        return dqg_conv_io_end(&k->io, dst, args[k->y_arg], pad, k->base.impl);
    }
    if ((st = dqg_dnnl_prim_execute(&k->prim, h, pad, k->base.impl)) != DQG_OK ||
        (st = dqg_conv_io_end(&k->io, dst, args[k->y_arg], pad, k->base.impl)) != DQG_OK)
        return st;
    /* oneDNN's max pooling skips a NaN (max(NaN, v) is v there) where the
     * reference's window maximum is NaN: a source holding one is pooled
     * again by the reference's code. */
    bool nan = k->params.algorithm == DQG_POOL_MAX && !dqg_dtype_is_integer(k->x.dtype) &&
               dqg_has_nonfinite(k->x.dtype, args[k->x_arg], k->x.nelems, false);
    if (k->fixup || nan)
        recompute(k, args[k->x_arg], args[k->y_arg], nan);
    return DQG_OK;
}

static void pool_destroy(dqg_kernel *kb)
{
    pool_kernel *k = (pool_kernel *)kb;
    dqg_dnnl_prim_destroy(&k->prim);
    dqg_conv_io_destroy(&k->io);
    free(k);
}

/* The activation `md` re-laid out channels-last or row-major. */
static void relayout(const dnnl_memory_desc_t *md, bool channels_last, dnnl_memory_desc_t *out)
{
    int r = md->ndims;
    dnnl_format_tag_t tag = channels_last ? (r == 3   ? dnnl_acb
                                             : r == 4 ? dnnl_acdb
                                                      : dnnl_acdeb)
                                          : (r == 3   ? dnnl_abc
                                             : r == 4 ? dnnl_abcd
                                                      : dnnl_abcde);
    dnnl_memory_desc_init_by_tag(out, r, md->dims, md->data_type, tag);
}

/* Creates the primitive descriptor working in one layout. */
static dqg_status make_pd(pool_kernel *k, const dnnl_memory_desc_t *md_x,
                          const dnnl_memory_desc_t *md_y, bool channels_last,
                          const dnnl_dims_t strides, const dnnl_dims_t kernel,
                          const dnnl_dims_t dil, const dnnl_dims_t pl, const dnnl_dims_t pr,
                          dnnl_primitive_desc_t *pd, char *impl, size_t impl_size)
{
    static const dnnl_alg_kind_t algs[] = {dnnl_pooling_max, dnnl_pooling_avg_include_padding,
                                           dnnl_pooling_avg_exclude_padding};
    memset(&k->io, 0, sizeof k->io);
    relayout(md_x, channels_last, &k->io.src);
    relayout(md_y, channels_last, &k->io.dst);
    dnnl_pooling_v2_desc_t d;
    dnnl_status_t s =
        dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, algs[k->params.algorithm],
                                          &k->io.src, &k->io.dst, strides, kernel, dil, pl, pr);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, impl, "pooling descriptor");
    if (!k->params.requant)
        return dqg_dnnl_pd_create(pd, &d, NULL, impl, impl_size);
    /* Requantized integer pooling: a linear post-op on the window's value
     * in f32, before the destination's rounding and saturation. */
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    s = dqg_dnnl_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_post_ops_create(&po);
    if (s == dnnl_success)
        s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, k->params.rq_alpha,
                                         k->params.rq_beta);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_post_ops(attr, po);
    dqg_status st = s == dnnl_success ? dqg_dnnl_pd_create(pd, &d, attr, impl, impl_size)
                                      : dqg_dnnl_error(s, impl, "requantization post-op");
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Whether the own max pooling takes the layer (see pool_kernel), and its
 * geometry. Every window must hold a tap inside the image. */
static bool own_max(pool_kernel *k, const dqg_tensor *x, const dqg_tensor *y)
{
    const dqg_pool_params *a = &k->params;
    if ((x->dtype != DQG_U8 && x->dtype != DQG_S8) || a->algorithm != DQG_POOL_MAX || a->requant ||
        a->spatial_rank != 2 || x->rank != 4 || !dqg_cpu_has(DQG_ISA_AVX512))
        return false;
    if (!dqg_md_dense_channels_last(&k->io.src) || !dqg_md_dense_channels_last(&k->io.dst))
        return false;
    k->on = x->dims[0];
    k->oc = x->dims[1];
    k->oih = x->dims[2];
    k->oiw = x->dims[3];
    k->ooh = y->dims[2];
    k->oow = y->dims[3];
    k->okh = a->global ? k->oih : a->kernel[0];
    k->okw = a->global ? k->oiw : a->kernel[1];
    k->osh = a->global ? 1 : a->strides[0];
    k->osw = a->global ? 1 : a->strides[1];
    k->odh = a->global ? 1 : a->dilations[0];
    k->odw = a->global ? 1 : a->dilations[1];
    k->opt = a->global ? 0 : a->pads_begin[0];
    k->opl = a->global ? 0 : a->pads_begin[1];
    if (k->okh < 1 || k->okw < 1 || k->osh < 1 || k->osw < 1 || k->odh < 1 || k->odw < 1)
        return false;
    /* Some tap of every window lands inside the image: the padding and
     * ceil_mode can leave a window outside it, and a dilated window may
     * step over a small image. */
    const int64_t in[2] = {k->oih, k->oiw}, out[2] = {k->ooh, k->oow}, kk[2] = {k->okh, k->okw},
                  st[2] = {k->osh, k->osw}, dl[2] = {k->odh, k->odw}, pb[2] = {k->opt, k->opl};
    for (int i = 0; i < 2; i++) {
        for (int64_t o = 0; o < out[i]; o++) {
            int64_t s0 = o * st[i] - pb[i], t = 0;
            while (t < kk[i] && (s0 + t * dl[i] < 0 || s0 + t * dl[i] >= in[i]))
                t++;
            if (t == kk[i])
                return false;
        }
    }
    return true;
}

dqg_status dqg_kernel_pool_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_pool_params *a = &op->attrs.pool;
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    dnnl_data_type_t dt = dqg_dnnl_dtype(x->dtype);
    if (dt == dnnl_data_type_undef)
        return dqg_set_error(DQG_UNSUPPORTED, "oneDNN has no %s type", dqg_dtype_name(x->dtype));
    if (x->dtype == DQG_F16)
        return dqg_set_error(DQG_UNSUPPORTED, "oneDNN 2.6 pools f16 only on AVX512-FP16 CPUs");
    int x_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    if (x_arg < 0)
        return dqg_set_error(DQG_UNSUPPORTED, "a constant source");
    if ((x->dtype == DQG_U8 || x->dtype == DQG_S8) && a->algorithm != DQG_POOL_MAX) {
        /* oneDNN adds up an int8 window in 32-bit integers. */
        int64_t window = 1, limit = INT32_MAX / (x->dtype == DQG_U8 ? 255 : 128);
        for (int i = 0; i < a->spatial_rank; i++)
            window *= a->global ? x->dims[2 + i] : a->kernel[i];
        if (window > limit)
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "oneDNN sums a %s average's window of %lld elements in 32-bit "
                                 "integers, which can overflow above %lld",
                                 dqg_dtype_name(x->dtype), (long long)window, (long long)limit);
    }
    pool_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "pooling kernel: out of memory");
    k->base.execute = pool_execute;
    k->base.destroy = pool_destroy;
    k->x_arg = x_arg;
    k->y_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    k->params = *a;
    k->x = *x;
    k->x.name = NULL;
    k->x.data = NULL;
    dqg_tensor_strides(x, k->xs);
    dqg_tensor_strides(y, k->ys);
    memcpy(k->ydims, y->dims, sizeof k->ydims);
    dnnl_memory_desc_t md_x, md_y;
    dqg_status st;
    dnnl_primitive_desc_t pd = NULL;
    if ((st = dqg_conv_activation_md(x, DQG_FORMAT_NCX, dt, &md_x)) != DQG_OK ||
        (st = dqg_conv_activation_md(y, DQG_FORMAT_NCX, dt, &md_y)) != DQG_OK)
        goto fail;
    dnnl_dims_t strides, kernel, dil, pl, pr;
    for (int i = 0; i < a->spatial_rank; i++) {
        strides[i] = a->strides[i];
        kernel[i] = a->kernel[i];
        dil[i] = a->dilations[i] - 1; /* oneDNN counts dilation from 0 */
        pl[i] = a->pads_begin[i];
        pr[i] = dqg_pool_right_pad(a, i, x->dims[2 + i], y->dims[2 + i]);
        k->edge[i] = a->algorithm == DQG_POOL_AVG_INCLUDE_PAD && pr[i] > a->pads_end[i];
        k->fixup |= k->edge[i];
    }
    char name[sizeof k->base.impl];
    snprintf(name, sizeof name, "onednn:pool:%s", dqg_dtype_name(x->dtype));
    /* The source's layout first; int8 is always pooled channels-last. */
    bool int8 = x->dtype == DQG_U8 || x->dtype == DQG_S8;
    bool cl = x->channels_last || int8;
    memcpy(k->base.impl, name, sizeof name);
    st = make_pd(k, &md_x, &md_y, cl, strides, kernel, dil, pl, pr, &pd, k->base.impl,
                 sizeof k->base.impl);
    if (st == DQG_OK && !cl && strstr(k->base.impl, ":ref")) {
        /* Only oneDNN's reference loop takes this row-major source. */
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
        memcpy(k->base.impl, name, sizeof name);
        st = make_pd(k, &md_x, &md_y, true, strides, kernel, dil, pl, pr, &pd, k->base.impl,
                     sizeof k->base.impl);
    }
    if (st != DQG_OK)
        goto fail;
    size_t io_bytes = 0;
    if ((st = dqg_conv_io_finish(&k->io, pd, &md_x, &md_y, 0, &io_bytes, k->base.why,
                                 sizeof k->base.why, k->base.impl)) != DQG_OK)
        goto fail;
    if ((k->own = own_max(k, x, y)))
        snprintf(k->base.impl, sizeof k->base.impl, "dqgraph:avx512:int8-max-pool:%s",
                 dqg_dtype_name(x->dtype));
    int kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    dnnl_memory_desc_t mds[2] = {k->io.src, k->io.dst};
    if ((st = dqg_dnnl_prim_init(&k->prim, pd, 2, kinds, mds, k->base.impl)) != DQG_OK)
        goto fail;
    if (k->fixup) {
        size_t len = strlen(k->base.why);
        snprintf(k->base.why + len, sizeof k->base.why - len,
                 "%sthe last windows of ceil_mode are recomputed: oneDNN would count their "
                 "padding past pads_end",
                 len ? "; " : "");
    }
    size_t padb = dqg_dnnl_scratchpad(&k->prim), iop = dqg_conv_io_scratchpad(&k->io);
    k->pad_offset = (io_bytes + 63) & ~(size_t)63;
    k->base.scratch_size = k->pad_offset + (padb > iop ? padb : iop);
    dnnl_primitive_desc_destroy(pd);
    *out = &k->base;
    return DQG_OK;
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    pool_destroy(&k->base);
    return st;
}
