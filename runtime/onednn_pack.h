/* Pre-packing constant tensors for oneDNN primitives (internal): a constant
 * is reordered once, at compile time, into the layout the primitive chose,
 * and kept with the kernel. */
#ifndef DQG_RUNTIME_ONEDNN_PACK_H
#define DQG_RUNTIME_ONEDNN_PACK_H

#include "runtime/onednn_exec.h"

/* Reorders `data` (laid out as `from`) into a new 64-byte-aligned buffer
 * laid out as `to`; *out receives it (free with free()). `conv_weights`:
 * `to` is a convolution's weights (whose packing with compensation takes
 * two reorders, onednn_defects.h's rule D). */
dqg_status dqg_dnnl_pack(const dnnl_memory_desc_t *from, const void *data,
                         const dnnl_memory_desc_t *to, bool conv_weights, void **out, size_t *bytes,
                         const char *what);

/* A primitive's weights in the layout it chose: constant ones packed once;
 * run-time ones, when their own layout differs, reordered per execution
 * into the start of the caller's scratch. */
typedef struct dqg_dnnl_weights {
    void *packed; /* constant weights, packed */
    bool reorder; /* run-time weights reordered per execution */
    dqg_dnnl_prim reorder_prim;
} dqg_dnnl_weights;

/* Plans weights laid out as `from` (`data`: constant; NULL: given at run
 * time) for a primitive that chose the layout *chosen, which becomes the
 * layout the primitive receives. *bytes grows by the packed size; *scratch
 * is the reordered weights' size (rounded up to 64 bytes), or 0. */
dqg_status dqg_dnnl_weights_plan(dqg_dnnl_weights *w, const dnnl_memory_desc_t *from,
                                 const void *data, bool conv_weights, dnnl_memory_desc_t *chosen,
                                 size_t *bytes, size_t *scratch, const char *what);
/* The weights for one execution, given: the run-time weights (NULL when
 * constant), reordered into `scratch` when planned so, with scratchpad
 * `pad`. */
dqg_status dqg_dnnl_weights_handle(dqg_dnnl_weights *w, void *given, void *scratch, void *pad,
                                   void **out, const char *what);
void dqg_dnnl_weights_free(dqg_dnnl_weights *w);

#endif
