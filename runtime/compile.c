/* dqg_compile: looks the whole graph up in the plan cache (one hash and one
 * comparison for a graph compiled before); on a miss runs the passes,
 * compiles every partition through the partition cache -- constant-folding
 * partitions first, whose results become the constants of the partitions
 * that read them --, falls back when a fused kernel is refused, and plans
 * the intermediate buffers with liveness-based reuse. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cache_key.h"
#include "runtime/cpu_isa.h"
#include "runtime/onednn_exec.h"
#include "runtime/runtime_internal.h"

/* Graphs whose key is larger than this are not kept whole in the plan
 * cache (the key is stored for its full comparison); their partitions still
 * are. */
#define PLAN_KEY_MAX_BYTES ((size_t)8 << 20)

dqg_compile_options dqg_compile_options_default(void)
{
    return (dqg_compile_options){.disable_fusion = false,
                                 .backend = DQG_BACKEND_ONEDNN,
                                 .threads = 0,
                                 .fpmath = DQG_FPMATH_STRICT};
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct build_ctx {
    const dqg_kernel_request *req;
} build_ctx;

static dqg_status build_kernel(void *ctx, void **kernel, size_t *bytes)
{
    build_ctx *b = ctx;
    dqg_kernel *k = NULL;
    /* oneDNN fixes a primitive's thread count when it is created (from
     * the OpenMP maximum), and runs that many threads whatever the maximum
     * at execution: the kernel is built under the threads it will run with
     * (part of the cache key). */
    dqg_omp_saved omp = dqg_omp_enter(b->req->options->threads);
    dqg_status st = dqg_kernel_build(b->req, &k);
    dqg_omp_leave(omp);
    if (st != DQG_OK)
        return st;
    *kernel = k;
    *bytes = k->bytes + sizeof *k;
    return DQG_OK;
}

static void destroy_kernel(void *k)
{
    ((dqg_kernel *)k)->destroy(k);
}

static const char *part_kind_name(dqg_partition_kind k)
{
    switch (k) {
    case DQG_PART_QMATMUL:
        return "int8 matmul";
    case DQG_PART_QCONV:
        return "int8 conv";
    case DQG_PART_WO_MATMUL:
        return "weight-only matmul";
    case DQG_PART_CONST:
        return "constant";
    case DQG_PART_QELTWISE:
        return "int8 element-wise";
    case DQG_PART_QCONCAT:
        return "int8 concat";
    case DQG_PART_ROTARY:
        return "rotary embedding";
    default:
        return "op";
    }
}

/* A folded value, once its constant-folding partition is compiled. */
typedef struct folded_value {
    const void *data;
    const uint64_t *hash;
} folded_value;

/* Turns the inputs of the mini graph that hold folded values into
 * constants (borrowing the folding partition's result), and drops them from
 * the input map. */
static void bind_folded(dqg_graph *mini, dqg_tensor_id *in_map, int *n_in,
                        const folded_value *folded)
{
    int keep = 0;
    for (int32_t i = 0; i < mini->n_inputs; i++) {
        dqg_tensor_id mt = mini->inputs[i], pt = in_map[i];
        if (folded[pt].data) {
            dqg_tensor *t = &mini->tensors[mt];
            t->kind = DQG_TENSOR_CONSTANT;
            t->data = (void *)folded[pt].data;
            t->borrowed = true;
            memcpy(t->data_hash, folded[pt].hash, sizeof t->data_hash);
        } else {
            mini->inputs[keep] = mt;
            in_map[keep++] = pt;
        }
    }
    mini->n_inputs = keep;
    *n_in = keep;
}

/* Extracts, keys and compiles one partition; fills cp (args are set later)
 * and, for a constant-folding partition, the folded values it makes. */
static dqg_status compile_part(dqg_plan *c, const dqg_partition *p, dqg_compiled_part *cp,
                               dqg_tensor_id *in_map, int *n_in, folded_value *folded)
{
    const dqg_graph *g = c->passes.graph;
    dqg_graph *mini = NULL;
    dqg_status st =
        dqg_graph_extract(g, p->ops, p->n_ops, p->outputs, p->n_outputs, &mini, in_map, n_in);
    if (st != DQG_OK)
        return st;
    bind_folded(mini, in_map, n_in, folded);
    dqg_partition roles = *p;
    for (int k = 0; k < p->n_ops; k++)
        roles.ops[k] = k;
    dqg_kernel_request req = {.mini = mini, .roles = &roles, .options = &c->options};
    dqg_key_buf key;
    double t0 = now_ms();
    st = dqg_cache_key_build(&req, &key);
    dqg_cache_add_time(DQG_TIME_HASH, now_ms() - t0);
    if (st != DQG_OK) {
        dqg_graph_destroy(mini);
        return st;
    }
    build_ctx ctx = {.req = &req};
    st = dqg_cache_acquire(key.data, key.len, build_kernel, destroy_kernel, &ctx, &cp->entry,
                           &cp->hit);
    dqg_key_buf_free(&key);
    if (st == DQG_OK) {
        cp->kernel = dqg_cache_entry_kernel(cp->entry);
        cp->constant = p->kind == DQG_PART_CONST;
        cp->fused = p->kind != DQG_PART_SINGLE && !cp->constant;
        for (int o = 0; cp->constant && o < p->n_outputs; o++) {
            const dqg_const_result *r = dqg_kernel_const_result(cp->kernel, o);
            folded[p->outputs[o]] = (folded_value){r->data, r->hash};
        }
        size_t pos = 0;
        pos += (size_t)snprintf(cp->info, sizeof cp->info, "%s [", part_kind_name(p->kind));
        for (int k = 0; k < p->n_ops && pos < sizeof cp->info; k++)
            pos +=
                (size_t)snprintf(cp->info + pos, sizeof cp->info - pos, "%s%s '%s'", k ? " + " : "",
                                 dqg_op_kind_name(mini->ops[k].kind), mini->ops[k].name);
        if (pos < sizeof cp->info)
            pos += (size_t)snprintf(cp->info + pos, sizeof cp->info - pos, "] -> %s",
                                    cp->kernel->impl);
        /* What a weight-only kernel keeps of its weights, for the memory
         * it promises. */
        if (pos < sizeof cp->info && p->kind == DQG_PART_WO_MATMUL)
            pos += (size_t)snprintf(cp->info + pos, sizeof cp->info - pos, ", %zu weight bytes",
                                    cp->kernel->bytes);
        if (pos < sizeof cp->info && cp->hit)
            snprintf(cp->info + pos, sizeof cp->info - pos, " (cached)");
    }
    dqg_graph_destroy(mini);
    return st;
}

/* ---- Buffer planning ------------------------------------------------------- */

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* A first-fit arena: free blocks sorted by offset below `top`. */
typedef struct arena_sim {
    size_t *off, *size;
    int n, cap;
    size_t top, peak;
} arena_sim;

static bool arena_alloc(arena_sim *a, size_t size, size_t *off)
{
    for (int i = 0; i < a->n; i++)
        if (a->size[i] >= size) {
            *off = a->off[i];
            a->off[i] += size;
            a->size[i] -= size;
            if (a->size[i] == 0) {
                memmove(&a->off[i], &a->off[i + 1], (size_t)(a->n - i - 1) * sizeof *a->off);
                memmove(&a->size[i], &a->size[i + 1], (size_t)(a->n - i - 1) * sizeof *a->size);
                a->n--;
            }
            return true;
        }
    *off = a->top;
    a->top += size;
    if (a->top > a->peak)
        a->peak = a->top;
    return true;
}

static bool arena_free(arena_sim *a, size_t off, size_t size)
{
    int i = 0;
    while (i < a->n && a->off[i] < off)
        i++;
    /* Merge with the neighbours, or insert. */
    bool prev = i > 0 && a->off[i - 1] + a->size[i - 1] == off;
    bool next = i < a->n && off + size == a->off[i];
    if (prev && next) {
        a->size[i - 1] += size + a->size[i];
        memmove(&a->off[i], &a->off[i + 1], (size_t)(a->n - i - 1) * sizeof *a->off);
        memmove(&a->size[i], &a->size[i + 1], (size_t)(a->n - i - 1) * sizeof *a->size);
        a->n--;
        i--;
    } else if (prev) {
        a->size[--i] += size;
    } else if (next) {
        a->off[i] = off;
        a->size[i] += size;
    } else {
        if (a->n == a->cap) {
            int cap = a->cap ? a->cap * 2 : 16;
            size_t *o = realloc(a->off, (size_t)cap * sizeof *o);
            if (!o)
                return false;
            a->off = o;
            size_t *s = realloc(a->size, (size_t)cap * sizeof *s);
            if (!s)
                return false;
            a->size = s;
            a->cap = cap;
        }
        memmove(&a->off[i + 1], &a->off[i], (size_t)(a->n - i) * sizeof *a->off);
        memmove(&a->size[i + 1], &a->size[i], (size_t)(a->n - i) * sizeof *a->size);
        a->off[i] = off;
        a->size[i] = size;
        a->n++;
    }
    /* A free block at the top lowers the top. */
    if (a->n && a->off[a->n - 1] + a->size[a->n - 1] == a->top) {
        a->top = a->off[a->n - 1];
        a->n--;
    }
    return true;
}

/* Liveness of intermediate tensors; in place, an output shares its first
 * input's block (alias root). Blocks are allocated first-fit when their
 * root's first producer runs and freed after the last reader of the whole
 * alias group: linear in the graph with a short free list. */
static dqg_status plan_buffers(dqg_plan *c, dqg_tensor_id **maps, const int *n_maps)
{
    const dqg_graph *g = c->passes.graph;
    int32_t nt = g->n_tensors;
    int *first = malloc(((size_t)nt + 1) * sizeof *first);
    int *last = malloc(((size_t)nt + 1) * sizeof *last);
    dqg_tensor_id *root = malloc(((size_t)nt + 1) * sizeof *root);
    size_t *offset = calloc((size_t)nt + 1, sizeof *offset);
    int *pos_in = malloc(((size_t)nt + 1) * sizeof *pos_in);
    int *pos_out = malloc(((size_t)nt + 1) * sizeof *pos_out);
    /* Per partition: roots allocated there and freed there (linked lists). */
    dqg_tensor_id *alloc_head = malloc(((size_t)c->n_parts + 1) * sizeof *alloc_head);
    dqg_tensor_id *free_head = malloc(((size_t)c->n_parts + 1) * sizeof *free_head);
    dqg_tensor_id *alloc_next = malloc(((size_t)nt + 1) * sizeof *alloc_next);
    dqg_tensor_id *free_next = malloc(((size_t)nt + 1) * sizeof *free_next);
    arena_sim a = {0};
    dqg_status st = DQG_OK;
    if (!first || !last || !root || !offset || !pos_in || !pos_out || !alloc_head || !free_head ||
        !alloc_next || !free_next) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
        goto done;
    }
    for (int32_t t = 0; t < nt; t++) {
        first[t] = -1;
        root[t] = t;
        pos_in[t] = pos_out[t] = -1;
    }
    for (int32_t k = 0; k < g->n_inputs; k++)
        pos_in[g->inputs[k]] = k;
    for (int32_t k = 0; k < g->n_outputs; k++)
        pos_out[g->outputs[k]] = k;
    for (int p = 0; p < c->n_parts; p++) {
        const dqg_partition *part = &c->passes.parts[p];
        if (c->parts[p].constant)
            continue;
        for (int o = 0; o < part->n_outputs; o++) {
            dqg_tensor_id t = part->outputs[o];
            if (!g->tensors[t].is_output)
                first[t] = last[t] = p;
        }
        for (int i = 0; i < n_maps[p]; i++) {
            dqg_tensor_id t = maps[p][i];
            if (first[t] >= 0 && last[t] < p)
                last[t] = p;
        }
    }
    /* In place: an output that may overwrite the kernel's first input takes
     * that input's buffer when nothing reads the input afterwards. */
    for (int p = 0; p < c->n_parts; p++) {
        const dqg_partition *part = &c->passes.parts[p];
        if (c->parts[p].constant || !c->parts[p].kernel->in_place_ok || n_maps[p] < 1 ||
            part->n_outputs != 1)
            continue;
        dqg_tensor_id in = maps[p][0], out = part->outputs[0];
        if (first[in] < 0 || first[out] < 0 || last[in] != p ||
            g->tensors[in].nbytes != g->tensors[out].nbytes)
            continue;
        dqg_tensor_id r = root[in];
        root[out] = r;
        if (last[out] > last[r])
            last[r] = last[out];
    }
    for (int p = 0; p < c->n_parts; p++)
        alloc_head[p] = free_head[p] = DQG_NONE;
    for (int32_t t = nt - 1; t >= 0; t--) {
        if (first[t] < 0 || root[t] != t)
            continue;
        alloc_next[t] = alloc_head[first[t]];
        alloc_head[first[t]] = t;
        free_next[t] = free_head[last[t]];
        free_head[last[t]] = t;
    }
    for (int p = 0; p < c->n_parts; p++) {
        for (dqg_tensor_id t = alloc_head[p]; t != DQG_NONE; t = alloc_next[t])
            arena_alloc(&a, align64(g->tensors[t].nbytes), &offset[t]);
        for (dqg_tensor_id t = free_head[p]; t != DQG_NONE; t = free_next[t])
            if (!arena_free(&a, offset[t], align64(g->tensors[t].nbytes))) {
                st = dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
                goto done;
            }
    }
    c->arena_bytes = a.peak;
    /* Argument locations: inputs of the mini graph, then its outputs. */
    for (int p = 0; p < c->n_parts; p++) {
        dqg_compiled_part *cp = &c->parts[p];
        const dqg_partition *part = &c->passes.parts[p];
        if (cp->constant)
            continue;
        cp->n_args = n_maps[p] + part->n_outputs;
        cp->args = calloc((size_t)cp->n_args + 1, sizeof *cp->args);
        if (!cp->args) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
            goto done;
        }
        if (cp->n_args > c->max_args)
            c->max_args = cp->n_args;
        for (int k = 0; k < cp->n_args; k++) {
            dqg_tensor_id t = k < n_maps[p] ? maps[p][k] : part->outputs[k - n_maps[p]];
            if (pos_in[t] >= 0)
                cp->args[k] = (dqg_arg_loc){LOC_INPUT, (size_t)pos_in[t]};
            else if (pos_out[t] >= 0)
                cp->args[k] = (dqg_arg_loc){LOC_OUTPUT, (size_t)pos_out[t]};
            else
                cp->args[k] = (dqg_arg_loc){LOC_ARENA, offset[root[t]]};
        }
    }
done:
    free(first);
    free(last);
    free(root);
    free(offset);
    free(pos_in);
    free(pos_out);
    free(alloc_head);
    free(free_head);
    free(alloc_next);
    free(free_next);
    free(a.off);
    free(a.size);
    return st;
}

/* ---- Plans ---------------------------------------------------------------------- */

static void plan_destroy(dqg_plan *c)
{
    if (!c)
        return;
    for (int p = 0; p < c->n_parts; p++) {
        dqg_cache_release(c->parts[p].entry);
        free(c->parts[p].args);
    }
    free(c->parts);
    dqg_pass_state_free(&c->passes);
    free(c);
}

static void release_parts(dqg_plan *c, dqg_tensor_id **maps)
{
    for (int p = 0; p < c->n_parts; p++) {
        dqg_cache_release(c->parts[p].entry);
        free(c->parts[p].args);
        free(maps[p]);
    }
    free(c->parts);
    c->parts = NULL;
    c->n_parts = 0;
}

/* Compiles every partition; a refused fused partition is split and
 * compilation restarts over the new list (hits make the restart cheap). */
static dqg_status compile_parts(dqg_plan *c, dqg_tensor_id ***maps_out, int **n_maps_out)
{
    dqg_pass_state *s = &c->passes;
    folded_value *folded = calloc((size_t)s->graph->n_tensors + 1, sizeof *folded);
    if (!folded)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
    dqg_tensor_id **maps = NULL;
    int *n_maps = NULL;
    dqg_status st;
    for (;;) {
        memset(folded, 0, ((size_t)s->graph->n_tensors + 1) * sizeof *folded);
        c->parts = calloc((size_t)s->n_parts + 1, sizeof *c->parts);
        maps = calloc((size_t)s->n_parts + 1, sizeof *maps);
        n_maps = calloc((size_t)s->n_parts + 1, sizeof *n_maps);
        if (c->parts)
            c->n_parts = s->n_parts;
        if (!c->parts || !maps || !n_maps) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
            goto fail;
        }
        int refused = -1;
        for (int p = 0; p < s->n_parts; p++) {
            int cap = 1;
            for (int k = 0; k < s->parts[p].n_ops; k++)
                cap += s->graph->ops[s->parts[p].ops[k]].n_inputs;
            maps[p] = calloc((size_t)cap, sizeof **maps);
            if (!maps[p]) {
                st = dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
                goto fail;
            }
            if (s->parts[p].n_outputs == 0)
                continue; /* a folded value nothing reads */
            st = compile_part(c, &s->parts[p], &c->parts[p], maps[p], &n_maps[p], folded);
            if (st == DQG_UNSUPPORTED && s->parts[p].kind != DQG_PART_SINGLE &&
                s->parts[p].kind != DQG_PART_CONST) {
                refused = p;
                break;
            }
            if (st != DQG_OK)
                goto fail;
        }
        if (refused < 0)
            break;
        const dqg_partition *rp = &s->parts[refused];
        const dqg_op *anchor = &s->graph->ops[rp->ops[dqg_part_find(rp, DQG_ROLE_MAIN)]];
        if ((st = dqg_explain(s, "not fused: %s '%s': the backend refused the fused kernel: %s",
                              dqg_op_kind_name(anchor->kind), anchor->name, dqg_last_error())) !=
            DQG_OK)
            goto fail;
        release_parts(c, maps);
        free(maps);
        free(n_maps);
        maps = NULL;
        n_maps = NULL;
        if ((st = dqg_pass_split(s, refused)) != DQG_OK)
            goto fail;
    }
    free(folded);
    *maps_out = maps;
    *n_maps_out = n_maps;
    return DQG_OK;
fail:
    if (maps)
        release_parts(c, maps);
    free(maps);
    free(n_maps);
    free(folded);
    return st;
}

/* Multiply-accumulates of a MatMul or Convolution op (0 for other ops). */
static double op_macs(const dqg_graph *g, const dqg_op *op)
{
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    if (op->kind == DQG_OP_MATMUL) {
        const dqg_tensor *a = &g->tensors[op->inputs[0]];
        int64_t K =
            a->rank == 1 ? a->dims[0] : a->dims[a->rank - (op->attrs.matmul.transpose_a ? 2 : 1)];
        return (double)y->nelems * (double)K;
    }
    if (op->kind == DQG_OP_CONVOLUTION) {
        const dqg_tensor *w = &g->tensors[op->inputs[1]];
        return (double)y->nelems * (double)(w->nelems / w->dims[0]);
    }
    if (op->kind == DQG_OP_CONV_TRANSPOSE) {
        /* Every input element meets every tap of its group's weights. */
        const dqg_tensor *x = &g->tensors[op->inputs[0]], *w = &g->tensors[op->inputs[1]];
        return (double)x->nelems * (double)(w->nelems / w->dims[0]);
    }
    return 0;
}

/* "MACs: ... in int8": the share of the graph's MatMul and Convolution
 * work its int8 kernels do, and the weight-only kernels' (low-bit weights
 * kept at their width; whichever arithmetic their mode runs). */
static dqg_status explain_macs(dqg_plan *c)
{
    dqg_pass_state *s = &c->passes;
    double total = 0, int8 = 0, wo = 0;
    for (int p = 0; p < c->n_parts; p++) {
        const dqg_partition *part = &s->parts[p];
        bool q = part->kind == DQG_PART_QMATMUL || part->kind == DQG_PART_QCONV;
        bool w = part->kind == DQG_PART_WO_MATMUL;
        for (int k = 0; k < part->n_ops; k++) {
            double m = op_macs(s->graph, &s->graph->ops[part->ops[k]]);
            total += m;
            int8 += q ? m : 0;
            wo += w ? m : 0;
        }
    }
    if (total == 0)
        return DQG_OK;
    if (wo == 0)
        return dqg_explain(s, "MACs: %.4g of %.4g (%.1f%%) run in int8 kernels", int8, total,
                           100.0 * int8 / total);
    return dqg_explain(s,
                       "MACs: %.4g of %.4g (%.1f%%) run in int8 kernels, %.4g (%.1f%%) in "
                       "weight-only kernels",
                       int8, total, 100.0 * int8 / total, wo, 100.0 * wo / total);
}

/* Folded values live in the partition cache; once the kernels that read
 * them are built, the plan keeps only the partitions that run (a folded op
 * is no partition of the compiled graph, as if it had been removed). */
static void drop_constant_parts(dqg_plan *c)
{
    dqg_pass_state *s = &c->passes;
    int n = 0;
    for (int p = 0; p < c->n_parts; p++) {
        dqg_compiled_part *cp = &c->parts[p];
        if (cp->kernel && !cp->constant) {
            for (int k = 0; k < s->parts[p].n_ops; k++)
                s->group[s->parts[p].ops[k]] = n;
            c->parts[n] = *cp;
            dqg_partition tmp = s->parts[n];
            s->parts[n] = s->parts[p];
            s->parts[p] = tmp;
            n++;
            continue;
        }
        for (int k = 0; k < s->parts[p].n_ops; k++)
            s->group[s->parts[p].ops[k]] = -1;
        dqg_cache_release(cp->entry);
        free(cp->args);
    }
    for (int p = n; p < s->n_parts; p++) {
        free(s->parts[p].outputs);
        s->parts[p].outputs = NULL;
    }
    c->n_parts = s->n_parts = n;
}

typedef struct plan_ctx {
    const dqg_graph *graph;
    const dqg_compile_options *options;
} plan_ctx;

static dqg_status build_plan(void *ctx, void **out, size_t *bytes)
{
    plan_ctx *pc = ctx;
    dqg_plan *c = calloc(1, sizeof *c);
    if (!c)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
    c->options = *pc->options;
    /* fpmath bf16 permits bf16 math; it is used only where it is faster
     * than f32 (dqg_cpu_bf16_matmul_fast): elsewhere the graph compiles as
     * strict, exact and faster. */
    bool kept_f32 = c->options.fpmath == DQG_FPMATH_BF16 && !dqg_cpu_bf16_matmul_fast();
    if (kept_f32)
        c->options.fpmath = DQG_FPMATH_STRICT;
    double t0 = now_ms();
    dqg_status st = dqg_run_passes(pc->graph, &c->options, &c->passes);
    dqg_cache_add_time(DQG_TIME_PASSES, now_ms() - t0);
    if (st != DQG_OK) {
        free(c);
        return st;
    }
    if (kept_f32 &&
        (st = dqg_explain(&c->passes,
                          "fpmath bf16: f32 math kept: without AMX or bf16 dot products as "
                          "fast as f32 FMAs, a bf16 MatMul is slower here (DQG_BF16_DOT=fast "
                          "uses bf16 on a CPU with AVX512-BF16)")) != DQG_OK) {
        dqg_pass_state_free(&c->passes);
        free(c);
        return st;
    }
    dqg_tensor_id **maps = NULL;
    int *n_maps = NULL;
    if ((st = compile_parts(c, &maps, &n_maps)) != DQG_OK) {
        plan_destroy(c);
        return st;
    }
    st = plan_buffers(c, maps, n_maps);
    for (int p = 0; p < c->n_parts; p++)
        free(maps[p]);
    free(maps);
    free(n_maps);
    if (st != DQG_OK) {
        plan_destroy(c);
        return st;
    }
    dqg_pass_state *s = &c->passes;
    for (int p = 0; p < c->n_parts && st == DQG_OK; p++) {
        dqg_compiled_part *cp = &c->parts[p];
        if (!cp->kernel || cp->constant)
            continue;
        c->n_fused += cp->fused;
        c->n_hits += cp->hit;
        if (cp->kernel->scratch_size > c->scratch_bytes)
            c->scratch_bytes = cp->kernel->scratch_size;
        if (cp->kernel->why[0]) {
            const dqg_partition *part = &s->parts[p];
            const dqg_op *anchor = &s->graph->ops[part->ops[dqg_part_find(part, DQG_ROLE_MAIN)]];
            st = dqg_explain(s, "kernel: %s '%s' -> %s: %s", dqg_op_kind_name(anchor->kind),
                             anchor->name, cp->kernel->impl, cp->kernel->why);
        }
    }
    drop_constant_parts(c);
    if (st == DQG_OK)
        st = explain_macs(c);
    /* Kernels own what they need; the user's graph may now be destroyed,
     * and no constant data is kept twice. */
    dqg_graph_drop_borrowed(s->graph);
    if (st != DQG_OK) {
        plan_destroy(c);
        return st;
    }
    *out = c;
    *bytes = sizeof *c;
    return DQG_OK;
}

static void destroy_plan(void *p)
{
    plan_destroy(p);
}

void dqg_compiled_destroy(dqg_compiled *c)
{
    if (!c)
        return;
    dqg_cache_release(c->plan_entry);
    if (c->owns_plan && c->plan)
        destroy_plan((void *)c->plan);
    while (c->pool) {
        dqg_exec_ctx *n = c->pool->next;
        free(c->pool->arena);
        free(c->pool->argv);
        free(c->pool);
        c->pool = n;
    }
    pthread_mutex_destroy(&c->pool_lock);
    free(c);
}

dqg_status dqg_compile(const dqg_graph *graph, const dqg_compile_options *options,
                       dqg_compiled **out)
{
    if (!out)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "compile: out is NULL");
    *out = NULL;
    if (!graph)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "compile: graph is NULL");
    if (!graph->finalized)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "compile: graph is not finalized; call dqg_graph_finalize()");
    dqg_compile_options opt = options ? *options : dqg_compile_options_default();
    if (opt.backend != DQG_BACKEND_ONEDNN && opt.backend != DQG_BACKEND_REFERENCE)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "compile: unknown backend %d", (int)opt.backend);
    if (opt.fpmath != DQG_FPMATH_STRICT && opt.fpmath != DQG_FPMATH_BF16 &&
        opt.fpmath != DQG_FPMATH_INT8)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "compile: unknown fpmath mode %d",
                             (int)opt.fpmath);
    if (opt.threads < 0 || opt.threads > DQG_MAX_THREADS)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "compile: threads is %d; use 0 for all cores, or 1 to %d", opt.threads,
                             DQG_MAX_THREADS);
    dqg_compiled *c = calloc(1, sizeof *c);
    if (!c)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
    pthread_mutex_init(&c->pool_lock, NULL);
    const char *v = getenv("DQG_VERBOSE");
    c->verbose = v && *v && strcmp(v, "0") != 0;
    double t0 = now_ms();
    dqg_key_buf key;
    dqg_status st = dqg_cache_key_graph(graph, &opt, &key);
    dqg_cache_add_time(DQG_TIME_HASH, now_ms() - t0);
    if (st != DQG_OK) {
        dqg_compiled_destroy(c);
        return st;
    }
    plan_ctx pc = {.graph = graph, .options = &opt};
    bool hit = false;
    if (key.len <= PLAN_KEY_MAX_BYTES) {
        st = dqg_cache_acquire_plan(key.data, key.len, build_plan, destroy_plan, &pc,
                                    &c->plan_entry, &hit);
        if (st == DQG_OK)
            c->plan = dqg_cache_entry_kernel(c->plan_entry);
    } else {
        void *plan = NULL;
        size_t bytes;
        st = build_plan(&pc, &plan, &bytes);
        c->plan = plan;
        c->owns_plan = true;
    }
    dqg_key_buf_free(&key);
    if (st != DQG_OK) {
        char saved[1024];
        snprintf(saved, sizeof saved, "%s", dqg_last_error());
        dqg_compiled_destroy(c);
        return dqg_set_error(st, "%s", saved);
    }
    const dqg_plan *plan = c->plan;
    c->n_hits = hit ? (size_t)plan->n_parts : plan->n_hits;
    if (c->verbose) {
        double dt = now_ms() - t0;
        const dqg_pass_state *s = &plan->passes;
        for (int i = 0; i < s->n_explain; i++)
            fprintf(stderr, "dqgraph,explain,%s\n", s->explain[i]);
        for (int p = 0; p < plan->n_parts; p++)
            fprintf(stderr, "dqgraph,compile,%d,%s\n", p, plan->parts[p].info);
        fprintf(stderr, "dqgraph,compile,total,%d partitions,%zu fused,%zu cached,%s,%.3f ms\n",
                plan->n_parts, plan->n_fused, c->n_hits, hit ? "plan cached" : "plan built", dt);
    }
    *out = c;
    return DQG_OK;
}

size_t dqg_compiled_partition_count(const dqg_compiled *c)
{
    return c ? (size_t)c->plan->n_parts : 0;
}

const char *dqg_compiled_partition_info(const dqg_compiled *c, size_t i)
{
    return (c && i < (size_t)c->plan->n_parts) ? c->plan->parts[i].info : NULL;
}

size_t dqg_compiled_fused_count(const dqg_compiled *c)
{
    return c ? c->plan->n_fused : 0;
}
size_t dqg_compiled_peak_memory(const dqg_compiled *c)
{
    return c ? c->plan->arena_bytes : 0;
}
size_t dqg_compiled_cache_hits(const dqg_compiled *c)
{
    return c ? c->n_hits : 0;
}

size_t dqg_compiled_explain_count(const dqg_compiled *c)
{
    return c ? (size_t)c->plan->passes.n_explain : 0;
}

const char *dqg_compiled_explain(const dqg_compiled *c, size_t i)
{
    return (c && i < (size_t)c->plan->passes.n_explain) ? c->plan->passes.explain[i] : NULL;
}

dqg_status dqg_compiled_dump(const dqg_compiled *c, dqg_dump_format format, FILE *out)
{
    if (!c || !out)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_compiled_dump: compiled or file is NULL");
    const dqg_plan *pl = c->plan;
    if (format == DQG_DUMP_TEXT) {
        fprintf(out, "%d partitions, %zu fused, peak intermediate memory %zu bytes\n", pl->n_parts,
                pl->n_fused, pl->arena_bytes);
        for (int p = 0; p < pl->n_parts; p++)
            fprintf(out, "partition %d: %s\n", p, pl->parts[p].info);
        for (int i = 0; i < pl->passes.n_explain; i++)
            fprintf(out, "explain: %s\n", pl->passes.explain[i]);
        return ferror(out) ? dqg_set_error(DQG_IO_ERROR, "dqg_compiled_dump: write failed")
                           : DQG_OK;
    }
    if (format != DQG_DUMP_DOT)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_compiled_dump: unknown format %d",
                             (int)format);
    const char **labels = calloc((size_t)pl->n_parts + 1, sizeof *labels);
    if (!labels)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "dqg_compiled_dump: out of memory");
    for (int p = 0; p < pl->n_parts; p++) {
        /* The kernel part of the info line: after "-> ". */
        const char *arrow = strstr(pl->parts[p].info, "] -> ");
        labels[p] = arrow ? arrow + 5 : pl->parts[p].info;
    }
    dqg_status st =
        dqg_graph_dump_partitioned(pl->passes.graph, pl->passes.group, pl->n_parts, labels, out);
    free(labels);
    return st;
}
