/* Fuzz target: dequantize and quantize kernels against the reference.
 *
 * The bytes choose a front door (ONNX DequantizeLinear 10..23, Quark
 * ExtendedDequantizeLinear, DirectML, oneDNN DynamicDequantize, ONNX
 * QuantizeLinear), the types, a shape below 4096 elements, the granularity
 * (per-tensor, per-axis, blocked, element-wise), the scales (any bits: tiny,
 * huge, subnormal, NaN, infinity), the zero points and the data; whether the
 * parameters are constants or run-time inputs, and whether x is constant.
 * The one-op graph is compiled with the oneDNN backend (dqgraph's own
 * vectorized kernels or a oneDNN reorder) and with DQG_BACKEND_REFERENCE,
 * both are executed, and the reference interpreter runs too. Statuses must
 * agree, and outputs must be bit-identical (NaN matches any NaN). A
 * violation prints the case and traps. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "fuzz/fuzz_common.h"

#define MAX_ELEMS 4095

enum { DOOR_DQL, DOOR_QUARK, DOOR_DML, DOOR_DYNAMIC, DOOR_QL };
static const char *const door_names[] = {"DequantizeLinear", "ExtendedDequantizeLinear",
                                         "DML_DequantizeLinear", "DynamicDequantize",
                                         "QuantizeLinear"};

enum { G_SCALAR, G_ONE, G_AXIS, G_BLOCK, G_ELEM };
static const char *const gran_names[] = {"scalar", "[1]", "per-axis", "blocked", "element-wise"};

typedef struct kcase {
    int door, opset;
    dqg_dtype xt, st, zt, ot; /* zt UNDEF: no zero point; ot: output_dtype attribute */
    int rank;
    int64_t dims[DQG_MAX_RANK];
    int64_t n;
    int gran, axis;
    bool neg_axis;
    int64_t block;
    int srank;
    int64_t sdims[DQG_MAX_RANK];
    int64_t ns;
    bool runtime_params, x_const, disable_fusion, no_saturate;
    void *x, *s, *z;
    size_t xbytes, sbytes, zbytes;
} kcase;

static dqg_dtype pick(fz_reader *r, const dqg_dtype *list, int n)
{
    return list[fz_range(r, n)];
}

/* ---- Choosing a case ------------------------------------------------------- */

static void choose_types(fz_reader *r, kcase *c)
{
    static const dqg_dtype f32[] = {DQG_F32}, floats[] = {DQG_F32, DQG_F16, DQG_BF16};
    uint8_t b = fz_u8(r);
    c->door = b % 8 < 4 ? DOOR_DQL : b % 8 - 3; /* DequantizeLinear half the time */
    bool want_zp = fz_u8(r) % 3 != 0;
    c->zt = DQG_DTYPE_UNDEF;
    c->ot = DQG_DTYPE_UNDEF;
    switch (c->door) {
    case DOOR_DQL: {
        static const int opsets[] = {21, 23, 23, 21, 19, 13, 10};
        c->opset = opsets[fz_range(r, 7)];
        dqg_dtype xs[16];
        int nx = 0;
        xs[nx++] = DQG_U8;
        xs[nx++] = DQG_S8;
        xs[nx++] = DQG_S32;
        if (c->opset >= 19) {
            xs[nx++] = DQG_F8E4M3FN;
            xs[nx++] = DQG_F8E4M3FNUZ;
            xs[nx++] = DQG_F8E5M2;
            xs[nx++] = DQG_F8E5M2FNUZ;
        }
        if (c->opset >= 21) {
            xs[nx++] = DQG_U4;
            xs[nx++] = DQG_S4;
            xs[nx++] = DQG_U16;
            xs[nx++] = DQG_S16;
        }
        if (c->opset >= 23)
            xs[nx++] = DQG_F4E2M1;
        c->xt = pick(r, xs, nx);
        c->st = c->opset >= 19 ? pick(r, floats, 3) : DQG_F32;
        if (want_zp)
            c->zt = c->xt;
        if (c->opset >= 23 && fz_bool(r))
            c->ot = pick(r, floats, 3);
        break;
    }
    case DOOR_QUARK: {
        static const dqg_dtype xs[] = {DQG_S8,  DQG_U8,  DQG_S16, DQG_U16,
                                       DQG_S32, DQG_U32, DQG_F16, DQG_BF16};
        c->xt = pick(r, xs, 8);
        c->st = DQG_F32;
        if (want_zp)
            c->zt = fz_bool(r) ? DQG_F32 : c->xt;
        break;
    }
    case DOOR_DML: {
        static const dqg_dtype xs[] = {DQG_S8, DQG_U8, DQG_S16, DQG_U16, DQG_S32, DQG_U32};
        static const dqg_dtype ss[] = {DQG_F32, DQG_F16};
        c->xt = pick(r, xs, 6);
        c->st = pick(r, ss, 2);
        if (want_zp)
            c->zt = c->xt;
        break;
    }
    case DOOR_DYNAMIC: {
        static const dqg_dtype xs[] = {DQG_S8, DQG_U8}, zs[] = {DQG_S8, DQG_U8, DQG_S32};
        c->xt = pick(r, xs, 2);
        c->st = DQG_F32;
        if (want_zp)
            c->zt = pick(r, zs, 3);
        break;
    }
    default: { /* QuantizeLinear */
        static const int opsets[] = {21, 19, 13, 10};
        c->opset = opsets[fz_range(r, 4)];
        c->xt = c->opset >= 19 ? pick(r, floats, 3) : pick(r, f32, 1);
        c->st = c->xt;
        dqg_dtype ys[12];
        int ny = 0;
        ys[ny++] = DQG_U8;
        ys[ny++] = DQG_S8;
        if (c->opset >= 19) {
            ys[ny++] = DQG_F8E4M3FN;
            ys[ny++] = DQG_F8E4M3FNUZ;
            ys[ny++] = DQG_F8E5M2;
            ys[ny++] = DQG_F8E5M2FNUZ;
        }
        if (c->opset >= 21) {
            ys[ny++] = DQG_U16;
            ys[ny++] = DQG_S16;
            ys[ny++] = DQG_U4;
            ys[ny++] = DQG_S4;
        }
        dqg_dtype y = pick(r, ys, ny);
        if (want_zp)
            c->zt = y;
        else if (c->opset >= 21)
            c->ot = y;
        bool f8 =
            y == DQG_F8E4M3FN || y == DQG_F8E4M3FNUZ || y == DQG_F8E5M2 || y == DQG_F8E5M2FNUZ;
        c->no_saturate = f8 && fz_bool(r);
        break;
    }
    }
}

static void choose_shape(fz_reader *r, kcase *c)
{
    int min_rank = c->door == DOOR_DML ? 1 : 0;
    c->rank = min_rank + fz_range(r, 6 - min_rank); /* up to 5 */
    c->n = 1;
    for (int i = 0; i < c->rank; i++) {
        uint8_t b = fz_u8(r);
        c->dims[i] = b >= 0xF0 ? 64 + (b & 15) * 61 : 1 + b % 17;
    }
    for (;;) {
        c->n = 1;
        int big = 0;
        for (int i = 0; i < c->rank; i++) {
            c->n *= c->dims[i];
            if (c->dims[i] > c->dims[big])
                big = i;
        }
        if (c->n <= MAX_ELEMS)
            break;
        c->dims[big] = (c->dims[big] + 1) / 2;
    }
}

static void choose_granularity(fz_reader *r, kcase *c)
{
    int grans[5], ng = 0;
    switch (c->door) {
    case DOOR_DML:
        grans[ng++] = G_ELEM;
        break;
    case DOOR_DYNAMIC:
        grans[ng++] = G_ONE;
        if (c->rank)
            grans[ng++] = G_AXIS;
        break;
    default:
        grans[ng++] = G_SCALAR;
        grans[ng++] = G_ONE;
        if ((c->door == DOOR_QUARK || c->opset >= 13) && c->rank)
            grans[ng++] = G_AXIS;
        if (c->door != DOOR_QUARK && c->opset >= 21 && c->rank) {
            grans[ng++] = G_BLOCK;
            grans[ng++] = G_BLOCK;
        }
        break;
    }
    c->gran = grans[fz_range(r, ng)];
    c->axis = c->rank ? fz_range(r, c->rank) : 0;
    c->neg_axis = fz_bool(r);
    c->block = 0;
    switch (c->gran) {
    case G_SCALAR:
        c->srank = 0;
        break;
    case G_ONE:
        c->srank = 1;
        c->sdims[0] = 1;
        break;
    case G_AXIS:
        c->srank = 1;
        c->sdims[0] = c->dims[c->axis];
        break;
    case G_BLOCK: {
        c->srank = c->rank;
        memcpy(c->sdims, c->dims, sizeof c->dims);
        int64_t D = c->dims[c->axis];
        c->block = 1 + fz_u8(r) % D;
        c->sdims[c->axis] = (D + c->block - 1) / c->block;
        break;
    }
    default:
        c->srank = c->rank;
        memcpy(c->sdims, c->dims, sizeof c->dims);
        break;
    }
    c->ns = 1;
    for (int i = 0; i < c->srank; i++)
        c->ns *= c->sdims[i];
}

/* A float for a scale: the input's bits, a "nice" value, or a special one. */
static float scale_value(fz_reader *r, int mode)
{
    static const float special[] = {0.0f,     -0.0f,     1.0f,     -1.0f,  NAN,    -NAN,
                                    INFINITY, -INFINITY, 1e-45f,   1e-40f, 1e-38f, 1.17549435e-38f,
                                    3.4e38f,  65504.0f,  65520.0f, 1e-8f,  2.0f,   0.5f,
                                    448.0f,   57344.0f,  3e-39f,   1e30f};
    if (mode == 3)
        mode = fz_u8(r) % 3;
    switch (mode) {
    case 0: {
        uint32_t u = fz_u32(r);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case 1: {
        uint8_t a = fz_u8(r), e = fz_u8(r);
        float v = ldexpf(1.0f + (float)(a & 15) / 16.0f, (int)(e % 48) - 36);
        return a & 0x80 ? -v : v;
    }
    default:
        return special[fz_u8(r) % (sizeof special / sizeof special[0])];
    }
}

static bool choose_data(fz_reader *r, kcase *c)
{
    uint8_t f = fz_u8(r);
    c->runtime_params = c->door == DOOR_DYNAMIC ? (f & 1) || (f & 2) : (f & 1);
    c->x_const = (f & 4) && (f & 8);
    c->disable_fusion = f & 16;
    int smode = (f >> 5) & 3;
    bool zero_zp = fz_u8(r) % 4 == 0 || (c->xt == DQG_S32 && fz_u8(r) % 4 != 0);
    c->xbytes = dqg_dtype_storage_size(c->xt, c->n);
    c->sbytes = dqg_dtype_storage_size(c->st, c->ns);
    c->zbytes = c->zt ? dqg_dtype_storage_size(c->zt, c->ns) : 0;
    c->x = malloc(c->xbytes ? c->xbytes : 1);
    c->s = malloc(c->sbytes ? c->sbytes : 1);
    c->z = malloc(c->zbytes ? c->zbytes : 1);
    if (!c->x || !c->s || !c->z)
        return false;
    for (int64_t i = 0; i < c->ns; i++) {
        float v = scale_value(r, smode);
        dqg_dtype_encode(c->st, &v, 1, c->s, i, false);
    }
    if (c->zt) {
        if (zero_zp)
            memset(c->z, 0, c->zbytes);
        else
            fz_fill(r, c->z, c->zbytes);
    }
    if (c->door == DOOR_QL && fz_bool(r)) { /* "nice" x values for quantize */
        for (int64_t i = 0; i < c->n; i++) {
            float v = (float)((int)(fz_u8(r)) - 128) * 0.25f;
            dqg_dtype_encode(c->xt, &v, 1, c->x, i, false);
        }
    } else {
        fz_fill(r, c->x, c->xbytes);
    }
    return true;
}

static void print_case(const kcase *c)
{
    char dims[200] = "", sdims[200] = "";
    for (int i = 0, p = 0; i < c->rank; i++)
        p += snprintf(dims + p, sizeof dims - (size_t)p, "%s%lld", i ? "," : "",
                      (long long)c->dims[i]);
    for (int i = 0, p = 0; i < c->srank; i++)
        p += snprintf(sdims + p, sizeof sdims - (size_t)p, "%s%lld", i ? "," : "",
                      (long long)c->sdims[i]);
    fprintf(stderr,
            "case: %s opset %d x %s [%s]%s scale %s [%s] zp %s out_dtype %s; %s axis %d%s "
            "block %lld; params %s, fusion %s%s\n",
            door_names[c->door], c->opset, dqg_dtype_name(c->xt), dims,
            c->x_const ? " (constant)" : "", dqg_dtype_name(c->st), sdims,
            c->zt ? dqg_dtype_name(c->zt) : "none", c->ot ? dqg_dtype_name(c->ot) : "-",
            gran_names[c->gran], c->axis, c->neg_axis ? " (given negative)" : "",
            (long long)c->block, c->runtime_params ? "run-time" : "constant",
            c->disable_fusion ? "off" : "on", c->no_saturate ? ", saturate=0" : "");
}

/* ---- The graph ---------------------------------------------------------------- */

typedef struct built {
    dqg_graph *g;
    dqg_tensor_id x, s, z, y;
} built;

static dqg_tensor_id param(dqg_graph *g, const char *name, bool runtime, dqg_dtype t, int rank,
                           const int64_t *dims, const void *data, size_t bytes)
{
    return runtime ? dqg_input(g, name, t, rank, dims)
                   : dqg_constant(g, name, t, rank, dims, data, bytes);
}

static dqg_status build(const kcase *c, built *b)
{
    memset(b, 0, sizeof *b);
    dqg_status st = dqg_graph_create(&b->g);
    if (st != DQG_OK)
        return st;
    dqg_graph *g = b->g;
    b->x = c->x_const ? dqg_constant(g, "x", c->xt, c->rank, c->dims, c->x, c->xbytes)
                      : dqg_input(g, "x", c->xt, c->rank, c->dims);
    b->s = param(g, "scale", c->runtime_params, c->st, c->srank, c->sdims, c->s, c->sbytes);
    b->z = c->zt ? param(g, "zp", c->runtime_params, c->zt, c->srank, c->sdims, c->z, c->zbytes)
                 : DQG_NONE;
    int64_t axis = c->neg_axis ? c->axis - c->rank : c->axis;
    bool has_axis = c->gran == G_AXIS || c->gran == G_BLOCK || c->neg_axis;
    switch (c->door) {
    case DOOR_DQL: {
        dqg_dequantize_linear_attrs a = {.opset = c->opset,
                                         .has_axis = has_axis && c->opset >= 13,
                                         .axis = axis,
                                         .block_size = c->block,
                                         .output_dtype = c->ot};
        b->y = dqg_dequantize_linear(g, "dq", b->x, b->s, b->z, &a);
        break;
    }
    case DOOR_QUARK:
        b->y = dqg_extended_dequantize_linear(g, "dq", b->x, b->s, b->z, axis);
        break;
    case DOOR_DML:
        b->y = dqg_dml_dequantize(g, "dq", b->x, b->s, b->z);
        break;
    case DOOR_DYNAMIC:
        b->y = dqg_dynamic_dequantize(g, "dq", b->x, b->s, b->z,
                                      c->gran == G_AXIS ? "per_channel" : "per_tensor", axis);
        break;
    default: {
        dqg_quantize_linear_attrs a = {.opset = c->opset,
                                       .has_axis = has_axis && c->opset >= 13,
                                       .axis = axis,
                                       .block_size = c->block,
                                       .output_dtype = c->ot,
                                       .no_saturate = c->no_saturate};
        b->y = dqg_quantize_linear(g, "q", b->x, b->s, b->z, &a);
        break;
    }
    }
    dqg_output(g, b->y, "y");
    st = dqg_graph_finalize(g);
    fz_require_message("dqg_graph_finalize", st);
    return st;
}

/* ---- Running and comparing --------------------------------------------------- */

typedef struct run {
    dqg_status compile, exec;
    char impl[300];
    void *y;
} run;

static void bind(const kcase *c, const built *b, dqg_buffer *in, size_t *n_in)
{
    *n_in = 0;
    for (size_t i = 0; i < dqg_graph_input_count(b->g); i++) {
        dqg_tensor_id id = dqg_graph_input_id(b->g, i);
        void *p = id == b->x ? c->x : id == b->s ? c->s : c->z;
        size_t sz = id == b->x ? c->xbytes : id == b->s ? c->sbytes : c->zbytes;
        in[(*n_in)++] = (dqg_buffer){.id = id, .data = p, .size = sz};
    }
}

static void run_backend(const kcase *c, const built *b, dqg_backend backend, size_t ybytes,
                        run *out)
{
    memset(out, 0, sizeof *out);
    out->y = calloc(ybytes ? ybytes : 1, 1);
    if (!out->y) {
        out->compile = DQG_OUT_OF_MEMORY;
        return;
    }
    dqg_compile_options o = dqg_compile_options_default();
    o.backend = backend;
    o.disable_fusion = c->disable_fusion;
    o.threads = 1;
    dqg_compiled *cp = NULL;
    out->compile = dqg_compile(b->g, &o, &cp);
    fz_require_message("dqg_compile", out->compile);
    if (out->compile != DQG_OK) {
        snprintf(out->impl, sizeof out->impl, "compile failed: %s", dqg_last_error());
        return;
    }
    for (size_t p = 0; p < dqg_compiled_partition_count(cp); p++) {
        size_t len = strlen(out->impl);
        snprintf(out->impl + len, sizeof out->impl - len, "%s%s", p ? "; " : "",
                 dqg_compiled_partition_info(cp, p));
    }
    dqg_buffer in[3];
    size_t n_in;
    bind(c, b, in, &n_in);
    dqg_buffer y = {.id = b->y, .data = out->y, .size = ybytes};
    out->exec = dqg_execute(cp, in, n_in, &y, 1);
    fz_require_message("dqg_execute", out->exec);
    dqg_compiled_destroy(cp);
}

static uint32_t elem_bits(dqg_dtype t, const void *p, int64_t i)
{
    const uint8_t *b = p;
    switch (dqg_dtype_bits(t)) {
    case 4:
        return (b[i / 2] >> (4 * (i & 1))) & 15;
    case 8:
        return b[i];
    case 16: {
        uint16_t v;
        memcpy(&v, b + 2 * i, 2);
        return v;
    }
    default: {
        uint32_t v;
        memcpy(&v, b + 4 * i, 4);
        return v;
    }
    }
}

static float elem_float(dqg_dtype t, const void *p, int64_t i)
{
    float f;
    dqg_dtype_decode(t, p, i, 1, &f);
    return f;
}

static int64_t scale_index(const kcase *c, int64_t i)
{
    if (c->gran == G_SCALAR || c->gran == G_ONE)
        return 0;
    if (c->gran == G_ELEM)
        return i;
    int64_t idx[DQG_MAX_RANK], rem = i;
    for (int k = c->rank - 1; k >= 0; k--) {
        idx[k] = rem % c->dims[k];
        rem /= c->dims[k];
    }
    if (c->gran == G_AXIS)
        return idx[c->axis];
    int64_t s = 0;
    for (int k = 0; k < c->rank; k++)
        s = s * c->sdims[k] + (k == c->axis ? idx[k] / c->block : idx[k]);
    return s;
}

static void mismatch(const kcase *c, const char *what, const run *a, const run *ref, int64_t i,
                     dqg_dtype yt)
{
    fprintf(stderr, "fuzz_dq_kernels: MISMATCH: %s\n", what);
    print_case(c);
    fprintf(stderr, "  backend: %s\n  status %s / %s\n", a->impl, dqg_status_name(a->exec),
            dqg_status_name(ref->exec));
    if (i >= 0) {
        int64_t si = scale_index(c, i);
        fprintf(stderr,
                "  element %lld: x bits 0x%x (%g), scale[%lld] bits 0x%x (%g), zp bits 0x%x; "
                "got bits 0x%x (%g), reference 0x%x (%g)\n",
                (long long)i, elem_bits(c->xt, c->x, i), (double)elem_float(c->xt, c->x, i),
                (long long)si, elem_bits(c->st, c->s, si), (double)elem_float(c->st, c->s, si),
                c->zt ? elem_bits(c->zt, c->z, si) : 0, elem_bits(yt, a->y, i),
                (double)elem_float(yt, a->y, i), elem_bits(yt, ref->y, i),
                (double)elem_float(yt, ref->y, i));
    }
    __builtin_trap();
}

static void compare(const kcase *c, const run *a, const run *ref, dqg_dtype yt)
{
    if (a->compile != DQG_OK)
        mismatch(c, "a valid finalized graph failed to compile", a, ref, -1, yt);
    if (a->exec != ref->exec)
        mismatch(c, "execution status differs from the reference interpreter", a, ref, -1, yt);
    if (a->exec != DQG_OK)
        return;
    for (int64_t i = 0; i < c->n; i++) {
        uint32_t ga = elem_bits(yt, a->y, i), gr = elem_bits(yt, ref->y, i);
        if (ga == gr)
            continue;
        float fa = elem_float(yt, a->y, i), fr = elem_float(yt, ref->y, i);
        if (dqg_dtype_is_float(yt) && isnan(fa) && isnan(fr))
            continue;
        mismatch(c, "output differs", a, ref, i, yt);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* The cache stays on: a wrong hit would show as a mismatch. */
    dqg_cache_set_capacity(64);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r;
    fz_init(&r, data, size);
    kcase c;
    memset(&c, 0, sizeof c);
    choose_types(&r, &c);
    choose_shape(&r, &c);
    choose_granularity(&r, &c);
    built b = {0};
    run a = {0}, rb = {0}, ref = {0};
    if (!choose_data(&r, &c))
        goto done;
    if (fz_verbose())
        print_case(&c);
    if (build(&c, &b) != DQG_OK)
        goto done;
    dqg_dtype yt = dqg_tensor_dtype(b.g, b.y);
    size_t ybytes = dqg_tensor_byte_size(b.g, b.y);

    /* The reference interpreter. */
    ref.y = calloc(ybytes ? ybytes : 1, 1);
    if (!ref.y)
        goto done;
    dqg_buffer in[3];
    size_t n_in;
    bind(&c, &b, in, &n_in);
    dqg_buffer y = {.id = b.y, .data = ref.y, .size = ybytes};
    ref.exec = dqg_reference_run(b.g, in, n_in, &y, 1);
    fz_require_message("dqg_reference_run", ref.exec);
    snprintf(ref.impl, sizeof ref.impl, "reference interpreter");

    run_backend(&c, &b, DQG_BACKEND_ONEDNN, ybytes, &a);
    compare(&c, &a, &ref, yt);
    run_backend(&c, &b, DQG_BACKEND_REFERENCE, ybytes, &rb);
    compare(&c, &rb, &ref, yt);
    if (fz_verbose())
        fprintf(stderr, "oneDNN backend: %s\nreference backend: %s\n", a.impl, rb.impl);
done:
    free(a.y);
    free(rb.y);
    free(ref.y);
    dqg_graph_destroy(b.g);
    free(c.x);
    free(c.s);
    free(c.z);
    return 0;
}
