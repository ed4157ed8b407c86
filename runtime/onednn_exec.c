/* Executing oneDNN primitives with a per-primitive pool of stream and
 * memory-object slots (see onednn_exec.h for why). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "runtime/kernel.h"
#include "runtime/onednn_defects.h"
#include "runtime/onednn_exec.h"

struct dqg_dnnl_slot {
    dnnl_stream_t stream;
    dnnl_memory_t mem[DQG_DNNL_MAX_ARGS + 1];
    dqg_dnnl_slot *next;
};

dqg_status dqg_dnnl_error(dnnl_status_t s, const char *what, const char *call)
{
    dqg_status st = s == dnnl_out_of_memory   ? DQG_OUT_OF_MEMORY
                    : s == dnnl_unimplemented ? DQG_UNSUPPORTED
                                              : DQG_BACKEND_ERROR;
    return dqg_set_error(st, "%s: oneDNN %s failed (status %d%s)", what, call, (int)s,
                         s == dnnl_unimplemented ? ": no implementation for this combination" : "");
}

dnnl_status_t dqg_dnnl_attr_create(dnnl_primitive_attr_t *attr)
{
    dnnl_status_t s = dnnl_primitive_attr_create(attr);
    if (s == dnnl_success &&
        (s = dnnl_primitive_attr_set_fpmath_mode(*attr, dnnl_fpmath_mode_strict)) != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return s;
}

/* A copy of attr (or a new one) asking for a user-managed scratchpad. */
static dnnl_status_t user_scratchpad(dnnl_primitive_attr_t *out, const_dnnl_primitive_attr_t attr)
{
    dnnl_status_t s = attr ? dnnl_primitive_attr_clone(out, attr) : dqg_dnnl_attr_create(out);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(*out, dnnl_scratchpad_mode_user);
    return s;
}

dqg_status dqg_dnnl_pd_create(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                              const_dnnl_primitive_attr_t attr, char *impl, size_t impl_size)
{
    *pd = NULL;
    dnnl_primitive_attr_t a = NULL;
    dnnl_status_t s = user_scratchpad(&a, attr);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(pd, op_desc, a, dqg_onednn_engine(), NULL);
    if (a)
        dnnl_primitive_attr_destroy(a);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, impl, "primitive descriptor creation");
    const char *name = NULL;
    dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &name);
    if (name) {
        size_t len = strlen(impl);
        snprintf(impl + len, impl_size - len, ":%s", name);
    }
    return DQG_OK;
}

/* Whether the primitive of `pd` can be created: oneDNN 2.6 offers some
 * jit implementations whose code generation then fails. A created one
 * stays in oneDNN's primitive cache for the kernel to take. */
static bool generates(const_dnnl_primitive_desc_t pd)
{
    dnnl_primitive_t p = NULL;
    if (dnnl_primitive_create(&p, pd) != dnnl_success)
        return false;
    dnnl_primitive_destroy(p);
    return true;
}

dqg_status dqg_dnnl_pd_create_checked(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                                      const_dnnl_primitive_attr_t attr,
                                      const struct dqg_prim_facts *facts, char *impl,
                                      size_t impl_size, char *why, size_t why_size)
{
    *pd = NULL;
    dnnl_primitive_attr_t a = NULL;
    dnnl_primitive_desc_iterator_t it = NULL;
    dnnl_status_t s = user_scratchpad(&a, attr);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_iterator_create(&it, op_desc, a, dqg_onednn_engine(), NULL);
    if (a)
        dnnl_primitive_attr_destroy(a);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, impl, "primitive descriptor creation");
    const char *skipped = NULL, *passed_over = NULL, *failed = NULL;
    /* The first implementation no rule forbids, unless a later one is
     * preferred (dqg_prefer_other_impl); then the first preferred one. */
    dnnl_primitive_desc_t fallback = NULL;
    for (; s == dnnl_success; s = dnnl_primitive_desc_iterator_next(it)) {
        dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);
        const char *name = NULL;
        if (!cand)
            continue;
        dnnl_primitive_desc_query(cand, dnnl_query_impl_info_str, 0, &name);
        const char *rule = dqg_defect_skip_impl(facts, name);
        if (!rule) {
            const char *other = dqg_prefer_other_impl(facts, name);
            if (other && !fallback) {
                fallback = cand;
                passed_over = other;
                continue;
            }
            if (other) {
                dnnl_primitive_desc_destroy(cand);
                continue;
            }
            /* Offered, but its code cannot be generated for this problem
             * (a 1x1 int8 kernel out of registers for a long post-op
             * chain): the next one. Only the one taken is tried, so no
             * primitive of a passed-over one lands in oneDNN's cache while
             * the iterator is still in use. */
            if (!generates(cand)) {
                if (!failed)
                    failed = name;
                dnnl_primitive_desc_destroy(cand);
                continue;
            }
            *pd = cand;
            break;
        }
        skipped = rule;
        dnnl_primitive_desc_destroy(cand);
    }
    dnnl_primitive_desc_iterator_destroy(it);
    if (*pd && fallback)
        dnnl_primitive_desc_destroy(fallback);
    else if (!*pd && fallback) {
        *pd = fallback;
        passed_over = NULL;
    }
    if (*pd) {
        const char *name = NULL;
        dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &name);
        size_t len = strlen(impl);
        snprintf(impl + len, impl_size - len, ":%s", name ? name : "?");
        if (skipped)
            snprintf(why, why_size, "%s: skipped its implementation", skipped);
        else if (failed)
            snprintf(why, why_size, "%s could not generate its code", failed);
        else if (passed_over)
            snprintf(why, why_size, "%s", passed_over);
    }
    if (!*pd)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: no implementation left after %s", impl,
                             skipped ? skipped : "the rules");
    return DQG_OK;
}

dqg_status dqg_dnnl_reorder_pd(dnnl_primitive_desc_t *pd, const dnnl_memory_desc_t *from,
                               const dnnl_memory_desc_t *to, const_dnnl_primitive_attr_t attr,
                               const char *what)
{
    *pd = NULL;
    dnnl_engine_t eng = dqg_onednn_engine();
    dnnl_primitive_attr_t a = NULL;
    dnnl_status_t s = user_scratchpad(&a, attr);
    if (s == dnnl_success)
        s = dnnl_reorder_primitive_desc_create(pd, from, eng, to, eng, a);
    if (a)
        dnnl_primitive_attr_destroy(a);
    return s == dnnl_success ? DQG_OK : dqg_dnnl_error(s, what, "reorder creation");
}

dqg_status dqg_dnnl_reorder_prim(dqg_dnnl_prim *prim, const dnnl_memory_desc_t *from,
                                 const dnnl_memory_desc_t *to, const char *what)
{
    dnnl_primitive_desc_t pd = NULL;
    dqg_status st = dqg_dnnl_reorder_pd(&pd, from, to, NULL, what);
    if (st != DQG_OK)
        return st;
    int kinds[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    dnnl_memory_desc_t mds[2] = {*from, *to};
    st = dqg_dnnl_prim_init(prim, pd, 2, kinds, mds, what);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

dnnl_data_type_t dqg_dnnl_dtype(dqg_dtype dtype)
{
    switch (dtype) {
    case DQG_F32:
        return dnnl_f32;
    case DQG_F16:
        return dnnl_f16;
    case DQG_BF16:
        return dnnl_bf16;
    case DQG_S8:
        return dnnl_s8;
    case DQG_U8:
        return dnnl_u8;
    case DQG_S32:
        return dnnl_s32;
    default:
        return dnnl_data_type_undef;
    }
}

dqg_status dqg_dnnl_md_dense(dnnl_memory_desc_t *md, int rank, const int64_t *dims, dqg_dtype dtype)
{
    dnnl_dims_t d, strides;
    /* oneDNN has no rank-0 tensors: a scalar is a 1-element 1-D tensor. */
    int r = rank ? rank : 1;
    for (int i = 0; i < r; i++)
        d[i] = rank ? dims[i] : 1;
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        strides[i] = s;
        s *= d[i];
    }
    dnnl_data_type_t dt = dqg_dnnl_dtype(dtype);
    if (dt == dnnl_data_type_undef)
        return dqg_set_error(DQG_UNSUPPORTED, "oneDNN has no %s type", dqg_dtype_name(dtype));
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(md, r, d, dt, strides);
    return st == dnnl_success ? DQG_OK : dqg_dnnl_error(st, "memory descriptor", "init");
}

static int64_t md_elements(const_dnnl_primitive_desc_t pd, dnnl_query_t what)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what, 0);
    if (!md || md->ndims <= 0)
        return 0;
    int64_t n = 1;
    for (int i = 0; i < md->ndims; i++)
        n *= md->dims[i];
    return n;
}

/* Whether a primitive has too little work for a second thread to pay for
 * its fork and join (a few microseconds on an idle machine): under 64 Ki
 * multiply-adds for convolutions, matmuls and inner products (a
 * microsecond or two of VNNI), under 32 KiB of data moved for the rest. */
static bool too_small_to_share(const_dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *mds,
                               int n_args)
{
    dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
    dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
    int64_t dst = md_elements(pd, dnnl_query_dst_md), wei = md_elements(pd, dnnl_query_weights_md);
    const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    int64_t macs = -1;
    if (kind == dnnl_convolution && dmd && dmd->ndims > 1 && dmd->dims[1] > 0)
        macs = dst * (wei / dmd->dims[1]);
    else if (kind == dnnl_matmul && smd && smd->ndims > 0)
        macs = dst * smd->dims[smd->ndims - 1];
    else if (kind == dnnl_inner_product)
        macs = dst * md_elements(pd, dnnl_query_src_md) / (smd && smd->ndims ? smd->dims[0] : 1);
    if (macs >= 0)
        return macs < (1 << 16);
    size_t bytes = 0;
    for (int i = 0; i < n_args; i++)
        bytes += dnnl_memory_desc_get_size(&mds[i]);
    return bytes < (32 << 10);
}

dqg_status dqg_dnnl_prim_init(dqg_dnnl_prim *p, const_dnnl_primitive_desc_t pd, int n_args,
                              const int *arg_kinds, const dnnl_memory_desc_t *mds, const char *what)
{
    memset(p, 0, sizeof *p);
    if (n_args > DQG_DNNL_MAX_ARGS)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: too many primitive arguments", what);
    dnnl_status_t s = dnnl_primitive_create(&p->prim, pd);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, what, "primitive creation");
    p->n_args = p->n_user = n_args;
    p->serial = too_small_to_share(pd, mds, n_args);
    memcpy(p->arg_kinds, arg_kinds, (size_t)n_args * sizeof *arg_kinds);
    memcpy(p->mds, mds, (size_t)n_args * sizeof *mds);
    const dnnl_memory_desc_t *pad = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p->scratchpad_bytes = pad ? dnnl_memory_desc_get_size(pad) : 0;
    if (p->scratchpad_bytes) {
        p->arg_kinds[p->n_args] = DNNL_ARG_SCRATCHPAD;
        p->mds[p->n_args++] = *pad;
    }
    pthread_mutex_init(&p->lock, NULL);
    return DQG_OK;
}

static void free_slot(dqg_dnnl_slot *slot, int n_args)
{
    for (int i = 0; i < n_args; i++)
        if (slot->mem[i])
            dnnl_memory_destroy(slot->mem[i]);
    if (slot->stream)
        dnnl_stream_destroy(slot->stream);
    free(slot);
}

static dqg_dnnl_slot *new_slot(dqg_dnnl_prim *p)
{
    dqg_dnnl_slot *slot = calloc(1, sizeof *slot);
    if (!slot)
        return NULL;
    dnnl_engine_t eng = dqg_onednn_engine();
    if (!eng || dnnl_stream_create(&slot->stream, eng, dnnl_stream_default_flags) != dnnl_success) {
        free_slot(slot, p->n_args);
        return NULL;
    }
    for (int i = 0; i < p->n_args; i++)
        if (dnnl_memory_create(&slot->mem[i], &p->mds[i], eng, DNNL_MEMORY_NONE) != dnnl_success) {
            free_slot(slot, p->n_args);
            return NULL;
        }
    return slot;
}

static dqg_status execute_slot(dqg_dnnl_prim *p, void *const *handles, void *scratchpad,
                               const char *what)
{
    if (p->scratchpad_bytes && !scratchpad)
        return dqg_set_error(DQG_BACKEND_ERROR, "%s: no scratchpad for the primitive", what);
    pthread_mutex_lock(&p->lock);
    dqg_dnnl_slot *slot = p->free_slots;
    if (slot)
        p->free_slots = slot->next;
    pthread_mutex_unlock(&p->lock);
    if (!slot && !(slot = new_slot(p)))
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory for a oneDNN stream", what);
    dnnl_exec_arg_t args[DQG_DNNL_MAX_ARGS + 1];
    dnnl_status_t s = dnnl_success;
    for (int i = 0; i < p->n_args && s == dnnl_success; i++) {
        s = dnnl_memory_set_data_handle_v2(slot->mem[i], i < p->n_user ? handles[i] : scratchpad,
                                           slot->stream);
        args[i] = (dnnl_exec_arg_t){p->arg_kinds[i], slot->mem[i]};
    }
    if (s == dnnl_success)
        s = dnnl_primitive_execute(p->prim, slot->stream, p->n_args, args);
    if (s == dnnl_success)
        s = dnnl_stream_wait(slot->stream);
    pthread_mutex_lock(&p->lock);
    slot->next = p->free_slots;
    p->free_slots = slot;
    pthread_mutex_unlock(&p->lock);
    return s == dnnl_success ? DQG_OK : dqg_dnnl_error(s, what, "execution");
}

dqg_status dqg_dnnl_prim_execute(dqg_dnnl_prim *p, void *const *handles, void *scratchpad,
                                 const char *what)
{
    int saved_threads = p->serial ? omp_get_max_threads() : 1;
    if (saved_threads > 1)
        omp_set_num_threads(1);
    dqg_status st = execute_slot(p, handles, scratchpad, what);
    if (saved_threads > 1)
        omp_set_num_threads(saved_threads);
    return st;
}

void dqg_dnnl_prim_destroy(dqg_dnnl_prim *p)
{
    if (!p->prim)
        return;
    while (p->free_slots) {
        dqg_dnnl_slot *n = p->free_slots->next;
        free_slot(p->free_slots, p->n_args);
        p->free_slots = n;
    }
    dnnl_primitive_destroy(p->prim);
    pthread_mutex_destroy(&p->lock);
    p->prim = NULL;
}

dqg_omp_saved dqg_omp_enter(int threads)
{
    dqg_omp_saved saved = {omp_get_max_threads(), omp_get_dynamic()};
    int want = threads > 0 ? threads : saved.threads, limit = omp_get_thread_limit();
    omp_set_dynamic(0);
    omp_set_num_threads(want < limit ? want : limit);
    return saved;
}

void dqg_omp_leave(dqg_omp_saved saved)
{
    omp_set_num_threads(saved.threads);
    omp_set_dynamic(saved.dynamic);
}
