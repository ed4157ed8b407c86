/* The kernel of a constant-folding partition: the op is evaluated once, on
 * the reference interpreter, when the partition is compiled (a cache miss);
 * the results and their XXH3-128 hashes stay in the cache entry, where every
 * later compile of the same partition finds them. It is never executed. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "runtime/cache.h"
#include "runtime/kernel.h"

typedef struct const_kernel {
    dqg_kernel base;
    int n;
    dqg_const_result *results;
} const_kernel;

static dqg_status const_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)args;
    (void)scratch;
    return dqg_set_error(DQG_BACKEND_ERROR, "%s: a folded constant is not executed", k->impl);
}

static void const_destroy(dqg_kernel *k)
{
    const_kernel *c = (const_kernel *)k;
    for (int i = 0; i < c->n; i++)
        free((void *)c->results[i].data);
    free(c->results);
    free(c);
}

const dqg_const_result *dqg_kernel_const_result(const dqg_kernel *k, int output)
{
    return &((const const_kernel *)k)->results[output];
}

dqg_status dqg_kernel_const_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const_kernel *c = calloc(1, sizeof *c);
    dqg_buffer *bufs = calloc((size_t)g->n_outputs + 1, sizeof *bufs);
    if (c)
        c->results = calloc((size_t)g->n_outputs + 1, sizeof *c->results);
    if (!c || !bufs || !c->results) {
        free(bufs);
        if (c)
            free(c->results);
        free(c);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "constant folding: out of memory");
    }
    c->base.execute = const_execute;
    c->base.destroy = const_destroy;
    snprintf(c->base.impl, sizeof c->base.impl, "folded");
    dqg_status st = DQG_OK;
    for (int32_t o = 0; o < g->n_outputs && st == DQG_OK; o++) {
        const dqg_tensor *t = &g->tensors[g->outputs[o]];
        void *data = malloc(t->nbytes ? t->nbytes : 1);
        if (!data) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY,
                               "constant folding: out of memory for the %zu bytes of '%s'",
                               t->nbytes, t->name);
            break;
        }
        c->results[c->n++].data = data;
        bufs[o] = (dqg_buffer){.id = g->outputs[o], .data = data, .size = t->nbytes};
        c->base.bytes += t->nbytes;
    }
    if (st == DQG_OK)
        st = dqg_reference_run(g, NULL, 0, bufs, (size_t)g->n_outputs);
    free(bufs);
    if (st != DQG_OK) {
        const_destroy(&c->base);
        return st;
    }
    for (int i = 0; i < c->n; i++) {
        XXH128_hash_t h = XXH3_128bits(c->results[i].data, g->tensors[g->outputs[i]].nbytes);
        c->results[i].hash[0] = h.low64;
        c->results[i].hash[1] = h.high64;
    }
    dqg_cache_count_constant_transform();
    *out = &c->base;
    return DQG_OK;
}
