/* Pre-packing of constant tensors into a primitive's preferred layout. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "runtime/cache.h"
#include "runtime/kernel.h"
#include "runtime/onednn_defects.h"
#include "runtime/onednn_pack.h"

/* One reorder of `data` (as `from`) into `buf` (as `to`). */
static dqg_status reorder_once(const dnnl_memory_desc_t *from, const void *data,
                               const dnnl_memory_desc_t *to, void *buf, const char *what)
{
    dqg_dnnl_prim prim;
    dqg_status st = dqg_dnnl_reorder_prim(&prim, from, to, what);
    if (st != DQG_OK)
        return st;
    /* Packing happens once, when the kernel is built: its scratchpad is
     * allocated for the occasion. */
    size_t pad_bytes = dqg_dnnl_scratchpad(&prim);
    void *pad = pad_bytes ? aligned_alloc(64, pad_bytes) : NULL;
    void *h[2] = {(void *)data, buf};
    st = pad_bytes && !pad ? dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what)
                           : dqg_dnnl_prim_execute(&prim, h, pad, what);
    free(pad);
    dqg_dnnl_prim_destroy(&prim);
    return st;
}

dqg_status dqg_dnnl_pack(const dnnl_memory_desc_t *from, const void *data,
                         const dnnl_memory_desc_t *to, bool conv_weights, void **out, size_t *bytes,
                         const char *what)
{
    dqg_cache_count_constant_transform();
    size_t n = dnnl_memory_desc_get_size(to);
    void *buf = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!buf)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory packing %zu bytes", what, n);
    dqg_status st;
    if (conv_weights && dqg_defect_two_step_pack(to)) {
        /* oneDNN 2.6 defect D: the reorder's transposition paths leave
         * the compensation zero or partial. The layout first, then the
         * same layout with compensation (no transposition left). */
        dnnl_memory_desc_t mid = *to;
        mid.extra.flags = 0;
        mid.extra.compensation_mask = mid.extra.asymm_compensation_mask = 0;
        size_t mn = dnnl_memory_desc_get_size(&mid);
        void *tmp = aligned_alloc(64, (mn + 63) & ~(size_t)63);
        st = tmp ? reorder_once(from, data, &mid, tmp, what)
                 : dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory packing", what);
        if (st == DQG_OK)
            st = reorder_once(&mid, tmp, to, buf, what);
        free(tmp);
    } else {
        st = reorder_once(from, data, to, buf, what);
    }
    if (st != DQG_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *bytes = n;
    return DQG_OK;
}

dqg_status dqg_dnnl_weights_plan(dqg_dnnl_weights *w, const dnnl_memory_desc_t *from,
                                 const void *data, bool conv_weights, dnnl_memory_desc_t *chosen,
                                 size_t *bytes, size_t *scratch, const char *what)
{
    *scratch = 0;
    if (data) {
        size_t n = 0;
        dqg_status st = dqg_dnnl_pack(from, data, chosen, conv_weights, &w->packed, &n, what);
        *bytes += n;
        return st;
    }
    if (dnnl_memory_desc_equal(from, chosen)) {
        *chosen = *from;
        return DQG_OK;
    }
    dqg_status st = dqg_dnnl_reorder_prim(&w->reorder_prim, from, chosen, what);
    w->reorder = st == DQG_OK;
    if (st == DQG_OK)
        *scratch = (dnnl_memory_desc_get_size(chosen) + 63) & ~(size_t)63;
    return st;
}

dqg_status dqg_dnnl_weights_handle(dqg_dnnl_weights *w, void *given, void *scratch, void *pad,
                                   void **out, const char *what)
{
    if (!w->reorder) {
        *out = given ? given : w->packed;
        return DQG_OK;
    }
    void *rh[2] = {given, scratch};
    *out = scratch;
    return dqg_dnnl_prim_execute(&w->reorder_prim, rh, pad, what);
}

void dqg_dnnl_weights_free(dqg_dnnl_weights *w)
{
    dqg_dnnl_prim_destroy(&w->reorder_prim);
    free(w->packed);
    w->packed = NULL;
    w->reorder = false;
}
