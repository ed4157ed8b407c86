/* Randomized differential suite for the data-movement ops, with fixed
 * seeds: random chains of Transpose, Reshape (axes merged or split), Slice
 * (any axis, negative and clamped bounds, steps -3 to 3), Gather (constant
 * indices of rank 0 to 2, negative ones too) and Concat (of a tensor with
 * itself or with another of matching shape) over f32, u8 and s8 tensors of
 * rank 1 to 5, some results also graph outputs; at times between
 * DequantizeLinear and QuantizeLinear of one scale and zero point, which
 * the passes run on the int8 tensor itself. These ops move values without
 * changing them, so every output must equal the reference interpreter's
 * byte for byte. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_common.h"

enum { LIVE = 4, MAX_OUT = 4, MAX_ELEMS = 4096 };

typedef struct val {
    dqg_tensor_id t;
    int rank;
    int64_t d[6];
} val;

typedef struct chain {
    dqg_graph *g;
    int n_out;
    dqg_tensor_id out[MAX_OUT];
    char what[1024];
} chain;

static void note(chain *c, const char *fmt, ...)
{
    size_t n = strlen(c->what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what + n, sizeof c->what - n, fmt, ap);
    va_end(ap);
}

static int64_t elems(const val *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++)
        n *= v->d[i];
    return n;
}

static val op_transpose(chain *c, val x)
{
    int64_t perm[6];
    for (int i = 0; i < x.rank; i++)
        perm[i] = i;
    for (int i = x.rank - 1; i > 0; i--) {
        int j = (int)test_rin(0, i);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    val y = {.rank = x.rank};
    for (int i = 0; i < x.rank; i++)
        y.d[i] = x.d[perm[i]];
    y.t = dqg_transpose(c->g, NULL, x.t, perm);
    note(c, " -> Transpose(%lld..%lld)", (long long)perm[0], (long long)perm[x.rank - 1]);
    return y;
}

/* Merges two adjacent axes, or splits one by a divisor. */
static val op_reshape(chain *c, val x)
{
    val y = x;
    int a = (int)test_rin(0, x.rank - 1);
    if (x.rank >= 2 && a < x.rank - 1 && test_rin(0, 1)) {
        y.d[a] = x.d[a] * x.d[a + 1];
        for (int i = a + 1; i < x.rank - 1; i++)
            y.d[i] = x.d[i + 1];
        y.rank--;
    } else if (x.rank < 5) {
        int64_t f = 1;
        for (int64_t k = 2; k <= x.d[a]; k++)
            if (x.d[a] % k == 0 && test_rin(0, 1)) {
                f = k;
                break;
            }
        for (int i = x.rank; i > a + 1; i--)
            y.d[i] = x.d[i - 1];
        y.d[a] = f;
        y.d[a + 1] = x.d[a] / f;
        y.rank++;
    }
    y.t = dqg_reshape(c->g, NULL, x.t, y.rank, y.d);
    note(c, " -> Reshape(rank %lld, axis %lld)", (long long)y.rank, (long long)a);
    return y;
}

static val op_slice(chain *c, val x)
{
    int64_t axis = test_rin(0, x.rank - 1), n = x.d[axis];
    int64_t step = test_rin(1, 3) * (test_rin(0, 2) == 0 ? -1 : 1), start, end;
    if (step > 0) {
        start = test_rin(-n - 2, n - 1);
        end = test_rin(start + 1, n + 3);
    } else {
        start = test_rin(-n, n + 2);
        end = test_rin(-n - 3, start - 1);
    }
    /* The count the slice keeps (dqgraph refuses an empty one). */
    int64_t s = start < 0 ? start + n : start, e = end < 0 ? end + n : end;
    if (step > 0) {
        s = s < 0 ? 0 : s > n ? n : s;
        e = e < 0 ? 0 : e > n ? n : e;
    } else {
        s = s < -1 ? -1 : s > n - 1 ? n - 1 : s;
        e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
    }
    int64_t kept = step > 0 ? (e > s ? (e - s + step - 1) / step : 0)
                            : (s > e ? (s - e + (-step) - 1) / (-step) : 0);
    if (kept == 0)
        return x;
    val y = x;
    y.d[axis] = kept;
    y.t = dqg_slice(c->g, NULL, x.t, 1, &axis, &start, &end, &step);
    note(c, " -> Slice(axis %lld, step %lld)", (long long)axis, (long long)step);
    return y;
}

static val op_gather(chain *c, val x)
{
    int axis = (int)test_rin(0, x.rank - 1);
    int64_t n = x.d[axis];
    int irank = x.rank >= 5 ? 0 : (int)test_rin(0, 2);
    int64_t id[2] = {test_rin(1, 4), test_rin(1, 3)}, count = 1;
    for (int i = 0; i < irank; i++)
        count *= id[i];
    int64_t idx[12];
    for (int64_t i = 0; i < count; i++)
        idx[i] = test_rin(-n, n - 1);
    dqg_tensor_id it =
        dqg_constant(c->g, NULL, DQG_S64, irank, id, idx, (size_t)count * sizeof(int64_t));
    val y = {.rank = x.rank - 1 + irank};
    int r = 0;
    for (int i = 0; i < x.rank; i++) {
        if (i == axis)
            for (int k = 0; k < irank; k++)
                y.d[r++] = id[k];
        else
            y.d[r++] = x.d[i];
    }
    if (y.rank == 0 || elems(&y) > MAX_ELEMS)
        return x;
    y.t = dqg_gather(c->g, NULL, x.t, it, axis);
    note(c, " -> Gather(axis %lld, indices rank %lld)", (long long)axis, (long long)irank);
    return y;
}

/* x with itself (or with `other`, when shapes allow) along an axis. */
static val op_concat(chain *c, val x, const val *other)
{
    int axis = (int)test_rin(0, x.rank - 1);
    bool fits = other && other->rank == x.rank && other->t != x.t;
    for (int i = 0; fits && i < x.rank; i++)
        fits = i == axis || other->d[i] == x.d[i];
    dqg_tensor_id in[3] = {x.t, fits ? other->t : x.t, x.t};
    int k = (int)test_rin(2, 3);
    val y = x;
    y.d[axis] = x.d[axis] * (k - (fits ? 1 : 0)) + (fits ? other->d[axis] : 0);
    if (elems(&y) > MAX_ELEMS)
        return x;
    y.t = dqg_concat(c->g, NULL, k, in, axis);
    note(c, " -> Concat(%lld inputs, axis %lld)", (long long)k, (long long)axis);
    return y;
}

static bool build(chain *c, uint32_t seed, dqg_tensor_id *xin, dqg_dtype *xt)
{
    memset(c, 0, sizeof *c);
    test_rng = seed * 2654435761u + 777u;
    cr_assert_eq(dqg_graph_create(&c->g), DQG_OK);
    static const dqg_dtype types[] = {DQG_F32, DQG_U8, DQG_S8};
    *xt = types[test_rin(0, 2)];
    val x = {.rank = (int)test_rin(1, 4)};
    for (int i = 0; i < x.rank; i++)
        x.d[i] = test_rin(0, 3) == 0 ? 1 : test_rin(2, 7);
    x.t = *xin = dqg_input(c->g, "x", *xt, x.rank, x.d);
    /* int8 data between a DequantizeLinear and a QuantizeLinear of one
     * scale and zero point: the passes move the int8 values themselves. */
    bool qdq = *xt != DQG_F32 && test_rin(0, 1);
    dqg_tensor_id sc = DQG_NONE, zp = DQG_NONE;
    if (qdq) {
        float s = 0.05f;
        int64_t one = 1;
        uint8_t z = (uint8_t)test_rin(0, 255);
        sc = dqg_constant(c->g, NULL, DQG_F32, 0, &one, &s, sizeof s);
        zp = dqg_constant(c->g, NULL, *xt, 0, &one, &z, 1);
        dqg_dequantize_linear_attrs da = {.opset = 13};
        x.t = dqg_dequantize_linear(c->g, NULL, x.t, sc, zp, &da);
        note(c, "DQ");
    }
    note(c, " %s rank %d", dqg_dtype_name(*xt), x.rank);
    val live[LIVE] = {x};
    int n_live = 1;
    for (int n = (int)test_rin(1, 6); n > 0; n--) {
        val a = live[test_rin(0, n_live - 1)], y;
        switch (test_rin(0, 4)) {
        case 0:
            y = op_transpose(c, a);
            break;
        case 1:
            y = op_reshape(c, a);
            break;
        case 2:
            y = op_slice(c, a);
            break;
        case 3:
            y = op_gather(c, a);
            break;
        default:
            y = op_concat(c, a, &live[test_rin(0, n_live - 1)]);
            break;
        }
        if (y.t == a.t)
            continue;
        if (n_live < LIVE)
            live[n_live++] = y;
        else
            live[test_rin(0, LIVE - 1)] = y;
        if (c->n_out < MAX_OUT - 1 && test_rin(0, 3) == 0)
            c->out[c->n_out++] = y.t;
    }
    dqg_tensor_id last = live[n_live - 1].t;
    if (last == x.t)
        last = op_transpose(c, live[0]).t;
    bool dup = false;
    for (int i = 0; i < c->n_out; i++)
        dup |= c->out[i] == last;
    if (!dup)
        c->out[c->n_out++] = last;
    for (int i = 0; i < c->n_out; i++) {
        if (qdq) {
            dqg_quantize_linear_attrs qa = {.opset = 13};
            c->out[i] = dqg_quantize_linear(c->g, NULL, c->out[i], sc, zp, &qa);
        }
        char name[16];
        snprintf(name, sizeof name, "y%d", i);
        cr_assert_eq(dqg_output(c->g, c->out[i], name), DQG_OK, "seed %u: %s: %s", seed, c->what,
                     dqg_last_error());
    }
    dqg_status st = dqg_graph_finalize(c->g);
    cr_assert_eq(st, DQG_OK, "seed %u: %s: %s", seed, c->what, dqg_last_error());
    return qdq;
}

static void run_case(uint32_t seed)
{
    chain c;
    dqg_tensor_id xin;
    dqg_dtype xt;
    build(&c, seed, &xin, &xt);
    size_t xb = dqg_tensor_byte_size(c.g, xin);
    uint8_t *x = malloc(xb);
    for (size_t i = 0; i < xb; i++)
        x[i] = (uint8_t)test_rnd();
    if (xt == DQG_F32) /* finite values */
        for (size_t i = 0; i < xb / 4; i++)
            ((float *)x)[i] = (float)((int)(test_rnd() % 2001) - 1000) * 0.01f;
    dqg_buffer in = {.id = xin, .data = x, .size = xb};
    dqg_buffer ref[MAX_OUT], got[MAX_OUT];
    for (int i = 0; i < c.n_out; i++) {
        size_t n = dqg_tensor_byte_size(c.g, c.out[i]);
        ref[i] = (dqg_buffer){.id = c.out[i], .data = malloc(n), .size = n};
        got[i] = (dqg_buffer){.id = c.out[i], .data = malloc(n), .size = n};
    }
    cr_assert_eq(dqg_reference_run(c.g, &in, 1, ref, (size_t)c.n_out), DQG_OK, "seed %u: %s: %s",
                 seed, c.what, dqg_last_error());
    dqg_compiled *cc = NULL;
    cr_assert_eq(dqg_compile(c.g, NULL, &cc), DQG_OK, "seed %u: %s: %s", seed, c.what,
                 dqg_last_error());
    cr_assert_eq(dqg_execute(cc, &in, 1, got, (size_t)c.n_out), DQG_OK, "seed %u: %s: %s", seed,
                 c.what, dqg_last_error());
    for (int i = 0; i < c.n_out; i++) {
        const uint8_t *a = got[i].data, *r = ref[i].data;
        for (size_t k = 0; k < ref[i].size; k++)
            cr_assert_eq(a[k], r[k], "seed %u:%s\noutput %d byte %zu: %u, reference %u\n%s", seed,
                         c.what, i, k, a[k], r[k], dqg_compiled_partition_info(cc, 0));
        free(ref[i].data);
        free(got[i].data);
    }
    dqg_compiled_destroy(cc);
    free(x);
    dqg_graph_destroy(c.g);
}

/* Seeds 1..5000 (DQG_SHAPE_CASES=FIRST:COUNT runs others). */
Test(random_shapes, data_movement_matches_the_reference, .timeout = 300)
{
    uint32_t first = 1, count = 5000;
    test_seed_range("DQG_SHAPE_CASES", &first, &count);
    for (uint32_t s = first; s < first + count; s++)
        run_case(s);
}
