/* dqg_execute: checks the caller's buffers, takes an execution context
 * (intermediate arena + kernel scratch) from the compiled object's pool, and
 * runs the partitions in order. After a context exists for each concurrent
 * caller, executions allocate nothing. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/onednn_exec.h"
#include "runtime/runtime_internal.h"

static dqg_exec_ctx *take_ctx(dqg_compiled *c)
{
    pthread_mutex_lock(&c->pool_lock);
    dqg_exec_ctx *x = c->pool;
    if (x)
        c->pool = x->next;
    pthread_mutex_unlock(&c->pool_lock);
    if (x)
        return x;
    x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    size_t bytes = c->plan->arena_bytes + c->plan->scratch_bytes;
    x->arena = aligned_alloc(64, bytes ? (bytes + 63) & ~(size_t)63 : 64);
    x->argv = calloc((size_t)c->plan->max_args + 1, sizeof *x->argv);
    if (!x->arena || !x->argv) {
        free(x->arena);
        free(x->argv);
        free(x);
        return NULL;
    }
    return x;
}

static void give_ctx(dqg_compiled *c, dqg_exec_ctx *x)
{
    pthread_mutex_lock(&c->pool_lock);
    x->next = c->pool;
    c->pool = x;
    pthread_mutex_unlock(&c->pool_lock);
}

static bool overlaps(const dqg_buffer *a, const dqg_buffer *b)
{
    uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
    return a0 < b0 + b->size && b0 < a0 + a->size;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

dqg_status dqg_execute(dqg_compiled *c, const dqg_buffer *inputs, size_t n_inputs,
                       dqg_buffer *outputs, size_t n_outputs)
{
    if (!c)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "execute: compiled graph is NULL");
    const dqg_plan *plan = c->plan;
    const dqg_graph *g = plan->passes.graph;
    /* Bindings in graph order; small graphs use the stack. */
    dqg_tensor_id in_ids_s[16], out_ids_s[16];
    dqg_tensor_id *in_ids = n_inputs <= 16 ? in_ids_s : malloc(n_inputs * sizeof *in_ids);
    dqg_tensor_id *out_ids = n_outputs <= 16 ? out_ids_s : malloc(n_outputs * sizeof *out_ids);
    void *in_ptr_s[16], *out_ptr_s[16];
    void **in_ptr = g->n_inputs <= 16 ? in_ptr_s : malloc((size_t)g->n_inputs * sizeof(void *));
    void **out_ptr = g->n_outputs <= 16 ? out_ptr_s : malloc((size_t)g->n_outputs * sizeof(void *));
    dqg_status st = DQG_OK;
    dqg_exec_ctx *x = NULL;
    if (!in_ids || !out_ids || !in_ptr || !out_ptr) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "execute: out of memory");
        goto done;
    }
    if ((st = dqg_bind_buffers(g, "execute", inputs, n_inputs, outputs, n_outputs, in_ids,
                               out_ids)) != DQG_OK)
        goto done;
    for (size_t i = 0; i < n_inputs; i++)
        for (size_t o = 0; o < n_outputs; o++)
            if (overlaps(&inputs[i], &outputs[o])) {
                st = dqg_set_error(DQG_INVALID_ARGUMENT,
                                   "execute: input buffer %zu ('%s') overlaps output buffer %zu "
                                   "('%s')",
                                   i, g->tensors[in_ids[i]].name, o, g->tensors[out_ids[o]].name);
                goto done;
            }
    for (size_t o = 0; o < n_outputs; o++)
        for (size_t p = o + 1; p < n_outputs; p++)
            if (overlaps(&outputs[o], &outputs[p])) {
                st = dqg_set_error(DQG_INVALID_ARGUMENT,
                                   "execute: output buffers %zu and %zu overlap", o, p);
                goto done;
            }
    for (int32_t k = 0; k < g->n_inputs; k++)
        for (size_t i = 0; i < n_inputs; i++)
            if (in_ids[i] == g->inputs[k])
                in_ptr[k] = inputs[i].data;
    for (int32_t k = 0; k < g->n_outputs; k++)
        for (size_t i = 0; i < n_outputs; i++)
            if (out_ids[i] == g->outputs[k])
                out_ptr[k] = outputs[i].data;
    if (!(x = take_ctx(c))) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "execute: out of memory for %zu bytes of scratch",
                           plan->arena_bytes + plan->scratch_bytes);
        goto done;
    }
    dqg_omp_saved omp = dqg_omp_enter(plan->options.threads);
    void *scratch = x->arena + plan->arena_bytes;
    for (int p = 0; p < plan->n_parts && st == DQG_OK; p++) {
        const dqg_compiled_part *cp = &plan->parts[p];
        for (int a = 0; a < cp->n_args; a++) {
            const dqg_arg_loc *l = &cp->args[a];
            x->argv[a] = l->kind == LOC_INPUT    ? in_ptr[l->index]
                         : l->kind == LOC_OUTPUT ? out_ptr[l->index]
                                                 : x->arena + l->index;
        }
        double t0 = c->verbose ? now_ms() : 0;
        st = cp->kernel->execute(cp->kernel, x->argv, scratch);
        if (c->verbose)
            fprintf(stderr, "dqgraph,exec,%d,%s,%.4f ms\n", p, cp->info, now_ms() - t0);
    }
    dqg_omp_leave(omp);
done:
    if (x)
        give_ctx(c, x);
    if (in_ids != in_ids_s)
        free(in_ids);
    if (out_ids != out_ids_s)
        free(out_ids);
    if (in_ptr != in_ptr_s)
        free(in_ptr);
    if (out_ptr != out_ptr_s)
        free(out_ptr);
    return st;
}
