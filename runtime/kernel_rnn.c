/* RNN, GRU and LSTM layers on oneDNN's RNN primitives (f32), one
 * primitive per direction: the ONNX weights repacked into oneDNN's gate
 * order (LSTM i, f, c, o from ONNX's i, o, f, c; GRU and RNN keep theirs),
 * then into the layout the primitive chose, once (or per call when they
 * are given at run time); both biases summed (a linear-before-reset GRU
 * keeps Rb_h apart, as its fourth bias). Each direction writes its half
 * of Y in place through strides; a bidirectional layer runs its two
 * directions at once, one thread each, when it has two threads (on a
 * single sequence the recurrence is a matrix-vector product per step,
 * which one thread per direction streams without a barrier per step).
 * States go through scratch where ONNX's batch-first layout interleaves
 * the directions. What the primitives do not compute (clip, other
 * functions, sequences of different lengths, f16/bf16) runs on the
 * reference. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_exec.h"
#include "runtime/onednn_pack.h"

enum {
    A_SRC,
    A_SRC_ITER,
    A_SRC_ITER_C,
    A_WL,
    A_WI,
    A_PEEP,
    A_BIAS,
    A_DST,
    A_DST_ITER,
    A_DST_ITER_C,
    A_N
};

/* Where one of the primitives' activations comes from or goes: the whole
 * tensor (both directions). */
typedef struct rnn_io {
    int arg;       /* the kernel's argument, or -1 (a constant, or absent) */
    void *data;    /* owned: a constant's copy or zeros, when arg < 0 */
    size_t offset; /* > 0: in scratch (a result nothing reads, or states
                    * swapped between [N, D, H] and [D, N, H]) */
} rnn_io;

typedef struct rnn_kernel {
    dqg_kernel base;
    int runs; /* primitives: one per direction */
    dqg_dnnl_prim prim[2];
    int n_prim;           /* a primitive's arguments, in the order of kinds */
    int slot[A_N];        /* per A_*: its position among them, or -1 */
    void *packed[2][A_N]; /* per direction: weights, bias and peepholes, packed */
    rnn_io io[A_N];       /* the activations */
    int64_t T, N, D, H, I;
    dqg_rnn_cell cell;
    bool lbr, batch_first;
    /* Weights, biases or peepholes given at run time: all four are
     * repacked per execution into scratch (the primitives then take plain
     * ldigo weights); param_arg per w, r, b, p: the argument, or -1 with
     * param_data the constant (or NULL when absent). */
    bool run_time_params;
    int param_arg[4];
    void *param_data[4];       /* owned copies */
    size_t param_offset[2][4]; /* in scratch, per direction */
    size_t pad_offset[2];      /* the primitives' scratchpads */
    /* sequence_lens given at run time: a call whose lengths are not all T
     * runs on the reference kernel. */
    int lens_arg;
    dqg_kernel *fallback;
} rnn_kernel;

/* [a, b, H] <-> [b, a, H]: swaps the two outer axes of a block of H-vectors. */
static void swap_outer(const float *src, float *dst, int64_t a, int64_t b, int64_t H)
{
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < b; j++)
            memcpy(dst + (j * a + i) * H, src + (i * b + j) * H, (size_t)H * sizeof *dst);
}

/* ONNX gate of oneDNN gate g. */
static int onnx_gate(dqg_rnn_cell cell, int g)
{
    static const int lstm[4] = {0, 2, 3, 1}; /* i, f, c, o <- i, o, f, c */
    return cell == DQG_RNN_CELL_LSTM ? lstm[g] : g;
}

/* W [D, G*H, K] (ONNX) into o, ldigo [1, D, K, G, H] in oneDNN's gate order. */
static void repack_weights(const float *w, float *o, dqg_rnn_cell cell, int64_t D, int64_t G,
                           int64_t H, int64_t K)
{
    for (int64_t d = 0; d < D; d++)
        for (int64_t g = 0; g < G; g++) {
            const float *src = w + (d * G + onnx_gate(cell, (int)g)) * H * K;
            for (int64_t j = 0; j < H; j++)
                for (int64_t k = 0; k < K; k++)
                    o[((d * K + k) * G + g) * H + j] = src[j * K + k];
        }
}

/* B [D, 2*G*H] (ONNX; NULL: zeros) into bias, ldgo [1, D, G (+1), H]: Wb +
 * Rb per gate, a linear-before-reset GRU's Rb_h apart as the fourth. */
static void fill_bias(const float *B, float *bias, dqg_rnn_cell cell, bool lbr, int64_t D,
                      int64_t G, int64_t H)
{
    int64_t nb = G + (lbr ? 1 : 0);
    memset(bias, 0, (size_t)(D * nb * H) * sizeof *bias);
    for (int64_t dd = 0; B && dd < D; dd++)
        for (int64_t gg = 0; gg < G; gg++) {
            const float *wb = B + dd * 2 * G * H + onnx_gate(cell, (int)gg) * H;
            const float *rb = wb + G * H;
            float *o = bias + (dd * nb + gg) * H;
            for (int64_t j = 0; j < H; j++)
                o[j] = lbr && gg == 2 ? wb[j] : wb[j] + rb[j];
            if (lbr && gg == 2)
                memcpy(o + H, rb, (size_t)H * sizeof *o);
        }
}

/* P [D, 3*H] (ONNX i, o, f) into p (oneDNN i, f, o). */
static void fill_peepholes(const float *P, float *p, int64_t D, int64_t H)
{
    static const int from[3] = {0, 2, 1};
    for (int64_t dd = 0; dd < D; dd++)
        for (int gg = 0; gg < 3; gg++)
            memcpy(p + (dd * 3 + gg) * H, P + (dd * 3 + from[gg]) * H, (size_t)H * sizeof *p);
}

/* Runs direction r's primitive; base[a] is activation a's whole tensor. */
static dqg_status run_direction(rnn_kernel *m, int r, void *const *args, char *s, void *const *base)
{
    void *h[A_N];
    const int64_t G = dqg_rnn_gates(m->cell), H = m->H, NH = m->N * H;
    if (m->run_time_params) {
        const float *p[4];
        for (int i = 0; i < 4; i++)
            p[i] = m->param_arg[i] >= 0 ? args[m->param_arg[i]] : m->param_data[i];
        const size_t *o = m->param_offset[r];
        repack_weights(p[0] + r * G * H * m->I, (float *)(s + o[0]), m->cell, 1, G, H, m->I);
        repack_weights(p[1] + r * G * H * H, (float *)(s + o[1]), m->cell, 1, G, H, H);
        fill_bias(p[2] ? p[2] + r * 2 * G * H : NULL, (float *)(s + o[2]), m->cell, m->lbr, 1, G,
                  H);
        h[m->slot[A_WL]] = s + o[0];
        h[m->slot[A_WI]] = s + o[1];
        h[m->slot[A_BIAS]] = s + o[2];
        if (m->slot[A_PEEP] >= 0) {
            fill_peepholes(p[3] + r * 3 * H, (float *)(s + o[3]), 1, H);
            h[m->slot[A_PEEP]] = s + o[3];
        }
    } else {
        h[m->slot[A_WL]] = m->packed[r][A_WL];
        h[m->slot[A_WI]] = m->packed[r][A_WI];
        h[m->slot[A_BIAS]] = m->packed[r][A_BIAS];
        if (m->slot[A_PEEP] >= 0)
            h[m->slot[A_PEEP]] = m->packed[r][A_PEEP];
    }
    h[m->slot[A_SRC]] = base[A_SRC];
    /* Y: direction r's half, [T, D, N, H] at r N H or [N, T, D, H] at r H */
    h[m->slot[A_DST]] = (float *)base[A_DST] + r * (m->batch_first ? H : NH);
    static const int states[] = {A_SRC_ITER, A_SRC_ITER_C, A_DST_ITER, A_DST_ITER_C};
    for (int i = 0; i < 4; i++)
        if (m->slot[states[i]] >= 0)
            h[m->slot[states[i]]] = (float *)base[states[i]] + r * NH; /* [D, N, H] */
    return dqg_dnnl_prim_execute(&m->prim[r], h, s + m->pad_offset[r], m->base.impl);
}

static dqg_status rnn_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    rnn_kernel *m = (rnn_kernel *)k;
    char *s = scratch;
    if (m->fallback) {
        const int32_t *lens = args[m->lens_arg];
        for (int64_t n = 0; n < m->N; n++)
            if (lens[n] != m->T)
                return m->fallback->execute(m->fallback, args, scratch);
    }
    void *base[A_N] = {0};
    for (int a = 0; a < A_N; a++) {
        if (m->slot[a] < 0 || a == A_WL || a == A_WI || a == A_BIAS || a == A_PEEP)
            continue;
        const rnn_io *io = &m->io[a];
        void *p = io->arg >= 0 ? args[io->arg] : io->data;
        if (io->offset) {
            /* initial states given [N, D, H], read [D, N, H] */
            if ((a == A_SRC_ITER || a == A_SRC_ITER_C) && p)
                swap_outer(p, (float *)(s + io->offset), m->N, m->D, m->H);
            p = s + io->offset;
        }
        base[a] = p;
    }
    dqg_status st[2] = {DQG_OK, DQG_OK};
    if (m->runs == 2 && omp_get_max_threads() >= 2 && !omp_in_parallel()) {
        /* one thread per direction (oneDNN runs each on the thread that
         * calls it); a failure's message is the worker's, passed on */
        char msg[2][256] = {"", ""};
#pragma omp parallel num_threads(2)
        for (int r = omp_get_thread_num(); r < 2; r += omp_get_num_threads())
            if ((st[r] = run_direction(m, r, args, s, base)) != DQG_OK)
                snprintf(msg[r], sizeof msg[r], "%s", dqg_last_error());
        for (int r = 0; r < 2; r++)
            if (st[r] != DQG_OK)
                return dqg_set_error(st[r], "%s", msg[r]);
    } else {
        for (int r = 0; r < m->runs; r++)
            if ((st[0] = run_direction(m, r, args, s, base)) != DQG_OK)
                return st[0];
    }
    for (int a = A_DST_ITER; a < A_N; a++) {
        const rnn_io *io = &m->io[a];
        if (m->slot[a] >= 0 && io->offset && io->arg >= 0) /* [D, N, H] -> [N, D, H] */
            swap_outer((const float *)(s + io->offset), args[io->arg], m->D, m->N, m->H);
    }
    return DQG_OK;
}

static void rnn_destroy(dqg_kernel *k)
{
    rnn_kernel *m = (rnn_kernel *)k;
    for (int r = 0; r < 2; r++) {
        dqg_dnnl_prim_destroy(&m->prim[r]);
        for (int a = 0; a < A_N; a++)
            free(m->packed[r][a]);
    }
    for (int a = 0; a < A_N; a++)
        free(m->io[a].data);
    for (int i = 0; i < 4; i++)
        free(m->param_data[i]);
    if (m->fallback)
        m->fallback->destroy(m->fallback);
    free(m);
}

/* Why the primitives cannot compute op, or NULL. */
static const char *not_onednn(const dqg_graph *g, const dqg_op *op)
{
    const dqg_rnn_attrs *a = &op->attrs.rnn;
    if (g->tensors[op->inputs[0]].dtype != DQG_F32)
        return "not f32";
    for (int i = 0; i < op->n_inputs + op->n_outputs; i++) {
        dqg_tensor_id t = i < op->n_inputs ? op->inputs[i] : op->outputs[i - op->n_inputs];
        if (t != DQG_NONE && g->tensors[t].channels_last)
            return "a channels-last operand";
    }
    if (a->clip > 0)
        return "clip";
    if (op->inputs[4] != DQG_NONE && g->tensors[op->inputs[4]].kind == DQG_TENSOR_CONSTANT) {
        const dqg_tensor *s = &g->tensors[op->inputs[4]];
        const dqg_tensor *x = &g->tensors[op->inputs[0]];
        int64_t T = x->dims[a->batch_first ? 1 : 0];
        for (int64_t n = 0; n < s->nelems; n++)
            if (((const int32_t *)s->data)[n] != T)
                return "sequences of different lengths";
    }
    int D = a->direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    for (int d = 0; d < D; d++) {
        const dqg_rnn_activation *f = a->activation[d];
        bool ok;
        if (a->cell == DQG_RNN_CELL_LSTM)
            ok =
                f[0] == DQG_RNN_ACT_SIGMOID && f[1] == DQG_RNN_ACT_TANH && f[2] == DQG_RNN_ACT_TANH;
        else if (a->cell == DQG_RNN_CELL_GRU)
            ok = f[0] == DQG_RNN_ACT_SIGMOID && f[1] == DQG_RNN_ACT_TANH;
        else
            ok = (f[0] == DQG_RNN_ACT_TANH || f[0] == DQG_RNN_ACT_SIGMOID ||
                  f[0] == DQG_RNN_ACT_RELU || f[0] == DQG_RNN_ACT_LEAKY_RELU) &&
                 f[0] == a->activation[0][0] && a->alpha[d][0] == a->alpha[0][0];
        if (!ok)
            return "functions other than the primitive's";
    }
    return NULL;
}

static dqg_status oom(rnn_kernel *m)
{
    return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", m->base.impl);
}

/* Creates direction r's primitive (weights in `wtag`) and records its
 * arguments; *wl and *wi receive the weights' layouts it chose. */
static dqg_status make_prim(rnn_kernel *m, const dqg_rnn_attrs *a, int r, bool peepholes,
                            dnnl_format_tag_t wtag, dnnl_memory_desc_t *wl, dnnl_memory_desc_t *wi)
{
    const bool lstm = a->cell == DQG_RNN_CELL_LSTM, bf = m->batch_first;
    const int64_t T = m->T, N = m->N, I = m->I, H = m->H, D = m->D, G = dqg_rnn_gates(a->cell);
    dnnl_memory_desc_t md[A_N];
    memset(md, 0, sizeof md);
    /* the sequence: tnc, or ntc batch first; Y: one direction's half */
    dnnl_dims_t xd = {T, N, I}, yd = {T, N, H};
    dnnl_dims_t xs = {bf ? I : N * I, bf ? T * I : I, 1};
    dnnl_dims_t ys = {bf ? D * H : D * N * H, bf ? T * D * H : H, 1};
    dnnl_dims_t sd = {1, 1, N, H}, wld = {1, 1, I, G, H}, wid = {1, 1, H, G, H};
    dnnl_dims_t bd = {1, 1, G + (m->lbr ? 1 : 0), H}, pd3 = {1, 1, 3, H};
    dnnl_status_t s;
    if ((s = dnnl_memory_desc_init_by_strides(&md[A_SRC], 3, xd, dnnl_f32, xs)) != dnnl_success ||
        (s = dnnl_memory_desc_init_by_strides(&md[A_DST], 3, yd, dnnl_f32, ys)) != dnnl_success ||
        (s = dnnl_memory_desc_init_by_tag(&md[A_SRC_ITER], 4, sd, dnnl_f32, dnnl_ldnc)) !=
            dnnl_success ||
        (s = dnnl_memory_desc_init_by_tag(&md[A_WL], 5, wld, dnnl_f32, wtag)) != dnnl_success ||
        (s = dnnl_memory_desc_init_by_tag(&md[A_WI], 5, wid, dnnl_f32, wtag)) != dnnl_success ||
        (s = dnnl_memory_desc_init_by_tag(&md[A_BIAS], 4, bd, dnnl_f32, dnnl_ldgo)) !=
            dnnl_success ||
        (peepholes && (s = dnnl_memory_desc_init_by_tag(&md[A_PEEP], 4, pd3, dnnl_f32,
                                                        dnnl_ldgo)) != dnnl_success))
        return dqg_dnnl_error(s, m->base.impl, "memory descriptor");
    md[A_DST_ITER] = md[A_SRC_ITER];
    if (lstm)
        md[A_SRC_ITER_C] = md[A_DST_ITER_C] = md[A_SRC_ITER];
    bool reverse = a->direction == DQG_RNN_REVERSE || r == 1;
    dnnl_rnn_direction_t dir =
        reverse ? dnnl_unidirectional_right2left : dnnl_unidirectional_left2right;
    dnnl_rnn_desc_t d;
    if (lstm) {
        s = dnnl_lstm_forward_desc_init_v3(&d, dnnl_forward_inference, dir, &md[A_SRC],
                                           &md[A_SRC_ITER], &md[A_SRC_ITER_C], &md[A_WL], &md[A_WI],
                                           peepholes ? &md[A_PEEP] : NULL, NULL, &md[A_BIAS],
                                           &md[A_DST], &md[A_DST_ITER], &md[A_DST_ITER_C], 0);
    } else if (a->cell == DQG_RNN_CELL_GRU) {
        s = (m->lbr ? dnnl_lbr_gru_forward_desc_init : dnnl_gru_forward_desc_init)(
            &d, dnnl_forward_inference, dir, &md[A_SRC], &md[A_SRC_ITER], &md[A_WL], &md[A_WI],
            &md[A_BIAS], &md[A_DST], &md[A_DST_ITER], 0);
    } else {
        dqg_rnn_activation f = a->activation[0][0];
        dnnl_alg_kind_t act = f == DQG_RNN_ACT_TANH      ? dnnl_eltwise_tanh
                              : f == DQG_RNN_ACT_SIGMOID ? dnnl_eltwise_logistic
                                                         : dnnl_eltwise_relu;
        s = dnnl_vanilla_rnn_forward_desc_init(
            &d, dnnl_forward_inference, act, dir, &md[A_SRC], &md[A_SRC_ITER], &md[A_WL], &md[A_WI],
            &md[A_BIAS], &md[A_DST], &md[A_DST_ITER], 0,
            f == DQG_RNN_ACT_LEAKY_RELU ? a->alpha[0][0] : 0.0f, 0.0f);
    }
    if (s != dnnl_success)
        return dqg_dnnl_error(s, m->base.impl, "descriptor");
    dnnl_primitive_desc_t pd = NULL;
    char impl[sizeof m->base.impl];
    snprintf(impl, sizeof impl, "%s", m->base.impl);
    dqg_status st = dqg_dnnl_pd_create(&pd, &d, NULL, impl, sizeof impl);
    if (st != DQG_OK)
        return st;
    if (r == 0)
        snprintf(m->base.impl, sizeof m->base.impl, "%s", impl);
    *wl = md[A_WL] =
        *dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_WEIGHTS_LAYER);
    *wi = md[A_WI] =
        *dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_WEIGHTS_ITER);
    static const int kinds_all[A_N] = {DNNL_ARG_SRC_LAYER,    DNNL_ARG_SRC_ITER,
                                       DNNL_ARG_SRC_ITER_C,   DNNL_ARG_WEIGHTS_LAYER,
                                       DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_WEIGHTS_PEEPHOLE,
                                       DNNL_ARG_BIAS,         DNNL_ARG_DST_LAYER,
                                       DNNL_ARG_DST_ITER,     DNNL_ARG_DST_ITER_C};
    int kinds[A_N], n = 0;
    dnnl_memory_desc_t mds[A_N];
    for (int i = 0; i < A_N; i++) {
        bool used =
            !((i == A_SRC_ITER_C || i == A_DST_ITER_C) && !lstm) && !(i == A_PEEP && !peepholes);
        if (!used)
            continue;
        m->slot[i] = n;
        kinds[n] = kinds_all[i];
        mds[n++] = md[i];
    }
    m->n_prim = n;
    st = dqg_dnnl_prim_init(&m->prim[r], pd, n, kinds, mds, m->base.impl);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

/* An activation: the kernel's argument for tensor t, or a copy of the
 * constant, or zeros of `bytes` when t is absent. */
static dqg_status bind_io(rnn_kernel *m, const dqg_graph *g, int a, dqg_tensor_id t, size_t bytes)
{
    rnn_io *io = &m->io[a];
    if (t != DQG_NONE)
        return dqg_kernel_operand(g, t, &io->arg, &io->data, &m->base.bytes) ? DQG_OK : oom(m);
    if (!(io->data = calloc(1, bytes)))
        return oom(m);
    m->base.bytes += bytes;
    return DQG_OK;
}

static size_t up64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

dqg_status dqg_kernel_rnn_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_rnn_attrs *a = &op->attrs.rnn;
    const char *why = not_onednn(g, op);
    if (why)
        return dqg_set_error(DQG_UNSUPPORTED, "%s %s", dqg_rnn_cell_name(a->cell), why);
    rnn_kernel *m = calloc(1, sizeof *m);
    if (!m)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
    m->base.execute = rnn_execute;
    m->base.destroy = rnn_destroy;
    for (int i = 0; i < A_N; i++)
        m->slot[i] = m->io[i].arg = -1;
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const bool lstm = a->cell == DQG_RNN_CELL_LSTM, bf = a->batch_first;
    const bool peep = lstm && op->inputs[7] != DQG_NONE;
    const int64_t T = x->dims[bf ? 1 : 0], N = x->dims[bf ? 0 : 1], I = x->dims[2];
    const int64_t H = a->hidden_size, G = dqg_rnn_gates(a->cell);
    const int64_t D = a->direction == DQG_RNN_BIDIRECTIONAL ? 2 : 1;
    m->runs = (int)D;
    m->T = T;
    m->N = N;
    m->D = D;
    m->H = H;
    m->I = I;
    m->cell = a->cell;
    m->lbr = a->linear_before_reset;
    m->batch_first = bf;
    for (int i = 0; i < 4; i++) {
        dqg_tensor_id t = op->inputs[i == 3 ? 7 : i + 1];
        m->param_arg[i] = t == DQG_NONE ? -1 : dqg_kernel_arg_index(g, t);
        m->run_time_params |= m->param_arg[i] >= 0;
    }
    snprintf(m->base.impl, sizeof m->base.impl, "onednn:%s", dqg_rnn_cell_name(a->cell));
    /* constant weights in the layout the primitive picks; run-time ones plain */
    dnnl_format_tag_t wtag = m->run_time_params ? dnnl_ldigo : dnnl_format_tag_any;
    dnnl_memory_desc_t wl[2], wi[2];
    dqg_status st = DQG_OK;
    for (int r = 0; r < m->runs && st == DQG_OK; r++)
        st = make_prim(m, a, r, peep, wtag, &wl[r], &wi[r]);
    if (st != DQG_OK)
        goto fail;
    if (D == 2) {
        size_t len = strlen(m->base.impl);
        snprintf(m->base.impl + len, sizeof m->base.impl - len, ":per-direction");
    }

    size_t off = 64;
    const int64_t nb = G + (m->lbr ? 1 : 0);
    const size_t param_bytes[4] = {
        (size_t)(I * G * H) * sizeof(float), (size_t)(H * G * H) * sizeof(float),
        (size_t)(nb * H) * sizeof(float), (size_t)(3 * H) * sizeof(float)};
    if (m->run_time_params) {
        /* Repacked per execution, from the arguments and constant copies. */
        for (int i = 0; i < 4; i++) {
            dqg_tensor_id t = op->inputs[i == 3 ? 7 : i + 1];
            if (t != DQG_NONE &&
                !dqg_kernel_operand(g, t, &m->param_arg[i], &m->param_data[i], &m->base.bytes)) {
                st = oom(m);
                goto fail;
            }
            for (int r = 0; r < m->runs; r++) {
                m->param_offset[r][i] = off;
                off += up64(param_bytes[i]);
            }
        }
    } else {
        /* Constant: repacked and packed once per direction. */
        const float *W = g->tensors[op->inputs[1]].data, *R = g->tensors[op->inputs[2]].data;
        const float *B = op->inputs[3] == DQG_NONE ? NULL : g->tensors[op->inputs[3]].data;
        float *wlp = malloc(param_bytes[0]), *wip = malloc(param_bytes[1]);
        int64_t wl_dims[5] = {1, 1, I, G, H}, wi_dims[5] = {1, 1, H, G, H};
        dnnl_memory_desc_t plain_wl, plain_wi;
        if (!wlp || !wip)
            st = oom(m);
        if (st == DQG_OK && (st = dqg_dnnl_md_dense(&plain_wl, 5, wl_dims, DQG_F32)) == DQG_OK)
            st = dqg_dnnl_md_dense(&plain_wi, 5, wi_dims, DQG_F32);
        for (int r = 0; r < m->runs && st == DQG_OK; r++) {
            size_t n = 0;
            repack_weights(W + r * G * H * I, wlp, a->cell, 1, G, H, I);
            repack_weights(R + r * G * H * H, wip, a->cell, 1, G, H, H);
            if ((st = dqg_dnnl_pack(&plain_wl, wlp, &wl[r], false, &m->packed[r][A_WL], &n,
                                    m->base.impl)) != DQG_OK)
                break;
            m->base.bytes += n;
            if ((st = dqg_dnnl_pack(&plain_wi, wip, &wi[r], false, &m->packed[r][A_WI], &n,
                                    m->base.impl)) != DQG_OK)
                break;
            m->base.bytes += n;
            if (!(m->packed[r][A_BIAS] = malloc(param_bytes[2])) ||
                (peep && !(m->packed[r][A_PEEP] = malloc(param_bytes[3])))) {
                st = oom(m);
                break;
            }
            fill_bias(B ? B + r * 2 * G * H : NULL, m->packed[r][A_BIAS], a->cell, m->lbr, 1, G, H);
            m->base.bytes += param_bytes[2];
            if (peep) {
                const float *P = g->tensors[op->inputs[7]].data;
                fill_peepholes(P + r * 3 * H, m->packed[r][A_PEEP], 1, H);
                m->base.bytes += param_bytes[3];
            }
        }
        free(wlp);
        free(wip);
        if (st != DQG_OK)
            goto fail;
    }

    /* Activations: in place, or in scratch. */
    const size_t state = (size_t)(D * N * H) * sizeof(float);
    const bool swap_states = bf && D > 1 && N > 1; /* [N, D, H] is not [D, N, H] */
    if ((st = bind_io(m, g, A_SRC, op->inputs[0], x->nbytes)) != DQG_OK ||
        (st = bind_io(m, g, A_SRC_ITER, op->inputs[5], state)) != DQG_OK ||
        (lstm && (st = bind_io(m, g, A_SRC_ITER_C, op->inputs[6], state)) != DQG_OK))
        goto fail;
    for (int i = 0; i < (lstm ? 3 : 2); i++) /* results nothing reads go to scratch */
        m->io[A_DST + i].arg = dqg_kernel_arg_index(g, op->outputs[i]);
    static const int staged[] = {A_SRC_ITER, A_SRC_ITER_C, A_DST_ITER, A_DST_ITER_C};
    for (int i = 0; i < 4; i++)
        if (m->slot[staged[i]] >= 0 &&
            (swap_states || (staged[i] >= A_DST && m->io[staged[i]].arg < 0))) {
            m->io[staged[i]].offset = off;
            off += up64(state);
        }
    if (m->io[A_DST].arg < 0) {
        m->io[A_DST].offset = off;
        off += up64((size_t)(T * N * D * H) * sizeof(float));
    }
    for (int r = 0; r < m->runs; r++) {
        m->pad_offset[r] = off;
        off += dqg_dnnl_scratchpad(&m->prim[r]);
    }
    m->base.scratch_size = off;
    m->lens_arg = op->inputs[4] == DQG_NONE ? -1 : dqg_kernel_arg_index(g, op->inputs[4]);
    if (m->lens_arg >= 0) {
        if ((st = dqg_kernel_reference_build(req, &m->fallback)) != DQG_OK)
            goto fail;
        if (m->fallback->scratch_size > m->base.scratch_size)
            m->base.scratch_size = m->fallback->scratch_size;
        m->base.bytes += m->fallback->bytes;
        snprintf(m->base.why, sizeof m->base.why,
                 "sequence_lens given at run time: a call with lengths other than %lld runs on "
                 "the reference",
                 (long long)T);
    }
    *out = &m->base;
    return DQG_OK;
fail:
    rnn_destroy(&m->base);
    return st;
}
