/* Running a oneDNN primitive from several threads at once (internal).
 * oneDNN streams and memory objects carry per-execution state, so each
 * concurrent execution takes a slot (a stream and one memory object per
 * argument) from a small pool kept with the primitive; slots are created on
 * first concurrent use and reused afterwards, so steady-state executions
 * allocate nothing. */
#ifndef DQG_RUNTIME_ONEDNN_EXEC_H
#define DQG_RUNTIME_ONEDNN_EXEC_H

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdbool.h>

#include "dqgraph.h"

#define DQG_DNNL_MAX_ARGS 16

typedef struct dqg_dnnl_slot dqg_dnnl_slot;

typedef struct dqg_dnnl_prim {
    dnnl_primitive_t prim;
    int n_args; /* recorded arguments, the scratchpad last when there is one */
    int n_user; /* the ones given at execution */
    int arg_kinds[DQG_DNNL_MAX_ARGS + 1]; /* DNNL_ARG_SRC, DNNL_ARG_DST, ... */
    dnnl_memory_desc_t mds[DQG_DNNL_MAX_ARGS + 1];
    pthread_mutex_t lock;
    dqg_dnnl_slot *free_slots;
    /* Every primitive uses a user-managed scratchpad, given with each
     * execution: oneDNN's library-managed one belongs to the thread that
     * created the primitive and is shared by concurrent executions. */
    size_t scratchpad_bytes;
    /* Too little work to share: executed on the calling thread alone. An
     * OpenMP team costs a fork and a join per execution, and on a loaded
     * machine a join waits for a descheduled thread's time slice. */
    bool serial;
} dqg_dnnl_prim;

/* Creates the primitive from `pd` (which stays owned by the caller, and was
 * made by dqg_dnnl_pd_create or dqg_dnnl_reorder_pd) and records the
 * arguments it will be executed with, plus its scratchpad. `what` names the
 * kernel in error messages. */
dqg_status dqg_dnnl_prim_init(dqg_dnnl_prim *p, const_dnnl_primitive_desc_t pd, int n_args,
                              const int *arg_kinds, const dnnl_memory_desc_t *mds,
                              const char *what);

/* Bytes of scratchpad an execution must provide (64-byte multiple; 0 when
 * none). Kernels reserve it in their scratch. */
static inline size_t dqg_dnnl_scratchpad(const dqg_dnnl_prim *p)
{
    return (p->scratchpad_bytes + 63) & ~(size_t)63;
}

/* Executes with one data pointer per recorded argument and the
 * execution's scratchpad (dqg_dnnl_scratchpad bytes, 64-byte aligned; may
 * be NULL when that is 0), then waits. Safe from any thread, and from
 * several at once with distinct scratchpads and outputs. */
dqg_status dqg_dnnl_prim_execute(dqg_dnnl_prim *p, void *const *handles, void *scratchpad,
                                 const char *what);

void dqg_dnnl_prim_destroy(dqg_dnnl_prim *p);

/* Maps a dqgraph type to oneDNN's; dnnl_data_type_undef when it has none. */
dnnl_data_type_t dqg_dnnl_dtype(dqg_dtype dtype);

/* A dense row-major memory descriptor. */
dqg_status dqg_dnnl_md_dense(dnnl_memory_desc_t *md, int rank, const int64_t *dims,
                             dqg_dtype dtype);

/* Creates a primitive descriptor for `op_desc` on dqgraph's engine, with a
 * user-managed scratchpad (attr may be NULL; it is not changed), and
 * appends oneDNN's implementation name to `impl` (":brg:avx512_core_vnni").
 * On failure the message names `impl`. */
dqg_status dqg_dnnl_pd_create(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                              const_dnnl_primitive_attr_t attr, char *impl, size_t impl_size);
/* The same, walking oneDNN's implementations in order and skipping, by
 * name, those a known-defect rule forbids for a primitive with `facts`
 * (runtime/onednn_defects.h); the rule applied, if any, is written into
 * `why`. (By name: once a primitive exists, 2.6's iterator may return an
 * implementation twice.) */
struct dqg_prim_facts;
dqg_status dqg_dnnl_pd_create_checked(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                                      const_dnnl_primitive_attr_t attr,
                                      const struct dqg_prim_facts *facts, char *impl,
                                      size_t impl_size, char *why, size_t why_size);
/* The same for a reorder from `from` to `to`. */
dqg_status dqg_dnnl_reorder_pd(dnnl_primitive_desc_t *pd, const dnnl_memory_desc_t *from,
                               const dnnl_memory_desc_t *to, const_dnnl_primitive_attr_t attr,
                               const char *what);
/* A reorder primitive from `from` to `to` (no attributes) in *prim; its
 * arguments are FROM and TO. */
dqg_status dqg_dnnl_reorder_prim(dqg_dnnl_prim *prim, const dnnl_memory_desc_t *from,
                                 const dnnl_memory_desc_t *to, const char *what);

/* The OpenMP settings of a compile or an execution, on the calling thread:
 * `threads` (0: the current maximum) but at most the program's thread
 * limit, and no dynamic adjustment of team sizes. oneDNN divides a
 * primitive's work among the threads it was created for, and a team with
 * fewer (OMP_THREAD_LIMIT below them, OMP_DYNAMIC=true on a busy machine)
 * would leave part of the work undone. dqg_omp_leave restores what
 * dqg_omp_enter returned. */
typedef struct dqg_omp_saved {
    int threads, dynamic;
} dqg_omp_saved;
dqg_omp_saved dqg_omp_enter(int threads);
void dqg_omp_leave(dqg_omp_saved saved);

/* A new primitive attribute with fpmath mode strict: oneDNN's default
 * mode (ONEDNN_DEFAULT_FPMATH_MODE) would otherwise let an f32 primitive
 * compute in bf16 where the CPU has it. A kernel asked for bf16 sets it
 * itself. */
dnnl_status_t dqg_dnnl_attr_create(dnnl_primitive_attr_t *attr);

/* dqgraph's status for a failed oneDNN call, with a message naming `what`. */
dqg_status dqg_dnnl_error(dnnl_status_t s, const char *what, const char *call);

#endif
