/* RNN, GRU and LSTM: single steps worked out from ONNX's equations (the
 * gate orders included), the compiled oneDNN path against the reference
 * over seeded random layers, the forms that run on the reference, the
 * lengths of sequence_lens, the builder's rules and the ONNX importer's
 * attributes. */
#include <math.h>

#include "support/onnx_model.h"
#include "test_common.h"

static double sig(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* One layer's inputs and results. */
typedef struct rnn_case {
    dqg_rnn_attrs a;
    int64_t T, N, I;
    bool const_params; /* w, r, b, p constants (else graph inputs) */
    bool has_b, has_h0, has_c0, has_p;
    int lens; /* 0: none; 1: constant; 2: graph input */
    const int32_t *len_values;
} rnn_case;

typedef struct rnn_data {
    float *x, *w, *r, *b, *h0, *c0, *p;
    size_t nx, nw, nr, nb, ns, np;
} rnn_data;

static float *rand_array(size_t n, float lo, float hi)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    cr_assert(v);
    for (size_t i = 0; i < n; i++)
        v[i] = test_uniform(lo, hi);
    return v;
}

static void data_make(const rnn_case *c, uint32_t seed, rnn_data *d)
{
    int64_t H = c->a.hidden_size, D = c->a.direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t G = c->a.cell == DQG_RNN_CELL_RNN ? 1 : c->a.cell == DQG_RNN_CELL_GRU ? 3 : 4;
    test_rng = seed;
    d->nx = (size_t)(c->T * c->N * c->I);
    d->nw = (size_t)(D * G * H * c->I);
    d->nr = (size_t)(D * G * H * H);
    d->nb = (size_t)(D * 2 * G * H);
    d->ns = (size_t)(D * c->N * H);
    d->np = (size_t)(D * 3 * H);
    float scale = 1.0f / sqrtf((float)(c->I + H));
    d->x = rand_array(d->nx, -1.5f, 1.5f);
    d->w = rand_array(d->nw, -2 * scale, 2 * scale);
    d->r = rand_array(d->nr, -2 * scale, 2 * scale);
    d->b = rand_array(d->nb, -0.5f, 0.5f);
    d->h0 = rand_array(d->ns, -1, 1);
    d->c0 = rand_array(d->ns, -1, 1);
    d->p = rand_array(d->np, -0.5f, 0.5f);
}

static void data_free(rnn_data *d)
{
    free(d->x);
    free(d->w);
    free(d->r);
    free(d->b);
    free(d->h0);
    free(d->c0);
    free(d->p);
}

/* A parameter: a constant, or a graph input named `name`. */
static dqg_tensor_id param(dqg_graph *g, const char *name, bool constant, int rank,
                           const int64_t *dims, const float *v)
{
    if (constant)
        return test_const_f32(g, rank, dims, v);
    return dqg_input(g, name, DQG_F32, rank, dims);
}

/* Builds the layer; Y, Y_h (and Y_c) are outputs "y", "yh", "yc". */
static dqg_graph *build(const rnn_case *c, const rnn_data *d)
{
    const dqg_rnn_attrs *a = &c->a;
    int64_t H = a->hidden_size, D = a->direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t G = a->cell == DQG_RNN_CELL_RNN ? 1 : a->cell == DQG_RNN_CELL_GRU ? 3 : 4;
    bool bf = a->batch_first;
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[3] = {bf ? c->N : c->T, bf ? c->T : c->N, c->I};
    int64_t wd[3] = {D, G * H, c->I}, rd[3] = {D, G * H, H}, bd[2] = {D, 2 * G * H};
    int64_t sd[3] = {bf ? c->N : D, bf ? D : c->N, H}, pd[2] = {D, 3 * H};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
    dqg_tensor_id w = param(g, "w", c->const_params, 3, wd, d->w);
    dqg_tensor_id r = param(g, "r", c->const_params, 3, rd, d->r);
    dqg_tensor_id b = c->has_b ? param(g, "b", c->const_params, 2, bd, d->b) : DQG_NONE;
    dqg_tensor_id p = c->has_p ? param(g, "p", c->const_params, 2, pd, d->p) : DQG_NONE;
    dqg_tensor_id h0 = c->has_h0 ? dqg_input(g, "h0", DQG_F32, 3, sd) : DQG_NONE;
    dqg_tensor_id c0 = c->has_c0 ? dqg_input(g, "c0", DQG_F32, 3, sd) : DQG_NONE;
    dqg_tensor_id lens = DQG_NONE;
    if (c->lens == 1)
        lens = dqg_constant(g, "lens", DQG_S32, 1, &c->N, c->len_values,
                            (size_t)c->N * sizeof(int32_t));
    else if (c->lens == 2)
        lens = dqg_input(g, "lens", DQG_S32, 1, &c->N);
    dqg_tensor_id yh, yc;
    dqg_tensor_id y = dqg_rnn(g, "layer", a, x, w, r, b, lens, h0, c0, p, &yh, &yc);
    cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
    dqg_output(g, y, "y");
    dqg_output(g, yh, "yh");
    if (a->cell == DQG_RNN_CELL_LSTM)
        dqg_output(g, yc, "yc");
    finalize_ok(g);
    return g;
}

/* Runs the layer (compiled, or on the reference) into y, yh, yc; *info
 * gets the partition's info (compiled). */
static void run(const rnn_case *c, const rnn_data *d, const int32_t *lens, bool compiled, float *y,
                float *yh, float *yc, char *info, size_t info_size)
{
    dqg_graph *g = build(c, d);
    int64_t H = c->a.hidden_size, D = c->a.direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    size_t ny = (size_t)(c->T * D * c->N * H);
    dqg_buffer in[8];
    int n = 0;
    in[n++] = (dqg_buffer){.name = "x", .data = d->x, .size = d->nx * 4};
    if (!c->const_params) {
        in[n++] = (dqg_buffer){.name = "w", .data = d->w, .size = d->nw * 4};
        in[n++] = (dqg_buffer){.name = "r", .data = d->r, .size = d->nr * 4};
        if (c->has_b)
            in[n++] = (dqg_buffer){.name = "b", .data = d->b, .size = d->nb * 4};
        if (c->has_p)
            in[n++] = (dqg_buffer){.name = "p", .data = d->p, .size = d->np * 4};
    }
    if (c->has_h0)
        in[n++] = (dqg_buffer){.name = "h0", .data = d->h0, .size = d->ns * 4};
    if (c->has_c0)
        in[n++] = (dqg_buffer){.name = "c0", .data = d->c0, .size = d->ns * 4};
    if (c->lens == 2)
        in[n++] = (dqg_buffer){.name = "lens", .data = (void *)lens, .size = (size_t)c->N * 4};
    dqg_buffer out[3] = {{.name = "y", .data = y, .size = ny * 4},
                         {.name = "yh", .data = yh, .size = d->ns * 4},
                         {.name = "yc", .data = yc, .size = d->ns * 4}};
    int n_out = c->a.cell == DQG_RNN_CELL_LSTM ? 3 : 2;
    if (!compiled) {
        cr_assert_eq(dqg_reference_run(g, in, n, out, n_out), DQG_OK, "%s", dqg_last_error());
    } else {
        dqg_compile_options o = dqg_compile_options_default();
        dqg_compiled *cc;
        cr_assert_eq(dqg_compile(g, &o, &cc), DQG_OK, "%s", dqg_last_error());
        info[0] = '\0';
        for (size_t i = 0; i < dqg_compiled_partition_count(cc); i++)
            if (strstr(dqg_compiled_partition_info(cc, i), "RNN"))
                snprintf(info, info_size, "%s", dqg_compiled_partition_info(cc, i));
        cr_assert_eq(dqg_execute(cc, in, n, out, n_out), DQG_OK, "%s", dqg_last_error());
        dqg_compiled_destroy(cc);
    }
    dqg_graph_destroy(g);
}

/* max |a - b| over n values, and max |a|. */
static double max_diff(const float *a, const float *b, size_t n, double *mag)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, fabs((double)a[i] - (double)b[i]));
        *mag = fmax(*mag, fabs((double)a[i]));
    }
    return m;
}

/* One step of each cell, H = I = 1, every gate with its own weights, from
 * ONNX's equations; compiled (oneDNN) and on the reference. */
Test(rnn, one_step_follows_onnx_equations)
{
    const float x = 0.8f, h0 = -0.3f, c0 = 0.6f;
    const float w[4] = {0.9f, -0.4f, 0.7f, 0.2f}, r[4] = {0.3f, 0.5f, -0.6f, 0.8f};
    const float b[8] = {0.1f, -0.2f, 0.3f, 0.05f, -0.15f, 0.25f, 0.12f, -0.08f};
    const float p[3] = {0.4f, -0.3f, 0.2f}; /* i, o, f */
    double want_h[5], want_c = 0;
    /* LSTM: gates i, o, f, c; Wb then Rb */
    double gi = sig(w[0] * x + r[0] * h0 + b[0] + b[4] + p[0] * c0);
    double gf = sig(w[2] * x + r[2] * h0 + b[2] + b[6] + p[2] * c0);
    double gc = tanh(w[3] * x + r[3] * h0 + b[3] + b[7]);
    want_c = gf * c0 + gi * gc;
    double go = sig(w[1] * x + r[1] * h0 + b[1] + b[5] + p[1] * want_c);
    want_h[0] = go * tanh(want_c);
    /* GRU: gates z, r, h */
    double z = sig(w[0] * x + r[0] * h0 + b[0] + b[3]);
    double rr = sig(w[1] * x + r[1] * h0 + b[1] + b[4]);
    double hh = tanh(w[2] * x + r[2] * (rr * h0) + b[5] + b[2]);
    want_h[1] = (1 - z) * hh + z * h0;
    hh = tanh(w[2] * x + rr * (r[2] * h0 + b[5]) + b[2]); /* linear before reset */
    want_h[2] = (1 - z) * hh + z * h0;
    /* RNN, Tanh and LeakyRelu(0.1) */
    want_h[3] = tanh(w[0] * x + r[0] * h0 + b[0] + b[1]);
    double pre = w[0] * x + r[0] * h0 + b[0] + b[1] - 1.0;
    want_h[4] = pre > 0 ? pre : 0.1 * pre;

    for (int k = 0; k < 5; k++) {
        rnn_case c = {.T = 1, .N = 1, .I = 1, .const_params = true, .has_b = true, .has_h0 = true};
        c.a.hidden_size = 1;
        c.a.cell = k == 0 ? DQG_RNN_CELL_LSTM : k < 3 ? DQG_RNN_CELL_GRU : DQG_RNN_CELL_RNN;
        c.a.linear_before_reset = k == 2;
        c.has_c0 = c.has_p = k == 0;
        float bk[8];
        memcpy(bk, b, sizeof b);
        if (k == 1 || k == 2) /* GRU: Wb z r h, Rb z r h */
            memcpy(bk, (const float[]){b[0], b[1], b[2], b[3], b[4], b[5]}, 6 * 4);
        if (k >= 3) {
            bk[1] = b[1] - (k == 4 ? 1.0f : 0.0f);
            c.a.activation[0][0] = k == 4 ? DQG_RNN_ACT_LEAKY_RELU : DQG_RNN_ACT_TANH;
            c.a.alpha[0][0] = 0.1f;
        }
        rnn_data d = {.x = (float *)&x,
                      .w = (float *)w,
                      .r = (float *)r,
                      .b = bk,
                      .h0 = (float *)&h0,
                      .c0 = (float *)&c0,
                      .p = (float *)p,
                      .nx = 1,
                      .ns = 1};
        for (int compiled = 0; compiled < 2; compiled++) {
            float y = 0, yh = 0, yc = 0;
            char info[300] = "";
            run(&c, &d, NULL, compiled, &y, &yh, &yc, info, sizeof info);
            cr_assert(fabs(yh - want_h[k]) < 1e-6 && y == yh,
                      "case %d %s: h %.9g, want %.9g (y %g)", k,
                      compiled ? "compiled" : "reference", yh, want_h[k], y);
            if (k == 0)
                cr_assert(fabs(yc - want_c) < 1e-6, "LSTM c %.9g, want %.9g", yc, want_c);
            if (compiled)
                cr_assert(strstr(info, "onednn:"), "case %d: %s", k, info);
        }
    }
}

/* Runs case c (data from seed) compiled and on the reference: oneDNN's
 * results within 1e-5 of the reference's, relative to the largest
 * magnitude of each result. */
static void check_case(rnn_case c, uint32_t seed)
{
    int32_t lens[4] = {(int32_t)c.T, (int32_t)c.T, (int32_t)c.T, (int32_t)c.T};
    c.len_values = lens;
    rnn_data d;
    data_make(&c, seed, &d);
    int64_t H = c.a.hidden_size, D = c.a.direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    size_t ny = (size_t)(c.T * D * c.N * H);
    float *y[2], *yh[2], *yc[2];
    for (int k = 0; k < 2; k++) {
        y[k] = calloc(ny, 4);
        yh[k] = calloc(d.ns, 4);
        yc[k] = calloc(d.ns, 4);
    }
    char info[300] = "";
    run(&c, &d, lens, false, y[0], yh[0], yc[0], NULL, 0);
    run(&c, &d, lens, true, y[1], yh[1], yc[1], info, sizeof info);
    cr_assert(strstr(info, "onednn:"), "seed %u: %s", seed, info);
    double my = 0, mh = 0, mc = 0;
    double ey = max_diff(y[0], y[1], ny, &my), eh = max_diff(yh[0], yh[1], d.ns, &mh);
    double ec = max_diff(yc[0], yc[1], d.ns, &mc);
    cr_assert(ey <= 1e-5 * fmax(my, 1e-30) && eh <= 1e-5 * fmax(mh, 1e-30) &&
                  ec <= 1e-5 * fmax(mc, 1e-30),
              "seed %u (%s dir %d bf %d T %lld N %lld I %lld H %lld): errors y %g of %g, "
              "h %g of %g, c %g of %g",
              seed, dqg_rnn_cell_name(c.a.cell), (int)c.a.direction, (int)c.a.batch_first,
              (long long)c.T, (long long)c.N, (long long)c.I, (long long)H, ey, my, eh, mh, ec, mc);
    for (int k = 0; k < 2; k++) {
        free(y[k]);
        free(yh[k]);
        free(yc[k]);
    }
    data_free(&d);
}

/* Seeded random layers of every cell, direction and layout, with and
 * without biases, states and peepholes, constant or run-time parameters:
 * oneDNN's results within 1e-5 of the reference, relative to the largest
 * magnitude of each result. */
Test(rnn, compiled_matches_reference)
{
    uint32_t first = 1, count = 48;
    test_seed_range("DQG_RNN_SEEDS", &first, &count);
    for (uint32_t seed = first; seed < first + count; seed++) {
        test_rng = seed * 2654435761u + 1;
        rnn_case c = {0};
        c.a.cell = (dqg_rnn_cell)(seed % 3);
        c.a.direction = (dqg_rnn_direction)((seed / 3) % 3);
        c.a.batch_first = (seed / 9) % 2;
        c.a.hidden_size = test_rin(1, 24);
        c.a.linear_before_reset = c.a.cell == DQG_RNN_CELL_GRU && test_rin(0, 1);
        if (c.a.cell == DQG_RNN_CELL_RNN) {
            static const dqg_rnn_activation f[] = {DQG_RNN_ACT_DEFAULT, DQG_RNN_ACT_RELU,
                                                   DQG_RNN_ACT_SIGMOID, DQG_RNN_ACT_LEAKY_RELU};
            c.a.activation[0][0] = c.a.activation[1][0] = f[test_rin(0, 3)];
            c.a.alpha[0][0] = c.a.alpha[1][0] = 0.2f;
        }
        c.T = test_rin(1, 7);
        c.N = test_rin(1, 4);
        c.I = test_rin(1, 20);
        c.const_params = test_rin(0, 3) != 0;
        c.has_b = test_rin(0, 3) != 0;
        c.has_h0 = test_rin(0, 1);
        c.has_c0 = c.a.cell == DQG_RNN_CELL_LSTM && test_rin(0, 1);
        c.has_p = c.a.cell == DQG_RNN_CELL_LSTM && test_rin(0, 1);
        c.lens = (int)test_rin(0, 2);
        check_case(c, seed);
    }
    /* Larger layers: sums over a few hundred terms, 24 steps. */
    for (int cell = 0; cell < 3; cell++) {
        rnn_case c = {.T = 24,
                      .N = 3,
                      .I = 80,
                      .const_params = true,
                      .has_b = true,
                      .has_h0 = true,
                      .has_c0 = cell == 2,
                      .has_p = cell == 2};
        c.a.cell = (dqg_rnn_cell)cell;
        c.a.direction = DQG_RNN_BIDIRECTIONAL;
        c.a.hidden_size = 96;
        check_case(c, 1000u + (uint32_t)cell);
    }
}

/* What oneDNN's primitives do not compute runs on the reference, and the
 * partition info names the reason: the results are the reference's. */
Test(rnn, other_forms_run_on_the_reference)
{
    const int32_t short_lens[3] = {4, 2, 0}, full_lens[3] = {4, 4, 4};
    for (int k = 0; k < 5; k++) {
        rnn_case c = {.T = 4, .N = 3, .I = 5, .const_params = true, .has_b = true, .has_h0 = true};
        c.a.cell = k == 1 ? DQG_RNN_CELL_GRU : DQG_RNN_CELL_LSTM;
        c.a.direction = DQG_RNN_BIDIRECTIONAL;
        c.a.hidden_size = 6;
        const char *why = NULL;
        if (k == 0) {
            c.a.clip = 0.5f;
            why = "clip";
        } else if (k == 1) {
            c.a.activation[1][0] = DQG_RNN_ACT_HARD_SIGMOID;
            c.a.alpha[1][0] = 0.3f;
            c.a.beta[1][0] = 0.4f;
            why = "functions other than the primitive's";
        } else if (k == 2) {
            c.lens = 1;
            c.len_values = short_lens;
            why = "sequences of different lengths";
        } else {
            c.lens = 2; /* at run time: k == 3 short, k == 4 all T (oneDNN) */
        }
        rnn_data d;
        data_make(&c, 77u + (uint32_t)k, &d);
        size_t ny = (size_t)(c.T * 2 * c.N * 6);
        float y[2][144], yh[2][36], yc[2][36];
        char info[300];
        const int32_t *lens = k == 4 ? full_lens : short_lens;
        run(&c, &d, lens, false, y[0], yh[0], yc[0], NULL, 0);
        run(&c, &d, lens, true, y[1], yh[1], yc[1], info, sizeof info);
        if (why)
            cr_assert(strstr(info, "reference (") && strstr(info, why), "case %d: %s", k, info);
        else
            cr_assert(strstr(info, "onednn:"), "case %d: %s", k, info);
        if (k < 4) {
            cr_assert(memcmp(y[0], y[1], ny * 4) == 0 && memcmp(yh[0], yh[1], sizeof yh[0]) == 0,
                      "case %d differs from the reference", k);
        } else {
            double my = 0, mh = 0;
            cr_assert(max_diff(y[0], y[1], ny, &my) <= 1e-5 * my &&
                      max_diff(yh[0], yh[1], 36, &mh) <= 1e-5 * mh);
        }
        data_free(&d);
    }
}

/* An entry of length L gives what a sequence of L steps gives, then zeros;
 * its final state is the one after step L (the initial one for L = 0),
 * in both directions. */
Test(rnn, sequence_lens_stop_each_entry)
{
    const int32_t lens[3] = {3, 1, 0};
    for (int dir = 0; dir < 2; dir++) {
        rnn_case c = {.T = 3, .N = 3, .I = 2, .const_params = true, .has_b = true, .has_h0 = true};
        c.a.cell = DQG_RNN_CELL_GRU;
        c.a.direction = dir ? DQG_RNN_REVERSE : DQG_RNN_FORWARD;
        c.a.hidden_size = 4;
        c.lens = 1;
        c.len_values = lens;
        rnn_data d;
        data_make(&c, 5, &d);
        float y[36], yh[12], yc[12];
        run(&c, &d, lens, false, y, yh, yc, NULL, 0);
        /* entry 1 alone, one step: x[0, 1, :] and h0[0, 1, :] */
        rnn_case one = c;
        one.T = one.N = 1;
        one.lens = 0;
        rnn_data d1 = d;
        float x1[2] = {d.x[2], d.x[3]}, h1[4];
        memcpy(h1, d.h0 + 4, sizeof h1);
        d1.x = x1;
        d1.h0 = h1;
        d1.nx = 2;
        d1.ns = 4;
        float y1[4], yh1[4], yc1[4];
        run(&one, &d1, NULL, false, y1, yh1, yc1, NULL, 0);
        cr_assert(memcmp(y + 4, y1, sizeof y1) == 0, "dir %d: step 0 of entry 1", dir);
        cr_assert(memcmp(yh + 4, yh1, sizeof yh1) == 0, "dir %d: final state of entry 1", dir);
        for (int j = 0; j < 4; j++) {
            cr_assert(y[12 + 4 + j] == 0 && y[24 + 4 + j] == 0, "dir %d: entry 1 after its end",
                      dir);
            cr_assert(y[8 + j] == 0 && y[12 + 8 + j] == 0 && y[24 + 8 + j] == 0,
                      "dir %d: entry 2 (no steps)", dir);
            cr_assert(yh[8 + j] == d.h0[8 + j], "dir %d: entry 2 keeps its initial state", dir);
        }
        data_free(&d);
    }
}

/* Each builder rule, with the input or attribute it names. */
Test(rnn, builder_rules)
{
    struct {
        int rule;
        dqg_status st;
        const char *keys[3];
    } cases[] = {
        {0, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "hidden_size 0 is outside [1, 2^30]"}},
        {1, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "input 1 (w) has shape [1,16,3]", "[1,16,5]"}},
        {2, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "input 0 (x) has shape [3,5]", "rank 3"}},
        {3, DQG_INVALID_ARGUMENT, {"GRU 'l'", "input 6 (initial_c) is given", "only LSTM"}},
        {4, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "input 4 (sequence_lens) holds 9 at 1", "[0, 2]"}},
        {5, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "activation[0][1] is 99"}},
        {6, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "linear_before_reset", "only GRU"}},
        {7, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "clip is -1"}},
        {8, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "input 5 (initial_h) has shape [1,3,4]", "[3,1,4]"}},
        {9, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "input 2 (r) is f16", "x's type, f32"}},
        {10, DQG_INVALID_ARGUMENT, {"LSTM 'l'", "activation[0][0] (LeakyRelu)", "must be finite"}},
        {11, DQG_INVALID_ARGUMENT, {"RNN 'l'", "cell 7 is not one of dqg_rnn_cell"}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int rule = cases[k].rule;
        dqg_rnn_attrs a = {.cell = DQG_RNN_CELL_LSTM, .hidden_size = 4};
        int64_t xd[3] = {2, 3, 5}, wd[3] = {1, 16, 5}, rd[3] = {1, 16, 4}, sd[3] = {1, 3, 4};
        if (rule == 0)
            a.hidden_size = 0;
        if (rule == 1)
            wd[2] = 3;
        if (rule == 3 || rule == 6) {
            a.cell = rule == 3 ? DQG_RNN_CELL_GRU : DQG_RNN_CELL_LSTM;
            a.linear_before_reset = rule == 6;
            wd[1] = rd[1] = rule == 3 ? 12 : 16;
        }
        if (rule == 5)
            a.activation[0][1] = (dqg_rnn_activation)99;
        if (rule == 7)
            a.clip = -1;
        if (rule == 8) {
            a.batch_first = true;
            xd[0] = 3;
            xd[1] = 2;
        }
        if (rule == 10) {
            a.activation[0][0] = DQG_RNN_ACT_LEAKY_RELU;
            a.alpha[0][0] = NAN;
        }
        if (rule == 11)
            a.cell = (dqg_rnn_cell)7;
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, rule == 2 ? 2 : 3, rule == 2 ? xd + 1 : xd);
        dqg_tensor_id w = dqg_input(g, "w", DQG_F32, 3, wd);
        dqg_tensor_id r = dqg_input(g, "r", rule == 9 ? DQG_F16 : DQG_F32, 3, rd);
        dqg_tensor_id c0 = rule == 3 ? dqg_input(g, "c0", DQG_F32, 3, sd) : DQG_NONE;
        dqg_tensor_id h0 = rule == 8 ? dqg_input(g, "h0", DQG_F32, 3, sd) : DQG_NONE;
        dqg_tensor_id lens = DQG_NONE;
        if (rule == 4) {
            int32_t l[3] = {2, 9, 1};
            int64_t n = 3;
            lens = dqg_constant(g, "lens", DQG_S32, 1, &n, l, sizeof l);
        }
        dqg_tensor_id yh = 5, yc = 5;
        cr_assert_eq(dqg_rnn(g, "l", &a, x, w, r, DQG_NONE, lens, h0, c0, DQG_NONE, &yh, &yc),
                     DQG_NONE, "rule %d built", rule);
        cr_assert(yh == DQG_NONE && yc == DQG_NONE);
        expect_error(dqg_graph_finalize(g), cases[k].st, cases[k].keys[0],
                     cases[k].keys[1] ? cases[k].keys[1] : cases[k].keys[0],
                     cases[k].keys[2] ? cases[k].keys[2] : cases[k].keys[0]);
        dqg_graph_destroy(g);
    }
}

/* ---- ONNX ------------------------------------------------------------------- */

/* An LSTM node of opset `opset` over x [2, 1, 3], hidden 2, bidirectional,
 * with the given activations, alpha and beta lists (n names, na and nb
 * values); w, r and b as initializers. */
static tm_model *lstm_model(int64_t opset, const char *const *acts, size_t n, const float *alpha,
                            size_t na, const float *beta, size_t nb, Onnx__NodeProto **node)
{
    static float w[2 * 8 * 3], r[2 * 8 * 2], b[2 * 16];
    for (int i = 0; i < 48; i++)
        w[i] = 0.05f * (float)((i * 7) % 11) - 0.25f;
    for (int i = 0; i < 32; i++)
        r[i] = 0.04f * (float)((i * 5) % 9) - 0.16f;
    for (int i = 0; i < 32; i++)
        b[i] = 0.03f * (float)(i % 5) - 0.06f;
    int64_t xd[] = {2, 1, 3}, wd[] = {2, 8, 3}, rd[] = {2, 8, 2}, bd[] = {2, 16};
    int64_t yd[] = {2, 2, 1, 2}, hd[] = {2, 1, 2};
    tm_model *m = tm_new(opset);
    tm_input(m, "x", 1 /* FLOAT */, 3, xd, NULL);
    tm_init(m, "w", 1, 3, wd, w, sizeof w);
    tm_init(m, "r", 1, 3, rd, r, sizeof r);
    tm_init(m, "b", 1, 2, bd, b, sizeof b);
    Onnx__NodeProto *nd = tm_node(m, "LSTM", NULL, "lstm", "x,w,r,b", "y,yh,yc");
    tm_attr_string(m, nd, "direction", "bidirectional");
    tm_attr_int(m, nd, "hidden_size", 2);
    if (n)
        tm_attr_strings(m, nd, "activations", acts, n);
    if (na)
        tm_attr_floats(m, nd, "activation_alpha", alpha, na);
    if (nb)
        tm_attr_floats(m, nd, "activation_beta", beta, nb);
    tm_output(m, "y", 1, 4, yd);
    tm_output(m, "yh", 1, 3, hd);
    tm_output(m, "yc", 1, 3, hd);
    if (node)
        *node = nd;
    return m;
}

static void run_model(dqg_graph *g, const float *x, float *y, float *yh, float *yc)
{
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = 6 * 4};
    dqg_buffer out[3] = {{.name = "y", .data = y, .size = 8 * 4},
                         {.name = "yh", .data = yh, .size = 4 * 4},
                         {.name = "yc", .data = yc, .size = 4 * 4}};
    cr_assert_eq(dqg_reference_run(g, &in, 1, out, 3), DQG_OK, "%s", dqg_last_error());
}

/* activation_alpha and activation_beta go, in order, to the functions that
 * take them; a function past the list's end keeps its operator's default.
 * The imported layer computes what the builder's does with those values. */
Test(rnn, onnx_activations_take_alpha_and_beta_in_order)
{
    const char *acts[] = {"HardSigmoid", "Tanh", "Tanh", "Sigmoid", "ScaledTanh", "LeakyRelu"};
    const float alpha[] = {0.3f, 0.7f}, beta[] = {0.6f, 0.9f};
    tm_model *m = lstm_model(14, acts, 6, alpha, 2, beta, 2, NULL);
    dqg_graph *g;
    cr_assert_eq(tm_load(m, NULL, &g), DQG_OK, "%s", dqg_last_error());
    const float x[6] = {0.5f, -1.0f, 0.25f, 1.5f, 0.1f, -0.7f};
    float y[8], yh[4], yc[4];
    run_model(g, x, y, yh, yc);
    dqg_graph_destroy(g);
    /* the same layer through the builder */
    dqg_rnn_attrs a = {
        .cell = DQG_RNN_CELL_LSTM, .direction = DQG_RNN_BIDIRECTIONAL, .hidden_size = 2};
    const dqg_rnn_activation f[2][3] = {
        {DQG_RNN_ACT_HARD_SIGMOID, DQG_RNN_ACT_TANH, DQG_RNN_ACT_TANH},
        {DQG_RNN_ACT_SIGMOID, DQG_RNN_ACT_SCALED_TANH, DQG_RNN_ACT_LEAKY_RELU}};
    memcpy(a.activation, f, sizeof f);
    a.alpha[0][0] = 0.3f;
    a.beta[0][0] = 0.6f;
    a.alpha[1][1] = 0.7f;
    a.beta[1][1] = 0.9f;
    a.alpha[1][2] = 0.01f; /* LeakyRelu's default: the list ran out */
    Onnx__GraphProto *gp = tm_graph(m);
    const void *wv = gp->initializer[0]->raw_data.data, *rv = gp->initializer[1]->raw_data.data;
    const void *bv = gp->initializer[2]->raw_data.data;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {2, 1, 3}, wd[] = {2, 8, 3}, rd[] = {2, 8, 2}, bd[] = {2, 16};
    dqg_tensor_id yh_id, yc_id;
    dqg_tensor_id yy =
        dqg_rnn(g, "l", &a, dqg_input(g, "x", DQG_F32, 3, xd), test_const_f32(g, 3, wd, wv),
                test_const_f32(g, 3, rd, rv), test_const_f32(g, 2, bd, bv), DQG_NONE, DQG_NONE,
                DQG_NONE, DQG_NONE, &yh_id, &yc_id);
    dqg_output(g, yy, "y");
    dqg_output(g, yh_id, "yh");
    dqg_output(g, yc_id, "yc");
    finalize_ok(g);
    float y2[8], yh2[4], yc2[4];
    run_model(g, x, y2, yh2, yc2);
    cr_assert(memcmp(y, y2, sizeof y) == 0 && memcmp(yh, yh2, sizeof yh) == 0 &&
              memcmp(yc, yc2, sizeof yc) == 0);
    dqg_graph_destroy(g);
    tm_free(m);
}

/* The importer's rules, each naming the node and the attribute. */
Test(rnn, onnx_attribute_rules)
{
    const char *two[] = {"Sigmoid", "Tanh"},
               *bad[] = {"Sigmoid", "Tanh", "Gelu", "Sigmoid", "Tanh", "Tanh"};
    dqg_graph *g = NULL;
    tm_model *m = lstm_model(14, two, 2, NULL, 0, NULL, 0, NULL);
    expect_error(tm_load(m, NULL, &g), DQG_INVALID_ARGUMENT, "'lstm'", "lists 2 functions",
                 "3 per direction, 6 in all");
    tm_free(m);
    m = lstm_model(14, bad, 6, NULL, 0, NULL, 0, NULL);
    expect_error(tm_load(m, NULL, &g), DQG_UNSUPPORTED, "'lstm'", "activation 2 ('Gelu')");
    tm_free(m);
    Onnx__NodeProto *nd;
    m = lstm_model(14, NULL, 0, NULL, 0, NULL, 0, &nd);
    tm_attr_int(m, nd, "input_forget", 1);
    expect_error(tm_load(m, NULL, &g), DQG_UNSUPPORTED, "'lstm'", "input_forget");
    tm_free(m);
    m = lstm_model(13, NULL, 0, NULL, 0, NULL, 0, &nd);
    tm_attr_int(m, nd, "layout", 1);
    expect_error(tm_load(m, NULL, &g), DQG_INVALID_ARGUMENT, "'lstm'", "'layout'", "opset 14");
    tm_free(m);
    m = lstm_model(14, NULL, 0, NULL, 0, NULL, 0, &nd);
    tm_attr_float(m, nd, "clip", 0.0f);
    expect_error(tm_load(m, NULL, &g), DQG_INVALID_ARGUMENT, "'lstm'", "'clip' is 0");
    tm_free(m);
    cr_assert_null(g);
    /* direction "forward" spelled otherwise */
    m = tm_new(14);
    int64_t xd[] = {2, 1, 3};
    tm_input(m, "x", 1, 3, xd, NULL);
    tm_input(m, "w", 1, 3, (int64_t[]){1, 3, 3}, NULL);
    tm_input(m, "r", 1, 3, (int64_t[]){1, 3, 3}, NULL);
    nd = tm_node(m, "RNN", NULL, "rnn", "x,w,r", "y");
    tm_attr_string(m, nd, "direction", "Forward");
    tm_attr_int(m, nd, "hidden_size", 3);
    tm_output(m, "y", 1, 4, (int64_t[]){2, 1, 1, 3});
    expect_error(tm_load(m, NULL, &g), DQG_INVALID_ARGUMENT, "'rnn'", "'direction' is 'Forward'");
    tm_free(m);
}

/* ONNX Runtime's DynamicQuantizeLSTM (int8 W per direction, uint8 R per
 * column, both [D, K, 4H]) is the LSTM of its dequantized, transposed
 * weights: the same results as that LSTM built directly, on the
 * reference; compiled, the weights fold and the layer runs on oneDNN. */
Test(rnn, onnx_dynamic_quantize_lstm_is_the_lstm_of_its_weights)
{
    enum { D = 2, I = 3, H = 2, G4 = 8, T = 2, N = 1 };
    int8_t w[D * I * G4];
    uint8_t r[D * H * G4], rz[D * G4];
    float ws[D] = {0.02f, 0.03f}, rs[D * G4];
    int8_t wz[D] = {3, -2};
    for (int i = 0; i < D * I * G4; i++)
        w[i] = (int8_t)((i * 37) % 255 - 127);
    for (int i = 0; i < D * H * G4; i++)
        r[i] = (uint8_t)((i * 53) % 256);
    for (int i = 0; i < D * G4; i++) {
        rz[i] = (uint8_t)(120 + i % 7);
        rs[i] = 0.004f + 0.001f * (float)(i % 5);
    }
    tm_model *m = tm_new(14);
    tm_opset(m, "com.microsoft", 1);
    int64_t xd[] = {T, N, I}, wd[] = {D, I, G4}, rd[] = {D, H, G4}, dd[] = {D}, cd[] = {D, G4};
    tm_input(m, "x", 1, 3, xd, NULL);
    tm_init(m, "w", 3 /* INT8 */, 3, wd, w, sizeof w);
    tm_init(m, "r", 2 /* UINT8 */, 3, rd, r, sizeof r);
    tm_init(m, "ws", 1, 1, dd, ws, sizeof ws);
    tm_init(m, "wz", 3, 1, dd, wz, sizeof wz);
    tm_init(m, "rs", 1, 2, cd, rs, sizeof rs);
    tm_init(m, "rz", 2, 2, cd, rz, sizeof rz);
    Onnx__NodeProto *nd = tm_node(m, "DynamicQuantizeLSTM", "com.microsoft", "dql",
                                  "x,w,r,,,,,,ws,wz,rs,rz", "y,yh,yc");
    tm_attr_string(m, nd, "direction", "bidirectional");
    tm_attr_int(m, nd, "hidden_size", H);
    tm_output(m, "y", 1, 4, (int64_t[]){T, D, N, H});
    tm_output(m, "yh", 1, 3, (int64_t[]){D, N, H});
    tm_output(m, "yc", 1, 3, (int64_t[]){D, N, H});
    dqg_graph *g;
    cr_assert_eq(tm_load(m, NULL, &g), DQG_OK, "%s", dqg_last_error());
    const float x[T * N * I] = {0.5f, -1.0f, 0.25f, 1.5f, 0.1f, -0.7f};
    float y[8], yh[4], yc[4];
    run_model(g, x, y, yh, yc);
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *cc;
    cr_assert_eq(dqg_compile(g, &o, &cc), DQG_OK, "%s", dqg_last_error());
    bool onednn = false;
    for (size_t i = 0; i < dqg_compiled_partition_count(cc); i++)
        onednn |= strstr(dqg_compiled_partition_info(cc, i), "onednn:LSTM") != NULL;
    cr_assert(onednn, "%s", dqg_compiled_partition_info(cc, 0));
    float yc2[4], yh2[4], y2[8];
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = sizeof x};
    dqg_buffer out[3] = {{.name = "y", .data = y2, .size = sizeof y2},
                         {.name = "yh", .data = yh2, .size = sizeof yh2},
                         {.name = "yc", .data = yc2, .size = sizeof yc2}};
    cr_assert_eq(dqg_execute(cc, &in, 1, out, 3), DQG_OK, "%s", dqg_last_error());
    double mag = 0;
    cr_assert(max_diff(y, y2, 8, &mag) <= 1e-5 * mag);
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(g);

    /* the LSTM of the dequantized weights, [D, 4H, K] */
    float wf[D * G4 * I], rf[D * G4 * H];
    for (int d = 0; d < D; d++)
        for (int j = 0; j < G4; j++) {
            for (int k = 0; k < I; k++)
                wf[(d * G4 + j) * I + k] = (float)(w[(d * I + k) * G4 + j] - wz[d]) * ws[d];
            for (int k = 0; k < H; k++)
                rf[(d * G4 + j) * H + k] =
                    (float)(r[(d * H + k) * G4 + j] - rz[d * G4 + j]) * rs[d * G4 + j];
        }
    dqg_rnn_attrs a = {
        .cell = DQG_RNN_CELL_LSTM, .direction = DQG_RNN_BIDIRECTIONAL, .hidden_size = H};
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id yh_id, yc_id;
    dqg_tensor_id yy = dqg_rnn(g, "l", &a, dqg_input(g, "x", DQG_F32, 3, xd),
                               test_const_f32(g, 3, (int64_t[]){D, G4, I}, wf),
                               test_const_f32(g, 3, (int64_t[]){D, G4, H}, rf), DQG_NONE, DQG_NONE,
                               DQG_NONE, DQG_NONE, DQG_NONE, &yh_id, &yc_id);
    dqg_output(g, yy, "y");
    dqg_output(g, yh_id, "yh");
    dqg_output(g, yc_id, "yc");
    finalize_ok(g);
    run_model(g, x, y2, yh2, yc2);
    cr_assert(memcmp(y, y2, sizeof y) == 0 && memcmp(yh, yh2, sizeof yh) == 0 &&
              memcmp(yc, yc2, sizeof yc) == 0);
    dqg_graph_destroy(g);

    /* a scale of neither shape */
    Onnx__GraphProto *gp = tm_graph(m);
    gp->initializer[4]->dims[1] = 4; /* rs [D, 4]: not 4H columns */
    gp->initializer[4]->raw_data.len = D * 4 * sizeof(float);
    g = NULL;
    expect_error(tm_load(m, NULL, &g), DQG_INVALID_ARGUMENT, "'dql'", "input 10 (R_scale)",
                 "[2] or [2, 8]");
    tm_free(m);
}
