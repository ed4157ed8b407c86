/* Helpers shared by the libFuzzer targets in fuzz/ (header-only: every
 * target is one executable built from one fuzz_*.c file). */
#ifndef DQG_FUZZ_COMMON_H
#define DQG_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"

/* ---- Reading the fuzzer's bytes -------------------------------------------- */

/* Consumes the input front to back; past the end every read gives 0, or, for
 * fz_fill, bytes from a PRNG seeded by the whole input (deterministic). */
typedef struct fz_reader {
    const uint8_t *p;
    size_t n, i;
    uint64_t rng;
} fz_reader;

static inline void fz_init(fz_reader *r, const uint8_t *data, size_t size)
{
    r->p = data;
    r->n = size;
    r->i = 0;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ size;
    for (size_t k = 0; k < size; k++)
        h = (h ^ data[k]) * 0x100000001B3ull;
    r->rng = h | 1;
}

static inline uint64_t fz_rand(fz_reader *r)
{
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return r->rng;
}

static inline size_t fz_left(const fz_reader *r)
{
    return r->n - r->i;
}

static inline uint8_t fz_u8(fz_reader *r)
{
    return r->i < r->n ? r->p[r->i++] : 0;
}

static inline uint16_t fz_u16(fz_reader *r)
{
    uint16_t lo = fz_u8(r);
    return (uint16_t)(lo | (uint16_t)fz_u8(r) << 8);
}

static inline uint32_t fz_u32(fz_reader *r)
{
    uint32_t lo = fz_u16(r);
    return lo | (uint32_t)fz_u16(r) << 16;
}

static inline bool fz_bool(fz_reader *r)
{
    return fz_u8(r) & 1;
}

/* An integer in [0, n) (n >= 1). */
static inline int fz_range(fz_reader *r, int n)
{
    return n <= 1 ? 0 : (int)(fz_u8(r) % (unsigned)n);
}

/* Fills n bytes: the input's next bytes, then the PRNG. */
static inline void fz_fill(fz_reader *r, void *dst, size_t n)
{
    uint8_t *d = dst;
    size_t k = 0;
    for (; k < n && r->i < r->n; k++)
        d[k] = r->p[r->i++];
    for (; k < n; k++)
        d[k] = (uint8_t)(fz_rand(r) >> 24);
}

/* ---- Limits on what a fuzz input may make dqgraph compute ----------------- */

/* Bytes of every tensor of the graph together, and a rough count of the
 * arithmetic one run does (MatMul and Convolution: multiply-adds; the rest:
 * elements). Graphs above the caps are skipped: the point is finding bugs,
 * not timing out on legitimately large work. */
static inline bool fz_graph_within(const dqg_graph *g, size_t max_total_bytes, double max_work)
{
    size_t total = 0;
    size_t nt = dqg_graph_tensor_count(g);
    for (size_t t = 0; t < nt; t++) {
        size_t b = dqg_tensor_byte_size(g, (dqg_tensor_id)t);
        if (b > max_total_bytes || total + b > max_total_bytes)
            return false;
        total += b;
    }
    double work = 0;
    size_t nops = dqg_graph_op_count(g);
    for (size_t o = 0; o < nops; o++) {
        dqg_tensor_id y = dqg_graph_op_output(g, o, 0);
        double out = (double)dqg_tensor_element_count(g, y);
        dqg_op_kind k = dqg_graph_op_kind(g, o);
        if (k == DQG_OP_MATMUL) {
            int64_t d[DQG_MAX_RANK];
            int r = dqg_tensor_dims(g, dqg_graph_op_input(g, o, 0), d);
            int64_t kmax = 1;
            for (int i = r - 2 < 0 ? 0 : r - 2; i < r; i++)
                kmax = d[i] > kmax ? d[i] : kmax;
            work += out * (double)kmax;
        } else if (k == DQG_OP_CONVOLUTION) {
            dqg_tensor_id w = dqg_graph_op_input(g, o, 1);
            int64_t d[DQG_MAX_RANK];
            int r = dqg_tensor_dims(g, w, d);
            double per =
                r > 0 && d[0] > 0 ? (double)dqg_tensor_element_count(g, w) / (double)d[0] : 1.0;
            work += out * per;
        } else if (k == DQG_OP_RNN) {
            /* Y [.., H] times G (I + H) multiply-adds per element:
             * (|W| + |R|) / (D H), D the weights' first dimension */
            int64_t yd[DQG_MAX_RANK], wd[DQG_MAX_RANK];
            int ry = dqg_tensor_dims(g, y, yd);
            int rw = dqg_tensor_dims(g, dqg_graph_op_input(g, o, 1), wd);
            double wr = (double)dqg_tensor_element_count(g, dqg_graph_op_input(g, o, 1)) +
                        (double)dqg_tensor_element_count(g, dqg_graph_op_input(g, o, 2));
            double dh = ry > 0 && rw > 0 ? (double)yd[ry - 1] * (double)wd[0] : 1.0;
            work += out * (dh > 0 ? wr / dh : wr);
        } else {
            work += out;
        }
        if (work > max_work)
            return false;
    }
    return true;
}

/* ---- Running a finalized graph -------------------------------------------- */

typedef struct fz_buffers {
    dqg_buffer *in, *out;
    size_t n_in, n_out;
} fz_buffers;

static inline void fz_buffers_free(fz_buffers *b)
{
    for (size_t i = 0; i < b->n_in; i++)
        free(b->in[i].data);
    for (size_t i = 0; i < b->n_out; i++)
        free(b->out[i].data);
    free(b->in);
    free(b->out);
    memset(b, 0, sizeof *b);
}

/* Input buffers (zero-filled, or filled from r when r is not NULL) and
 * zeroed output buffers for every graph input and output, bound by id. */
static inline bool fz_buffers_make(const dqg_graph *g, fz_reader *r, fz_buffers *b)
{
    memset(b, 0, sizeof *b);
    b->n_in = dqg_graph_input_count(g);
    b->n_out = dqg_graph_output_count(g);
    b->in = calloc(b->n_in ? b->n_in : 1, sizeof *b->in);
    b->out = calloc(b->n_out ? b->n_out : 1, sizeof *b->out);
    if (!b->in || !b->out) {
        fz_buffers_free(b);
        return false;
    }
    for (size_t i = 0; i < b->n_in; i++) {
        dqg_tensor_id id = dqg_graph_input_id(g, i);
        size_t sz = dqg_tensor_byte_size(g, id);
        b->in[i] = (dqg_buffer){.id = id, .size = sz, .data = calloc(sz ? sz : 1, 1)};
        if (!b->in[i].data) {
            fz_buffers_free(b);
            return false;
        }
        if (r)
            fz_fill(r, b->in[i].data, sz);
    }
    for (size_t i = 0; i < b->n_out; i++) {
        dqg_tensor_id id = dqg_graph_output_id(g, i);
        size_t sz = dqg_tensor_byte_size(g, id);
        b->out[i] = (dqg_buffer){.id = id, .size = sz, .data = calloc(sz ? sz : 1, 1)};
        if (!b->out[i].data) {
            fz_buffers_free(b);
            return false;
        }
    }
    return true;
}

/* Fresh zeroed output buffers of the same sizes as `from`. */
static inline bool fz_outputs_like(const fz_buffers *from, dqg_buffer **out)
{
    *out = calloc(from->n_out ? from->n_out : 1, sizeof **out);
    if (!*out)
        return false;
    for (size_t i = 0; i < from->n_out; i++) {
        (*out)[i] = from->out[i];
        (*out)[i].data = calloc(from->out[i].size ? from->out[i].size : 1, 1);
        if (!(*out)[i].data) {
            for (size_t k = 0; k < i; k++)
                free((*out)[k].data);
            free(*out);
            *out = NULL;
            return false;
        }
    }
    return true;
}

static inline void fz_outputs_free(dqg_buffer *out, size_t n)
{
    if (!out)
        return;
    for (size_t i = 0; i < n; i++)
        free(out[i].data);
    free(out);
}

/* DQG_FUZZ_VERBOSE=1: print what each input did (for replaying one input). */
static inline bool fz_verbose(void)
{
    static int v = -1;
    if (v < 0)
        v = getenv("DQG_FUZZ_VERBOSE") != NULL;
    return v;
}

/* A failing call must say why. */
static inline void fz_require_message(const char *what, dqg_status st)
{
    if (st != DQG_OK && dqg_last_error()[0] == '\0') {
        fprintf(stderr, "fuzz: %s failed (%s) without an error message\n", what,
                dqg_status_name(st));
        __builtin_trap();
    }
    if (fz_verbose())
        fprintf(stderr, "fuzz: %s: %s%s%s\n", what, dqg_status_name(st), st ? ": " : "",
                st ? dqg_last_error() : "");
}

static inline FILE *fz_devnull(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    return f;
}

/* Compiles and executes g with `options`, then runs the reference
 * interpreter on the same inputs; introspection and dumps along the way.
 * Statuses only: results are not compared. */
static inline void fz_compile_and_run(const dqg_graph *g, const dqg_compile_options *options,
                                      fz_buffers *b)
{
    FILE *null = fz_devnull();
    if (null) {
        dqg_graph_dump(g, DQG_DUMP_TEXT, null);
        dqg_graph_dump(g, DQG_DUMP_DOT, null);
    }
    dqg_compiled *c = NULL;
    dqg_status st = dqg_compile(g, options, &c);
    fz_require_message("dqg_compile", st);
    if (st != DQG_OK && fz_verbose())
        dqg_graph_dump(g, DQG_DUMP_TEXT, stderr);
    if (st == DQG_OK) {
        for (size_t p = 0; p < dqg_compiled_partition_count(c); p++) {
            const char *info = dqg_compiled_partition_info(c, p);
            if (fz_verbose())
                fprintf(stderr, "fuzz:   partition %zu: %s\n", p, info);
        }
        for (size_t e = 0; e < dqg_compiled_explain_count(c); e++)
            (void)dqg_compiled_explain(c, e);
        (void)dqg_compiled_peak_memory(c);
        if (null) {
            dqg_compiled_dump(c, DQG_DUMP_TEXT, null);
            dqg_compiled_dump(c, DQG_DUMP_DOT, null);
        }
        st = dqg_execute(c, b->in, b->n_in, b->out, b->n_out);
        fz_require_message("dqg_execute", st);
        dqg_compiled_destroy(c);
    }
    dqg_buffer *ref = NULL;
    if (fz_outputs_like(b, &ref)) {
        st = dqg_reference_run(g, b->in, b->n_in, ref, b->n_out);
        fz_require_message("dqg_reference_run", st);
        fz_outputs_free(ref, b->n_out);
    }
}

#endif /* DQG_FUZZ_COMMON_H */
