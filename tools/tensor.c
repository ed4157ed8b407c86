/*
 * dqgraph tensor and dqgraph compare: print a TensorProto file, compare two;
 * and the element-wise comparison `dqgraph test` shares with compare.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "tool.h"

/* ------------------------------------------------------------------------ */
/* Elements                                                                  */
/* ------------------------------------------------------------------------ */

#define CHUNK 512

/* Reads elements [first, first + n) as doubles: exact for every integer type. */
static void read_elements(dqg_dtype dt, const void *data, int64_t first, int64_t n, double *out)
{
    const unsigned char *p = data;
    float f[CHUNK];
    for (int64_t done = 0; done < n;) {
        int64_t m = n - done < CHUNK ? n - done : CHUNK;
        int64_t at = first + done;
        switch (dt) {
        case DQG_S32:
            for (int64_t i = 0; i < m; i++) {
                int32_t v;
                memcpy(&v, p + (size_t)(at + i) * 4, 4);
                out[done + i] = (double)v;
            }
            break;
        case DQG_U32:
            for (int64_t i = 0; i < m; i++) {
                uint32_t v;
                memcpy(&v, p + (size_t)(at + i) * 4, 4);
                out[done + i] = (double)v;
            }
            break;
        case DQG_S64:
            for (int64_t i = 0; i < m; i++) {
                int64_t v;
                memcpy(&v, p + (size_t)(at + i) * 8, 8);
                out[done + i] = (double)v;
            }
            break;
        default:
            dqg_dtype_decode(dt, data, at, m, f);
            for (int64_t i = 0; i < m; i++)
                out[done + i] = (double)f[i];
            break;
        }
        done += m;
    }
}

/* Element i as text: integers exactly (s64 included), floats with 9 digits. */
static void format_element(char *buf, size_t size, dqg_dtype dt, const void *data, int64_t i)
{
    if (dt == DQG_S64) {
        int64_t v;
        memcpy(&v, (const unsigned char *)data + (size_t)i * 8, 8);
        snprintf(buf, size, "%lld", (long long)v);
        return;
    }
    double v;
    read_elements(dt, data, i, 1, &v);
    format_value(buf, size, dt, v);
}

void format_value(char *buf, size_t size, dqg_dtype dt, double v)
{
    if (dqg_dtype_is_float(dt))
        snprintf(buf, size, "%.9g", v);
    else
        snprintf(buf, size, "%.0f", v);
}

/* The row-major multi-index of flat element `index`, as "[i0,i1,...]". */
static void format_index(char *buf, size_t size, int rank, const int64_t *dims, int64_t index)
{
    int64_t idx[DQG_MAX_RANK];
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = dims[d] > 0 ? index % dims[d] : 0;
        index = dims[d] > 0 ? index / dims[d] : 0;
    }
    format_shape(buf, size, rank, idx);
}

static int64_t element_count(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    return n;
}

/* ------------------------------------------------------------------------ */
/* Comparing                                                                 */
/* ------------------------------------------------------------------------ */

/* Whether got is within the tolerance of expected (NaN matches NaN, an
 * infinity the same infinity). */
static bool within(double e, double g, double rtol, double atol, bool int_slack_one)
{
    if (isnan(e) || isnan(g))
        return isnan(e) && isnan(g);
    if (isinf(e) || isinf(g))
        return e == g;
    double diff = fabs(g - e);
    if (int_slack_one)
        return diff <= 1.0;
    return diff <= atol + rtol * fabs(e);
}

void diff_tensors(dqg_dtype dt, const void *got, const void *expected, int64_t n, double rtol,
                  double atol, bool int_slack_one, tensor_diff *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    d->first_outside = -1;
    bool slack = int_slack_one && dqg_dtype_is_integer(dt); /* never for bool */
    double g[CHUNK], e[CHUNK];
    double dot = 0, gg = 0, ee = 0;
    for (int64_t first = 0; first < n; first += CHUNK) {
        int64_t m = n - first < CHUNK ? n - first : CHUNK;
        read_elements(dt, got, first, m, g);
        read_elements(dt, expected, first, m, e);
        for (int64_t i = 0; i < m; i++) {
            double a = g[i], b = e[i];
            bool same_special = (isnan(a) && isnan(b)) || (isinf(a) && a == b);
            double abs_err = same_special ? 0.0 : fabs(a - b);
            if (isnan(abs_err))
                abs_err = INFINITY;
            if (abs_err > d->max_abs)
                d->max_abs = abs_err;
            if (b != 0 && !same_special) {
                double rel = isfinite(b) ? abs_err / fabs(b) : (abs_err > 0 ? INFINITY : 0.0);
                if (rel > d->max_rel)
                    d->max_rel = rel;
            }
            if (isfinite(a) && isfinite(b)) {
                dot += a * b;
                gg += a * a;
                ee += b * b;
            }
            if (!within(b, a, rtol, atol, slack)) {
                if (d->outside++ == 0) {
                    d->first_outside = first + i;
                    d->first_got = a;
                    d->first_expected = b;
                }
            }
        }
    }
    if (gg == 0 && ee == 0)
        d->cosine = 1.0;
    else if (gg == 0 || ee == 0)
        d->cosine = 0.0;
    else
        d->cosine = dot / (sqrt(gg) * sqrt(ee));
}

/* ------------------------------------------------------------------------ */
/* dqgraph tensor                                                            */
/* ------------------------------------------------------------------------ */

const char USAGE_TENSOR[] =
    "usage: dqgraph tensor FILE.pb [--all]\n"
    "\n"
    "Prints a TensorProto file (as written by 'dqgraph run' or found in ONNX\n"
    "test data): its name, data type, shape and element count; the statistics of\n"
    "its values (min, max, the flat indexes of the first of each, mean and\n"
    "standard deviation over the finite values, and the number of NaNs and\n"
    "infinities); and its first 16 values, eight per\n"
    "line, each line starting with the flat index of its first value.\n"
    "\n"
    "Options:\n"
    "  --all       print every value\n"
    "  -h, --help  show this help\n"
    "\n"
    "Example: dqgraph tensor out/output_0.pb\n";

#define SHOWN_VALUES 16

int cmd_tensor(const tool_opts *o)
{
    tensor_file t;
    dqg_status st = tensor_file_load(&t, o->pos[0]);
    if (st != DQG_OK)
        return report(st);
    int64_t n = element_count(t.rank, t.dims);
    char shape[256];
    format_shape(shape, sizeof shape, t.rank, t.dims);
    printf("name: %s\n", t.name && *t.name ? t.name : "(none)");
    printf("type: %s\n", dqg_dtype_name(t.dtype));
    printf("shape: %s\n", shape);
    printf("elements: %lld\n", (long long)n);

    double v[CHUNK];
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int64_t finite = 0, nans = 0, infs = 0, arg_lo = -1, arg_hi = -1;
    for (int64_t first = 0; first < n; first += CHUNK) {
        int64_t m = n - first < CHUNK ? n - first : CHUNK;
        read_elements(t.dtype, t.data, first, m, v);
        for (int64_t i = 0; i < m; i++) {
            if (isnan(v[i])) {
                nans++;
            } else if (isinf(v[i])) {
                infs++;
            } else {
                finite++;
                sum += v[i];
                if (v[i] < lo) {
                    lo = v[i];
                    arg_lo = first + i;
                }
                if (v[i] > hi) {
                    hi = v[i];
                    arg_hi = first + i;
                }
            }
        }
    }
    double mean = finite ? sum / (double)finite : NAN, sq = 0;
    for (int64_t first = 0; finite && first < n; first += CHUNK) {
        int64_t m = n - first < CHUNK ? n - first : CHUNK;
        read_elements(t.dtype, t.data, first, m, v);
        for (int64_t i = 0; i < m; i++)
            if (isfinite(v[i]))
                sq += (v[i] - mean) * (v[i] - mean);
    }
    if (finite) {
        char a[64], b[64];
        format_value(a, sizeof a, t.dtype, lo);
        format_value(b, sizeof b, t.dtype, hi);
        printf("min: %s\nmax: %s\n", a, b);
        /* flat indexes of the first smallest and largest finite values (a
         * classifier's top-1 is the argmax of its logits) */
        printf("argmin: %lld\nargmax: %lld\n", (long long)arg_lo, (long long)arg_hi);
        printf("mean: %.9g\nstd: %.9g\n", mean, sqrt(sq / (double)finite));
    } else {
        printf("min: none\nmax: none\nargmin: none\nargmax: none\nmean: none\nstd: none\n");
    }
    printf("nan: %lld\ninf: %lld\n", (long long)nans, (long long)infs);

    int64_t shown = o->all || n <= SHOWN_VALUES ? n : SHOWN_VALUES;
    if (shown == n)
        printf("values:\n");
    else
        printf("values (first %lld of %lld):\n", (long long)shown, (long long)n);
    for (int64_t i = 0; i < shown; i++) {
        char text[64];
        format_element(text, sizeof text, t.dtype, t.data, i);
        if (i % 8 == 0)
            printf("  [%lld]", (long long)i);
        printf(" %s", text);
        if (i % 8 == 7 || i == shown - 1)
            printf("\n");
    }
    free(t.name);
    free(t.data);
    return EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* dqgraph compare                                                           */
/* ------------------------------------------------------------------------ */

const char USAGE_COMPARE[] =
    "usage: dqgraph compare A.pb B.pb [--rtol X] [--atol X]\n"
    "\n"
    "Compares two TensorProto files element by element, B being the reference:\n"
    "prints the element count, the largest absolute error |A - B|, the largest\n"
    "relative error |A - B| / |B| (over the elements where B is not 0), the\n"
    "cosine similarity (over the elements finite in both; 1 when both are all\n"
    "zeros), how many elements are outside the tolerance and the first of them\n"
    "(flat index, index and both values).\n"
    "\n"
    "An element is within the tolerance when |A - B| <= atol + rtol * |B|, for\n"
    "every data type; NaN matches NaN and an infinity the same infinity. Both\n"
    "files must have the same data type and shape (a UINT16 file may hold the\n"
    "bits of a bfloat16 tensor, as in ONNX's test data).\n"
    "\n"
    "Exit status: 0 all within the tolerance, 1 some outside, 3 a file cannot be\n"
    "read or the data types or shapes differ.\n"
    "\n"
    "Options:\n"
    "  --rtol X    relative tolerance (default 1e-3)\n"
    "  --atol X    absolute tolerance (default 1e-5)\n"
    "  -h, --help  show this help\n"
    "\n"
    "Example: dqgraph compare out/output_0.pb test_data_set_0/output_0.pb\n";

int cmd_compare(const tool_opts *o)
{
    tensor_file a, b;
    memset(&b, 0, sizeof b);
    dqg_status st = tensor_file_load(&a, o->pos[0]);
    if (st == DQG_OK)
        st = tensor_file_load(&b, o->pos[1]);
    dqg_dtype dt = a.dtype;
    if (st == DQG_OK) {
        if (bf16_as_u16(a.dtype, b.dtype) || bf16_as_u16(b.dtype, a.dtype))
            dt = DQG_BF16;
        else if (a.dtype != b.dtype)
            st = fail(DQG_INVALID_ARGUMENT, "data types differ: '%s' is %s, '%s' is %s", a.path,
                      dqg_dtype_name(a.dtype), b.path, dqg_dtype_name(b.dtype));
    }
    bool same_shape = st == DQG_OK && a.rank == b.rank;
    for (int d = 0; same_shape && d < a.rank; d++)
        same_shape = a.dims[d] == b.dims[d];
    char shape_a[256], shape_b[256];
    format_shape(shape_a, sizeof shape_a, a.rank, a.dims);
    format_shape(shape_b, sizeof shape_b, b.rank, b.dims);
    if (st == DQG_OK && !same_shape)
        st = fail(DQG_INVALID_ARGUMENT, "shapes differ: '%s' is %s, '%s' is %s", a.path, shape_a,
                  b.path, shape_b);
    int rc = EXIT_OK;
    if (st == DQG_OK) {
        tensor_diff d;
        diff_tensors(dt, a.data, b.data, element_count(a.rank, a.dims), o->rtol, o->atol, false,
                     &d);
        printf("type: %s\nshape: %s\nelements: %lld\n", dqg_dtype_name(dt), shape_a,
               (long long)d.n);
        printf("max_abs_error: %.9g\nmax_rel_error: %.9g\ncosine: %.9g\n", d.max_abs, d.max_rel,
               d.cosine);
        printf("outside_tolerance: %lld (rtol %g, atol %g)\n", (long long)d.outside, o->rtol,
               o->atol);
        if (d.outside) {
            char index[256], va[64], vb[64];
            format_index(index, sizeof index, a.rank, a.dims, d.first_outside);
            format_element(va, sizeof va, dt, a.data, d.first_outside);
            format_element(vb, sizeof vb, dt, b.data, d.first_outside);
            printf("first_mismatch: %lld %s A %s B %s\n", (long long)d.first_outside, index, va,
                   vb);
            rc = EXIT_TEST_FAILURES;
        } else {
            printf("first_mismatch: none\n");
        }
    }
    free(a.name);
    free(a.data);
    free(b.name);
    free(b.data);
    return st == DQG_OK ? rc : report(st);
}
