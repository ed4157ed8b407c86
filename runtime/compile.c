/* dqg_compile: runs the passes, compiles every partition through the cache
 * (falling back to single-op partitions when a fused kernel is refused), and
 * plans the intermediate buffers with liveness-based reuse. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cache_key.h"
#include "runtime/runtime_internal.h"

dqg_compile_options dqg_compile_options_default(void)
{
    return (dqg_compile_options){.disable_fusion = false,
                                 .backend = DQG_BACKEND_ONEDNN,
                                 .threads = 0,
                                 .fpmath = DQG_FPMATH_STRICT};
}

typedef struct build_ctx {
    const dqg_kernel_request *req;
} build_ctx;

static dqg_status build_kernel(void *ctx, void **kernel, size_t *bytes)
{
    build_ctx *b = ctx;
    dqg_kernel *k = NULL;
    dqg_status st = dqg_kernel_build(b->req, &k);
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
    return k == DQG_PART_QMATMUL ? "int8 matmul" : k == DQG_PART_QCONV ? "int8 conv" : "op";
}

/* Extracts, keys and compiles one partition; fills cp (args are set later). */
static dqg_status compile_part(dqg_compiled *c, const dqg_partition *p, dqg_compiled_part *cp,
                               dqg_tensor_id *in_map, int *n_in)
{
    const dqg_graph *g = c->passes.graph;
    dqg_graph *mini = NULL;
    dqg_status st =
        dqg_graph_extract(g, p->ops, p->n_ops, p->outputs, p->n_outputs, &mini, in_map, n_in);
    if (st != DQG_OK)
        return st;
    dqg_partition roles = *p;
    for (int k = 0; k < p->n_ops; k++)
        roles.ops[k] = k;
    dqg_kernel_request req = {.mini = mini, .roles = &roles, .options = &c->options};
    dqg_key_buf key;
    if ((st = dqg_cache_key_build(&req, &key)) != DQG_OK) {
        dqg_graph_destroy(mini);
        return st;
    }
    build_ctx ctx = {.req = &req};
    st = dqg_cache_acquire(key.data, key.len, build_kernel, destroy_kernel, &ctx, &cp->entry,
                           &cp->hit);
    dqg_key_buf_free(&key);
    if (st == DQG_OK) {
        cp->kernel = dqg_cache_entry_kernel(cp->entry);
        cp->fused = p->kind != DQG_PART_SINGLE;
        size_t pos = 0;
        pos += (size_t)snprintf(cp->info, sizeof cp->info, "%s [", part_kind_name(p->kind));
        for (int k = 0; k < p->n_ops && pos < sizeof cp->info; k++)
            pos +=
                (size_t)snprintf(cp->info + pos, sizeof cp->info - pos, "%s%s '%s'", k ? " + " : "",
                                 dqg_op_kind_name(mini->ops[k].kind), mini->ops[k].name);
        if (pos < sizeof cp->info)
            snprintf(cp->info + pos, sizeof cp->info - pos, "] -> %s%s", cp->kernel->impl,
                     cp->hit ? " (cached)" : "");
    }
    dqg_graph_destroy(mini);
    return st;
}

/* Replaces fused partition `i` by one single-op partition per op. */
static dqg_status split_partition(dqg_pass_state *s, int i)
{
    dqg_partition p = s->parts[i];
    int first = -1;
    for (int k = 0; k < p.n_ops; k++) {
        int np = dqg_pass_new_partition(s, DQG_PART_SINGLE);
        if (np < 0)
            return DQG_OUT_OF_MEMORY;
        if (first < 0)
            first = np;
        s->parts[np].main = 0;
        s->parts[np].n_ops = 1;
        s->parts[np].ops[0] = p.ops[k];
    }
    /* Drop the fused one; re-running the partition pass re-sorts the list
     * and recomputes every partition's visible outputs. */
    s->parts[i] = s->parts[--s->n_parts];
    return dqg_pass_partition(s);
}

/* Liveness-based offsets for intermediate tensors: first fit into the gaps
 * left by tensors whose last reader has run. */
typedef struct live_range {
    dqg_tensor_id t;
    int first, last;
    size_t size, offset;
    dqg_tensor_id alias; /* tensor whose buffer it shares (in place), or DQG_NONE */
} live_range;

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static dqg_status plan_buffers(dqg_compiled *c, dqg_tensor_id **maps, const int *n_maps)
{
    const dqg_graph *g = c->passes.graph;
    live_range *r = calloc((size_t)g->n_tensors + 1, sizeof *r);
    int *which = malloc(((size_t)g->n_tensors + 1) * sizeof *which);
    if (!r || !which) {
        free(r);
        free(which);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        which[t] = -1;
    int nr = 0;
    for (int p = 0; p < c->n_parts; p++) {
        const dqg_partition *part = &c->passes.parts[p];
        for (int o = 0; o < part->n_outputs; o++) {
            dqg_tensor_id t = part->outputs[o];
            if (g->tensors[t].is_output)
                continue;
            which[t] = nr;
            r[nr++] = (live_range){.t = t,
                                   .first = p,
                                   .last = p,
                                   .size = align64(g->tensors[t].nbytes),
                                   .alias = DQG_NONE};
        }
        for (int i = 0; i < n_maps[p]; i++) {
            dqg_tensor_id t = maps[p][i];
            if (which[t] >= 0 && r[which[t]].last < p)
                r[which[t]].last = p;
        }
    }
    /* In place: an output that may overwrite the kernel's first input takes
     * that input's buffer when nothing reads the input afterwards; the two
     * lifetimes become one. Partitions run in order, so a later reader of
     * the input would have extended its last use past p. */
    for (int p = 0; p < c->n_parts; p++) {
        const dqg_partition *part = &c->passes.parts[p];
        if (!c->parts[p].kernel->in_place_ok || n_maps[p] < 1 || part->n_outputs != 1)
            continue;
        int in = which[maps[p][0]], out = which[part->outputs[0]];
        if (in < 0 || out < 0 || r[in].last != p || r[in].size != r[out].size)
            continue;
        int root = in;
        while (r[root].alias != DQG_NONE)
            root = which[r[root].alias];
        r[out].alias = r[root].t;
        if (r[out].last > r[root].last)
            r[root].last = r[out].last;
    }
    /* Place the largest first; each goes at the lowest offset that does not
     * overlap a placed range whose lifetime intersects its own. */
    for (int i = 0; i < nr; i++)
        for (int j = i + 1; j < nr; j++)
            if (r[j].size > r[i].size) {
                live_range tmp = r[i];
                r[i] = r[j];
                r[j] = tmp;
            }
    size_t peak = 0;
    for (int i = 0; i < nr; i++) {
        if (r[i].alias != DQG_NONE)
            continue;
        size_t off = 0;
        bool moved = true;
        while (moved) {
            moved = false;
            for (int j = 0; j < i; j++) {
                if (r[j].alias != DQG_NONE)
                    continue;
                bool overlap_time = r[j].first <= r[i].last && r[i].first <= r[j].last;
                bool overlap_mem = r[j].offset < off + r[i].size && off < r[j].offset + r[j].size;
                if (overlap_time && overlap_mem) {
                    off = r[j].offset + r[j].size;
                    moved = true;
                }
            }
        }
        r[i].offset = off;
        if (off + r[i].size > peak)
            peak = off + r[i].size;
    }
    c->arena_bytes = peak;
    for (int i = 0; i < nr; i++)
        which[r[i].t] = i;
    for (int i = 0; i < nr; i++)
        if (r[i].alias != DQG_NONE)
            r[i].offset = r[which[r[i].alias]].offset;
    /* Argument locations: inputs of the mini graph, then its outputs. */
    for (int p = 0; p < c->n_parts; p++) {
        dqg_compiled_part *cp = &c->parts[p];
        const dqg_partition *part = &c->passes.parts[p];
        cp->n_args = n_maps[p] + part->n_outputs;
        cp->args = calloc((size_t)cp->n_args + 1, sizeof *cp->args);
        if (!cp->args) {
            free(r);
            free(which);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "compile: out of memory");
        }
        if (cp->n_args > c->max_args)
            c->max_args = cp->n_args;
        for (int a = 0; a < cp->n_args; a++) {
            dqg_tensor_id t = a < n_maps[p] ? maps[p][a] : part->outputs[a - n_maps[p]];
            const dqg_tensor *tt = &g->tensors[t];
            if (tt->kind == DQG_TENSOR_INPUT) {
                for (int32_t k = 0; k < g->n_inputs; k++)
                    if (g->inputs[k] == t)
                        cp->args[a] = (dqg_arg_loc){LOC_INPUT, (size_t)k};
            } else if (tt->is_output) {
                for (int32_t k = 0; k < g->n_outputs; k++)
                    if (g->outputs[k] == t)
                        cp->args[a] = (dqg_arg_loc){LOC_OUTPUT, (size_t)k};
            } else {
                cp->args[a] = (dqg_arg_loc){LOC_ARENA, r[which[t]].offset};
            }
        }
    }
    free(r);
    free(which);
    return DQG_OK;
}

void dqg_compiled_destroy(dqg_compiled *c)
{
    if (!c)
        return;
    for (int p = 0; p < c->n_parts; p++) {
        dqg_cache_release(c->parts[p].entry);
        free(c->parts[p].args);
    }
    free(c->parts);
    while (c->pool) {
        dqg_exec_ctx *n = c->pool->next;
        free(c->pool->arena);
        free(c->pool->argv);
        free(c->pool);
        c->pool = n;
    }
    pthread_mutex_destroy(&c->pool_lock);
    dqg_pass_state_free(&c->passes);
    free(c);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
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
    if (opt.fpmath != DQG_FPMATH_STRICT && opt.fpmath != DQG_FPMATH_BF16)
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
    c->options = opt;
    const char *v = getenv("DQG_VERBOSE");
    c->verbose = v && *v && strcmp(v, "0") != 0;
    double t0 = now_ms();
    dqg_status st = dqg_run_passes(graph, &c->options, &c->passes);
    if (st != DQG_OK) {
        pthread_mutex_destroy(&c->pool_lock);
        free(c);
        return st;
    }
    dqg_pass_state *s = &c->passes;
    dqg_tensor_id **maps = NULL;
    int *n_maps = NULL;
    /* Compile; a refused fused partition is split and compilation restarts
     * over the new list (hits make the restart cheap). */
    for (;;) {
        c->n_parts = 0;
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
            st = compile_part(c, &s->parts[p], &c->parts[p], maps[p], &n_maps[p]);
            if (st == DQG_UNSUPPORTED && s->parts[p].kind != DQG_PART_SINGLE) {
                refused = p;
                break;
            }
            if (st != DQG_OK)
                goto fail;
        }
        if (refused < 0)
            break;
        const dqg_op *anchor = &s->graph->ops[s->parts[refused].ops[s->parts[refused].main]];
        if ((st = dqg_explain(s, "not fused: %s '%s': the backend refused the fused kernel: %s",
                              dqg_op_kind_name(anchor->kind), anchor->name, dqg_last_error())) !=
            DQG_OK)
            goto fail;
        for (int p = 0; p < c->n_parts; p++) {
            dqg_cache_release(c->parts[p].entry);
            free(maps[p]);
        }
        free(c->parts);
        free(maps);
        free(n_maps);
        c->parts = NULL;
        maps = NULL;
        n_maps = NULL;
        c->n_parts = 0;
        if ((st = split_partition(s, refused)) != DQG_OK)
            goto fail;
    }
    for (int p = 0; p < c->n_parts; p++) {
        c->n_fused += c->parts[p].fused;
        c->n_hits += c->parts[p].hit;
        if (c->parts[p].kernel->scratch_size > c->scratch_bytes)
            c->scratch_bytes = c->parts[p].kernel->scratch_size;
    }
    if ((st = plan_buffers(c, maps, n_maps)) != DQG_OK)
        goto fail;
    /* Kernels own what they need; the user's graph may now be destroyed. */
    dqg_graph_drop_borrowed(c->passes.graph);
    for (int p = 0; p < c->n_parts; p++)
        free(maps[p]);
    free(maps);
    free(n_maps);
    if (c->verbose) {
        double dt = now_ms() - t0;
        for (int i = 0; i < s->n_explain; i++)
            fprintf(stderr, "dqgraph,explain,%s\n", s->explain[i]);
        for (int p = 0; p < c->n_parts; p++)
            fprintf(stderr, "dqgraph,compile,%d,%s\n", p, c->parts[p].info);
        fprintf(stderr, "dqgraph,compile,total,%d partitions,%zu fused,%zu cached,%.3f ms\n",
                c->n_parts, c->n_fused, c->n_hits, dt);
    }
    *out = c;
    return DQG_OK;
fail:
    if (maps)
        for (int p = 0; p < c->n_parts; p++)
            free(maps[p]);
    free(maps);
    free(n_maps);
    {
        char saved[1024];
        snprintf(saved, sizeof saved, "%s", dqg_last_error());
        dqg_compiled_destroy(c);
        dqg_set_error(st, "%s", saved);
    }
    return st;
}

size_t dqg_compiled_partition_count(const dqg_compiled *c)
{
    return c ? (size_t)c->n_parts : 0;
}

const char *dqg_compiled_partition_info(const dqg_compiled *c, size_t i)
{
    return (c && i < (size_t)c->n_parts) ? c->parts[i].info : NULL;
}

size_t dqg_compiled_fused_count(const dqg_compiled *c)
{
    return c ? c->n_fused : 0;
}
size_t dqg_compiled_peak_memory(const dqg_compiled *c)
{
    return c ? c->arena_bytes : 0;
}
size_t dqg_compiled_cache_hits(const dqg_compiled *c)
{
    return c ? c->n_hits : 0;
}

size_t dqg_compiled_explain_count(const dqg_compiled *c)
{
    return c ? (size_t)c->passes.n_explain : 0;
}

const char *dqg_compiled_explain(const dqg_compiled *c, size_t i)
{
    return (c && i < (size_t)c->passes.n_explain) ? c->passes.explain[i] : NULL;
}

dqg_status dqg_compiled_dump(const dqg_compiled *c, dqg_dump_format format, FILE *out)
{
    if (!c || !out)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_compiled_dump: compiled or file is NULL");
    if (format == DQG_DUMP_TEXT) {
        fprintf(out, "%d partitions, %zu fused, peak intermediate memory %zu bytes\n", c->n_parts,
                c->n_fused, c->arena_bytes);
        for (int p = 0; p < c->n_parts; p++)
            fprintf(out, "partition %d: %s\n", p, c->parts[p].info);
        for (int i = 0; i < c->passes.n_explain; i++)
            fprintf(out, "explain: %s\n", c->passes.explain[i]);
        return ferror(out) ? dqg_set_error(DQG_IO_ERROR, "dqg_compiled_dump: write failed")
                           : DQG_OK;
    }
    if (format != DQG_DUMP_DOT)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_compiled_dump: unknown format %d",
                             (int)format);
    const char **labels = calloc((size_t)c->n_parts + 1, sizeof *labels);
    if (!labels)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "dqg_compiled_dump: out of memory");
    for (int p = 0; p < c->n_parts; p++) {
        /* The kernel part of the info line: after "-> ". */
        const char *arrow = strstr(c->parts[p].info, "] -> ");
        labels[p] = arrow ? arrow + 5 : c->parts[p].info;
    }
    dqg_status st =
        dqg_graph_dump_partitioned(c->passes.graph, c->passes.group, c->n_parts, labels, out);
    free(labels);
    return st;
}
